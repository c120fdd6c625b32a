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
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from cuzk.engine.request import EngineStatus, JobStatus, PartitionStatus, PartitionTimeline
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
    more), ``jobs`` every remembered job with each partition's state and timeline.
    """
    b = status.budget
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
        "jobs": [_job_json(j) for j in status.jobs],
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
            }
            for s in status.srs
        ],
        "evictions": status.evictions,
    }


# --- the server ------------------------------------------------------------------------------

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


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
    ) -> None:
        self.host = host
        self._requested_port = port
        self._status_fn = status_fn
        self._metrics = metrics
        self._token = token.encode() if token else None
        self._port: int | None = None
        self._loop = LoopThread("cuzk-http")
        self._runner: web.AppRunner | None = None
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
        runner = web.AppRunner(self._app(), access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self._requested_port)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        return runner.addresses[0][1]

    def _app(self) -> web.Application:
        app = web.Application(middlewares=[self._auth])
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/status", self._status)
        app.router.add_get("/metrics", self._metrics_route)
        return app

    @web.middleware
    async def _auth(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if self._token is not None and request.path != "/healthz":
            if not token_matches(request.headers.get("Authorization"), self._token):
                raise web.HTTPUnauthorized(
                    text="401: a bearer token is required (Authorization: Bearer <token>)\n",
                    headers={"WWW-Authenticate": 'Bearer realm="cuzk"'},
                )
        return await handler(request)

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _status(self, request: web.Request) -> web.Response:
        loop = asyncio.get_running_loop()
        try:
            body = await loop.run_in_executor(None, self._status_fn)
        except Exception as e:
            log.exception("GET /status failed")
            return web.json_response({"error": f"{type(e).__name__}: {e}"}, status=500)
        return web.json_response(body)

    async def _metrics_route(self, request: web.Request) -> web.Response:
        loop = asyncio.get_running_loop()
        body = await loop.run_in_executor(None, self._metrics.render)
        return web.Response(body=body, headers={"Content-Type": self._metrics.content_type})
