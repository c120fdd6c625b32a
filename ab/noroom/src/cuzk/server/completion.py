"""Journaling a job's end: the engine's completion callback.

The engine calls :meth:`Completion.job_ended` once per job as it ends (on its one delivery
thread, no thread per job). It journals the outcome, then wakes the job's AwaitProof callers:
AwaitProof waits for that write, so what a client is told is always what a restarted daemon
would tell it too. An end that comes before the job's row exists (a job failing at once) is
kept and recorded by the submitting thread once the row is written (:meth:`journalled`).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Any

from cuzk.engine.request import JobOutcome, JobState, PartitionTimeline
from cuzk.errors import BadInput
from cuzk.server import convert
from cuzk.server.journal import Journal
from cuzk.server.live import Live, LiveJobs
from cuzk.server.results import ResultWriter

log = logging.getLogger(__name__)

_PURGE_EVERY_S = 600.0  # how often finished results past retention are dropped


class Completion:
    """Records how jobs end. ``accepting()`` is False once the daemon stops taking work (a
    failure then is the shutdown's doing and the job stays pending); ``metrics`` (optional)
    has ``job_finished(circuit_id, state, seconds, stages)``."""

    def __init__(
        self,
        live: LiveJobs,
        journal: Journal,
        results: ResultWriter,
        accepting: Callable[[], bool],
        metrics: Any = None,
    ) -> None:
        self.live = live
        self.journal = journal
        self.results = results
        self.accepting = accepting
        self.metrics = metrics
        self.completed = 0
        self.failed = 0
        self._last_purge = time.monotonic()

    def journalled(self, live: Live) -> None:
        """The job's row exists: record an end that came first (a job failing at once)."""
        with self.live.lock:
            live.journalled = True
            early, live.early = live.early, None
        if early is not None:
            self.job_ended(early)

    def job_ended(self, outcome: JobOutcome) -> None:
        """The engine's completion callback: journal how the job ended, then wake its
        AwaitProof callers. Runs on the engine's delivery thread (or, for an end that came
        before the job's row, on the submitting thread); never raises."""
        job_id = outcome.job_id
        with self.live.lock:
            live = self.live.lookup(job_id)
            if live is None:
                return  # not ours any more (its row could not be written)
            live.ended = outcome.state
            if not live.journalled:
                live.early = outcome  # the submitting thread records it after the row
                return
        state = None
        try:
            if outcome.state is JobState.SUCCEEDED and outcome.result is not None:
                result = outcome.result
                timings: dict[str, Any] = dict(convert.timing_ms(result.timelines))
                timings["srs_load_ms"] = max(0, round(result.srs_load_s * 1000))
                timings["total_ms"] = max(0, round((time.time() - live.submitted_at) * 1000))
                timings["timelines"] = [dataclasses.asdict(t) for t in result.timelines]
                state = "succeeded"
                self.results.finish(
                    job_id,
                    state,
                    proof=result.proof,
                    public_inputs=result.public_inputs,
                    vk_path=result.vk_path,
                    timings=timings,
                )
            elif outcome.state is JobState.CANCELLED:
                if live.cancel_reason is not None:
                    state = "cancelled"
                    self.results.finish(job_id, state, error=live.cancel_reason)
                # else a shutdown cancelled it: it stays pending and resumes after a restart
            elif not self.accepting() and not isinstance(outcome.error, BadInput):
                # The daemon is stopping: a failure now is the shutdown's doing (pools closed
                # under a partition), not the request's. It stays pending and runs again after
                # the restart; only a request's own fault (BadInput) is final.
                log.warning("job %s failed during shutdown (%s); left for the restart",
                            job_id, outcome.error)  # fmt: skip
            else:
                state = "failed"
                self.results.finish(job_id, state, error=str(outcome.error))
        except Exception:  # a bug; the daemon stays up, the waiters wake
            log.exception("job %s: cannot record its end", job_id)
        finally:
            with self.live.lock:
                self.live.pop(job_id)
                if state == "succeeded":
                    self.completed += 1
                elif state == "failed":
                    self.failed += 1
            live.done.set()
            if state is not None and self.metrics is not None:
                timelines = outcome.result.timelines if outcome.result is not None else ()
                _report(self.metrics, live.circuit_id, state,
                        time.time() - live.submitted_at, timelines)  # fmt: skip
            self._maybe_purge()

    def _maybe_purge(self) -> None:
        """Drop results past retention now and then (a long-running daemon's journal would
        otherwise only shrink at restarts)."""
        with self.live.lock:
            if time.monotonic() - self._last_purge < _PURGE_EVERY_S:
                return
            self._last_purge = time.monotonic()
        try:
            self.journal.purge()
        except Exception:  # housekeeping never fails a job
            log.exception("journal purge")


def _report(
    metrics: Any,
    circuit_id: str,
    state: str,
    seconds: float,
    timelines: tuple[PartitionTimeline, ...],
) -> None:
    try:
        from cuzk.server.metrics import stage_seconds

        metrics.job_finished(circuit_id, state, seconds, stage_seconds(timelines))
    except Exception:  # metrics never fail a job
        log.exception("metrics")
