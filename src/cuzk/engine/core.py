"""The engine core: the job table, the one engine lock and every state transition.

Layering (after vLLM's engine core → scheduler → executor → worker): :mod:`~cuzk.engine.api`
is the facade that owns devices and threads; this core owns the job table and the lock;
:mod:`~cuzk.engine.scheduler` orders work; the budget and the SRS table do the memory
accounting; :mod:`~cuzk.engine.workers` computes; :mod:`~cuzk.engine.family` holds what
differs between key formats (bellperson ``.params``, snarkjs ``.zkey``). One lock guards
all engine state. Its critical sections are short (no I/O, no compute), partitions pass at
most a few hundred per second, and a single lock makes the admission decision — head of the
queue, memory budget, look-ahead, residency — atomic. Every change that can make a waiter's
predicate true is followed by ``notify_all`` under that lock, and every wait is a predicate
loop, so no wake-up can be missed.

A partition's path: QUEUED → (admitted: memory reserved, residency pinned) SYNTHESIZING → READY
→ DEVICE_WAIT → KERNELS → (kernel memory released) FINALIZING → (the rest released) DONE. Any
exception fails the partition's job only: its queued partitions are skipped, ready ones are
discarded with their memory returned, running ones finish their current stage and are
discarded at the next boundary. Cancellation takes the same path. When the last partition is
done, the thread that finished it verifies the whole job (outside the lock) before the job
can succeed.

Every job becomes terminal exactly once, and at that moment (under the lock) its
:class:`~cuzk.engine.request.JobOutcome` is posted to ``on_terminal`` — the API's completion
queue, which never blocks — so a client learns of every outcome without a thread per job.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from cuzk.circuits import canonical_id
from cuzk.engine.assembler import PartitionProof, assemble_job
from cuzk.engine.budget import (
    MemoryBudget,
    default_staging_bytes,
    detect_total,
    device_key_budget,
)
from cuzk.engine.config import EngineConfig
from cuzk.engine.family import family_for, family_of
from cuzk.engine.job import ACTIVE, Job, Partition
from cuzk.engine.opener import PayloadOpener
from cuzk.engine.request import (
    CANCELLED_BY_CLIENT,
    EngineStatus,
    JobCancelled,
    JobOutcome,
    JobResult,
    JobState,
    PartitionState,
    Priority,
    ProofRequest,
)
from cuzk.engine.scheduler import Scheduler, WorkKey
from cuzk.engine.srs import (
    DRAINING,
    LOADING,
    RESIDENT,
    CircuitInfo,
    Placement,
    Resident,
    SrsManager,
)
from cuzk.engine.status_view import (
    budget_status,
    device_statuses,
    srs_statuses,
    worker_statuses,
)
from cuzk.engine.synth_pool import SynthesisPool
from cuzk.engine.timeline import Clock
from cuzk.engine.workers import Device, DeviceWorker, Worker, staged_bytes_for
from cuzk.errors import (
    BadInput,
    BadPayload,
    CuzkError,
    DeviceFault,
    InternalError,
    ResourceExhausted,
)
from cuzk.groth16 import prover
from cuzk.r1cs.deferred import DeferredAux

log = logging.getLogger(__name__)

_CATEGORIES = (BadInput, ResourceExhausted, DeviceFault, InternalError, JobCancelled)
_RETRY = object()
MAX_JOB_ID_LEN = 128
URGENT = Priority.HIGH  # the least urgent priority a device's urgent lane takes
_WAIT_SLICE_S = 3600.0  # the longest single condition wait; the predicate is checked again


class EngineCore:
    """Engine state and its transitions; :class:`cuzk.engine.api.Engine` is the facade that
    owns the devices and threads and calls in here."""

    def __init__(
        self,
        config: EngineConfig,
        clock: Clock,
        devices: list[Device],
        synth_pool: SynthesisPool | None = None,
        on_terminal: Callable[[JobOutcome], None] | None = None,
    ) -> None:
        self.config = config
        self.synth_pool = synth_pool  # witnesses of Python-heavy circuits, in processes
        self._on_terminal = on_terminal  # called under the lock: must never block
        self._clock = clock
        self._devices = devices
        self._cv = threading.Condition()
        self._scheduler: Scheduler[Partition] = Scheduler()
        total = config.memory_budget or detect_total(config.memory_margin)
        self._budget = MemoryBudget(total)
        self._jobs: dict[str, Job] = {}
        self._by_request: dict[str, Job] = {}
        self._retired: deque[Job] = deque()  # terminal jobs, oldest first
        self._seq = itertools.count(1)
        self._active = 0  # partitions in ACTIVE states, all jobs
        self._in_synthesis = 0  # partitions SYNTHESIZING (for the look-ahead)
        self._accepting = True
        self._stop = False
        self._closed = False
        key_budgets = _key_budgets(devices)
        growable = key_budgets is not None and config.staging and config.staging_budget is None
        self._srs = SrsManager(
            self._budget,
            [d.backend for d in devices],
            config.shape_cache,
            clock,
            key_budgets,
            config.msm_copies,
            [d.staging for d in devices] if growable else (),
            self._partition_need,
        )
        self._staging_grows = growable
        # Large payloads are checked off this process's GIL where synthesis is too.
        self._opener = PayloadOpener() if config.processes_for_synthesis else None

    # -- the API's half (documented on Engine) ------------------------------------------------
    def submit(self, request: ProofRequest, job_id: str | None = None) -> str:
        if not isinstance(request, ProofRequest):
            raise BadInput(f"submit() takes a ProofRequest, got {type(request).__name__}")
        if job_id is not None:
            _check_job_id(job_id)
        circuit_id = canonical_id(request.circuit_id)  # one spelling keys files and residency
        if circuit_id != request.circuit_id:
            request = dataclasses.replace(request, circuit_id=circuit_id)
        if request.seeds and len(request.seeds) > self.config.max_partitions:
            raise BadInput(
                f"{len(request.seeds)} partitions exceed the limit of "
                f"{self.config.max_partitions} per request"
            )
        digest = request.payload_digest()
        dedup = job_id is None  # a caller naming its jobs deduplicates its request ids itself
        with self._cv:
            self._check_accepting()
            existing = self._dedup(request, digest) if dedup else None
            if existing is not None:
                return existing.id
        # Parsing a payload (a C1 output can be tens of MB) happens outside the lock.
        statement, info = _open(request, self.config, self._opener)
        if statement.partitions > self.config.max_partitions:
            raise BadInput(
                f"{statement.partitions} partitions exceed the limit of "
                f"{self.config.max_partitions} per request"
            )
        with self._cv:
            self._check_accepting()
            existing = self._dedup(request, digest) if dedup else None  # a twin may have won
            if existing is not None:
                return existing.id
            if job_id is not None and job_id in self._jobs:
                raise BadInput(f"job id {job_id!r} is already in use")
            self._srs.check_can_fit(
                info,
                info.srs_bytes + info.shape_bytes + sum(info.partition_parts.values()),
                f"a partition of {request.circuit_id} (with its parameters resident)",
            )
            seq = next(self._seq)
            staged = self._partition_need(info)
            for d in self._devices:
                if d.staging is not None and staged and not self._staging_grows:
                    d.staging.check_can_fit(staged, f"a partition of {request.circuit_id}")
            job = Job(job_id or f"job-{seq}", seq, request, digest, info, statement)
            now = self._clock()
            for i in range(statement.partitions):
                part = Partition(job, i)
                part.marks["queued"] = now
                job.parts.append(part)
                self._scheduler.enqueue(part.key, part)
            self._jobs[job.id] = job
            if dedup and request.request_id is not None:
                self._by_request[request.request_id] = job
            self._cv.notify_all()
        log.debug(
            "submitted %s: %s × %d (%s)",
            job.id,
            request.circuit_id,
            statement.partitions,
            request.priority.name,
        )
        return job.id

    def result(self, job_id: str, timeout: float | None = None) -> JobResult:
        job = self._job(job_id)
        if not job.done.wait(timeout):
            raise TimeoutError(f"{job_id} has not finished after {timeout} s")
        with self._cv:
            if job.state is JobState.SUCCEEDED and job.result is not None:
                return job.result
            failure = _failure(job)
        raise failure from job.error

    def cancel(self, job_id: str, reason: str = CANCELLED_BY_CLIENT) -> bool:
        job = self._job(job_id)
        with self._cv:
            if job.terminal:
                return False
            self._terminate(job, JobState.CANCELLED, JobCancelled(reason))
        return True

    def preload(self, circuit_id: str, timeout: float | None = None) -> None:
        circuit_id = canonical_id(circuit_id)
        info = self._info(circuit_id)
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cv:
            self._check_accepting()
            need = info.srs_bytes + info.shape_bytes
            self._srs.check_can_fit(info, need, f"the parameters of {circuit_id}")
            while True:
                entry = self._srs.get(circuit_id)
                if entry is not None and entry.state == LOADING:  # elsewhere: wait for it
                    self._wait(partial(_not_loading, entry), deadline, "preload")
                    if entry.error is not None:
                        raise entry.error
                    continue
                if entry is not None or self._srs.make_room(need, circuit_id):
                    placement = self._placement(info, entry)
                    if placement is not None:
                        break  # to every device with room for it now
                    if entry is not None and entry.placed:
                        self._srs.touch(entry)
                        return  # on the devices that could take it
                self._wait(lambda: False, deadline, "preload", once=True)
        self.load_circuit(placement)
        if placement.entry.error is not None:
            raise placement.entry.error

    def evict(self, circuit_id: str) -> bool:
        try:
            circuit_id = canonical_id(circuit_id)
        except BadInput:
            return False  # no such circuit, so nothing of it is resident
        with self._cv:
            entry = self._srs.get(circuit_id)
            if entry is None or entry.state != RESIDENT or entry.users:
                return False
            if LOADING in entry.placed.values():
                return False  # still going to a device
            self._srs.drop(entry)
            self._cv.notify_all()
            return True

    def snapshot(self, workers: Sequence[Worker], devices: Sequence[Device]) -> EngineStatus:
        budgets = self._srs.device_budgets
        with self._cv:
            counts = {p.name: Counter[str]() for p in Priority}
            parts: Counter[str] = Counter()
            for job in self._jobs.values():
                counts[job.request.priority.name][job.state.value] += 1
                for p in job.parts:
                    parts[p.state.value] += 1
            return EngineStatus(
                uptime=self._clock(),
                accepting=self._accepting,
                counts={k: {s.value: c[s.value] for s in JobState} for k, c in counts.items()},
                partitions={s.value: parts[s.value] for s in PartitionState},
                jobs=tuple(j.snapshot() for j in self._jobs.values()),
                budget=budget_status(self._budget),
                srs=srs_statuses(self._srs.entries()),
                evictions=self._srs.evictions,
                workers=worker_statuses(workers),
                devices=device_statuses(devices, budgets),
                device_budgets=tuple(budget_status(b) for b in budgets or ()),
            )

    def stop(self, graceful: bool, timeout: float | None) -> bool:
        """First half of shutdown: close intake, finish (or cancel) jobs, wait for in-flight
        partitions to drain, then tell the workers to exit. False if already stopped."""
        with self._cv:
            if self._closed:
                return False
            self._closed = True
            self._accepting = False
            self._cv.notify_all()
            deadline = None if timeout is None else time.monotonic() + timeout
            if graceful and not self._wait(self._all_finished, deadline, raise_on_timeout=False):
                log.warning("shutdown: jobs still running after %s s; cancelling them", timeout)
                graceful = False
            if not graceful:
                for job in list(self._jobs.values()):
                    if not job.terminal:
                        self._terminate(
                            job, JobState.CANCELLED, JobCancelled("the engine shut down")
                        )
            drained = time.monotonic() + self.config.join_timeout_s
            if not self._wait(lambda: self._active == 0, drained, raise_on_timeout=False):
                log.error("shutdown: %d partitions still in flight", self._active)
            self._stop = True
            self._cv.notify_all()
            return True

    def drop_residency(self) -> None:
        """Second half of shutdown (after the workers exited): evict every circuit and stop
        the payload opener."""
        with self._cv:
            for entry in self._srs.entries():
                self._srs.drop(entry)
        if self._opener is not None:
            self._opener.close()

    @property
    def budget_live_reservations(self) -> int:
        with self._cv:
            return self._budget.live_reservations

    # -- helpers (engine lock held unless said otherwise) -----------------------------------------
    def _job(self, job_id: str) -> Job:
        with self._cv:
            job = self._jobs.get(job_id)
        if job is None:
            raise BadInput(f"unknown job {job_id!r} (never submitted, or forgotten)")
        return job

    def _info(self, circuit_id: str) -> CircuitInfo:
        return family_for(circuit_id).info(circuit_id, self.config)

    def _check_accepting(self) -> None:
        if not self._accepting:
            raise ResourceExhausted("the engine is shutting down and accepts no new work")

    def _dedup(self, request: ProofRequest, digest: str) -> Job | None:
        if request.request_id is None:
            return None
        job = self._by_request.get(request.request_id)
        if job is not None and job.digest != digest:
            raise BadInput(
                f"request id {request.request_id!r} was already used for another payload "
                f"({job.id}: {job.request.circuit_id} × {job.statement.partitions})"
            )
        return job

    def _all_finished(self) -> bool:
        return self._active == 0 and all(j.terminal for j in self._jobs.values())

    def _wait(
        self,
        predicate: Callable[[], bool],
        deadline: float | None,
        what: str = "",
        *,
        raise_on_timeout: bool = True,
        once: bool = False,
    ) -> bool:
        """Predicate loop on the engine condition; ``once`` waits for one notification."""
        while once or not predicate():
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                if raise_on_timeout:
                    raise TimeoutError(f"{what}: timed out")
                return False
            # (capped: a wait longer than threading.TIMEOUT_MAX raises OverflowError, and an
            # infinite shutdown timeout means "until the jobs finish")
            self._cv.wait(None if remaining is None else min(remaining, _WAIT_SLICE_S))
            if once:
                return True
        return True

    def _stamp(self, part: Partition, mark: str) -> None:
        part.marks[mark] = self._clock()

    def _terminate(
        self, job: Job, state: JobState, error: BaseException, text: str | None = None
    ) -> None:
        job.state, job.error = state, error
        job.error_text = text or str(error)
        queued, ready = self._scheduler.drop_job(job.seq)
        for p in queued:
            p.state = PartitionState.SKIPPED
        for p in ready:
            self._release(p, PartitionState.DISCARDED)
        self._retire(job)
        self._ended(job)
        self._cv.notify_all()

    def _ended(self, job: Job) -> None:
        """A job just became terminal: wake its waiters and post its outcome."""
        job.done.set()
        if self._on_terminal is None:
            return
        ok = job.state is JobState.SUCCEEDED
        req = job.request
        result, error = (job.result, None) if ok else (None, _failure(job))
        self._on_terminal(
            JobOutcome(job.id, req.request_id, req.circuit_id, job.state, result, error)
        )

    def _unbind(self, part: Partition) -> None:
        """The partition no longer needs its key on its device: a place being given up there
        (:meth:`SrsManager.drain_for`) goes with the last such partition."""
        d, entry = part.on_device, part.entry
        if d is None or entry is None:
            return
        part.on_device = None
        entry.bound[d] -= 1
        if entry.placed.get(d) == DRAINING and not entry.bound[d]:
            self._srs.unplace(entry, d)
            self._cv.notify_all()

    def _release(self, part: Partition, final: PartitionState) -> None:
        """The one exit from the active states: give back memory and the residency pin."""
        if part.state in ACTIVE:
            self._active -= 1
        if part.state is PartitionState.SYNTHESIZING:
            self._in_synthesis -= 1
        self._budget.release(part.reservation)
        part.reservation = None
        self._unbind(part)
        if part.entry is not None:
            part.entry.users -= 1
            self._srs.touch(part.entry)
            part.entry = None
        part.assignment = part.circuit = None
        part.state = final
        self._cv.notify_all()

    def _retire(self, job: Job) -> None:
        """Remember at most ``retain_jobs`` finished jobs (and their request ids)."""
        self._retired.append(job)
        while len(self._retired) > self.config.retain_jobs:
            old = self._retired.popleft()
            self._jobs.pop(old.id, None)
            if self._by_request.get(old.request.request_id or "") is old:
                # why the ignore below: the get() above matched, so request_id is set
                del self._by_request[old.request.request_id]  # type: ignore[arg-type]

    # -- the pipeline (called by workers) ---------------------------------------------------------
    def fault(self, kind: str, part: Partition) -> bool:
        return self.config.faults.fires(kind, part.job.request_key, part.index)

    @property
    def slow_kernel_s(self) -> float:
        return self.config.faults.slow_kernel_s

    def next_synthesis(self, worker: Worker) -> tuple[Partition, Placement | None] | None:
        """Block until the head of the queue may be admitted; None when stopping."""
        with self._cv:
            while True:
                if self._stop:
                    return None
                if self._in_synthesis + self._scheduler.ready_count < self.config.lookahead:
                    head = self._scheduler.head()
                    if head is not None:
                        admitted = self._admit(*head)
                        if admitted is _RETRY:
                            continue  # the head's job failed at admission: look again
                        if admitted is not None:
                            # why the ignore below: _RETRY was handled above: what is left is a
                            # (partition, placement) pair
                            return admitted  # type: ignore[return-value]
                self._cv.wait()

    def _admit(
        self, key: WorkKey, part: Partition
    ) -> tuple[Partition, Placement | None] | object | None:
        """Admit the head (returns it and the entry this thread must load, if any), leave it
        waiting for memory (None), or fail its job at admission (_RETRY)."""
        job, info = part.job, part.job.info
        if self.fault("budget", part):
            self._scheduler.admit(lambda *_: True)
            part.state = PartitionState.FAILED
            self._fail_job(
                job, part, "admission", ResourceExhausted("injected fault: memory budget exhausted")
            )
            return _RETRY
        entry = self._srs.get(info.circuit_id)
        need = self._srs.residency_need(info) + sum(info.partition_parts.values())
        if not self._srs.make_room(need, info.circuit_id):
            return None  # wait: running partitions will release memory
        somewhere = entry is not None and (
            entry.state == LOADING or any(entry.takes(d) for d in entry.placed)
        )
        placement = self._placement(info, entry)
        if placement is None and not somewhere:
            self._srs.drain_for(info)  # a device gives up a busy key that lives elsewhere too
            return None  # wait: partitions on the devices will end
        self._scheduler.admit(lambda *_: True)
        if entry is None:
            assert placement is not None
            entry = placement.entry
        entry.users += 1
        self._srs.touch(entry)
        part.entry = entry
        part.reservation = self._budget.reserve("partition", part.label, info.partition_parts)
        part.state = PartitionState.SYNTHESIZING
        self._active += 1
        self._in_synthesis += 1
        if job.state is JobState.QUEUED:
            job.state = JobState.RUNNING
        return part, placement

    def _placement(self, info: CircuitInfo, entry: Resident | None) -> Placement | None:
        """(Lock held, host memory made room for.) Put ``info``'s key on every device that has
        room for it now, or None: no device has, or its first load is still choosing."""
        if entry is not None and entry.state == LOADING:
            return None
        devices = self._srs.room_on(info, entry)
        if not devices:
            return None
        first = entry is None
        if entry is None:
            entry = self._srs.begin(info)
        return self._srs.place(entry, devices, first)

    def load_circuit(self, placement: Placement) -> None:
        """Run a placement's load (outside the lock) and publish the outcome."""
        entry = placement.entry
        started = self._clock()
        family = family_of(entry.info)
        outcome = self._srs.load_placement(
            placement, lambda devices: family.load(self._srs, entry.info, devices)
        )
        with self._cv:
            if placement.first:
                entry.load_span = (started, self._clock())
            self._srs.finish(placement, outcome)
            self._cv.notify_all()

    def begin_synthesis(self, part: Partition) -> bool:
        with self._cv:
            if part.job.terminal:
                self._release(part, PartitionState.DISCARDED)
                return False
            self._stamp(part, "synth_start")
            span = part.entry.load_span if part.entry is not None else None
            if span is not None:  # the load this partition ran, or one it found running
                lo = max(span[0], part.marks["queued"])
                part.srs_wait = max(0.0, min(span[1], part.marks["synth_start"]) - lo)
            return True

    def synthesized(self, part: Partition, assignment: prover.Assignment) -> None:
        with self._cv:
            self._stamp(part, "synth_end")
            if part.job.terminal:
                self._release(part, PartitionState.DISCARDED)
                return
            self._in_synthesis -= 1
            part.assignment = assignment
            if not isinstance(assignment.aux, DeferredAux) and part.reservation is not None:
                # the (page-locked) host buffers its MSM scalars will be gathered into; may
                # briefly exceed the budget, which admission then waits out
                host = prover.staged_bytes(part.job.info.num_variables)[1]
                self._budget.resize(part.reservation, "staged", host)
            part.state = PartitionState.READY
            self._scheduler.push_ready(part.key, part)
            self._cv.notify_all()

    def next_for_device(self, worker: DeviceWorker) -> Partition | None:
        with self._cv:
            while True:
                if self._stop:
                    return None
                assert worker.device is not None
                d = worker.device.index
                part = self._scheduler.pop_ready(
                    URGENT if worker.urgent_only else None, partial(_runs_on, d)
                )
                if part is None:
                    self._cv.wait()
                    continue
                part.state = PartitionState.DEVICE_WAIT
                part.device, part.worker = d, worker.name
                if part.entry is not None:  # the key stays on this device while it runs
                    part.entry.bound[d] += 1
                    part.on_device = d
                self._stamp(part, "device_pick")
                self._cv.notify_all()  # the look-ahead has room again
                return part

    def wait_resident(self, part: Partition) -> Resident | None:
        """The partition's key, once loaded on its device; None when that load failed while
        the key stays on other devices (the partition went back to the ready queue)."""
        with self._cv:
            entry, d = part.entry, part.on_device
            if entry is None or d is None:
                raise InternalError(f"{part.label} reached a device without a residency pin")
            self._wait(lambda: entry.state != LOADING and entry.placed.get(d) != LOADING, None)
            if entry.error is not None:
                raise entry.error
            if d not in entry.placed:
                self._unbind(part)
                part.state = PartitionState.READY
                self._scheduler.push_ready(part.key, part)
                self._cv.notify_all()
                return None
            if part.job.vk is None and entry.params is not None:
                part.job.vk = entry.params.vk
            return entry

    def abandon(self, part: Partition) -> None:
        """A device worker gave up on a partition whose job ended while it waited to stage."""
        with self._cv:
            self._release(part, PartitionState.DISCARDED)

    def _partition_need(self, info: CircuitInfo) -> int:
        """What one partition of ``info`` asks of a device's staging area."""
        return staged_bytes_for(info, self.config.capped)

    def resident_device_bytes(self, info: CircuitInfo, device: int) -> int:
        """What resident parameters hold on ``device`` now: every key there when the devices
        have key budgets, else ``info``'s own (a staging decision's input)."""
        with self._cv:
            budgets = self._srs.device_budgets
            return budgets[device].reserved if budgets else info.point_bytes

    def begin_kernels(self, part: Partition) -> bool:
        with self._cv:
            if part.job.terminal:
                self._release(part, PartitionState.DISCARDED)
                return False
            part.state = PartitionState.KERNELS
            self._stamp(part, "kernels_start")
            return True

    def end_kernels(self, part: Partition, device: Device, seconds: float) -> None:
        with self._cv:
            self._stamp(part, "kernels_end")
            device.kernel_seconds += seconds

    def kernels_done(self, part: Partition) -> bool:
        """First release step: the kernel working set goes back now, and the key's place on
        the device is no longer needed by this partition."""
        with self._cv:
            self._budget.release(part.reservation, "kernel")
            self._budget.release(part.reservation, "staged")
            self._unbind(part)
            part.assignment = part.circuit = None
            self._cv.notify_all()
            if part.job.terminal:
                self._release(part, PartitionState.DISCARDED)
                return False
            part.state = PartitionState.FINALIZING
            return True

    def partition_done(self, part: Partition, output: PartitionProof) -> None:
        """Second release step; the thread finishing a job's last partition verifies it."""
        job = part.job
        with self._cv:
            self._stamp(part, "finalize_end")
            if job.terminal:
                self._release(part, PartitionState.DISCARDED)
                return
            part.output = output
            self._release(part, PartitionState.DONE)
            if not all(p.state is PartitionState.DONE for p in job.parts):
                return
            vk = job.vk
        try:
            if vk is None:
                raise InternalError("no verifying key was recorded for the job")
            proof, inputs = assemble_job(
                vk, [p.output for p in job.parts], family_of(job.info).unverified
            )
        except Exception as e:  # the job fails, nothing is returned
            with self._cv:
                if not job.terminal:
                    self._terminate(job, JobState.FAILED, e, f"verification: {e}")
            return
        with self._cv:
            if job.terminal:  # cancelled while verifying
                return
            job.result = JobResult(
                job.id,
                job.request.request_id,
                job.request.circuit_id,
                proof,
                inputs,
                str(job.info.vk_path),
                tuple(p.timeline() for p in job.parts),
                _srs_wait(job),
            )
            for p in job.parts:
                p.output = None
            job.state = JobState.SUCCEEDED
            self._retire(job)
            self._ended(job)
            self._cv.notify_all()

    def fail(self, part: Partition, error: BaseException, stage: str) -> None:
        with self._cv:
            job = part.job
            if job.terminal:
                self._release(part, PartitionState.DISCARDED)
                return
            self._release(part, PartitionState.FAILED)
            self._fail_job(job, part, stage, error)

    def _fail_job(self, job: Job, part: Partition, stage: str, error: BaseException) -> None:
        text = f"partition {part.index} ({stage}): {type(error).__name__}: {error}"
        if not isinstance(error, CuzkError):
            log.error("%s: %s", part.label, text, exc_info=error)
        self._terminate(job, JobState.FAILED, error, text)


