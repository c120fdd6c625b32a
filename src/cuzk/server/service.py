"""The cuzk.v1 ProvingEngine servicer: the eight RPCs over the engine and the journal.

Requests arrive as raw bytes (the handlers are registered without a deserializer) so that
decoding is ours: a message too large, not protobuf, or with fields of the wrong wire type is
answered with INVALID_ARGUMENT and a reason, like any other malformed request, and the daemon
carries on. Errors map by category: BadInput → INVALID_ARGUMENT, ResourceExhausted →
RESOURCE_EXHAUSTED, an unknown job → NOT_FOUND, shutting down → UNAVAILABLE, anything else →
INTERNAL (logged with its traceback; the client sees one line).

The handlers run on the asyncio gRPC server (:mod:`cuzk.server.loop`): a client blocked in
AwaitProof or unary Prove is a coroutine waiting for its job's end, not a thread, so any number
of them leave GetStatus, CancelProof and SubmitProof free to answer. Blocking work runs in small
thread pools by kind: ``control`` (journal reads, status, cancel, evict), ``submit`` (parsing and
the journal's fsync) and ``preload`` (may wait minutes for memory), so one kind backing up never
holds up another.

One job id, the journal's (``job-`` + random hex, stable across restarts), names a job
everywhere: the engine runs it under that id, so status, timelines and logs show what the client
holds. The engine calls :meth:`ProvingService.job_ended` once per job as it ends (on its one
delivery thread, no thread per job), which journals the outcome; AwaitProof waits for that
write, so what a client is told is always what a restarted daemon would tell it too.

Request ids are the client's, reused across retries (Curio resends under the same id): the
daemon, not the engine, decides what a reused id means (:func:`request_id_rule`), from the
journal's row for the id and the job's state in memory, under one lock with the insert. Prove
is SubmitProof plus a wait that gRPC cancels when the caller's deadline passes or the caller
goes away; the job is then cancelled (:meth:`ProvingService.leave`) unless someone else still
waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import grpc

from cuzk.engine import Engine, Priority, ProofRequest
from cuzk.engine.request import (
    CANCELLED_BY_CLIENT,
    EngineStatus,
    JobOutcome,
    JobState,
    PartitionState,
    PartitionTimeline,
    SrsStatus,
)
from cuzk.errors import BadInput, BadPayload, CuzkError, ResourceExhausted, shown
from cuzk.server import convert
from cuzk.server.admission import Admission
from cuzk.server.journal import Journal, JournalEntry
from cuzk.server.proto import proving_pb2 as pb
from cuzk.server.results import ResultWriter

log = logging.getLogger(__name__)

SERVICE = "cuzk.v1.ProvingEngine"
MAX_DETAIL = 2000  # characters of an error message sent back (gRPC's metadata is limited)
_PURGE_EVERY_S = 600.0  # how often finished results past retention are dropped
_MAX_WAIT_S = 30 * 86400.0  # an AwaitProof timeout beyond this waits this long
# Threads for blocking work behind the RPCs (waiting needs none): journal reads and engine
# calls that take the engine lock briefly; submissions (parsing, the journal's fsync); preloads,
# which may wait minutes for memory and so never hold up the others.
CONTROL_THREADS, SUBMIT_THREADS, PRELOAD_THREADS = 8, 8, 2


class _Abort(Exception):
    """Ends an RPC with a status code (raised inside handlers, turned into context.abort)."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


class _Done:
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
class _Live:
    """A job the engine runs for this daemon, from its submission until its end is journalled.

    Who waits for it decides whether it outlives a client: a job only Prove calls wait for
    (``callers``) is cancelled when the last of them gives up; one whose id a client holds
    (SubmitProof, or resumed after a restart) is ``detached`` and runs to its end."""

    circuit_id: str
    request_id: str | None
    submitted_at: float  # unix seconds
    done: _Done = field(default_factory=_Done)  # set once journalled
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


