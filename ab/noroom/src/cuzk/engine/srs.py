"""SRS residency: which circuits' parameters (and shapes) are loaded on the devices.

An entry is created when the first partition of a circuit is admitted (or by ``preload``), is
LOADING while one thread reads the key and preloads the five point vectors on its devices,
then RESIDENT. It is *in use* while partitions that need it are in flight (``users`` > 0) and
*idle* otherwise; idle entries stay hot and are evicted least-recently-used first only when an
admission needs their memory. Pinning by in-flight partitions rather than by whole jobs matters:
a queued job pins nothing, so when nothing runs every entry is evictable and the head of the
queue can always make room — the budget cannot deadlock on residency.

Table methods run under the engine's lock; :meth:`SrsManager.load_placement` does the slow part
outside it, through the table's :class:`~cuzk.engine.srs_load.KeyLoader`. The types the table
hands out (:class:`~cuzk.engine.srs_entry.Resident` and the rest) and the sizes it reserves are
:mod:`cuzk.engine.srs_entry`'s.

Where a key is on the devices is tracked per device (``Resident.placed``): a new key goes to every
device with room for it (:meth:`SrsManager.room_on`, evicting keys idle there), and a device only
takes partitions of keys it holds. On GPUs the points live in device memory, which each device's
*key budget* accounts for (what the device keeps for resident parameters beside its staging area;
see :func:`cuzk.engine.budget.device_key_budget`): a key reserves its points and its shape's
matrices there (:func:`~cuzk.engine.srs_entry.device_bytes`). Without it, two 32 GiB keys
(44 + 57 GiB on an H200) became resident together beside a 70 GiB staging area: the device ran out
of memory and the WindowPoSt failed. When no device has room, one device gives up a busy key that
other devices also hold (:meth:`SrsManager.drain_for`): its partitions there finish, no new one
comes, and the waiting key loads there while the rest of the devices keep the busy key's work going.
On one device (or when every busy key lives on one device only) the waiting key waits for the busy
key's partitions to drain and the key to go idle. A key taken off every device stays in host memory
(its shape) until the host budget needs the room. CPU virtual devices report no memory: every key
goes to every device there.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from cuzk.backend.base import Backend
from cuzk.engine.budget import MemoryBudget, fmt_bytes
from cuzk.engine.key_plan import MATRICES, plan_key
from cuzk.engine.srs_entry import (
    DRAINING,
    FAILED,
    LOADING,
    RESIDENT,
    CircuitInfo,
    LoadOutcome,
    Placement,
    Resident,
    device_bytes,
    least_device_bytes,
    matrix_bytes,
    shape_nbytes,
)
from cuzk.engine.srs_load import KeyLoader
from cuzk.engine.staging import StagingArea
from cuzk.errors import InternalError, ResourceExhausted, without_frames
from cuzk.groth16.keys import Parameters

log = logging.getLogger(__name__)

#: Copies of a key's bases that make one bucket row at the 20-bit window (⌈256/20⌉ windows).
AUTO_COPIES = 13


class SrsManager:
    """The residency table: which keys are loaded and where (see the module docstring)."""

    def __init__(
        self,
        budget: MemoryBudget,
        backends: Sequence[Backend],
        shape_cache: Path | None,
        clock: Callable[[], float],
        device_budgets: Sequence[MemoryBudget] | None = None,
        msm_copies: int | None = 1,
        staging: Sequence[StagingArea | None] = (),
        partition_need: Callable[[CircuitInfo], int] | None = None,
    ) -> None:
        """``staging``: each device's staging area, when it may grow (no staging budget was
        configured): a key's placement then first grows it to hold one partition of that key's
        circuit (``partition_need``), taking the room from the device's key budget (see
        :meth:`_staging_growth`)."""
        self._budget = budget
        self._staging = list(staging)
        self._partition_need = partition_need
        #: Each device's memory for keys and staging together (key budget + staging area).
        self._usable = [
            b.total + (a.total if a is not None else 0)
            for b, a in zip(
                device_budgets or (),
                self._staging or [None] * len(device_budgets or ()),
                strict=True,
            )
        ]
        #: Each device's memory for resident keys (index = device), or None when the devices
        #: report no memory (CPU virtual devices: there every key goes to every device).
        self.device_budgets = list(device_budgets) if device_budgets is not None else None
        self.msm_copies = msm_copies  # copies of each key's bases per device (_plan_copies)
        self._backends = list(backends)
        #: Reads keys and puts them on the devices, outside the lock (:meth:`load_placement`).
        self.loader = KeyLoader(self._backends, shape_cache, self.get)
        self._clock = clock
        self._entries: dict[str, Resident] = {}
        #: Keys taken off a device (one per device) or out of host memory to make room for
        #: another: a thrashing signal.
        self.evictions = 0

    # -- the table (under the engine's lock) ---------------------------------------------------
    def get(self, circuit_id: str) -> Resident | None:
        return self._entries.get(circuit_id)

    def entries(self) -> list[Resident]:
        return list(self._entries.values())

    def residency_need(self, info: CircuitInfo) -> int:
        """Host bytes that admitting work for ``info`` must add for residency (0 if present)."""
        return 0 if info.circuit_id in self._entries else info.srs_bytes + info.shape_bytes

    def check_can_fit(self, info: CircuitInfo, host: int, what: str) -> None:
        """Refuse at once what could not fit even with nothing else resident: ``host`` bytes
        of the memory budget, and the key in one device's key budget."""
        self._budget.check_can_fit(host, what)
        budgets = self.device_budgets
        if not budgets:
            return
        least = least_device_bytes(info)
        largest = max(self._key_room(d, info) for d in range(len(budgets)))
        if least > largest:
            if self._staging and self._partition_need is not None:
                floor = least + self._partition_need(info)
                usable = max(self._usable)
                raise ResourceExhausted(
                    f"{info.circuit_id} needs at least {fmt_bytes(floor)} of a device's memory "
                    f"for one partition ({fmt_bytes(self._partition_need(info))} of working "
                    f"set, {fmt_bytes(least)} for the slots of its shape's matrices and two "
                    f"stream buffers), but a device has {fmt_bytes(usable)} beside its margin; "
                    "raise device_memory_limit or prove it on a device with more memory"
                )
            raise ResourceExhausted(
                f"the parameters of {info.circuit_id} need at least {fmt_bytes(least)} on a "
                f"device (the slots of its shape's matrices and two stream buffers), but only "
                f"{fmt_bytes(largest)} of a device's memory is left for parameters beside its "
                "staging budget; lower the engine's staging_budget (or prove it on a device "
                "with more memory)"
            )

    def _key_room(self, device: int, info: CircuitInfo) -> int:
        """What the device's key budget would be once its staging area holds one partition of
        ``info``'s circuit (its key budget now when the area cannot grow)."""
        # why the ignore below: called only where the devices have key budgets (GPUs, or CPU devices
        # with a size)
        budget = self.device_budgets[device]  # type: ignore[index]
        return (
            self._usable[device] - self._staging_total(device, info)
            if self._staging
            else budget.total
        )

    def _staging_total(self, device: int, info: CircuitInfo) -> int:
        """The staging area ``device`` needs for ``info``'s partitions: its own size, or one
        partition's working set when that is larger (the area grows to it)."""
        area = self._staging[device]
        now = area.total if area is not None else 0
        need = self._partition_need(info) if self._partition_need is not None else 0
        return max(now, need)

    def _staging_growth(self, device: int, info: CircuitInfo) -> None:
        """(Placing ``info``'s key on ``device``.) Grow the staging area to one partition of
        it, taking the bytes from the key budget: then the area always holds a partition of
        every key on the device, so a staged partition never waits for memory that only a key
        of a waiting partition could give back (docs/ARCHITECTURE.md, Memory)."""
        if not self._staging or self.device_budgets is None:
            return
        area = self._staging[device]
        total = self._staging_total(device, info)
        if area is None or total <= area.total:
            return
        budget = self.device_budgets[device]
        log.info("device %d: staging area %s → %s for %s, key budget %s", device,
                 fmt_bytes(area.total), fmt_bytes(total), info.circuit_id,
                 fmt_bytes(self._usable[device] - total))  # fmt: skip
        budget.total = self._usable[device] - total
        area.grow(total)

    def make_room(self, need: int, keep: str) -> bool:
        """Evict idle entries (from every device), least recently used first, until ``need``
        bytes fit the host memory budget; True if they fit. Nothing is evicted when even
        evicting every idle entry would not suffice."""
        if self._budget.fits(need):
            return True
        idle = sorted(
            (
                e
                for e in self._entries.values()
                if e.users == 0
                and e.state != LOADING
                and LOADING not in e.placed.values()
                and e.info.circuit_id != keep
            ),
            key=lambda e: e.last_used,
        )
        if self._budget.available + sum(e.held for e in idle) < need:
            return False
        for e in idle:
            if self._budget.fits(need):
                break
            log.info("evicting idle parameters of %s under memory pressure", e.info.circuit_id)
            self.drop(e)
            self.evictions += 1
        return self._budget.fits(need)

    # -- where keys are on the devices (under the engine's lock) -------------------------------
    def room_on(self, info: CircuitInfo, entry: Resident | None) -> tuple[int, ...]:
        """The devices that do not hold ``info``'s key and could take it now, by evicting only
        keys idle there (:meth:`Resident.idle_on`). Without key budgets: every such device."""
        need = least_device_bytes(info)
        free = []
        for d in range(len(self._backends)):
            if entry is not None and d in entry.placed:
                continue
            budget = self._device_budget(d)
            if budget is None:
                free.append(d)
                continue
            idle = sum(e.device_res[d].held for e in self._idle_on(d))
            if self._key_room(d, info) - budget.reserved + idle >= need:
                free.append(d)
        return tuple(free)

    def _idle_on(self, device: int) -> list[Resident]:
        """The keys whose place on ``device`` can go now (:meth:`Resident.idle_on`), least
        recently used first: what making room there evicts."""
        idle = (e for e in self._entries.values() if e.idle_on(device))
        return sorted(idle, key=lambda e: e.last_used)

    def drain_for(self, info: CircuitInfo) -> bool:
        """No device has room for ``info``'s key: start giving one device's place up — the
        device where busy keys that also live on other devices (:meth:`Resident.drainable_on`)
        would leave room, with the fewest partitions still to finish there. Their partitions
        there finish; the next admission finds room once they have. False if no device can
        (every busy key there is on that device alone): then the work waits for keys to go
        idle, as on one device."""
        budgets = self.device_budgets
        if not budgets:
            return False
        need, best = least_device_bytes(info), None
        entries = list(self._entries.values())
        plans = []
        for d, budget in enumerate(budgets):
            # what is free there once the places already draining have gone
            coming = budget.available + sum(
                e.device_res[d].held for e in entries if e.idle_on(d) or e.placed.get(d) == DRAINING
            )
            if coming >= need:
                return True  # a device already on its way: draining more would only cost
            plans.append((d, coming))
        for d, coming in plans:
            busy = sorted((e for e in entries if e.drainable_on(d)), key=lambda e: e.last_used)
            room, chosen = coming, []
            for e in busy:
                if room >= need:
                    break
                room += e.device_res[d].held
                chosen.append(e)
            if room < need:
                continue
            waiting = sum(e.bound[d] for e in chosen)
            if best is None or waiting < best[0]:
                best = (waiting, d, chosen)
        if best is None:
            return False
        _, d, chosen = best
        for e in chosen:
            log.info("device %d gives up %s for %s", d, e.info.circuit_id, info.circuit_id)
            e.placed[d] = DRAINING
            self.evictions += 1
            if not e.bound[d]:
                self.unplace(e, d)
        return True

    def place(self, entry: Resident, devices: Sequence[int], first: bool) -> Placement:
        """Reserve ``entry``'s key on ``devices`` (from :meth:`room_on`; keys idle there are
        evicted, least recently used first) and mark them LOADING; the caller runs the
        returned placement through :meth:`load_placement` and :meth:`finish`."""
        info, need = entry.info, device_bytes(entry.info)
        for d in devices:
            budget = self._device_budget(d)
            if budget is not None:
                self._staging_growth(d, info)
                for e in self._idle_on(d):
                    if budget.fits(need):
                        break
                    log.info("device %d evicts idle parameters of %s", d, e.info.circuit_id)
                    self.unplace(e, d)
                    self.evictions += 1
                plan = plan_key(info.vectors, matrix_bytes(info), budget.available)
                if plan is None:  # room_on saw room: only a bug gets here
                    raise InternalError(f"no room for {info.circuit_id} on device {d}")
                entry.plans[d] = plan
                entry.device_res[d] = budget.reserve(
                    "srs", f"srs {info.circuit_id}",
                    {"points": plan.device_bytes - plan.matrix_bytes, "shape": plan.matrix_bytes},
                )  # fmt: skip
                if plan.streamed:
                    log.info("device %d streams %s of %s from host memory (%s pinned)", d,
                             ", ".join(sorted(plan.streamed)), info.circuit_id,
                             fmt_bytes(plan.host_bytes))  # fmt: skip
                    self._budget.resize(entry.srs, f"pinned:{d}", plan.host_bytes)
                else:
                    self._plan_copies(entry, d)
            entry.placed[d] = LOADING
        return Placement(entry, tuple(devices), first)

    def _plan_copies(self, entry: Resident, device: int) -> None:
        """(Under the lock, as the key is placed.) Reserve the shifted copies the key's bases
        will get on ``device`` (:meth:`precompute`): ``msm_copies`` (1: none), or with None the
        :data:`AUTO_COPIES` that make one bucket row, if they take at most half the key budget
        left free (room stays for another key). Measured on the H200 (session 12): MSMs
        14–16 % faster with 13 copies, ≤ 7 % with 2 or 4, so auto makes all or none. Reserved
        now, not after the load, so that two keys loading at once cannot both count the same
        free memory."""
        dev, want = self._device_budget(device), self.msm_copies
        if dev is None or want == 1:
            return
        k = AUTO_COPIES if want is None else want
        room = dev.available if want is not None else dev.available // 2
        extra = (k - 1) * entry.info.point_bytes
        if extra <= room:
            dev.resize(entry.device_res[device], "copies", extra)
            entry.copies[device] = k

    def begin(self, info: CircuitInfo) -> Resident:
        """Create a LOADING entry with its host reservations; the caller checked that it fits,
        places it (:meth:`place`, ``first``) and runs that load."""
        entry = Resident(
            info,
            LOADING,
            self._budget.reserve("srs", f"srs {info.circuit_id}", {"points": info.srs_bytes}),
            self._budget.reserve(
                "shape", f"shape {info.circuit_id}", {"matrices": info.shape_bytes}
            ),
            self._clock(),
        )
        self._entries[info.circuit_id] = entry
        return entry

    def finish(self, placement: Placement, outcome: LoadOutcome) -> None:
        """Record the outcome of a placement's load. A failed first load takes the entry out
        of the table at once (so a later request retries) and releases its memory; its users
        see the error. A failed later one gives up those devices only (the key stays where it
        is), unless no device is left for its users: then the entry fails the same way."""
        entry, devices, loaded = placement.entry, placement.devices, outcome.loaded
        if self._entries.get(entry.info.circuit_id) is not entry:
            # dropped while loading (shutdown, evict): forget what was just preloaded
            if not isinstance(loaded, BaseException):
                for d in devices:
                    self._evict_vectors(loaded[0], d, entry.info.circuit_id)
            self.drop(entry)
            if entry.state == LOADING:
                entry.state, entry.error = FAILED, InternalError("evicted while loading")
            return
        if isinstance(loaded, BaseException):
            if placement.first or not any(entry.takes(d) for d in entry.placed if d not in devices):
                entry.state, entry.error = FAILED, without_frames(loaded)
                self.drop(entry)
                return
            log.warning("%s could not be loaded on device(s) %s: %s", entry.info.circuit_id,
                        list(devices), loaded)  # fmt: skip
            for d in devices:
                self.unplace(entry, d)
            return
        for d, error in outcome.failed.items():
            log.warning("%s could not be loaded on device %d: %s", entry.info.circuit_id, d, error)
            self.unplace(entry, d)
        if outcome.failed and not any(entry.takes(d) for d in entry.placed):
            entry.state, entry.error = FAILED, without_frames(next(iter(outcome.failed.values())))
            self.drop(entry)  # no device is left for the work that needs it
            return
        if placement.first:
            entry.params, entry.shape = loaded
            entry.state = RESIDENT
            self._budget.resize(entry.shape_res, "matrices", shape_nbytes(entry.shape))
        assert entry.shape is not None
        for d in devices:
            if entry.placed.get(d) != LOADING:
                continue
            entry.placed[d] = RESIDENT
            budget = self._device_budget(d)
            if budget is None:
                continue
            plan = entry.plans.get(d)
            if plan is None or not plan.streams(MATRICES):  # the estimate becomes exact
                budget.resize(entry.device_res[d], "shape", entry.shape.nbytes)
            made = outcome.copies.get(d, 1)
            if made != entry.copies.get(d, 1):  # fewer made than reserved: give the rest back
                budget.resize(entry.device_res[d], "copies", (made - 1) * entry.info.point_bytes)
                entry.copies[d] = made

    def unplace(self, entry: Resident, device: int) -> None:
        """Take ``entry``'s key off one device and give its key budget there back."""
        if entry.params is not None:
            self._evict_vectors(entry.params, device, entry.info.circuit_id)
        if entry.shape is not None:  # its matrices there go too (≈ 6 GB for porep-32g)
            self._backends[device].forget_shape(entry.shape)
        entry.placed.pop(device, None)
        entry.copies.pop(device, None)
        entry.plans.pop(device, None)
        self._budget.release(entry.srs, f"pinned:{device}")
        budget = self._device_budget(device)
        if budget is not None:
            budget.release(entry.device_res.pop(device, None))

    def _evict_vectors(self, params: Parameters, device: int, what: str) -> None:
        for vector in params.vectors:
            try:
                self._backends[device].evict(vector)
            except Exception as e:  # a closed backend holds nothing
                log.debug("evict %s on device %d: %s", what, device, e)

    def drop(self, entry: Resident) -> None:
        """Evict: forget the points on every device and release the memory."""
        for d in list(entry.placed):
            self.unplace(entry, d)
        entry.params = entry.shape = None
        if self._entries.get(entry.info.circuit_id) is entry:
            del self._entries[entry.info.circuit_id]
        self._budget.release(entry.srs)
        self._budget.release(entry.shape_res)

    def touch(self, entry: Resident) -> None:
        entry.last_used = self._clock()

    def _device_budget(self, device: int) -> MemoryBudget | None:
        return self.device_budgets[device] if self.device_budgets is not None else None

    # -- the slow part (outside the lock): the loader's ----------------------------------------
    def load_placement(
        self, placement: Placement, first_load: Callable[[Sequence[int]], tuple]
    ) -> LoadOutcome:
        """Run a placement outside the lock (:meth:`.KeyLoader.load_placement`); the caller
        records the outcome with :meth:`finish`, under the lock."""
        return self.loader.load_placement(placement, first_load)


#: The entry's types that most of the engine imports from here, beside the table.
__all__ = ["AUTO_COPIES", "CircuitInfo", "Resident", "SrsManager"]
