"""``Daemon``: the engine, the journal, the gRPC listener and the HTTP status server, started
and stopped in order.

Start: open the journal (dropping results past retention), build the engine, re-submit what
the journal holds unfinished, then listen. Stop: refuse new submissions, let the engine finish
what runs (up to ``server.grace_seconds``; a job still running then is left *pending* in the
journal and resumes on the next start) — the engine delivers every job's end to the service,
which journals it, before its shutdown returns — then close the listeners. SIGINT and SIGTERM
trigger that stop in :meth:`serve_forever`.

Security: a gRPC address other than a unix socket or loopback needs a bearer token or TLS;
:class:`~cuzk.server.config.DaemonConfig` refuses such a config, and :meth:`start` checks again
so a hand-built config cannot slip past. The one exception is ``auth.allow_unauthenticated``
(``cuzk serve --allow-unauthenticated``), for a GPU box on a trusted network serving Curio,
whose client sends no token and uses no TLS: it is logged as a warning at every start and
shown in /status and GetStatus (``listener``).
"""

from __future__ import annotations

import logging
import os
import resource
import signal
import socket
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any

import grpc

from cuzk.engine import Engine, EngineConfig
from cuzk.errors import BadInput
from cuzk.server.auth import TOKEN_ENV, TokenInterceptor, from_environment_hint, server_credentials
from cuzk.server.config import ALLOW_UNAUTHENTICATED, DaemonConfig, ListenAddress
from cuzk.server.gate import UPSTREAM_HOST, Gate, ProvenInterceptor
from cuzk.server.journal import Journal
from cuzk.server.loop import LoopThread
from cuzk.server.runtime import lock_journal, private_dir, shared_dir
from cuzk.server.service import ProvingService

if TYPE_CHECKING:
    from cuzk.server.http import StatusServer

log = logging.getLogger(__name__)

# Calls in progress at once besides the waiting ones (server.max_waiting_calls, which the
# service refuses beyond with its own message): status, cancel and submit calls keep this much
# room however many clients wait. Beyond both, gRPC answers RESOURCE_EXHAUSTED.
CONTROL_RPCS = 1_000
# Calls gRPC's core holds before the Python server has taken them. Beyond its soft limit
# (1,000 by default) gRPC cancels new calls at random, and a burst of a few thousand waiters
# saw CANCELLED for jobs nobody cancelled; with room for every call the server takes, the
# excess reaches the service, which refuses it with RESOURCE_EXHAUSTED instead.
MAX_PENDING_CALLS = 1_000_000
MAX_CONNECTIONS = 4096  # gRPC connections open at once
# A connection must finish its handshake (TLS, the HTTP/2 preface) this soon, and is closed
# (GOAWAY) once it has had no call in progress this long: connections that send nothing, or
# that finish the handshake and then idle, give their place back within seconds, so a flood of
# them cannot keep clients out for longer. A client whose connection was closed while idle
# reconnects on its next call, as gRPC clients do.
HANDSHAKE_TIMEOUT_MS = 5_000
CONNECTION_IDLE_MS = 10_000
# A TCP listener's connections pass the accept gate (cuzk.server.gate): each source may hold
# this many connections that have carried no call past the token check, and a source whose
# connection did within KNOWN_SOURCE_S may take the place of the oldest such connection when
# MAX_CONNECTIONS are open, so a flood cannot keep a token holder out.
PER_SOURCE_CONNECTIONS = 64
KNOWN_SOURCE_S = 24 * 3600.0
LOCK_SLACK_S = 15.0  # a restart waits this long beyond server.grace_seconds for the old daemon
FD_LIMIT = 65536  # the soft open-files limit is raised towards this (never above the hard one)
_MAX_GRPC_LIMIT = (1 << 31) - 1


