"""SRS residency: which circuits' parameters (and shapes) are loaded on the devices.

An entry is created when the first partition of a circuit is admitted (or by ``preload``), is
LOADING while one thread reads the key and preloads the five point vectors on every device,
then RESIDENT. It is *in use* while partitions that need it are in flight (``users`` > 0) and
*idle* otherwise; idle entries stay hot and are evicted least-recently-used first only when an
admission needs their memory. Pinning by in-flight partitions rather than by whole jobs matters:
a queued job pins nothing, so when nothing runs every entry is evictable and the head of the
queue can always make room — the budget cannot deadlock on residency.

Every device gets the same circuits (a partition may run on any device). Table methods run under
the engine's lock; :meth:`SrsManager.load` does the slow part outside it.

On GPUs the points live in device memory, which a second budget accounts for (the *key
budget*: what each device keeps for resident parameters beside its staging area; see
:func:`cuzk.engine.budget.device_key_budget`). An entry reserves its points and its shape's
matrices there too (:func:`device_bytes`), and admission makes room in both budgets the same
way: idle entries are evicted, least recently used first. Without it, two 32 GiB keys (44 +
57 GiB on an H200) became resident together beside a 70 GiB staging area: the device ran out
of memory and the WindowPoSt failed, where it should have waited for the PoRep partitions in
flight to drain and the PoRep key to go.

On the CPU backend ``preload`` registers the vectors with the device's MSM pool, whose worker
processes decode their chunks in the background, in order, ahead of any later MSM; RESIDENT
therefore means "registered", and the first kernel region after a load may wait for the
decode. (``CpuBackend.preload`` drops the pool's load future; if it returned it, the engine
could wait for true residency here.)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cuzk.backend.base import Backend, PointSet
from cuzk.circuits import get_circuit
from cuzk.engine.budget import (
    SHAPE_DERIVED_BYTES_PER_VARIABLE,
    SRS_RESIDENT_FACTOR,
    MemoryBudget,
    Reservation,
    fmt_bytes,
    partition_bytes,
    shape_bytes_estimate,
)
from cuzk.errors import BadInput, InternalError, ResourceExhausted
from cuzk.groth16.keys import Parameters
from cuzk.groth16.params_io import G1_SIZE, G2_SIZE, read_header, read_params
from cuzk.groth16.prover import check_compatible
from cuzk.r1cs import R1CSShape, synthesize_shape
from cuzk.r1cs.cache import ShapeCache
from cuzk.r1cs.shape import SHAPE_FORMAT_VERSION, matrix_files, shape_format

log = logging.getLogger(__name__)

#: Copies of a key's bases that make one bucket row at the 20-bit window (⌈256/20⌉ windows).
AUTO_COPIES = 13

LOADING, RESIDENT, FAILED = "loading", "resident", "failed"


@dataclass(frozen=True)
class CircuitInfo:
    """What the engine knows about a circuit from its key file's header alone (cheap)."""

    circuit_id: str
    params_path: Path
    num_variables: int  # inputs (with ONE) + aux
    domain_size: int  # m
    srs_bytes: int  # host bytes to keep its points resident on every device
    shape_bytes: int  # estimate until the shape is loaded
    family: str = "bellperson"  # the prover family (:mod:`cuzk.engine.family`) that proves it
    vk_file: Path | None = None  # where its verifying key is, when not beside the params
    backend: str = "cpu"  # where its partitions run (what of their working set is host memory)
    point_bytes: int = 0  # its key's points as a device holds them (affine, one device)

    @property
    def partition_parts(self) -> dict[str, int]:
        return partition_bytes(self.num_variables, self.domain_size, self.backend)

    @property
    def vk_path(self) -> Path:
        """The file results point clients to: ``.vk`` beside bellperson params; the
        ``.zkey`` itself for snarkjs keys (it carries the verifying key)."""
        return self.vk_file if self.vk_file is not None else self.params_path.with_suffix(".vk")


