"""The residency table (:class:`~cuzk.engine.srs.SrsManager`) made for the engine's devices.

What each device may hold in keys follows from its memory and its staging area, both known
only once the devices exist; deciding that is set-up, not a transition, so it lives apart from
the state machine in :mod:`cuzk.engine.core`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cuzk.engine.budget import MemoryBudget, default_staging_bytes, device_key_budget
from cuzk.engine.config import EngineConfig
from cuzk.engine.srs import CircuitInfo, SrsManager
from cuzk.engine.timeline import Clock
from cuzk.engine.workers import Device


def make_residency(
    config: EngineConfig,
    budget: MemoryBudget,
    devices: Sequence[Device],
    clock: Clock,
    partition_need: Callable[[CircuitInfo], int],
) -> tuple[SrsManager, bool]:
    """(the residency table, whether the devices' staging areas grow with the keys placed on
    them). They grow when every device has a key budget and staging is on without a fixed
    staging budget; ``partition_need`` is what one partition asks of a staging area."""
    key_budgets = _key_budgets(devices)
    growable = key_budgets is not None and config.staging and config.staging_budget is None
    srs = SrsManager(
        budget,
        [d.backend for d in devices],
        config.shape_cache,
        clock,
        key_budgets,
        config.msm_copies,
        [d.staging for d in devices] if growable else (),
        partition_need,
    )
    return srs, growable


def _key_budgets(devices: Sequence[Device]) -> list[MemoryBudget] | None:
    """Each device's key budget, or None when a device reports no memory (CPU virtual
    devices: their points are host memory, in the memory budget). A device without staging
    keeps half its memory for partitions all the same."""
    budgets = []
    for d in devices:
        if d.memory_total is None:
            return None
        staging = (
            d.staging.total if d.staging is not None else default_staging_bytes(d.memory_total)
        )
        budgets.append(MemoryBudget(device_key_budget(d.memory_total, staging, d.memory_margin)))
    return budgets or None