class Daemon:
    """One proving daemon. ``engine_config`` replaces the config's [engine] section (tests)."""

    def __init__(self, config: DaemonConfig, *, engine_config: EngineConfig | None = None) -> None:
        self.config = config
        self.engine_config = engine_config or config.engine_config()
        self.engine: Engine | None = None
        self.journal: Journal | None = None
        self.service: ProvingService | None = None
        self.http: StatusServer | None = None
        self._server: grpc.aio.Server | None = None
        self._grpc_loop: LoopThread | None = None
        self._gate: Gate | None = None  # TCP listeners only
        self._gate_loop: LoopThread | None = None
        self._address: str | None = None
        self._socket_id: tuple[int, int] | None = None  # (device, inode) of our socket file
        self._lock_fd: int | None = None  # the journal's lock, held until stop() ends
        self._stopped = threading.Event()
        self._stop_lock = threading.Lock()

    # -- start --------------------------------------------------------------------------------

    def start(self) -> None:
        cfg = self.config
        addr = cfg.server.address
        _check_exposure(cfg)
        _raise_fd_limit()
        try:
            # one daemon per journal: a restart waits for the previous one to finish stopping
            self._lock_fd = lock_journal(cfg.journal.path, cfg.server.grace_seconds + LOCK_SLACK_S)
            self.journal = Journal(cfg.journal.path, cfg.journal.retention_hours * 3600)
            purged = self.journal.purge()
            if purged:
                log.info("journal: dropped %d result(s) past retention", purged)
            self.engine = Engine(self.engine_config)
            metrics, engine_doc = _metrics_and_status(self.engine)
            status_doc = None if engine_doc is None else self._grpc_status_doc(engine_doc)
            self.service = ProvingService(
                self.engine,
                self.journal,
                max_message_bytes=cfg.server.max_message_bytes,
                max_inflight_bytes=cfg.server.max_inflight_bytes,
                max_waiting_calls=cfg.server.max_waiting_calls,
                metrics=metrics,
                status_doc=status_doc,
                redact=_server_paths(self.engine_config.param_dir, cfg.journal.path),
            )
            self.service.resume()
            self._listen(addr)
            if cfg.http.enabled and metrics is not None:
                from cuzk.server.http import StatusServer

                self.http = StatusServer(
                    cfg.http.host, cfg.http.port, self._status_doc, metrics, cfg.auth.token
                )
                self.http.start()
        except BaseException:
            self.stop(graceful=False)
            raise
        log.info("cuzk daemon listening on %s", self.address)
        _warn_unauthenticated(cfg, self.address, self.http_port)
        if _token_from_environment(cfg):
            log.warning(
                "auth.token is taken from $%s in the daemon's environment: every gRPC call "
                "must send it, and Curio sends none (its calls fail with UNAUTHENTICATED). "
                "Unset %s where the daemon starts unless every client is to send it.",
                TOKEN_ENV, TOKEN_ENV,
            )  # fmt: skip

    def _listen(self, addr: ListenAddress) -> None:
        cfg = self.config
        limit = cfg.server.max_message_bytes
        # The transport admits a little more than the limit (1 MiB, or the limit again if
        # smaller) so that a message just over it reaches the servicer, which refuses it with
        # INVALID_ARGUMENT and a reason; beyond that gRPC itself answers RESOURCE_EXHAUSTED
        # (before the bytes reach Python).
        transport = min(_MAX_GRPC_LIMIT, limit + min(limit, 1 << 20))
        options = [
            ("grpc.max_receive_message_length", transport),
            ("grpc.max_send_message_length", transport),
            ("grpc.so_reuseport", 0),
            # Connections are capped, must finish their handshake promptly and are closed when
            # idle, so idle or slow clients can neither use up the file descriptors that
            # proving needs too nor hold the cap against other clients for long.
            # (behind the gate, which keeps to MAX_CONNECTIONS, room for this host's own too)
            ("grpc.max_allowed_incoming_connections", 2 * MAX_CONNECTIONS),
            ("grpc.server_handshake_timeout_ms", HANDSHAKE_TIMEOUT_MS),
            ("grpc.max_connection_idle_ms", CONNECTION_IDLE_MS),
            ("grpc.server.max_pending_requests", MAX_PENDING_CALLS),
            ("grpc.server.max_pending_requests_hard_limit", MAX_PENDING_CALLS),
        ]
        hint = from_environment_hint() if _token_from_environment(cfg) else None
        interceptors: list[grpc.aio.ServerInterceptor] = (
            [TokenInterceptor(cfg.auth.token, hint)] if cfg.auth.token else []
        )
        assert self.service is not None
        handler = self.service.handler()
        cert, key = cfg.auth.tls_cert, cfg.auth.tls_key
        credentials = server_credentials(cert, key) if cert and key else None
        if addr.unix_path is not None:
            sock = Path(addr.unix_path)
            if addr.private:
                private_dir(sock.parent, create=True)
            elif shared_dir(sock.parent):
                log.warning(
                    "the socket %s is in a directory other users can write: one of them could "
                    'take that path first; server.listen = "auto" keeps it private', sock
                )  # fmt: skip
            _clear_stale_socket(sock)
            target = f"unix:{addr.unix_path}"
        else:  # gRPC listens privately; the gate takes the address (see cuzk.server.gate)
            self._gate = self._start_gate()
            interceptors.append(ProvenInterceptor(self._gate))
            target = f"{UPSTREAM_HOST}:0"

        async def setup() -> tuple[grpc.aio.Server, int]:
            server = grpc.aio.server(
                interceptors=interceptors,
                options=options,
                maximum_concurrent_rpcs=cfg.server.max_waiting_calls + CONTROL_RPCS,
            )
            server.add_generic_rpc_handlers([handler])
            try:
                if credentials is not None:
                    port = server.add_secure_port(target, credentials)
                else:
                    port = server.add_insecure_port(target)
            except RuntimeError as e:
                raise BadInput(f"server.listen: cannot listen on {cfg.server.listen} ({e})") from e
            if addr.unix_path is None and port == 0:
                raise BadInput(f"server.listen: cannot listen on {cfg.server.listen}")
            await server.start()
            return server, port

        self._grpc_loop = LoopThread("cuzk-grpc")
        self._server, port = self._grpc_loop.start(setup)
        if addr.unix_path is not None:
            self._socket_id = _file_id(Path(addr.unix_path))
            self._address = f"unix://{addr.unix_path}"
            return
        gate, gate_loop = self._gate, self._gate_loop
        assert gate is not None and gate_loop is not None and addr.host is not None
        try:
            public = gate_loop.call(lambda: gate.start(addr.host or "", addr.port or 0, port))
        except OSError as e:
            raise BadInput(f"server.listen: cannot listen on {cfg.server.listen} ({e})") from e
        host = f"[{addr.host}]" if ":" in addr.host else addr.host
        self._address = f"{host}:{public}"

    def _start_gate(self) -> Gate:
        """The accept gate's loop and the gate (not yet listening)."""

        async def make() -> Gate:
            return Gate(
                max_connections=MAX_CONNECTIONS,
                per_source=PER_SOURCE_CONNECTIONS,
                first_byte_s=HANDSHAKE_TIMEOUT_MS / 1000,
                trust_s=KNOWN_SOURCE_S,
            )

        self._gate_loop = LoopThread("cuzk-gate")
        return self._gate_loop.start(make)

    @property
    def address(self) -> str:
        """Where clients connect (with the real port when the config asked for port 0)."""
        if self._address is None:
            raise RuntimeError("the daemon is not listening")
        return self._address

    @property
    def http_port(self) -> int | None:
        return None if self.http is None else self.http.port

    def listener(self) -> dict:
        """Who may call the daemon, for /status and GetStatus: each listener's address and how
        it admits callers ("local", "token", "tls", "tls+token", "unauthenticated")."""
        cfg = self.config
        return {
            "grpc": {"address": self._address or cfg.server.listen, "auth": cfg.grpc_mode},
            "http": {
                "address": None if self.http_port is None else f"{cfg.http.host}:{self.http_port}",
                "auth": cfg.http_mode,
            },
            "allow_unauthenticated": cfg.auth.allow_unauthenticated,
        }

    def _grpc_status_doc(self, engine_doc: Any) -> Any:
        """GetStatus's document: the engine's, and the listener."""

        def doc(status: Any) -> dict:
            return {**engine_doc(status), "listener": self.listener()}

        return doc

    def _status_doc(self) -> dict:
        assert self.engine is not None and self.service is not None
        from cuzk.server.http import status_json

        doc = status_json(self.engine.status())
        doc["listener"] = self.listener()
        doc["daemon"] = {
            "grpc": self._address,
            "journal": str(self.config.journal.path),
            "journal_jobs": self.service.journal.counts(),
            "journal_health": self.service.results.health(),
            "completed": self.service.completed,
            "failed": self.service.failed,
            "waiting_calls": self.service.waiting,
        }
        if self._gate is not None:
            doc["daemon"]["connections"] = self._gate.stats()
        return doc

    # -- stop ---------------------------------------------------------------------------------

    def stop(self, graceful: bool = True, grace: float | None = None) -> None:
        """Stop taking work, finish (graceful) or cancel what runs, journal results, close.
        Idempotent."""
        with self._stop_lock:
            if self._stopped.is_set():
                return
            grace = self.config.server.grace_seconds if grace is None else grace
            if self.service is not None:
                self.service.stop_accepting()
            if self.engine is not None:
                try:
                    self.engine.shutdown(graceful=graceful, timeout=grace)  # ends journalled
                except Exception:  # what runs stays pending; close the rest
                    log.exception("engine shutdown")
            self._stop_grpc()
            if self.service is not None:
                self.service.close()
            if self.http is not None:
                try:
                    self.http.stop()
                except RuntimeError:
                    log.exception("stopping the HTTP server")
            if self.journal is not None:
                self.journal.close()
            addr = self.config.server.address
            if addr.unix_path is not None and self._socket_id is not None:
                _remove_own_socket(Path(addr.unix_path), self._socket_id)
            if self._lock_fd is not None:
                os.close(self._lock_fd)  # the next daemon may start
                self._lock_fd = None
            self._stopped.set()
            log.info("cuzk daemon stopped")

    def _stop_grpc(self) -> None:
        """Close the listener, answer what is in progress (up to a second), stop the loops.
        Each step runs whatever the one before did: the rest of the shutdown still runs."""
        server, loop = self._server, self._grpc_loop
        gate, gate_loop = self._gate, self._gate_loop
        if gate is not None and gate_loop is not None:
            _step("closing the gate's listener", lambda: gate_loop.call(gate.close_listener, 5.0))
        if loop is not None:
            cleanup = None if server is None else (lambda: server.stop(grace=1.0))
            _step("stopping the gRPC server", lambda: loop.stop(cleanup))
        if gate_loop is not None:
            _step("stopping the gate", lambda: gate_loop.stop(None if gate is None else gate.stop))

    def serve_forever(self) -> None:
        """Start, then block until SIGINT/SIGTERM (or :meth:`stop` from another thread)."""
        wake = threading.Event()

        def on_signal(signum: int, _frame: FrameType | None) -> None:
            log.info("received %s: shutting down", signal.Signals(signum).name)
            wake.set()

        previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.start()
            while not wake.wait(0.5) and not self._stopped.is_set():
                pass
        finally:
            self.stop(graceful=True)
            for s, h in previous.items():
                signal.signal(s, h)

    def __enter__(self) -> Daemon:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop(graceful=exc_type is None)