def circuit_info(
    circuit_id: str,
    params_path: Path,
    backend: str,
    devices: int,
    shape_cache: Path | None = None,
) -> CircuitInfo:
    """Validate a circuit id and its key file; raises BadInput naming a missing file."""
    get_circuit(circuit_id)  # unknown or malformed ids fail here, before any work
    if not params_path.is_file():
        raise BadInput(
            f"no proving key for {circuit_id!r}: {params_path} does not exist "
            f"(make one with `cuzk setup --circuit {circuit_id} --out {params_path.parent}`)"
        )
    header = read_header(params_path)
    if header.kind != "params" or header.domain_size is None:
        raise BadInput(f"{params_path} is a verifying key, not a proving key")
    c = header.counts
    point_bytes = (c["h"] + c["l"] + c["a"] + c["b_g1"]) * G1_SIZE + c["b_g2"] * G2_SIZE
    n = header.num_ic + c["l"]
    m = header.domain_size
    return CircuitInfo(
        circuit_id,
        params_path,
        n,
        m,
        int(point_bytes * SRS_RESIDENT_FACTOR[backend]) * devices,
        _cached_shape_bytes(circuit_id, shape_cache, n) or shape_bytes_estimate(n, m),
        backend=backend,
        point_bytes=point_bytes,
    )


def _cached_shape_bytes(
    circuit_id: str, shape_cache: Path | None, num_variables: int
) -> int | None:
    """The size of a shape already in the cache (its matrix files, plus what the prover derives
    from them), else None."""
    if shape_cache is None:
        return None
    d = ShapeCache(shape_cache).path_for(circuit_id)
    if shape_format(d) != SHAPE_FORMAT_VERSION:  # absent, or stale: the cache rebuilds it
        return None
    try:
        files = sum(f.stat().st_size for f in matrix_files(d))
        return files + SHAPE_DERIVED_BYTES_PER_VARIABLE * num_variables
    except OSError:
        return None


@dataclass(eq=False)
class Resident:
    """One circuit's residency entry (mutable, guarded by the engine's lock)."""

    info: CircuitInfo
    state: str  # LOADING, RESIDENT or FAILED
    srs: Reservation
    shape_res: Reservation
    last_used: float
    device_res: Reservation | None = None  # points, matrices, copies: each device's key budget
    users: int = 0  # partitions in flight that need it
    params: Parameters | None = None
    shape: R1CSShape | None = None
    error: BaseException | None = None
    load_span: tuple[float, float] | None = None  # engine clock: when its load ran
    msm_copies: int = 1  # shifted copies of its bases on every device (1: none)

    @property
    def held(self) -> int:
        return self.srs.held + self.shape_res.held

    @property
    def device_held(self) -> int:
        """Bytes of each device's key budget it holds (0 without one)."""
        return self.device_res.held if self.device_res is not None else 0


def device_bytes(info: CircuitInfo) -> int:
    """What a circuit holds on each device while resident: its points, and its shape's
    matrices (the a/b/c kernels keep them there; the estimate until the shape is loaded,
    less what the prover derives from them on the host). wpost-32g: 56.6 + 9.0 GiB."""
    matrices = info.shape_bytes - SHAPE_DERIVED_BYTES_PER_VARIABLE * info.num_variables
    return info.point_bytes + max(0, matrices)


def shape_nbytes(shape: R1CSShape) -> int:
    """The matrices, plus the masks and row indices the prover derives and keeps."""
    return shape.nbytes + SHAPE_DERIVED_BYTES_PER_VARIABLE * shape.num_variables


