"""The executor's threads: synthesis workers and device workers.

A worker only computes; every decision (what runs next, whether memory fits, whether a job is
still wanted) is the core's, taken under its lock through the :class:`Pipeline` methods. A
worker never holds the engine lock while computing, and holds a device's compute lock only
around the kernel region (the prover's start + wait); assembly of A, B, C runs outside it so
the device's next partition can start meanwhile. What differs between key formats (reading
the key, synthesis) is the job's :class:`~cuzk.engine.family.ProverFamily`'s; staging, the
kernels and assembly are the one prover's (:mod:`cuzk.groth16.prover`) for every family.

Why synthesis runs on threads, not processes — measured on this 2-core machine (another
benchmark was running, so expect ±30%), witnesses of the synthetic circuit per second
(ms per witness; sequential / 2 threads / 2 spawned processes):

    synthetic:400     0.9 / 0.5–1.0 / 0.8–1.4
    synthetic:8192    8.5–16 / 9–13 / 10–11
    synthetic:65536   71 / 61–86 / 66–81

The witness code is pure Python and holds the GIL, so threads do not add throughput — but
processes do not either: each result must be pickled back, processes must be *spawned* (numba
has already started OpenMP, so fork is unsafe), and on a small machine they compete with the
MSM worker processes for the same cores. Threads cost nothing, share the parsed circuit and
keep the pipeline overlapped (numba kernels and the MSM pipes release the GIL while a
synthesis thread runs). The way to scale synthesis is GIL-free witness code and the
pre-compiled shape (a/b/c by sparse products on the device): the synthetic circuit builds its
witness in bulk (``r1cs.BulkWitness``: numpy and a ``nogil`` numba loop) in these threads.

Filecoin's circuits are the other case: their witnesses come from gadget code running SHA-256
and Poseidon in Python (15 s for a 2 KiB PoRep partition, minutes at 32 GiB), which no amount
of threads parallelises and which would starve the device workers of the GIL. Those partitions
go to a pool of spawned processes (:mod:`cuzk.engine.synth_pool`, ``synthesis_processes``; a
synthesis thread waits on each), which returns the witness through shared memory.

The hand-off between two workers of one device: the worker leaving the compute lock calls
``time.sleep(0)`` so the worker waking on the lock gets the GIL at once instead of after the
interpreter's 5 ms switch interval. Measured with ``cuzk bench`` (synthetic:400, one device, two
workers): median gap between one kernel region's end and the next one's start 4.2 ms without
it, 0.04–0.07 ms with it; device busy 90–94 % → 97.5–98 %.

Priority at the device: a partition already holding a device's compute lock always finishes
(kernels are not pre-emptible), but whoever waits for the lock next is served most urgent first
(:class:`PriorityLock`), and each device has one more worker, its urgent lane, that takes only
CRITICAL and HIGH partitions. Without them a WindowPoSt that became ready while both workers of
a device were busy with PoRep waited for two kernel regions: the one running, and the one the
other worker had already staged and was waiting to start (measured with ``cuzk bench --urgent``
on the CPU backend: 4.6 s of waiting behind 2.4 s kernel regions).

CPU "virtual devices": each device gets its own CpuBackend and hence its own MSM process pool
holding its own copy of the SRS, exactly as each GPU holds its own SRS in VRAM. One shared
pool would make the per-device compute lock meaningless (both devices' MSMs would interleave in
the same worker queues) and device busy time unmeasurable; the cost is K copies of the points
(budgeted) and K·W processes, with W = cores / K by default.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol

from cuzk.backend.base import Backend
from cuzk.engine.assembler import PartitionProof
from cuzk.engine.budget import kernel_bytes, tail_kernel_bytes
from cuzk.engine.config import EngineConfig
from cuzk.engine.family import family_of
from cuzk.engine.staging import PinnedPool, StagingArea
from cuzk.errors import DeviceFault, InternalError
from cuzk.groth16 import prover
from cuzk.groth16.proof import Proof

if TYPE_CHECKING:
    from cuzk.engine.job import Partition
    from cuzk.engine.srs import CircuitInfo, Resident
    from cuzk.engine.srs_entry import Placement
    from cuzk.engine.synth_pool import SynthesisPool
    from cuzk.field import fr

log = logging.getLogger(__name__)


class PriorityLock:
    """A lock whose waiters acquire it by (priority, arrival): the compute lock of a device,
    so that a CRITICAL partition waiting beside NORMAL ones is the next to run. Only threads
    actually waiting compete; the holder is never interrupted."""

    def __init__(self) -> None:
        self._cv = threading.Condition(threading.Lock())
        self._held = False
        self._waiting: list[tuple[int, int]] = []  # heap of (priority, arrival)
        self._arrival = itertools.count()

    @contextmanager
    def hold(self, priority: int) -> Iterator[None]:
        with self._cv:
            ticket = (priority, next(self._arrival))
            heapq.heappush(self._waiting, ticket)
            while self._held or self._waiting[0] != ticket:
                self._cv.wait()
            heapq.heappop(self._waiting)
            self._held = True
        try:
            yield
        finally:
            with self._cv:
                self._held = False
                self._cv.notify_all()


class Device:
    """One compute device: its backend (made for this device index), its compute lock, and in
    staging mode a staging lock with the :class:`StagingArea` staged partitions draw on."""

    def __init__(
        self,
        index: int,
        backend: Backend,
        staging: StagingArea | None = None,
        pinned_pool_bytes: int = 2 << 30,
        memory_total: int | None = None,
        memory_margin: int = 0,
    ) -> None:
        self.index = index
        self.backend = backend
        self.lock = PriorityLock()  # held only around the kernel region
        self.staging_lock = threading.Lock()  # held only around uploads (staging mode)
        self.staging = staging
        self.pinned = PinnedPool(backend.host_vector, pinned_pool_bytes)
        self.kernel_seconds = 0.0  # written by whoever holds the lock
        #: The device's memory, asked once at start-up (None: a CPU virtual device).
        self.memory_total = memory_total
        #: What the device keeps outside the engine's plan (MemoryInfo.margin).
        self.memory_margin = memory_margin

    def __repr__(self) -> str:
        return f"Device({self.index}, {self.backend.name})"


class Pipeline(Protocol):
    """What workers ask of the core; each call takes the engine lock briefly."""

    synth_pool: SynthesisPool | None
    config: EngineConfig

    def next_synthesis(self, worker: Worker) -> tuple[Partition, Placement | None] | None: ...
    def load_circuit(self, placement: Placement) -> None: ...
    def begin_synthesis(self, part: Partition) -> bool: ...
    def synthesized(self, part: Partition, assignment: prover.Assignment) -> None: ...
    def next_for_device(self, worker: DeviceWorker) -> Partition | None: ...
    def wait_resident(self, part: Partition) -> Resident | None: ...
    def abandon(self, part: Partition) -> None: ...
    def resident_device_bytes(self, info: CircuitInfo, device: int) -> int: ...
    def begin_kernels(self, part: Partition) -> bool: ...
    def end_kernels(self, part: Partition, device: Device, seconds: float) -> None: ...
    def kernels_done(self, part: Partition) -> bool: ...
    def partition_done(self, part: Partition, output: PartitionProof) -> None: ...
    def fail(self, part: Partition, error: BaseException, stage: str) -> None: ...
    def fault(self, kind: str, part: Partition) -> bool: ...
    @property
    def slow_kernel_s(self) -> float: ...


class Worker(threading.Thread):
    kind = "worker"

    def __init__(self, core: Pipeline, name: str, device: Device | None = None) -> None:
        super().__init__(name=name, daemon=True)
        self.core = core
        self.device = device
        self.busy_with: str | None = None  # partition label, for status

    def run(self) -> None:
        while True:
            try:
                if not self.step():
                    return
            except Exception:  # a worker must survive its own bugs
                log.exception("%s: unexpected error in the worker loop", self.name)
                time.sleep(0.05)
            finally:
                self.busy_with = None

    def step(self) -> bool:
        raise NotImplementedError


class SynthesisWorker(Worker):
    kind = "synthesis"

    def step(self) -> bool:
        task = self.core.next_synthesis(self)
        if task is None:
            return False
        part, to_load = task
        self.busy_with = part.label
        if to_load is not None:
            self.core.load_circuit(to_load)
        stage = "synthesis"
        try:
            if part.entry is not None and part.entry.error is not None:
                stage = "loading parameters"
                raise part.entry.error
            if not self.core.begin_synthesis(part):
                return True
            if self.core.fault("synthesis", part):
                raise InternalError("injected fault: synthesis failed")
            circuit, assignment = family_of(part.job.info).synthesize(
                part, self.core.synth_pool, self.core.config.synthesis_options
            )
            part.circuit = circuit
        except Exception as e:  # isolated to this job
            self.core.fail(part, e, stage)
            return True
        self.core.synthesized(part, assignment)
        return True


class DeviceWorker(Worker):
    """Takes synthesized partitions to its device: staging, the kernel region under the
    compute lock, assembly. ``urgent_only``: the device's urgent lane, which takes only
    partitions of priority HIGH or more urgent (and idles otherwise)."""

    kind = "device"

    def __init__(
        self, core: Pipeline, name: str, device: Device | None = None, *, urgent_only: bool = False
    ) -> None:
        super().__init__(core, name, device)
        self.urgent_only = urgent_only

    def step(self) -> bool:
        assert self.device is not None
        part = self.core.next_for_device(self)
        if part is None:
            return False
        self.busy_with = part.label
        stage = "loading parameters"
        device = self.device
        held = (0, 0)  # (staged inputs, kernel working set) reserved in the staging area
        lent = (0, 0)  # once lent: (staged inputs, the kernels' tail) the area counts instead
        staged: prover.StagedInputs | None = None
        buffers: tuple[fr.FrVec, ...] = ()  # staged's page-locked host buffers

        def witness_read() -> None:
            """z's last readers are done while H's MSM runs: free it, and let the device's
            next partition stage in its place (its bytes leave the staging area now)."""
            nonlocal staged, held, lent
            staged = None
            if device.staging is None:
                return
            if lent[0]:
                device.staging.release_tail(lent[0])
                lent = (0, lent[1])
            elif held[0]:
                device.staging.release_staged(held[0])
                held = (0, held[1])

        def h_done() -> None:
            """Under a cap, H's MSM ended while split MSMs still read z: the kernels now hold
            z and a tail of scratch, so lend the rest of the working set to the device's next
            partition, which may stage now instead of when the last split MSM ends."""
            nonlocal held, lent
            if device.staging is None or not held[1]:
                return
            info = part.job.info
            tail = tail_kernel_bytes(info.domain_size, info.backend)
            device.staging.lend(held[0], held[1], tail)
            held, lent = (0, 0), (held[0], tail)

        try:
            entry = self.core.wait_resident(part)
            if entry is None:  # its key could not come to this device: another takes it
                return True
            if device.staging is not None:
                stage = "staging"
                assert part.assignment is not None
                need = staging_need(part.job.info, self.core.config.capped)
                if not device.staging.reserve(
                    need[0],
                    lambda: part.job.terminal,
                    kernel_bytes=need[1],
                    resident_bytes=self.core.resident_device_bytes(part.job.info, device.index),
                ):
                    self.core.abandon(part)
                    return True
                held = need
                with device.staging_lock:
                    staged = self._stage(part, entry)
                    buffers = staged.host_buffers
            stage = "kernels"
            with device.lock.hold(part.job.request.priority):
                if not self.core.begin_kernels(part):
                    return True
                t0 = time.perf_counter()
                try:
                    if staged is None:
                        staged = self._stage(part, entry)
                        buffers = staged.host_buffers
                    lend = h_done if self.core.config.capped else None
                    sums, pending = self._kernels(part, entry, staged, witness_read, lend)
                finally:
                    self.core.end_kernels(part, device, time.perf_counter() - t0)
            time.sleep(0)  # hand the GIL to the worker now waking on the compute lock
            self._give_back(buffers, held, lent)
            staged, buffers, held, lent = None, (), (0, 0), (0, 0)
            if not self.core.kernels_done(part):
                return True
            stage = "finalize"
            proof = prover.assemble(pending, sums)
            if self.core.fault("bad_proof", part):
                proof = Proof(proof.a, proof.b, proof.a)  # well-formed, does not verify
        except Exception as e:  # isolated to this job
            self.core.fail(part, e, stage)
            return True
        finally:
            self._give_back(buffers, held, lent)
        output = PartitionProof(part.index, proof, tuple(pending.public_inputs))
        self.core.partition_done(part, output)
        return True

    def _stage(self, part: Partition, entry: Resident) -> prover.StagedInputs:
        """The partition's MSM scalars gathered into pinned buffers and handed to the backend."""
        assert self.device is not None and part.assignment is not None
        assert entry.shape is not None
        backend, pinned = self.device.backend, self.device.pinned
        return prover.stage(part.assignment, entry.shape, backend, pinned.take, part.timings)

    def _give_back(
        self, buffers: tuple[fr.FrVec, ...], held: tuple[int, int], lent: tuple[int, int]
    ) -> None:
        """Return pinned buffers, staged bytes and what was lent (idempotent through the
        caller's resets)."""
        assert self.device is not None
        for buf in buffers:
            self.device.pinned.give(buf)
        if self.device.staging is None:
            return
        if any(held):
            self.device.staging.release(held[0], kernel_bytes=held[1])
        if any(lent):
            self.device.staging.release_tail(sum(lent))

    def _kernels(
        self,
        part: Partition,
        entry: Resident,
        staged: prover.StagedInputs,
        witness_read: Callable[[], None],
        h_done: Callable[[], None] | None = None,
    ) -> tuple[prover.MsmSums, prover.PendingProof]:
        """The region under the compute lock: a/b/c, H, the five MSMs, and the wait for them
        (``witness_read`` once the witness's last readers are done, ``h_done`` if H's MSM
        ends before them: see :func:`cuzk.groth16.prover.wait_kernels`)."""
        assert self.device is not None
        assert entry.params is not None and entry.shape is not None
        if self.core.fault("slow_kernel", part):
            time.sleep(self.core.slow_kernel_s)
        backend = self.device.backend
        pending = prover.start(staged, entry.shape, entry.params, backend, part.circuit,
                               part.timings)  # fmt: skip
        del staged  # this frame must not keep z alive past witness_read
        try:
            sums = prover.wait_kernels(pending, witness_read, h_done)
        except BaseException:
            prover.drain(pending)  # the device's work ends here, not in the next partition's
            raise
        if self.core.fault("kernel", part):
            raise DeviceFault(f"injected fault: kernel failed on device {self.device.index}")
        return sums, pending


def staging_need(info: CircuitInfo, capped: bool = False) -> tuple[int, int]:
    """What a staged partition holds in its device's staging area until its kernels end:
    (its staged input on the device — z; the kernels' working set, which the area counts
    once per device because only the compute lock's holder uses it). ``capped``: the devices
    run under a memory cap (their kernels then hold less, see
    :func:`cuzk.engine.budget.capped_kernel_bytes`). The page-locked host buffer a witness made
    on the host is gathered into is host memory: the host budget counts it
    (:meth:`cuzk.engine.core.EngineCore.synthesized`)."""
    device, _ = prover.staged_bytes(info.num_variables)
    return device, kernel_bytes(info.domain_size, info.backend, capped)


def staged_bytes_for(info: CircuitInfo, capped: bool = False) -> int:
    """What one partition asks of a staging area: what it must fit alone, checked at submit
    and what a staging area grows to when the partition's key is placed on its device."""
    return sum(staging_need(info, capped))
