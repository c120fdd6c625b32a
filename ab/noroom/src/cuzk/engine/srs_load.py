"""Loading keys onto the devices: the slow part of residency, run outside the engine's lock.

:class:`~cuzk.engine.srs.SrsManager` decides under the lock which devices take a key and
reserves its memory there (a :class:`~cuzk.engine.srs_entry.Placement`); reading the key file,
synthesizing or reading its shape, moving the points to the devices and making their MSM copies
takes seconds to minutes, so it runs here, without the lock, and comes back as a
:class:`~cuzk.engine.srs_entry.LoadOutcome` that the table records under the lock again
(:meth:`~cuzk.engine.srs.SrsManager.finish`). The loader reads the table only for the device
plans the placement made (which vectors stream); it changes nothing in it.

On the CPU backend ``preload`` registers the vectors with the device's MSM pool and waits until
its worker processes hold their chunks, so RESIDENT means loaded there too (and a bad key file
fails the load, not a later proof).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from cuzk.backend.base import Backend, PointSet
from cuzk.engine.key_plan import MATRICES, VECTORS
from cuzk.engine.srs_entry import LoadOutcome, Placement, Resident
from cuzk.errors import BadInput, InternalError, ResourceExhausted
from cuzk.r1cs import Circuit, R1CSShape, synthesize_shape
from cuzk.r1cs.cache import ShapeCache

log = logging.getLogger(__name__)


class KeyLoader:
    """Reads keys and shapes and puts their points on the devices (see the module docstring);
    one per residency table, sharing its backends."""

    def __init__(
        self,
        backends: Sequence[Backend],
        shape_cache: Path | None,
        entry: Callable[[str], Resident | None],
    ) -> None:
        """``entry``: the table's entry of a circuit id (its device plans say what streams)."""
        self._backends = list(backends)
        self._shape_cache = ShapeCache(shape_cache) if shape_cache is not None else None
        self._entry = entry

    def shape_for(self, circuit_id: str, circuit: Circuit) -> R1CSShape:
        """``circuit``'s shape: from the shape cache (synthesized into it once) or made now."""
        if self._shape_cache is not None:
            return self._shape_cache.get(circuit_id, circuit)
        return synthesize_shape(circuit, circuit_id)

    @property
    def shape_cache_dir(self) -> Path | None:
        return self._shape_cache.directory if self._shape_cache is not None else None

    def preload(
        self,
        vectors: Sequence[PointSet],
        devices: Sequence[int],
        circuit_id: str | None = None,
        shape: R1CSShape | None = None,
    ) -> None:
        """Make ``vectors`` (a key's, in :data:`VECTORS` order) resident on ``devices``, all or
        none; those that ``circuit_id``'s plan on a device streams go to host memory there, and
        so does ``shape``'s matrices where the plan streams them."""
        entry = self._entry(circuit_id) if circuit_id is not None else None
        done: list[tuple[Backend, PointSet]] = []
        streamed: list[tuple[Backend, R1CSShape]] = []
        try:
            for d in devices:
                backend = self._backends[d]
                plan = entry.plans.get(d) if entry is not None else None
                if plan is not None and shape is not None and plan.streams(MATRICES):
                    streamed.append((backend, shape))
                    backend.stream_shape(shape, plan.block_bytes)
                for name, vector in zip(VECTORS, vectors, strict=False):
                    stream = plan.stream_bytes if plan is not None and plan.streams(name) else 0
                    backend.preload(vector, stream)
                    done.append((backend, vector))
        except BaseException:
            for backend, vector in done:  # a half-loaded circuit must not stay resident
                try:
                    backend.evict(vector)
                except Exception:  # best effort on an error path
                    pass
            for backend, streamed_shape in streamed:
                try:
                    backend.forget_shape(streamed_shape)
                except Exception:  # best effort on an error path
                    pass
            raise

    def precompute(
        self, entry: Resident, vectors: Sequence[PointSet], devices: Sequence[int]
    ) -> dict[int, int]:
        """(After the load.) Make the copies the table reserved on each of ``devices``
        (:meth:`cuzk.engine.srs.SrsManager._plan_copies`); a device that cannot hold them (out
        of memory) drops them again and goes on without. Returns the copies each device holds,
        for :meth:`cuzk.engine.srs.SrsManager.finish`."""
        made: dict[int, int] = {}
        for d in devices:
            k = entry.copies.get(d, 1)
            if k <= 1:
                continue
            backend, held = self._backends[d], k
            try:
                for vector in vectors:
                    held = min(held, backend.precompute(vector, k))
            except (ResourceExhausted, BadInput) as e:  # out of memory, or too many points
                log.warning("no MSM copies for %s on device %d: %s", entry.info.circuit_id, d, e)
                for vector in vectors:
                    backend.precompute(vector, 1)
                held = 1
            made[d] = held
        return made

    def load_placement(
        self, placement: Placement, first_load: Callable[[Sequence[int]], tuple]
    ) -> LoadOutcome:
        """Run a placement (outside the lock): the first load through ``first_load`` (the
        circuit family's reader, given the devices; all of them or none), a later one from
        the key in memory, device by device (a device that fails is left out)."""
        entry, devices = placement.entry, placement.devices
        failed: dict[int, BaseException] = {}
        try:
            if placement.first:
                params, shape = first_load(devices)
            else:
                if entry.params is None or entry.shape is None:
                    raise InternalError(f"{entry.info.circuit_id} has no key in memory")
                params, shape = entry.params, entry.shape
                for d in devices:
                    try:
                        self.preload(params.vectors, (d,), entry.info.circuit_id, shape)
                    except Exception as e:  # that device goes without it
                        failed[d] = e
            ok = [d for d in devices if d not in failed]
            return LoadOutcome((params, shape), self.precompute(entry, params.vectors, ok), failed)
        except Exception as e:  # reported to every user of the entry
            return LoadOutcome(e)
