"""The bookkeeping every transition shares: the job table, the counts of partitions in
flight, a partition's one exit from the active states and a job's one terminal moment.

:class:`~cuzk.engine.core.EngineCore` and its device side
(:class:`~cuzk.engine.device_side.DeviceSide`) decide *when* a partition moves; this module
says what moving costs and gives back, so those stay readable as a state machine. Every method
runs with the engine lock held: the condition given here is the core's, and each change a
waiter may be waiting for is followed by ``notify_all`` on it.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable

from cuzk.engine.budget import MemoryBudget
from cuzk.engine.job import ACTIVE, Job, Partition
from cuzk.engine.request import JobCancelled, JobOutcome, JobResult, JobState, PartitionState
from cuzk.engine.scheduler import Scheduler
from cuzk.engine.srs import SrsManager
from cuzk.engine.srs_entry import DRAINING
from cuzk.engine.timeline import Clock
from cuzk.errors import (
    BadInput,
    CuzkError,
    DeviceFault,
    InternalError,
    ResourceExhausted,
    without_frames,
)

log = logging.getLogger(__name__)

# The categories a failed job's error keeps; anything else reports as InternalError.
_CATEGORIES = (BadInput, ResourceExhausted, DeviceFault, InternalError, JobCancelled)


class Lifecycle:
    """The records the transitions update (engine lock held for every call)."""

    def __init__(
        self,
        cv: threading.Condition,
        clock: Clock,
        scheduler: Scheduler[Partition],
        budget: MemoryBudget,
        srs: SrsManager,
        retain_jobs: int,
        on_terminal: Callable[[JobOutcome], None] | None,
    ) -> None:
        self._cv = cv
        self._clock = clock
        self._scheduler = scheduler
        self._budget = budget
        self._srs = srs
        self._retain_jobs = retain_jobs
        self._on_terminal = on_terminal  # called under the lock: must never block
        self.jobs: dict[str, Job] = {}
        self.by_request: dict[str, Job] = {}
        self._retired: deque[Job] = deque()  # terminal jobs, oldest first
        self.active = 0  # partitions in ACTIVE states, all jobs
        self.in_synthesis = 0  # partitions SYNTHESIZING (for the look-ahead)

    def stamp(self, part: Partition, mark: str) -> None:
        part.marks[mark] = self._clock()

    def unbind(self, part: Partition) -> None:
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

    def release(self, part: Partition, final: PartitionState) -> None:
        """The one exit from the active states: give back memory and the residency pin."""
        if part.state in ACTIVE:
            self.active -= 1
        if part.state is PartitionState.SYNTHESIZING:
            self.in_synthesis -= 1
        self._budget.release(part.reservation)
        part.reservation = None
        self.unbind(part)
        if part.entry is not None:
            part.entry.users -= 1
            self._srs.touch(part.entry)
            part.entry = None
        part.assignment = part.circuit = None
        part.state = final
        self._cv.notify_all()

    def fail(self, part: Partition, error: BaseException, stage: str) -> None:
        """A partition's stage raised: its job fails (unless it already ended)."""
        job = part.job
        if job.terminal:
            self.release(part, PartitionState.DISCARDED)
            return
        self.release(part, PartitionState.FAILED)
        self.fail_job(job, part, stage, error)

    def fail_job(self, job: Job, part: Partition, stage: str, error: BaseException) -> None:
        text = f"partition {part.index} ({stage}): {type(error).__name__}: {error}"
        if not isinstance(error, CuzkError):
            log.error("%s: %s", part.label, text, exc_info=error)
        self.terminate(job, JobState.FAILED, error, text)

    def terminate(
        self, job: Job, state: JobState, error: BaseException, text: str | None = None
    ) -> None:
        """Fail or cancel ``job``: queued partitions are skipped, ready ones discarded with
        their memory returned; running ones are discarded at their next boundary."""
        job.state, job.error = state, without_frames(error)
        job.error_text = text or str(error)
        queued, ready = self._scheduler.drop_job(job.seq)
        for p in queued:
            p.state = PartitionState.SKIPPED
        for p in ready:
            self.release(p, PartitionState.DISCARDED)
        self._retire(job)
        self._ended(job)
        self._cv.notify_all()

    def succeed(self, job: Job, result: JobResult) -> None:
        """The job verified: its result replaces the partitions' proofs."""
        job.result = result
        for p in job.parts:
            p.output = None
        job.state = JobState.SUCCEEDED
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
        result, error = (job.result, None) if ok else (None, failure(job))
        self._on_terminal(
            JobOutcome(job.id, req.request_id, req.circuit_id, job.state, result, error)
        )

    def _retire(self, job: Job) -> None:
        """Remember at most ``retain_jobs`` finished jobs (and their request ids)."""
        self._retired.append(job)
        while len(self._retired) > self._retain_jobs:
            old = self._retired.popleft()
            self.jobs.pop(old.id, None)
            if self.by_request.get(old.request.request_id or "") is old:
                # why the ignore below: the get() above matched, so request_id is set
                del self.by_request[old.request.request_id]  # type: ignore[arg-type]


def failure(job: Job) -> CuzkError:
    """The error a failed or cancelled job reports: its cause's category, else InternalError."""
    category = next((c for c in _CATEGORIES if isinstance(job.error, c)), InternalError)
    return category(f"{job.id} {job.state.value}: {job.error_text}")


def srs_wait(job: Job) -> float:
    """The job's share of its queue wait spent on its parameters loading: that of the
    partition whose synthesis started first (the end of the job's queue wait)."""
    started = [p for p in job.parts if "synth_start" in p.marks]
    return min(started, key=lambda p: p.marks["synth_start"]).srs_wait if started else 0.0