def _step(what: str, fn: Callable[[], Any]) -> None:
    try:
        fn()
    except Exception:  # the rest of the shutdown still runs
        log.exception(what)


def _check_exposure(cfg: DaemonConfig) -> None:
    if cfg.grpc_mode == "unauthenticated" and not cfg.auth.allow_unauthenticated:
        raise BadInput(
            f"server.listen: {cfg.server.listen} is reachable from other hosts; "
            "refusing to serve it without auth.token or TLS (auth.tls_cert/tls_key) unless "
            f"{ALLOW_UNAUTHENTICATED} is set (a trusted network only)"
        )


def _token_from_environment(cfg: DaemonConfig) -> bool:
    """The daemon's token is the one in $CUZK_TOKEN (``cuzk serve`` takes it from there when
    neither the file nor the flags set one; a leftover variable locks Curio out)."""
    return cfg.auth.token is not None and os.environ.get(TOKEN_ENV) == cfg.auth.token


def _warn_unauthenticated(cfg: DaemonConfig, grpc_address: str, http_port: int | None) -> None:
    """Say loudly, at every start, which listeners anyone on the network may use."""
    open_ = [f"gRPC {grpc_address}"] if cfg.grpc_mode == "unauthenticated" else []
    if cfg.http_mode == "unauthenticated":
        open_.append(f"HTTP {cfg.http.host}:{http_port}")
    if open_:
        log.warning(
            "UNAUTHENTICATED LISTENER (auth.allow_unauthenticated): %s accept(s) calls from any "
            "host that can reach it, with no token and no TLS; anyone there may submit, cancel "
            "and read proofs. Use this on a trusted private network only.",
            " and ".join(open_),
        )
    elif cfg.auth.allow_unauthenticated:
        log.info("auth.allow_unauthenticated is set but every listener is local or protected")


