"""The daemon's HTTP side: ``GET /status`` (JSON), ``GET /metrics`` (Prometheus), ``GET /healthz``.

aiohttp serves it from one background thread with its own event loop (a
:class:`~cuzk.server.loop.LoopThread`), so the daemon's main
thread (gRPC, signals) never runs asyncio and a slow scrape never blocks proving. The
status and metrics callables may take the engine's lock briefly, so they run in the loop's
executor rather than on the loop itself; ``/healthz`` never touches the engine, so it answers
even while the engine is busy.

With a token, every route except ``/healthz`` needs ``Authorization: Bearer <token>`` (a load
balancer's health check carries no secrets); without one, the daemon's config only allows a
loopback host (see cuzk.server.config).

Hostile clients: a connection must send its whole request head within ``HEADER_TIMEOUT_S`` (and
is closed after as long idle), at most ``MAX_CONNECTIONS`` are open at once, the token is
checked before anything else, a body is never read (a request with one gets 413), and a
malformed request is one debug line in the log, not a traceback. At the cap a new connection
takes the place of the oldest one that is not being answered (idle, or half-open: its head not
yet whole), so peers that open connections and send nothing cannot hold every place and make a
healthy daemon's /healthz answer 503; only when every place is answering a request does a new
connection get a 503.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

from aiohttp import web

from cuzk.engine.request import (
    EngineStatus,
    JobState,
    JobStatus,
    PartitionStatus,
    PartitionTimeline,
)
from cuzk.errors import BadInput
from cuzk.server.auth import token_matches
from cuzk.server.loop import LoopThread
from cuzk.server.metrics import Metrics, circuit_kind

log = logging.getLogger(__name__)

_NOT_STAMPS = {"job_id", "partition", "device", "worker", "stages"}
TIMELINE_STAMPS = tuple(
    f.name for f in dataclasses.fields(PartitionTimeline) if f.name not in _NOT_STAMPS
)


# --- /status ---------------------------------------------------------------------------------

ACTIVE_SHOWN = 200  # queued and running jobs listed in /status (oldest first)
FINISHED_SHOWN = 50  # finished jobs listed in /status (latest)


def _jobs_shown(jobs: Sequence[JobStatus]) -> list[JobStatus]:
    active = [j for j in jobs if j.state in (JobState.QUEUED, JobState.RUNNING)]
    finished = [j for j in jobs if j.state not in (JobState.QUEUED, JobState.RUNNING)]
    return active[:ACTIVE_SHOWN] + finished[-FINISHED_SHOWN:]


def _partition_json(p: PartitionStatus) -> dict[str, Any]:
    t = p.timeline
    return {
        "index": p.index,
        "state": p.state.value,
        "device": t.device,
        "worker": t.worker,
        "timeline": {s: getattr(t, s) for s in TIMELINE_STAMPS},  # seconds since engine start
        "durations": t.durations(),  # seconds per engine stage completed
        "prover_stages": dict(t.stages),  # the prover's own stage seconds
    }


def _job_json(j: JobStatus) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for p in j.partitions:
        counts[p.state.value] = counts.get(p.state.value, 0) + 1
    return {
        "job_id": j.job_id,
        "request_id": j.request_id,
        "circuit_id": j.circuit_id,
        "kind": circuit_kind(j.circuit_id),
        "priority": j.priority.name.lower(),
        "state": j.state.value,
        "error": j.error,
        "partition_counts": counts,
        "partitions": [_partition_json(p) for p in j.partitions],
    }


def status_json(status: EngineStatus) -> dict[str, Any]:
    """The engine's snapshot as JSON-ready data, every number as the engine counts it.

    ``queues.jobs`` has every priority and state (zeros included), ``queues.pending`` the
    queued + running jobs per priority (what a client should look at before submitting
    more), ``jobs`` the queued and running jobs (up to ``ACTIVE_SHOWN``) and the latest
    finished ones (up to ``FINISHED_SHOWN``) with each partition's state and timeline, and
    ``jobs_omitted`` how many more the engine remembers: a scrape stays a few hundred KB
    however many jobs the engine keeps (all 10,000 were ~15 MB).
    """
    b = status.budget
    shown_jobs = _jobs_shown(status.jobs)
    jobs = {prio.lower(): dict(by_state) for prio, by_state in status.counts.items()}
    totals: dict[str, int] = {}
    for by_state in jobs.values():
        for state, n in by_state.items():
            totals[state] = totals.get(state, 0) + n
    return {
        "uptime_seconds": status.uptime,
        "accepting": status.accepting,
        "budget": {
            "total_bytes": b.total,
            "reserved_bytes": b.reserved,
            "free_bytes": max(0, b.total - b.reserved),
            "reservations": dict(b.by_kind),  # what holds the reserved bytes
        },
        "queues": {
            "jobs": jobs,
            "totals": totals,
            "pending": {p: s.get("queued", 0) + s.get("running", 0) for p, s in jobs.items()},
            "partitions": dict(status.partitions),
        },
        "jobs": [_job_json(j) for j in shown_jobs],
        "jobs_omitted": len(status.jobs) - len(shown_jobs),
        "workers": [
            {"name": w.name, "kind": w.kind, "device": w.device, "busy_with": w.busy_with}
            for w in status.workers
        ],
        "devices": [
            {
                "index": d.index,
                "backend": d.backend,
                "kernel_seconds": d.kernel_seconds,
                "busy_ratio": d.kernel_seconds / status.uptime if status.uptime > 0 else 0.0,
                "memory_total_bytes": d.memory_total,
                "memory_keys_bytes": d.key_bytes,
                "memory_staged_bytes": d.staged_bytes,
                "memory_free_bytes": d.memory_free,
                "memory_limit_bytes": d.memory_limit,
                "memory_peak_bytes": d.memory_peak,
                "memory_give_backs": d.memory_give_backs,
                "uploaded_bytes": d.uploaded_bytes,
                "staging_total_bytes": d.staging_total,
            }
            for d in status.devices
        ],
        "srs": [
            {
                "circuit_id": s.circuit_id,
                "state": s.state,
                "bytes": s.bytes,
                "users": s.users,
                "last_used": s.last_used,
                "device_bytes": s.device_bytes,
                "msm_copies": s.msm_copies,
                "devices": list(s.devices),
                "streamed": list(s.streamed),
            }
            for s in status.srs
        ],
        "evictions": status.evictions,
        "device_budgets": [
            {
                "device": i,
                "total_bytes": kb.total,
                "reserved_bytes": kb.reserved,
                "free_bytes": max(0, kb.total - kb.reserved),
            }
            for i, kb in enumerate(status.device_budgets)
        ],
    }


# --- the server ------------------------------------------------------------------------------

HEADER_TIMEOUT_S = 10.0  # a connection must send a whole request within this, then idle ≤ this
MAX_CONNECTIONS = 64  # open connections at once (see _CappedServer for the next one)


class StatusServer:
    """aiohttp on its own loop thread: ``start()``, then ``.port``, then ``stop()``.

    ``status_fn`` returns the /status body (the daemon passes ``status_json`` of the engine's
    status, plus anything of its own); ``metrics.render()`` is the /metrics body.
    """

    def __init__(
        self,
        host: str,
        port: int,
        status_fn: Callable[[], dict],
        metrics: Metrics,
        token: str | None = None,
        *,
        header_timeout_s: float = HEADER_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.host = host
        self._requested_port = port
        self._status_fn = status_fn
        self._metrics = metrics
        self._token = token.encode() if token else None
        self._header_timeout_s = header_timeout_s
        self._max_connections = max_connections
        self._routes = {"/healthz": self._healthz, "/status": self._status,
                        "/metrics": self._metrics_route}  # fmt: skip
        self._port: int | None = None
        self._loop = LoopThread("cuzk-http")
        self._runner: web.ServerRunner | None = None
        self._started = False

    @property
    def port(self) -> int:
        """The bound port (the free one chosen when constructed with port 0)."""
        if self._port is None:
            raise RuntimeError("the status server is not running")
        return self._port

    def start(self, timeout: float = 10.0) -> None:
        """Bind and serve; returns once the port accepts connections.

        Raises BadInput when the address cannot be bound (in use, not local, …).
        """
        if self._started:
            raise RuntimeError("the status server was already started")
        self._started = True
        try:
            self._port = self._loop.start(self._setup, timeout)
        except (OSError, ValueError) as e:
            raise BadInput(
                f"HTTP status server cannot listen on {self.host}:{self._requested_port}: {e}"
            ) from e
        log.info("HTTP status server on http://%s:%d", self.host, self._port)

    def stop(self, timeout: float = 10.0) -> None:
        """Close the listener and open connections, join the thread. Idempotent."""
        runner = self._runner
        self._loop.stop(None if runner is None else runner.cleanup, timeout)
        self._runner = None
        self._port = None

    def __enter__(self) -> StatusServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- on the server's loop --

    async def _setup(self) -> int:
        server = _CappedServer(
            self._handle,
            self._max_connections,
            # aiohttp closes a connection that has not sent a whole request this long after
            # it opened or after its last answer: a header timeout and an idle timeout in one
            keepalive_timeout=self._header_timeout_s,
            logger=_QuietLog(log),
            access_log=None,
            max_line_size=4096,
            max_field_size=4096,
            max_headers=32,
        )
        runner = web.ServerRunner(server, shutdown_timeout=1.0)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self._requested_port, backlog=128)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        return runner.addresses[0][1]

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        """The token first (before anything of the request is looked at further), then the
        route, the method and the absence of a body; never reads a body."""
        if self._token is not None and request.path != "/healthz":
            if not token_matches(request.headers.get("Authorization"), self._token):
                return _closing(web.Response(
                    status=401,
                    text="401: a bearer token is required (Authorization: Bearer <token>)\n",
                    headers={"WWW-Authenticate": 'Bearer realm="cuzk"'},
                ))  # fmt: skip
        route = self._routes.get(request.path)
        if route is None:
            return web.Response(status=404, text="404: not found\n")
        if request.method not in ("GET", "HEAD"):
            return web.Response(status=405, text="405: GET only\n", headers={"Allow": "GET, HEAD"})
        if request.body_exists:
            return _closing(web.Response(status=413, text="413: these routes take no body\n"))
        return await route(request)

    async def _healthz(self, request: web.BaseRequest) -> web.Response:
        return web.Response(text="ok\n")

    async def _status(self, request: web.BaseRequest) -> web.Response:
        loop = asyncio.get_running_loop()
        try:
            body = await loop.run_in_executor(None, self._status_fn)
        except Exception as e:
            log.exception("GET /status failed")
            return web.json_response({"error": f"{type(e).__name__}: {e}"}, status=500)
        return web.json_response(body)

    async def _metrics_route(self, request: web.BaseRequest) -> web.Response:
        loop = asyncio.get_running_loop()
        body = await loop.run_in_executor(None, self._metrics.render)
        return web.Response(body=body, headers={"Content-Type": self._metrics.content_type})


def _closing(response: web.Response) -> web.Response:
    """Answer and close the connection (a refused client gets no second try on it)."""
    response.force_close()
    return response


class _CappedServer(web.Server):
    """aiohttp's low-level server with a cap on open connections, so slow or idle clients
    cannot use up the process's file descriptors (which proving needs too). A connection
    beyond the cap closes the oldest one not being answered (idle or half-open), or, when
    every one is being answered, is answered 503 and closed at once: places held by peers that
    send nothing never keep a health check out."""

    def __init__(self, handler: Any, max_connections: int, **kwargs: Any) -> None:
        async def tracked(request: web.BaseRequest) -> web.StreamResponse:
            self._busy.add(request.protocol)
            try:
                return await handler(request)
            finally:
                self._busy.discard(request.protocol)

        super().__init__(tracked, **kwargs)
        self._max_connections = max_connections
        self._open: dict[Any, None] = {}  # the connections' handlers, oldest first
        self._busy: set[Any] = set()  # handlers answering a request now
        self.evicted = 0  # connections closed to make room, since the start

    def __call__(self) -> Any:
        if len(self._open) >= self._max_connections and not self._evict_one():
            return _Refuse()
        handler = super().__call__()
        self._open[handler] = None
        return handler

    def _evict_one(self) -> bool:
        """Close the oldest connection that is not being answered; False if there is none."""
        for handler in self._open:
            if handler not in self._busy and handler.transport is not None:
                del self._open[handler]
                self.evicted += 1
                handler.force_close()
                return True
        return False

    def connection_lost(self, handler: Any, exc: BaseException | None = None) -> None:
        self._open.pop(handler, None)
        super().connection_lost(handler, exc)


class _Refuse(asyncio.Protocol):
    """A connection over the cap: one 503 line and close."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        transport.write(
            b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        transport.close()


class _QuietLog(logging.LoggerAdapter):
    """aiohttp's server log without tracebacks: a malformed request (anyone can send one) is
    one debug line naming the error, not a traceback at error level."""

    def log(self, level: int, msg: object, *args: Any, **kwargs: Any) -> None:
        exc = kwargs.pop("exc_info", None)
        if exc:
            err = exc if isinstance(exc, BaseException) else sys.exc_info()[1]
            level, msg = logging.DEBUG, f"HTTP: {msg}: {type(err).__name__}: {err}"
        super().log(level, msg, *args, **kwargs)

    def exception(self, msg: object, *args: Any, exc_info: Any = True, **kwargs: Any) -> None:
        self.log(logging.ERROR, msg, *args, exc_info=exc_info, **kwargs)