class SrsManager:
    def __init__(
        self,
        budget: MemoryBudget,
        backends: Sequence[Backend],
        shape_cache: Path | None,
        clock: Callable[[], float],
        device_budget: MemoryBudget | None = None,
        msm_copies: int | None = 1,
    ) -> None:
        self._budget = budget
        #: Each device's memory for resident points (the same on every device: every device
        #: holds every resident circuit); None when the devices report no memory (CPU).
        self.device_budget = device_budget
        self.msm_copies = msm_copies  # copies of each key's bases per device (_plan_copies)
        self._backends = list(backends)
        self._shape_cache = ShapeCache(shape_cache) if shape_cache is not None else None
        self._clock = clock
        self._entries: dict[str, Resident] = {}
        self.evictions = 0  # idle entries evicted under memory pressure (a thrashing signal)

    # -- the table (under the engine's lock) ---------------------------------------------------
    def get(self, circuit_id: str) -> Resident | None:
        return self._entries.get(circuit_id)

    def entries(self) -> list[Resident]:
        return list(self._entries.values())

    def residency_need(self, info: CircuitInfo) -> int:
        """Bytes that admitting work for ``info`` must add for residency (0 if present)."""
        return 0 if info.circuit_id in self._entries else info.srs_bytes + info.shape_bytes

    def device_need(self, info: CircuitInfo) -> int:
        """Bytes of each device's key budget that loading ``info`` must add (0 if present,
        or without a key budget)."""
        if self.device_budget is None or info.circuit_id in self._entries:
            return 0
        return device_bytes(info)

    def check_can_fit(self, info: CircuitInfo, host: int, what: str) -> None:
        """Refuse at once what could not fit even with nothing else resident: ``host`` bytes
        of the memory budget, and the key's points in each device's key budget."""
        self._budget.check_can_fit(host, what)
        if self.device_budget is not None and device_bytes(info) > self.device_budget.total:
            raise ResourceExhausted(
                f"the parameters of {info.circuit_id} need {fmt_bytes(device_bytes(info))} on "
                f"each device, but only {fmt_bytes(self.device_budget.total)} of a device's "
                "memory is left for parameters beside its staging budget; lower the engine's "
                "staging_budget (or prove it on a device with more memory)"
            )

    def make_room(self, need: int, keep: str, device_need: int = 0) -> bool:
        """Evict idle entries, least recently used first, until ``need`` bytes fit the memory
        budget and ``device_need`` the key budget; True if both fit. Nothing is evicted when
        even evicting every idle entry would not suffice."""
        dev = self.device_budget
        if dev is None:
            device_need = 0

        def fits() -> bool:
            return self._budget.fits(need) and (dev is None or dev.fits(device_need))

        if fits():
            return True
        idle = sorted(
            (
                e
                for e in self._entries.values()
                if e.users == 0 and e.state != LOADING and e.info.circuit_id != keep
            ),
            key=lambda e: e.last_used,
        )
        if self._budget.available + sum(e.held for e in idle) < need:
            return False
        if dev is not None and dev.available + sum(e.device_held for e in idle) < device_need:
            return False
        for e in idle:
            if fits():
                break
            log.info("evicting idle parameters of %s under memory pressure", e.info.circuit_id)
            self.drop(e)
            self.evictions += 1
        return fits()

    def begin(self, info: CircuitInfo) -> Resident:
        """Create a LOADING entry with its reservations; the caller checked that it fits and
        must call :meth:`load` and then :meth:`finish`."""
        owner = f"srs {info.circuit_id}"
        entry = Resident(
            info,
            LOADING,
            self._budget.reserve("srs", owner, {"points": info.srs_bytes}),
            self._budget.reserve(
                "shape", f"shape {info.circuit_id}", {"matrices": info.shape_bytes}
            ),
            self._clock(),
        )
        if self.device_budget is not None:
            entry.device_res = self.device_budget.reserve(
                "srs",
                owner,
                {"points": info.point_bytes, "shape": device_bytes(info) - info.point_bytes},
            )
            self._plan_copies(entry)
        self._entries[info.circuit_id] = entry
        return entry

    def _plan_copies(self, entry: Resident) -> None:
        """(Under the lock, as the key is admitted.) Reserve the shifted copies the key's
        bases will get on every device (:meth:`precompute`): ``msm_copies`` (1: none), or with
        None the :data:`AUTO_COPIES` that make one bucket row, if they take at most half the
        key budget left free (room stays for another key). Measured on the H200 (session 12):
        MSMs 14–16 % faster with 13 copies, ≤ 7 % with 2 or 4, so auto makes all or none.
        Reserved now, not after the load, so that two keys loading at once cannot both count
        the same free memory."""
        dev, want = self.device_budget, self.msm_copies
        if dev is None or entry.device_res is None or want == 1:
            return
        k = AUTO_COPIES if want is None else want
        room = dev.available if want is not None else dev.available // 2
        extra = (k - 1) * entry.info.point_bytes
        if extra <= room:
            dev.resize(entry.device_res, "copies", extra)
            entry.msm_copies = k

    def precompute(self, entry: Resident, vectors: Sequence[PointSet]) -> int:
        """(Outside the lock, after the load.) Make the copies :meth:`_plan_copies` reserved
        on every device; a device that cannot hold them (out of memory) drops them again, and
        the key goes on without. Returns the copies every device holds, for :meth:`finish`."""
        k = entry.msm_copies
        if k <= 1:
            return 1
        held = k
        try:
            for backend in self._backends:
                for vector in vectors:
                    held = min(held, backend.precompute(vector, k))
        except (ResourceExhausted, BadInput) as e:  # out of memory, or too many points
            log.warning("no MSM copies for %s: %s", entry.info.circuit_id, e)
            for backend in self._backends:
                for vector in vectors:
                    backend.precompute(vector, 1)
            return 1
        return held

    def finish(
        self,
        entry: Resident,
        loaded: tuple[Parameters, R1CSShape] | BaseException,
        copies: int = 1,
    ) -> None:
        """Record the outcome of :meth:`load`. A failed entry leaves the table at once (so a
        later request retries) and releases its memory; its current users see the error."""
        if self._entries.get(entry.info.circuit_id) is not entry and not isinstance(
            loaded, BaseException
        ):  # dropped while loading (shutdown): forget what was just preloaded
            entry.params = loaded[0]
            self.drop(entry)
            entry.state, entry.error = FAILED, InternalError("evicted while loading")
            return
        if isinstance(loaded, BaseException):
            entry.state, entry.error = FAILED, loaded
            self._remove(entry)
            return
        entry.params, entry.shape = loaded
        entry.state = RESIDENT
        self._budget.resize(entry.shape_res, "matrices", shape_nbytes(entry.shape))
        if self.device_budget is not None and entry.device_res is not None:
            self.device_budget.resize(entry.device_res, "shape", entry.shape.nbytes)
            if copies != entry.msm_copies:  # fewer made than reserved: give the rest back
                extra = (copies - 1) * entry.info.point_bytes
                self.device_budget.resize(entry.device_res, "copies", extra)
                entry.msm_copies = copies

    def drop(self, entry: Resident) -> None:
        """Evict: forget the points on every device and release the memory."""
        if entry.params is not None:
            for backend in self._backends:
                for vector in entry.params.vectors:
                    try:
                        backend.evict(vector)
                    except Exception as e:  # noqa: BLE001 - a closed backend holds nothing
                        log.debug("evict %s on %s: %s", entry.info.circuit_id, backend.name, e)
        entry.params = entry.shape = None
        self._remove(entry)

    def _remove(self, entry: Resident) -> None:
        if self._entries.get(entry.info.circuit_id) is entry:
            del self._entries[entry.info.circuit_id]
        self._budget.release(entry.srs)
        self._budget.release(entry.shape_res)
        if self.device_budget is not None:
            self.device_budget.release(entry.device_res)

    def touch(self, entry: Resident) -> None:
        entry.last_used = self._clock()

    # -- the slow part (outside the lock) ------------------------------------------------------
    def load(self, info: CircuitInfo) -> tuple[Parameters, R1CSShape]:
        """Read the key, get the shape, check they match and preload every device."""
        params = read_params(info.params_path)
        circuit = get_circuit(info.circuit_id)
        if self._shape_cache is not None:
            shape = self._shape_cache.get(info.circuit_id, circuit)
        else:
            shape = synthesize_shape(circuit, info.circuit_id)
        check_compatible(params, shape)
        self.preload(params.vectors)
        return params, shape

    @property
    def shape_cache_dir(self) -> Path | None:
        return self._shape_cache.directory if self._shape_cache is not None else None

    def preload(self, vectors: Sequence[PointSet]) -> None:
        """Make ``vectors`` resident on every device, all or none."""
        done: list[tuple[Backend, PointSet]] = []
        try:
            for backend in self._backends:
                for vector in vectors:
                    backend.preload(vector)
                    done.append((backend, vector))
        except BaseException:
            for backend, vector in done:  # a half-loaded circuit must not stay resident
                try:
                    backend.evict(vector)
                except Exception:  # noqa: BLE001 - best effort on an error path
                    pass
            raise