class ProvingService:
    """Jobs in flight and the RPC handlers; registers itself as the engine's completion
    callback.

    ``metrics`` (optional) has ``job_finished(circuit_id, state, seconds, stages)`` and
    ``render() -> bytes``; ``status_doc`` (optional) turns an EngineStatus into the /status JSON;
    ``redact`` lists (server path, placeholder) pairs replaced in what clients are told.
    """

    def __init__(
        self,
        engine: Engine,
        journal: Journal,
        *,
        max_message_bytes: int,
        max_inflight_bytes: int | None = None,
        max_waiting_calls: int = 10_000,
        metrics: Any = None,
        status_doc: Callable[[EngineStatus], dict] | None = None,
        redact: Sequence[tuple[str, str]] = (),
    ) -> None:
        self.engine = engine
        self.journal = journal
        self.max_message_bytes = max_message_bytes
        self.admission = Admission(max_inflight_bytes or 4 * max_message_bytes)
        self.metrics = metrics
        self.status_doc = status_doc
        # (server path, what clients see instead): error messages never show where the
        # daemon keeps its keys and journal; the longest paths are replaced first
        self._redactions = sorted(redact, key=lambda pair: -len(pair[0]))
        self.started = time.time()
        self.completed = 0
        self.failed = 0
        self._lock = threading.Lock()
        self._submit_lock = threading.Lock()  # request-id check and insert are one step
        self._live: dict[str, _Live] = {}  # jobs the engine runs, by their one id
        self._accepting = True
        self._last_purge = time.monotonic()
        self._pools: dict[str, ThreadPoolExecutor] = {}
        self.waiting = 0  # AwaitProof/Prove calls waiting for a job's end now
        self.max_waiting_calls = max_waiting_calls
        self._waiting_calls = 0  # AwaitProof/Prove calls admitted (being read, or waiting)
        self.results = ResultWriter(journal)
        engine.on_complete(self.job_ended)

    # -- lifecycle --------------------------------------------------------------------------

    def resume(self) -> int:
        """Re-submit every journalled job without a result (after a restart); returns how
        many. A job the engine now refuses (keys gone, …) is recorded as failed; a row that
        does not make a request at all is quarantined (the others still start)."""
        n = 0
        for entry in self.journal.pending():
            try:
                request = convert.make_request(
                    entry.circuit_id,
                    entry.seeds,
                    entry.payload,
                    Priority(entry.priority),
                    entry.request_id,
                )
            except Exception as e:  # noqa: BLE001 - a damaged row: set it aside, go on
                self.journal.quarantine(entry.id, f"not a request ({type(e).__name__}: {e})")
                log.error("journalled job %s is damaged and was set aside: %s", entry.id, e)
                continue
            live = self._begin(entry.id, request, entry.submitted_at)
            try:
                self.engine.submit(request, entry.id)
            except CuzkError as e:
                self._forget(entry.id)
                log.warning("journalled job %s cannot be resumed: %s", entry.id, e)
                self.results.finish(entry.id, "failed", error=f"after a restart: {e}")
                continue
            self._journalled(live)
            n += 1
        if n:
            log.info("resumed %d journalled job(s)", n)
        return n

    def stop_accepting(self) -> None:
        self._accepting = False

    def close(self) -> None:
        """Stop the worker threads behind the RPCs (after the gRPC server has stopped) and
        write what the journal still owes."""
        pools, self._pools = self._pools, {}
        for pool in pools.values():
            pool.shutdown(wait=True, cancel_futures=True)
        self.results.close()

    def _pool(self, name: str) -> Executor:
        """The thread pool for one kind of blocking work, made on first use."""
        with self._lock:
            pool = self._pools.get(name)
            if pool is None:
                size = {"control": CONTROL_THREADS, "submit": SUBMIT_THREADS}.get(
                    name, PRELOAD_THREADS
                )
                pool = ThreadPoolExecutor(size, thread_name_prefix=f"cuzk-{name}")
                self._pools[name] = pool
        return pool

    async def _blocking(self, pool: str, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._pool(pool), fn, *args)

    # -- the work behind the RPCs -------------------------------------------------------------

    def submit(self, conv: convert.Converted, *, prove: bool = False) -> pb.SubmitProofResponse:
        """Accept a request (journalled before this returns). ``prove``: for a Prove call,
        which waits for the job and lets go of it when its client gives up (see
        :meth:`leave`). A request id already held is reused by :func:`request_id_rule`."""
        if not self._accepting:
            raise _Abort(grpc.StatusCode.UNAVAILABLE, "the daemon is shutting down")
        req = conv.request
        payload = req.payload
        digest = req.payload_digest()
        guard = self._submit_lock if req.request_id else contextlib.nullcontext()
        with guard:
            prior, action = None, "new"
            if req.request_id is not None:
                prior = self.journal.by_request_id(req.request_id)
                if prior is not None:
                    same = prior.digest == digest and prior.kind == conv.kind
                    action = request_id_rule(self._held_state(prior, same, prove), same)
                    if action == "join":
                        log.info("request_id %s: joins %s", _rid(req.request_id), prior.id)
                        return pb.SubmitProofResponse(job_id=prior.id)
            job_id = self.journal.new_id()
            submitted_at = time.time()
            with self._lock:
                ahead = len(self._live)
            live = self._begin(job_id, req, submitted_at)
            if prove:
                live.detached, live.callers = False, 1
            try:
                self.engine.submit(req, job_id)
            except BadPayload as e:  # say which field of the message held those bytes
                self._forget(job_id)
                raise BadPayload(f"{conv.field}: {e}" if conv.field else str(e)) from None
            except BaseException:
                self._forget(job_id)
                raise
            entry = JournalEntry(
                job_id,
                req.request_id,
                digest,
                conv.kind,
                req.circuit_id,
                tuple(req.seeds),
                payload,
                int(req.priority),
                "pending",
                submitted_at,
                None,
                None,
                None,
                None,
                None,
                None,
            )
            superseded = (
                f"superseded by {job_id}: request_id reused for another payload"
                if action == "supersede"
                else None
            )
            try:
                self.journal.add(
                    entry, replaces=None if prior is None else prior.id, superseded=superseded
                )
            except Exception as e:  # noqa: BLE001 - disk full, I/O error: refuse, report
                self._forget(job_id)
                self.engine.cancel(job_id, "not accepted: the journal could not record it")
                self.results.failed(e, "journalling a request")
                raise _Abort(
                    grpc.StatusCode.UNAVAILABLE,
                    f"cannot journal the request ({type(e).__name__}: {e}); not accepted, "
                    "retry later",
                ) from None
            self.results.wrote()
            self._journalled(live)
        log.info(
            "accepted %s: %s, %s priority, request_id %s%s",
            job_id, req.circuit_id, req.priority.name.lower(), _rid(req.request_id),
            "" if prior is None else f" (was {prior.id}, {action})",
        )  # fmt: skip
        if superseded is not None and prior is not None:
            self._cancel_live(prior.id, superseded)
        return pb.SubmitProofResponse(job_id=job_id, queue_position=ahead)

    def _held_state(self, prior: JournalEntry, join: bool, prove: bool) -> str:
        """The state of the job holding a request id as it is now: "pending" while the
        engine has not ended it (then, when ``join``, the new caller is attached to it under
        the same lock), else how it ended ("failed" for one pending but not running)."""
        with self._lock:
            live = self._live.get(prior.id)
            if live is not None and live.ended is None and live.cancel_reason is None:
                if join:
                    if prove:
                        live.callers += 1
                    else:
                        live.detached = True
                return "pending"
            ended = None if live is None else live.ended
        if ended is JobState.SUCCEEDED:
            return "succeeded"
        if live is not None:
            return "failed"  # ended (or being cancelled); its end is being journalled
        current = self.results.unwritten(prior.id) or self.journal.get(prior.id) or prior
        return current.state if current.terminal else "failed"

    def leave(self, job_id: str) -> None:
        """A Prove call stopped waiting for ``job_id`` without its answer (its deadline
        passed, or the client cancelled or went away). When nobody else waits for the job and
        no client holds its id, it is cancelled: its queued partitions never run and the
        device is free once the partition in its kernels now (if any) ends."""
        with self._lock:
            live = self._live.get(job_id)
            if live is None:
                return
            live.callers -= 1
            if live.callers > 0 or live.detached or live.cancel_reason is not None:
                return
            # Decided under the lock that attaches callers: a retry arriving from now on sees
            # a job being cancelled and runs anew instead of joining it.
            live.cancel_reason = reason = (
                "the Prove call ended before the proof (client deadline, cancellation or "
                "disconnect)"
            )
        log.warning(
            "%s (request_id %s): the Prove caller gave up (deadline or disconnect); cancelling",
            job_id, _rid(live.request_id),
        )  # fmt: skip
        self._engine_cancel(job_id, reason)

    def _cancel_live(self, job_id: str, reason: str) -> bool:
        """Cancel a job the engine runs, recording ``reason`` as its error."""
        with self._lock:
            live = self._live.get(job_id)
            if live is None or live.cancel_reason is not None:
                return False
            live.cancel_reason = reason
        return self._engine_cancel(job_id, reason)

    def _engine_cancel(self, job_id: str, reason: str) -> bool:
        """Cancel in the engine, with the reason its status shows (GetStatus, /status)."""
        try:
            return self.engine.cancel(job_id, reason)
        except BadInput:
            return False  # the engine already forgot it (it finished)
        except Exception:  # noqa: BLE001 - (a stopping engine) the caller is not to blame
            log.exception("cancelling %s", job_id)
            return False

    # -- a job's life in the daemon: begun, journalled, ended ---------------------------------

    def _begin(self, job_id: str, request: ProofRequest, submitted_at: float) -> _Live:
        """Track a job before the engine gets it: its end may come at any moment after."""
        live = _Live(request.circuit_id, request.request_id, submitted_at)
        with self._lock:
            self._live[job_id] = live
        return live

    def _forget(self, job_id: str) -> None:
        """The engine refused the job, or its row could not be written: drop it unrecorded."""
        with self._lock:
            live = self._live.pop(job_id, None)
        if live is not None:
            live.done.set()

    def _journalled(self, live: _Live) -> None:
        """The job's row exists: record an end that came first (a job failing at once)."""
        with self._lock:
            live.journalled = True
            early, live.early = live.early, None
        if early is not None:
            self.job_ended(early)

    def job_ended(self, outcome: JobOutcome) -> None:
        """The engine's completion callback: journal how the job ended, then wake its
        AwaitProof callers. Runs on the engine's delivery thread (or, for an end that came
        before the job's row, on the submitting thread); never raises."""
        job_id = outcome.job_id
        with self._lock:
            live = self._live.get(job_id)
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
                timings["timelines"] = [_timeline_dict(t) for t in result.timelines]
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
            elif not self._accepting and not isinstance(outcome.error, BadInput):
                # The daemon is stopping: a failure now is the shutdown's doing (pools closed
                # under a partition), not the request's. It stays pending and runs again after
                # the restart; only a request's own fault (BadInput) is final.
                log.warning("job %s failed during shutdown (%s); left for the restart",
                            job_id, outcome.error)  # fmt: skip
            else:
                state = "failed"
                self.results.finish(job_id, state, error=str(outcome.error))
        except Exception:  # noqa: BLE001 - a bug; the daemon stays up, the waiters wake
            log.exception("job %s: cannot record its end", job_id)
        finally:
            with self._lock:
                self._live.pop(job_id, None)
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
        with self._lock:
            if time.monotonic() - self._last_purge < _PURGE_EVERY_S:
                return
            self._last_purge = time.monotonic()
        try:
            self.journal.purge()
        except Exception:  # noqa: BLE001 - housekeeping never fails a job
            log.exception("journal purge")

    async def await_(self, job_id: str, timeout_ms: int) -> pb.AwaitProofResponse:
        """AwaitProof: wait (holding no thread) until the job's end is journalled, or for
        ``timeout_ms`` (0: no limit). gRPC cancels the wait when the client goes away."""
        entry = await self._blocking("control", self._entry, job_id)
        if not entry.terminal:
            with self._lock:
                live = self._live.get(job_id)
            if live is not None:
                timeout = None if timeout_ms == 0 else min(timeout_ms / 1000, _MAX_WAIT_S)
                self.waiting += 1  # (only the loop thread counts)
                try:
                    ended = await live.done.wait(timeout)
                finally:
                    self.waiting -= 1
                if not ended:
                    return pb.AwaitProofResponse(
                        job_id=job_id, status=pb.AwaitProofResponse.TIMEOUT
                    )
            entry = await self._blocking("control", self._entry, job_id)
        if not entry.terminal:
            raise _Abort(
                grpc.StatusCode.UNAVAILABLE,
                f"{shown(job_id)} is journalled but not running "
                "(the daemon is shutting down); it resumes when the daemon restarts",
            )
        response = await_response(entry)
        response.error_message = self.redacted(response.error_message)
        return response

    def cancel(self, job_id: str) -> bool:
        entry = self._entry(job_id)
        if entry.terminal:
            return False
        return self._cancel_live(job_id, CANCELLED_BY_CLIENT)

    def status(self) -> pb.GetStatusResponse:
        st = self.engine.status()
        gpus = []
        for d in st.devices:
            job = _on_device(st, d.index)
            gpus.append(
                pb.GPUStatus(
                    ordinal=d.index,
                    name=d.backend,
                    vram_total_bytes=d.memory_total,
                    vram_free_bytes=d.memory_free,
                    current_job_id=job.job_id if job is not None else "",
                    current_proof_kind=job.circuit_id if job is not None else "",
                    vram_limit_bytes=d.memory_limit,
                    vram_peak_bytes=d.memory_peak,
                )
            )
        srs = [
            pb.SRSStatus(
                circuit_id=s.circuit_id,
                tier=_tier(s),
                size_bytes=s.bytes,
                ref_count=s.users,
                streamed_vectors=list(s.streamed),
            )
            for s in st.srs
        ]
        queues: dict[str, list[int]] = {}
        for j in st.jobs:
            q = queues.setdefault(j.circuit_id, [0, 0])
            if j.state is JobState.QUEUED:
                q[0] += 1
            elif j.state is JobState.RUNNING:
                q[1] += 1
        doc = ""
        if self.status_doc is not None:
            try:
                doc = json.dumps({**self.status_doc(st), "journal": self.results.health()})
            except Exception:  # noqa: BLE001 - the summary fields still answer
                log.exception("status document")
        return pb.GetStatusResponse(
            gpus=gpus,
            loaded_srs=srs,
            queues=[
                pb.QueueStatus(proof_kind=k, pending=p, in_progress=r)
                for k, (p, r) in sorted(queues.items())
            ],
            total_proofs_completed=self.completed,
            total_proofs_failed=self.failed,
            uptime_seconds=int(time.time() - self.started),
            pinned_memory_bytes=st.budget.reserved,
            pinned_memory_limit_bytes=st.budget.total,
            status_json=doc,
        )

    def preload(self, circuit_id: str) -> pb.PreloadSrsResponse:
        convert.circuit_id_field(circuit_id)
        before = _srs(self.engine.status(), circuit_id)
        already = before is not None and before.state == "resident"
        t0 = time.perf_counter()
        self.engine.preload(circuit_id)
        return pb.PreloadSrsResponse(
            already_loaded=already,
            load_time_ms=0 if already else round((time.perf_counter() - t0) * 1000),
        )

    def evict(self, circuit_id: str) -> pb.EvictSrsResponse:
        convert.circuit_id_field(circuit_id)
        before = _srs(self.engine.status(), circuit_id)
        evicted = self.engine.evict(circuit_id)
        return pb.EvictSrsResponse(
            was_loaded=evicted, freed_bytes=before.bytes if evicted and before else 0
        )

    def metrics_text(self) -> str:
        return "" if self.metrics is None else self.metrics.render().decode()

    def _entry(self, job_id: str) -> JournalEntry:
        if not job_id:
            raise BadInput("job_id is empty")
        entry = self.results.unwritten(job_id) or self.journal.get(job_id)
        if entry is None:
            raise _Abort(
                grpc.StatusCode.NOT_FOUND,
                f"no job {shown(job_id)} (unknown, or older than the journal's retention)",
            )
        return entry

    # -- gRPC plumbing ---------------------------------------------------------------------------

    def handler(self) -> grpc.GenericRpcHandler:
        """Every RPC as a raw-bytes unary handler for the asyncio gRPC server (see the module
        docstring for why raw). Waiting is a coroutine; blocking work runs in small pools."""
        run = self._blocking
        rpcs: dict[str, tuple[type, Callable[[Any], Awaitable[Any]]]] = {
            "SubmitProof": (pb.SubmitProofRequest, lambda r: run("submit", self._submit_msg, r)),
            "AwaitProof": (pb.AwaitProofRequest, lambda r: self.await_(r.job_id, r.timeout_ms)),
            "Prove": (pb.ProveRequest, lambda r: self._accept_prove(r.submit)),
            "CancelProof": (pb.CancelProofRequest, lambda r: run("control", self._cancel_msg, r)),
            "GetStatus": (pb.GetStatusRequest, lambda r: run("control", self.status)),
            "GetMetrics": (pb.GetMetricsRequest, lambda r: run("control", self._metrics_msg)),
            "PreloadSRS": (
                pb.PreloadSrsRequest,
                lambda r: run("preload", self.preload, r.circuit_id),
            ),
            "EvictSRS": (pb.EvictSrsRequest, lambda r: run("control", self.evict, r.circuit_id)),
        }
        handlers: dict[str, grpc.RpcMethodHandler] = {
            name: grpc.stream_unary_rpc_method_handler(
                self._wrap(name, req_type, fn), response_serializer=_serialize
            )
            for name, (req_type, fn) in rpcs.items()
        }
        return grpc.method_handlers_generic_handler(SERVICE, handlers)

    def redacted(self, text: str) -> str:
        """``text`` with the daemon's own paths replaced by placeholders."""
        for path, placeholder in self._redactions:
            text = text.replace(path, placeholder)
        return text

    def _submit_msg(
        self, msg: pb.SubmitProofRequest, prove: bool = False
    ) -> pb.SubmitProofResponse:
        return self.submit(convert.to_engine(msg), prove=prove)

    async def _accept_prove(self, msg: pb.SubmitProofRequest) -> pb.SubmitProofResponse:
        """Prove's submission. If the client gives up while it is being accepted (its thread
        carries on), the job it makes is let go of as soon as it exists."""
        task = asyncio.ensure_future(self._blocking("submit", self._submit_msg, msg, True))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.add_done_callback(self._accepted_unwanted)
            raise

    def _accepted_unwanted(self, task: asyncio.Future[pb.SubmitProofResponse]) -> None:
        if not task.cancelled() and task.exception() is None:
            self._leave_soon(task.result().job_id)

    async def _prove_wait(self, job_id: str) -> pb.ProveResponse:
        """Prove's wait for its job. gRPC cancels it when the caller's deadline passes or the
        caller cancels or disconnects; the job is then let go of (:meth:`leave`)."""
        answered = False
        try:
            response = pb.ProveResponse(result=await self.await_(job_id, 0))
            answered = True
            return response
        finally:
            if not answered:
                self._leave_soon(job_id)

    def _leave_soon(self, job_id: str) -> None:
        """:meth:`leave` off the event loop (it takes the engine's lock)."""
        try:
            self._pool("control").submit(self.leave, job_id)
        except RuntimeError:  # the pools are closing: the daemon is stopping anyway
            self.leave(job_id)

    def _cancel_msg(self, msg: pb.CancelProofRequest) -> pb.CancelProofResponse:
        return pb.CancelProofResponse(was_running=self.cancel(msg.job_id))

    def _metrics_msg(self) -> pb.GetMetricsResponse:
        return pb.GetMetricsResponse(prometheus_text=self.metrics_text())

    def _wrap(
        self, name: str, req_type: type, fn: Callable[[Any], Awaitable[Any]]
    ) -> Callable[[Any, Any], Awaitable[Any]]:
        """The handler: reading the request (see :mod:`cuzk.server.admission`), size checks,
        decoding, ``fn``, errors → status codes. Prove's ``fn`` is its submission; its wait
        for the proof comes after the request's bytes are gone.

        Handlers are registered as client-streaming (the wire format of a unary call is the
        same) so that the request is read here, when the admission allows, rather than by
        gRPC before the handler runs. Errors are set on the context and returned, not raised
        with ``abort``: the exception's traceback would hold the request's bytes for as long
        as gRPC keeps it."""
        limit = self.max_message_bytes
        admission = self.admission

        waits = name in _WAITING_RPCS

        async def handle(_requests: Any, context: grpc.aio.ServicerContext) -> Any:
            admitted = False
            try:
                if waits:
                    self._admit_waiter(name)  # (before anything is read or submitted)
                    admitted = True
                raw = await admission.read(context, name, gated=name in _LARGE_RPCS)
                size = len(raw)
                if size > limit:
                    raise BadInput(
                        f"{name}: message of {size:,} bytes exceeds the limit "
                        f"of {limit:,} (server.max_message_bytes)"
                    )
                async with admission.admit(size, name):
                    request: Any = convert.decode(req_type, raw, name)
                    del raw
                    answer = await fn(request)
                    del request
                if name == "Prove":
                    return await self._prove_wait(answer.job_id)
                return answer
            except _Abort as e:
                code, message = e.code, str(e)
            except BadInput as e:
                code, message = grpc.StatusCode.INVALID_ARGUMENT, str(e)
            except ResourceExhausted as e:
                code, message = grpc.StatusCode.RESOURCE_EXHAUSTED, str(e)
            except CuzkError as e:
                code, message = grpc.StatusCode.INTERNAL, f"{type(e).__name__}: {e}"
            except Exception as e:  # noqa: BLE001 - one bad call never takes the daemon down
                log.exception("%s failed", name)
                code, message = grpc.StatusCode.INTERNAL, f"internal error: {e}"
            finally:
                if admitted:
                    self._waiting_calls -= 1
            message = self.redacted(message)
            context.set_code(code)
            context.set_details(
                message if len(message) <= MAX_DETAIL else message[:MAX_DETAIL] + "…"
            )
            return None

        return handle

    def _admit_waiter(self, name: str) -> None:
        """Count an AwaitProof or Prove call (on the loop thread, no lock), or refuse it when
        ``max_waiting_calls`` wait already: a refusal the client can act on, where gRPC's own
        limits would cancel calls whose jobs nobody cancelled."""
        if self._waiting_calls >= self.max_waiting_calls:
            raise ResourceExhausted(
                f"{name}: {self._waiting_calls:,} calls are waiting for proofs already, this "
                f"daemon's limit (server.max_waiting_calls); nothing was submitted or waited "
                "for. Retry later, or wait with fewer calls (one AwaitProof per job; AwaitProof "
                "with timeout_ms returns TIMEOUT to poll again)"
            )
        self._waiting_calls += 1