def _failure(job: Job) -> CuzkError:
    """The error a failed or cancelled job reports: its cause's category, else InternalError."""
    category = next((c for c in _CATEGORIES if isinstance(job.error, c)), InternalError)
    return category(f"{job.id} {job.state.value}: {job.error_text}")


def _check_job_id(job_id: object) -> None:
    if (
        not isinstance(job_id, str)
        or not 0 < len(job_id) <= MAX_JOB_ID_LEN
        or not job_id.isprintable()
    ):
        raise BadInput(f"a job id must be 1–{MAX_JOB_ID_LEN} printable characters, got {job_id!r}")


def _srs_wait(job: Job) -> float:
    """The job's share of its queue wait spent on its parameters loading: that of the
    partition whose synthesis started first (the end of the job's queue wait)."""
    started = [p for p in job.parts if "synth_start" in p.marks]
    return min(started, key=lambda p: p.marks["synth_start"]).srs_wait if started else 0.0


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


def _runs_on(device: int, part: Partition) -> bool:
    """A ready partition may go to ``device`` (its key is there or on its way)."""
    return part.entry is None or part.entry.takes(device)


def _not_loading(entry: Resident) -> bool:
    return entry.state != LOADING


# What reading untrusted bytes raises besides our own errors (a parser meeting input it did not
# expect); never an internal error for the engine's caller.
_PARSE_ERRORS = (ValueError, RecursionError, OverflowError, TypeError, KeyError, IndexError)


def _open(
    request: ProofRequest, config: EngineConfig, opener: PayloadOpener | None = None
) -> tuple[Any, Any]:
    """The family's statement and circuit info for a request (a large bellperson-family
    payload parsed by ``opener``, off this process's GIL); a payload that makes its parser
    fail in any way is BadPayload (logged with its traceback at debug level)."""
    family = family_for(request.circuit_id)
    try:
        # (the bellperson family's open is open_statement, then the key's info)
        if opener is not None and opener.wants(request.payload) and family.name == "bellperson":
            statement = opener.statement(request.circuit_id, request.seeds, request.payload)
            if statement is not None:
                return statement, family.info(request.circuit_id, config)
        return family.open(request, config)
    except CuzkError:
        raise
    except _PARSE_ERRORS as e:
        if not request.payload:
            raise
        log.debug("payload of %s does not parse", request.circuit_id, exc_info=True)
        raise BadPayload(
            f"{request.circuit_id}: the payload does not parse ({type(e).__name__}: {e})"[:500]
        ) from None