def _server_paths(param_dir: Path, journal: Path) -> list[tuple[str, str]]:
    """Where the daemon keeps its files, as clients are shown them instead."""
    pairs = []
    for path, placeholder in ((param_dir, "<param_dir>"), (journal.parent, "<journal_dir>"),
                              (Path.home(), "~")):  # fmt: skip
        for form in {str(path), str(path.expanduser()), str(path.expanduser().resolve())}:
            if form not in ("", "/", "."):
                pairs.append((form, placeholder))
    return pairs


def _raise_fd_limit() -> None:
    """Raise the soft open-files limit to the hard one (at most FD_LIMIT): a daemon holds a
    descriptor per client connection besides its own files, and 1024 is a common default."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = FD_LIMIT if hard == resource.RLIM_INFINITY else min(hard, FD_LIMIT)
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (OSError, ValueError) as e:  # not allowed here: keep what we have
        log.warning("cannot raise the open-files limit: %s", e)


def _clear_stale_socket(path: Path) -> None:
    """Remove a socket file a killed daemon left behind; refuse if a daemon still listens."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        return
    if not stat.S_ISSOCK(mode):
        raise BadInput(f"server.listen: {path} exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError:
        path.unlink(missing_ok=True)  # nobody answers: stale
        return
    finally:
        probe.close()
    raise BadInput(f"server.listen: another process is already listening on {path}")


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _remove_own_socket(path: Path, own: tuple[int, int]) -> None:
    """Remove the socket file this daemon bound, and only that one: a daemon started while
    this one was stopping (a restart) has bound a new file at the same path once this one's
    listener closed, and removing it would leave that daemon listening where no client finds
    it."""
    if _file_id(path) == own:
        path.unlink(missing_ok=True)


def _metrics_and_status(engine: Engine) -> tuple[Any, Any]:  # (Metrics | None, fn | None)
    """The HTTP helper's metrics and /status document, when that module is available."""
    try:
        from cuzk.server.http import status_json
        from cuzk.server.metrics import Metrics
    except ImportError:  # pragma: no cover - both ship with cuzk
        log.warning("metrics/status modules unavailable; GetMetrics answers empty")
        return None, None
    return Metrics(engine.status), status_json