_LARGE_RPCS = frozenset({"SubmitProof", "Prove"})  # the requests that carry vanilla proofs
_WAITING_RPCS = frozenset({"AwaitProof", "Prove"})  # the calls that wait for a job's end


def _rid(request_id: str | None) -> str:
    """A client's request id as the log shows it: quoted and escaped (Curio's ids hold spaces
    and brackets; a hostile one may hold newlines)."""
    return "none" if request_id is None else shown(request_id, 300)


def _serialize(message: Any) -> bytes:
    return b"" if message is None else message.SerializeToString()


def await_response(entry: JournalEntry) -> pb.AwaitProofResponse:
    """The AwaitProof answer for a finished journal entry."""
    status = {
        "succeeded": pb.AwaitProofResponse.COMPLETED,
        "failed": pb.AwaitProofResponse.FAILED,
        "cancelled": pb.AwaitProofResponse.CANCELLED,
    }[entry.state]
    resp = pb.AwaitProofResponse(
        job_id=entry.id, status=status, error_message=entry.error or "", circuit_id=entry.circuit_id
    )
    if entry.state == "succeeded":
        t = entry.timings or {}
        resp.proof = entry.proof or b""
        resp.public_inputs.extend(convert.public_inputs_message(entry.public_inputs or ()))
        resp.vk_path = entry.vk_path or ""
        resp.queue_wait_ms = t.get("queue_wait_ms", 0)
        resp.synthesis_ms = t.get("synthesis_ms", 0)
        resp.gpu_compute_ms = t.get("gpu_compute_ms", 0)
        resp.total_ms = t.get("total_ms", 0)
        resp.srs_load_ms = t.get("srs_load_ms", 0)  # part of queue_wait_ms
        resp.timelines.extend(
            convert.timeline_message(PartitionTimeline(**d)) for d in t.get("timelines", ())
        )
    return resp


def _timeline_dict(t: PartitionTimeline) -> dict:
    return dataclasses.asdict(t)


_ON_DEVICE = (PartitionState.KERNELS, PartitionState.DEVICE_WAIT, PartitionState.FINALIZING)


def _tier(s: SrsStatus) -> pb.SRSStatus.Tier:
    """HOT: on a device; WARM: loading, or in host memory only (its devices gave it up for
    other keys); COLD: neither."""
    if s.state == "resident" and s.devices:
        return pb.SRSStatus.HOT
    return pb.SRSStatus.WARM if s.state in ("resident", "loading") else pb.SRSStatus.COLD


def _on_device(st: EngineStatus, device: int) -> Any:
    """The job whose partition holds ``device`` now (in kernels first, then waiting for the
    lock, then finalizing), or None."""
    for state in _ON_DEVICE:
        for job in st.jobs:
            if any(p.state is state and p.timeline.device == device for p in job.partitions):
                return job
    return None


def _srs(st: EngineStatus, circuit_id: str) -> Any:
    return next((s for s in st.srs if s.circuit_id == circuit_id), None)


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
    except Exception:  # noqa: BLE001 - metrics never fail a job
        log.exception("metrics")
