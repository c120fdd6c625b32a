"""The engine core: the job table, the one engine lock and the state machine over them.

Layering (after vLLM's engine core → scheduler → executor → worker): :mod:`~cuzk.engine.api`
is the facade that owns devices and threads; this core owns the job table and the lock;
:mod:`~cuzk.engine.scheduler` orders work; the budget and the SRS table do the memory
accounting; :mod:`~cuzk.engine.workers` computes; :mod:`~cuzk.engine.family` holds what
differs between key formats (bellperson ``.params``, snarkjs ``.zkey``). The core keeps
intake, admission and synthesis; three collaborators share its lock: the job table and what
each transition gives back (:mod:`~cuzk.engine.lifecycle`), the device half from READY to DONE
(:mod:`~cuzk.engine.device_side`) and the residency table's set-up
(:mod:`~cuzk.engine.residency`); a request is opened by :mod:`~cuzk.engine.intake` and the
status drawn by :mod:`~cuzk.engine.status_view`. One lock guards all engine state. Its
critical sections are short (no I/O, no compute), partitions pass at most a few hundred per
second, and a single lock makes the admission decision — head of the queue, memory budget,
look-ahead, residency — atomic. Every change that can make a waiter's predicate true is
followed by ``notify_all`` under that lock, and every wait is a predicate loop, so no wake-up
can be missed.

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
from collections.abc import Callable, Sequence
from functools import partial

from cuzk.circuits import canonical_id
from cuzk.engine.assembler import PartitionProof
from cuzk.engine.budget import MemoryBudget, detect_total
from cuzk.engine.config import EngineConfig
from cuzk.engine.device_side import DeviceSide
from cuzk.engine.family import family_for, family_of
from cuzk.engine.intake import check_job_id, open_request
from cuzk.engine.job import Job, Partition
from cuzk.engine.lifecycle import Lifecycle, failure
from cuzk.engine.opener import PayloadOpener
from cuzk.engine.request import (
    CANCELLED_BY_CLIENT,
    EngineStatus,
    JobCancelled,
    JobOutcome,
    JobResult,
    JobState,
    PartitionState,
    ProofRequest,
)
from cuzk.engine.residency import make_residency
from cuzk.engine.scheduler import Scheduler, WorkKey
from cuzk.engine.srs import CircuitInfo, Resident
from cuzk.engine.srs_entry import LOADING, RESIDENT, Placement
from cuzk.engine.status_view import engine_status
from cuzk.engine.synth_pool import SynthesisPool
from cuzk.engine.timeline import Clock
from cuzk.engine.workers import Device, DeviceWorker, Worker, staged_bytes_for
from cuzk.errors import BadInput, ResourceExhausted
from cuzk.groth16 import prover
from cuzk.r1cs.deferred import DeferredAux

log = logging.getLogger(__name__)

_RETRY = object()
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
        self._clock = clock
        self._devices = devices
        self._cv = threading.Condition()
        self._scheduler: Scheduler[Partition] = Scheduler()
        total = config.memory_budget or detect_total(config.memory_margin)
        self._budget = MemoryBudget(total)
        self._seq = itertools.count(1)
        self._accepting = True
        self._stop = False
        self._closed = False
        self._srs, self._staging_grows = make_residency(
            config, self._budget, devices, clock, self._partition_need
        )
        # The job table and the bookkeeping of every transition; the device half of the
        # pipeline. Both share this lock.
        self._life = Lifecycle(self._cv, clock, self._scheduler, self._budget, self._srs,
                               config.retain_jobs, on_terminal)  # fmt: skip
        self._device_side = DeviceSide(self._cv, self._life, self._scheduler, self._budget,
                                       self._srs, lambda: self._stop)  # fmt: skip
        # Large payloads are checked off this process's GIL where synthesis is too.
        self._opener = PayloadOpener() if config.processes_for_synthesis else None

    # -- the API's half (documented on Engine) ------------------------------------------------
    def submit(self, request: ProofRequest, job_id: str | None = None) -> str:
        if not isinstance(request, ProofRequest):
            raise BadInput(f"submit() takes a ProofRequest, got {type(request).__name__}")
        if job_id is not None:
            check_job_id(job_id)
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
        statement, info = open_request(request, self.config, self._opener)
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
            if job_id is not None and job_id in self._life.jobs:
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
            self._life.jobs[job.id] = job
            if dedup and request.request_id is not None:
                self._life.by_request[request.request_id] = job
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
            error = failure(job)
        raise error from job.error

    def cancel(self, job_id: str, reason: str = CANCELLED_BY_CLIENT) -> bool:
        job = self._job(job_id)
        with self._cv:
            if job.terminal:
                return False
            self._life.terminate(job, JobState.CANCELLED, JobCancelled(reason))
        return True

    def preload(self, circuit_id: str, timeout: float | None = None) -> None:
        circuit_id = canonical_id(circuit_id)
        info = self._info(circuit_id)
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cv:
            self._check_accepting()
            need = info.srs_bytes + info.shape_bytes
            self._srs.check_can_fit(
                info, need, f"the key of {circuit_id} (its points and matrices)"
            )
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
        with self._cv:
            return engine_status(self._clock(), self._accepting, self._life.jobs.values(),
                                 self._budget, self._srs, workers, devices)  # fmt: skip

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
                for job in list(self._life.jobs.values()):
                    if not job.terminal:
                        self._life.terminate(
                            job, JobState.CANCELLED, JobCancelled("the engine shut down")
                        )
            drained = time.monotonic() + self.config.join_timeout_s
            if not self._wait(lambda: self._life.active == 0, drained, raise_on_timeout=False):
                log.error("shutdown: %d partitions still in flight", self._life.active)
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
            job = self._life.jobs.get(job_id)
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
        job = self._life.by_request.get(request.request_id)
        if job is not None and job.digest != digest:
            raise BadInput(
                f"request id {request.request_id!r} was already used for another payload "
                f"({job.id}: {job.request.circuit_id} × {job.statement.partitions})"
            )
        return job

    def _all_finished(self) -> bool:
        return self._life.active == 0 and all(j.terminal for j in self._life.jobs.values())

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
                if self._life.in_synthesis + self._scheduler.ready_count < self.config.lookahead:
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
            self._life.fail_job(
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
        self._life.active += 1
        self._life.in_synthesis += 1
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
                self._life.release(part, PartitionState.DISCARDED)
                return False
            self._life.stamp(part, "synth_start")
            span = part.entry.load_span if part.entry is not None else None
            if span is not None:  # the load this partition ran, or one it found running
                lo = max(span[0], part.marks["queued"])
                part.srs_wait = max(0.0, min(span[1], part.marks["synth_start"]) - lo)
            return True

    def synthesized(self, part: Partition, assignment: prover.Assignment) -> None:
        with self._cv:
            self._life.stamp(part, "synth_end")
            if part.job.terminal:
                self._life.release(part, PartitionState.DISCARDED)
                return
            self._life.in_synthesis -= 1
            part.assignment = assignment
            if not isinstance(assignment.aux, DeferredAux) and part.reservation is not None:
                # the (page-locked) host buffers its MSM scalars will be gathered into; may
                # briefly exceed the budget, which admission then waits out
                host = prover.staged_bytes(part.job.info.num_variables)[1]
                self._budget.resize(part.reservation, "staged", host)
            part.state = PartitionState.READY
            self._scheduler.push_ready(part.key, part)
            self._cv.notify_all()

    def _partition_need(self, info: CircuitInfo) -> int:
        """What one partition of ``info`` asks of a device's staging area."""
        return staged_bytes_for(info, self.config.capped)

    def fail(self, part: Partition, error: BaseException, stage: str) -> None:
        with self._cv:
            self._life.fail(part, error, stage)

    # -- the device half, kept by DeviceSide under this lock (documented there) ---------------
    def next_for_device(self, worker: DeviceWorker) -> Partition | None:
        return self._device_side.next_for_device(worker)

    def wait_resident(self, part: Partition) -> Resident | None:
        return self._device_side.wait_resident(part)

    def abandon(self, part: Partition) -> None:
        self._device_side.abandon(part)

    def resident_device_bytes(self, info: CircuitInfo, device: int) -> int:
        return self._device_side.resident_device_bytes(info, device)

    def begin_kernels(self, part: Partition) -> bool:
        return self._device_side.begin_kernels(part)

    def end_kernels(self, part: Partition, device: Device, seconds: float) -> None:
        self._device_side.end_kernels(part, device, seconds)

    def kernels_done(self, part: Partition) -> bool:
        return self._device_side.kernels_done(part)

    def partition_done(self, part: Partition, output: PartitionProof) -> None:
        self._device_side.partition_done(part, output)


def _not_loading(entry: Resident) -> bool:
    return entry.state != LOADING
