"""The jobs this daemon runs, from submission until their end is journalled, and what a reused
request id means.

Request ids are the client's, reused across retries (Curio resends under the same id): the
daemon, not the engine, decides what a reused id means (:func:`request_id_rule`), from the
journal's row for the id and the job's state here, decided under the table's lock so that a
retry either joins a job before anyone decides to cancel it or sees it being cancelled and runs
anew. A job only Prove calls wait for is cancelled when the last of them gives up
(:meth:`LiveJobs.release`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from dataclasses import dataclass, field

from cuzk.engine import ProofRequest
from cuzk.engine.request import JobOutcome, JobState


class Done:
    """A flag set once, from any thread, and awaited on event loops: an AwaitProof waiting
    for it holds a coroutine, not a thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._set = False
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        with self._lock:
            if self._set:
                return
            self._set = True
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            with contextlib.suppress(RuntimeError):  # that loop has closed
                loop.call_soon_threadsafe(_wake, future)

    async def wait(self, timeout: float | None) -> bool:
        """True once set; False after ``timeout`` seconds (None: no limit)."""
        loop = asyncio.get_running_loop()
        waiter = (loop, loop.create_future())
        with self._lock:
            if self._set:
                return True
            self._waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter[1], timeout)
            return True
        except TimeoutError:
            return False
        finally:  # also when the client goes away and gRPC cancels the call
            with self._lock, contextlib.suppress(ValueError):
                self._waiters.remove(waiter)


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


@dataclass(eq=False)
class Live:
    """A job the engine runs for this daemon, from its submission until its end is journalled.

    Who waits for it decides whether it outlives a client: a job only Prove calls wait for
    (``callers``) is cancelled when the last of them gives up; one whose id a client holds
    (SubmitProof, or resumed after a restart) is ``detached`` and runs to its end."""

    circuit_id: str
    request_id: str | None
    submitted_at: float  # unix seconds
    done: Done = field(default_factory=Done)  # set once journalled
    journalled: bool = False  # its row exists, so its end can be written
    early: JobOutcome | None = None  # an end that came before the row was written
    ended: JobState | None = None  # how the engine ended it (before its end is journalled)
    cancel_reason: str | None = None  # why this daemon cancelled it (the client, a new request)
    callers: int = 0  # Prove calls waiting for it
    detached: bool = True  # a client holds its id: never cancelled when a Prove caller leaves


def request_id_rule(held_by: str | None, same_payload: bool) -> str:
    """What a request under a request id that a job already holds does, by that job's state
    (None: no job holds it, or its result is past retention) and whether the payload digest
    is the same. Curio retries under the same id, so an id is reused, never refused:

    * ``"join"``: the same payload is in flight or was proved: that job answers (a retry is
      never proved twice, and never handed a failure it did not wait for);
    * ``"supersede"``: another payload while the first is in flight (a WindowPoSt retry that
      skips a newly faulty sector): a new job, and the first is cancelled;
    * ``"new"``: anything else (no job, or it failed, was cancelled or expired, or another
      payload after a proof): a new job, which takes the id over.
    """
    if held_by in ("pending", "succeeded") and same_payload:
        return "join"
    if held_by == "pending":
        return "supersede"
    return "new"


PROVE_GAVE_UP = (
    "the Prove call ended before the proof (client deadline, cancellation or disconnect)"
)


class LiveJobs:
    """The live-job table, by the journal's job id; every decision on a job's callers and
    cancellation is taken under its one lock (``lock``, also held by the completion path)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._jobs: dict[str, Live] = {}

    def __len__(self) -> int:
        with self.lock:
            return len(self._jobs)

    def get(self, job_id: str) -> Live | None:
        with self.lock:
            return self._jobs.get(job_id)

    def begin(self, job_id: str, request: ProofRequest, submitted_at: float) -> Live:
        """Track a job before the engine gets it: its end may come at any moment after."""
        live = Live(request.circuit_id, request.request_id, submitted_at)
        with self.lock:
            self._jobs[job_id] = live
        return live

    def forget(self, job_id: str) -> None:
        """The engine refused the job, or its row could not be written: drop it unrecorded
        (its waiters wake)."""
        with self.lock:
            live = self._jobs.pop(job_id, None)
        if live is not None:
            live.done.set()

    def pop(self, job_id: str) -> None:
        """Its end is journalled (called under :attr:`lock`)."""
        self._jobs.pop(job_id, None)

    def lookup(self, job_id: str) -> Live | None:
        """The job, for a caller that holds :attr:`lock`."""
        return self._jobs.get(job_id)

    def held(self, job_id: str, join: bool, prove: bool) -> str | None:
        """The state of the job holding a request id, as far as this table knows: "pending"
        while the engine has not ended it (then, when ``join``, the new caller is attached to
        it under the lock); "succeeded" or "failed" when it ended (or is being cancelled) and
        its end is being journalled; None when it is not here (the journal knows)."""
        with self.lock:
            live = self._jobs.get(job_id)
            if live is not None and live.ended is None and live.cancel_reason is None:
                if join:
                    if prove:
                        live.callers += 1
                    else:
                        live.detached = True
                return "pending"
            if live is None:
                return None
            return "succeeded" if live.ended is JobState.SUCCEEDED else "failed"

    def release(self, job_id: str) -> Live | None:
        """A Prove caller of ``job_id`` left without its answer: the job, when it is now to be
        cancelled (nobody else waits, no client holds its id), else None. Decided under the
        lock that attaches callers: a retry arriving from now on sees a job being cancelled
        and runs anew instead of joining it."""
        with self.lock:
            live = self._jobs.get(job_id)
            if live is None:
                return None
            live.callers -= 1
            if live.callers > 0 or live.detached or live.cancel_reason is not None:
                return None
            live.cancel_reason = PROVE_GAVE_UP
            return live

    def claim_cancel(self, job_id: str, reason: str) -> bool:
        """Record ``reason`` as why the job is cancelled; False when it is not here or is
        being cancelled already."""
        with self.lock:
            live = self._jobs.get(job_id)
            if live is None or live.cancel_reason is not None:
                return False
            live.cancel_reason = reason
            return True
