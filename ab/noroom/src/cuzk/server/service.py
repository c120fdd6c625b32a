"""The cuzk.v1 ProvingEngine servicer: the work behind the eight RPCs, over the engine and the
journal. Around it: the RPC table and error mapping (:mod:`cuzk.server.rpc`), the live-job table
and the request-id rule (:mod:`cuzk.server.live`), journaling at completion
(:mod:`cuzk.server.completion`) and status rendering (:mod:`cuzk.server.status_view`).

The handlers run on the asyncio gRPC server (:mod:`cuzk.server.loop`): a client blocked in
AwaitProof or unary Prove is a coroutine waiting for its job's end, not a thread, so any number
of them leave GetStatus, CancelProof and SubmitProof free to answer. Blocking work runs in small
thread pools by kind: ``control`` (journal reads, status, cancel, evict), ``submit`` (parsing and
the journal's fsync) and ``preload`` (may wait minutes for memory), so one kind backing up never
holds up another.

One job id, the journal's (``job-`` + random hex, stable across restarts), names a job
everywhere: the engine runs it under that id, so status, timelines and logs show what the client
holds. Request ids are the client's, reused across retries: what a reused one means is decided
here, under one lock with the journal insert (:func:`~cuzk.server.live.request_id_rule`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

import grpc

from cuzk.engine import Engine, Priority
from cuzk.engine.request import CANCELLED_BY_CLIENT, EngineStatus, JobOutcome
from cuzk.errors import BadInput, BadPayload, CuzkError, shown
from cuzk.server import convert
from cuzk.server.admission import Admission
from cuzk.server.completion import Completion
from cuzk.server.journal import Journal, JournalEntry
from cuzk.server.live import PROVE_GAVE_UP, LiveJobs, request_id_rule
from cuzk.server.proto import proving_pb2 as pb
from cuzk.server.results import ResultWriter
from cuzk.server.rpc import Abort, RpcTable
from cuzk.server.status_view import await_response, srs_of, status_response

__all__ = ["ProvingService", "request_id_rule"]

log = logging.getLogger(__name__)

_MAX_WAIT_S = 30 * 86400.0  # an AwaitProof timeout beyond this waits this long
# Threads for blocking work behind the RPCs (waiting needs none): journal reads and engine
# calls that take the engine lock briefly; submissions (parsing, the journal's fsync); preloads,
# which may wait minutes for memory and so never hold up the others.
CONTROL_THREADS, SUBMIT_THREADS, PRELOAD_THREADS = 8, 8, 2


class ProvingService:
    """The work behind the RPCs: submissions (journalled before they are acknowledged),
    waits, cancellations, status; its :class:`~cuzk.server.completion.Completion` is the
    engine's completion callback.

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
        self._submit_lock = threading.Lock()  # request-id check and insert are one step
        self._pools_lock = threading.Lock()
        self.live = LiveJobs()  # jobs the engine runs, by their one id
        self._accepting = True
        self._pools: dict[str, ThreadPoolExecutor] = {}
        self.waiting = 0  # AwaitProof/Prove calls waiting for a job's end now
        self.max_waiting_calls = max_waiting_calls
        self.results = ResultWriter(journal)
        self.completion = Completion(
            self.live, journal, self.results, lambda: self._accepting, metrics
        )
        engine.on_complete(self.completion.job_ended)

    @property
    def completed(self) -> int:
        """Jobs proved since the start."""
        return self.completion.completed

    @property
    def failed(self) -> int:
        """Jobs failed since the start."""
        return self.completion.failed

    def job_ended(self, outcome: JobOutcome) -> None:
        """The engine's completion callback (:meth:`Completion.job_ended`)."""
        self.completion.job_ended(outcome)

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
            except Exception as e:  # a damaged row: set it aside, go on
                self.journal.quarantine(entry.id, f"not a request ({type(e).__name__}: {e})")
                log.error("journalled job %s is damaged and was set aside: %s", entry.id, e)
                continue
            live = self.live.begin(entry.id, request, entry.submitted_at)
            try:
                self.engine.submit(request, entry.id)
            except CuzkError as e:
                self.live.forget(entry.id)
                log.warning("journalled job %s cannot be resumed: %s", entry.id, e)
                self.results.finish(entry.id, "failed", error=f"after a restart: {e}")
                continue
            self.completion.journalled(live)
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

    def pool(self, name: str) -> Executor:
        """The thread pool for one kind of blocking work, made on first use."""
        with self._pools_lock:
            pool = self._pools.get(name)
            if pool is None:
                size = {"control": CONTROL_THREADS, "submit": SUBMIT_THREADS}.get(
                    name, PRELOAD_THREADS
                )
                pool = ThreadPoolExecutor(size, thread_name_prefix=f"cuzk-{name}")
                self._pools[name] = pool
        return pool

    async def blocking(self, pool: str, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in the pool ``pool``, awaited from the event loop."""
        return await asyncio.get_running_loop().run_in_executor(self.pool(pool), fn, *args)

    # -- the work behind the RPCs -------------------------------------------------------------

    def submit(self, conv: convert.Converted, *, prove: bool = False) -> pb.SubmitProofResponse:
        """Accept a request (journalled before this returns). ``prove``: for a Prove call,
        which waits for the job and lets go of it when its client gives up (see
        :meth:`leave`). A request id already held is reused by :func:`request_id_rule`."""
        if not self._accepting:
            raise Abort(grpc.StatusCode.UNAVAILABLE, "the daemon is shutting down")
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
            ahead = len(self.live)
            live = self.live.begin(job_id, req, submitted_at)
            if prove:
                live.detached, live.callers = False, 1
            try:
                self.engine.submit(req, job_id)
            except BadPayload as e:  # say which field of the message held those bytes
                self.live.forget(job_id)
                raise BadPayload(f"{conv.field}: {e}" if conv.field else str(e)) from None
            except BaseException:
                self.live.forget(job_id)
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
            except Exception as e:  # disk full, I/O error: refuse, report
                self.live.forget(job_id)
                self.engine.cancel(job_id, "not accepted: the journal could not record it")
                self.results.failed(e, "journalling a request")
                raise Abort(
                    grpc.StatusCode.UNAVAILABLE,
                    f"cannot journal the request ({type(e).__name__}: {e}); not accepted, "
                    "retry later",
                ) from None
            self.results.wrote()
            self.completion.journalled(live)
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
        held = self.live.held(prior.id, join, prove)
        if held is not None:
            return held
        current = self.results.unwritten(prior.id) or self.journal.get(prior.id) or prior
        return current.state if current.terminal else "failed"

    def leave(self, job_id: str) -> None:
        """A Prove call stopped waiting for ``job_id`` without its answer (its deadline
        passed, or the client cancelled or went away). When nobody else waits for the job and
        no client holds its id, it is cancelled: its queued partitions never run and the
        device is free once the partition in its kernels now (if any) ends."""
        live = self.live.release(job_id)
        if live is None:
            return
        log.warning(
            "%s (request_id %s): the Prove caller gave up (deadline or disconnect); cancelling",
            job_id, _rid(live.request_id),
        )  # fmt: skip
        self._engine_cancel(job_id, PROVE_GAVE_UP)

    def _cancel_live(self, job_id: str, reason: str) -> bool:
        """Cancel a job the engine runs, recording ``reason`` as its error."""
        if not self.live.claim_cancel(job_id, reason):
            return False
        return self._engine_cancel(job_id, reason)

    def _engine_cancel(self, job_id: str, reason: str) -> bool:
        """Cancel in the engine, with the reason its status shows (GetStatus, /status)."""
        try:
            return self.engine.cancel(job_id, reason)
        except BadInput:
            return False  # the engine already forgot it (it finished)
        except Exception:  # (a stopping engine) the caller is not to blame
            log.exception("cancelling %s", job_id)
            return False

    async def await_(self, job_id: str, timeout_ms: int) -> pb.AwaitProofResponse:
        """AwaitProof: wait (holding no thread) until the job's end is journalled, or for
        ``timeout_ms`` (0: no limit). gRPC cancels the wait when the client goes away."""
        entry = await self.blocking("control", self._entry, job_id)
        if not entry.terminal:
            live = self.live.get(job_id)
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
            entry = await self.blocking("control", self._entry, job_id)
        if not entry.terminal:
            raise Abort(
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
        return status_response(
            self.engine.status(),
            completed=self.completed,
            failed=self.failed,
            started=self.started,
            status_doc=self.status_doc,
            journal_health=self.results.health,
        )

    def preload(self, circuit_id: str) -> pb.PreloadSrsResponse:
        convert.circuit_id_field(circuit_id)
        before = srs_of(self.engine.status(), circuit_id)
        already = before is not None and before.state == "resident"
        t0 = time.perf_counter()
        self.engine.preload(circuit_id)
        return pb.PreloadSrsResponse(
            already_loaded=already,
            load_time_ms=0 if already else round((time.perf_counter() - t0) * 1000),
        )

    def evict(self, circuit_id: str) -> pb.EvictSrsResponse:
        convert.circuit_id_field(circuit_id)
        before = srs_of(self.engine.status(), circuit_id)
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
            raise Abort(
                grpc.StatusCode.NOT_FOUND,
                f"no job {shown(job_id)} (unknown, or older than the journal's retention)",
            )
        return entry

    def handler(self) -> grpc.GenericRpcHandler:
        """Every RPC, for the asyncio gRPC server (:class:`~cuzk.server.rpc.RpcTable`)."""
        return RpcTable(self).handler()

    def redacted(self, text: str) -> str:
        """``text`` with the daemon's own paths replaced by placeholders."""
        for path, placeholder in self._redactions:
            text = text.replace(path, placeholder)
        return text


def _rid(request_id: str | None) -> str:
    """A client's request id as the log shows it: quoted and escaped (Curio's ids hold spaces
    and brackets; a hostile one may hold newlines)."""
    return "none" if request_id is None else shown(request_id, 300)
