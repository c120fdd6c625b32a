"""The engine's status as its callers see it: the records :meth:`cuzk.engine.Engine.status`
returns, made from the live objects (kept apart from the state machine in
:mod:`cuzk.engine.core`, which takes its lock around these calls)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence

from cuzk.engine.budget import MemoryBudget
from cuzk.engine.job import Job
from cuzk.engine.request import (
    BudgetStatus,
    DeviceStatus,
    EngineStatus,
    JobState,
    PartitionState,
    Priority,
    SrsStatus,
    WorkerStatus,
)
from cuzk.engine.srs import Resident, SrsManager
from cuzk.engine.workers import Device, Worker


def engine_status(
    uptime: float,
    accepting: bool,
    jobs: Collection[Job],
    budget: MemoryBudget,
    srs: SrsManager,
    workers: Sequence[Worker],
    devices: Sequence[Device],
) -> EngineStatus:
    """The whole status (engine lock held): job and partition counts by priority and state,
    every remembered job, memory, residency, workers and devices."""
    counts = {p.name: Counter[str]() for p in Priority}
    parts: Counter[str] = Counter()
    for job in jobs:
        counts[job.request.priority.name][job.state.value] += 1
        for p in job.parts:
            parts[p.state.value] += 1
    budgets = srs.device_budgets
    return EngineStatus(
        uptime=uptime,
        accepting=accepting,
        counts={k: {s.value: c[s.value] for s in JobState} for k, c in counts.items()},
        partitions={s.value: parts[s.value] for s in PartitionState},
        jobs=tuple(j.snapshot() for j in jobs),
        budget=budget_status(budget),
        srs=srs_statuses(srs.entries()),
        evictions=srs.evictions,
        workers=worker_statuses(workers),
        devices=device_statuses(devices, budgets),
        device_budgets=tuple(budget_status(b) for b in budgets or ()),
    )


def budget_status(budget: MemoryBudget) -> BudgetStatus:
    return BudgetStatus(budget.total, budget.reserved, budget.by_kind())


def srs_statuses(entries: Iterable[Resident]) -> tuple[SrsStatus, ...]:
    return tuple(
        SrsStatus(
            e.info.circuit_id,
            e.state,
            e.held,
            e.users,
            e.last_used,
            e.device_held,
            e.msm_copies,
            e.devices,
            e.streamed,
        )
        for e in entries
    )


def worker_statuses(workers: Iterable[Worker]) -> tuple[WorkerStatus, ...]:
    return tuple(
        WorkerStatus(w.name, w.kind, w.device.index if w.device else None, w.busy_with)
        for w in workers
    )


def device_statuses(
    devices: Iterable[Device], budgets: Sequence[MemoryBudget] | None
) -> tuple[DeviceStatus, ...]:
    return tuple(_device_status(d, budgets) for d in devices)


def _device_status(d: Device, budgets: Sequence[MemoryBudget] | None) -> DeviceStatus:
    limit, peak, give_backs, uploaded = _measured(d)
    return DeviceStatus(
        d.index,
        d.backend.name,
        d.kernel_seconds,
        staged_bytes=d.staging.held if d.staging is not None else 0,
        pinned_lent=d.pinned.lent,
        pinned_idle_bytes=d.pinned.idle_bytes,
        memory_total=d.memory_total or 0,
        key_bytes=budgets[d.index].reserved if budgets else 0,
        memory_limit=limit,
        memory_peak=peak,
        staging_total=d.staging.total if d.staging is not None else 0,
        memory_give_backs=give_backs,
        uploaded_bytes=uploaded,
    )


def _measured(device: Device) -> tuple[int, int, int, int]:
    """(its memory cap, its measured peak use, its give-backs, its bytes uploaded), 0 for
    what the backend does not know."""
    try:
        info = device.backend.memory()
    except Exception:  # a failing device still has a status
        return 0, 0, 0, 0
    if info is None:
        return 0, 0, 0, 0
    return info.limit or 0, info.peak or 0, info.give_backs or 0, info.uploaded or 0
