"""An accept gate in front of a TCP gRPC listener: per-source caps, and room kept for clients
that have shown the token.

gRPC counts connections before any token is seen, so a flood of connections that open and
then idle fills its incoming-connection cap, and a Curio node that reconnects meanwhile is
refused however valid its token. On a TCP listener the daemon therefore accepts connections
itself, here, and relays each one's bytes (TLS or not, unread) to gRPC on a private loopback
port:

- **A budget for silence**: a connection that sends nothing within ``first_byte_s`` is closed
  before gRPC ever sees it (after that, gRPC's own handshake and idle budgets apply).
- **A cap per source** (an IPv4 address, or an IPv6 /64, which one host owns): at most
  ``per_source`` *unproven* connections each. A connection is *proven* once it carries a call
  that passed the token check (any call, where the listener takes no token); one source's
  flood holds ``per_source`` places, never the whole cap.
- **Room for token holders**: a source whose connection carried such a call in the last
  ``trust_s`` seconds is *known*. At the cap (``max_connections``), a new connection from a
  known source takes the place of the oldest unproven one; a stranger's is refused. So a
  client that reconnects during a flood from many sources gets back in at once, provided it
  comes from the address it used before.

gRPC reports each call's peer as the gate's end of the private connection, which is how the
token check (on gRPC's loop) tells the gate which connection it was (:meth:`Gate.proven`).
Unix-socket listeners need no gate: only this host's users can reach them.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

log = logging.getLogger(__name__)

UPSTREAM_HOST = "127.0.0.1"  # where gRPC listens behind the gate
WRITE_HIGH = 4 << 20  # bytes queued towards one side before the other side's reading pauses
READ_SIZE = 1 << 20  # bytes read at once, into the gate's one buffer (see Gate.buffer)
MAX_KNOWN = 65_536  # known sources remembered (the oldest are forgotten first)


def source_of(address: str) -> str:
    """The source a connection is counted against: the IPv4 address (an IPv4-mapped IPv6
    address counts as its IPv4 one), or the /64 of an IPv6 address."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class _Conn(asyncio.BufferedProtocol):
    """One client connection: admitted or refused by the gate, relayed to gRPC once its first
    bytes arrive."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.transport: asyncio.Transport | None = None
        self.up: _Up | None = None
        self.source = ""
        self.proven = False
        self.pending: list[bytes] = []  # bytes received before gRPC's side was connected
        self.eof = False
        self.closed = False
        self.timer: asyncio.TimerHandle | None = None

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.gate.buffer

    def buffer_updated(self, nbytes: int) -> None:
        data = self.gate.buffer[:nbytes]
        if self.up is not None and self.up.transport is not None:
            self.up.transport.write(data)
        else:
            self.data_received(bytes(data))

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.source = source_of(peer[0] if peer else "")
        if not self.gate._admit(self):
            transport.abort()
            return
        transport.set_write_buffer_limits(high=WRITE_HIGH)
        self.timer = self.gate.loop.call_later(self.gate.first_byte_s, self._silent)

    def _silent(self) -> None:
        if self.up is None and not self.pending:
            self.close()

    def data_received(self, data: bytes) -> None:
        """Bytes that came before gRPC's side is connected: kept, and the connection made."""
        first = not self.pending
        self.pending.append(data)
        if first and self.up is None:
            if self.timer is not None:
                self.timer.cancel()
            self.gate.loop.create_task(self._connect())

    async def _connect(self) -> None:
        up = _Up(self)
        self.up = up
        port = self.gate.upstream
        try:
            await self.gate.loop.create_connection(lambda: up, UPSTREAM_HOST, port)
        except OSError as e:
            log.warning("gate: cannot reach gRPC on %s:%d: %s", UPSTREAM_HOST, port, e)
            self.close()

    def upstream_ready(self) -> None:
        assert self.up is not None and self.up.transport is not None
        if self.closed:
            self.up.transport.abort()
            return
        self.gate._by_port[self.up.port] = self
        for chunk in self.pending:
            self.up.transport.write(chunk)
        self.pending = []
        if self.eof and self.up.transport.can_write_eof():
            self.up.transport.write_eof()

    def eof_received(self) -> bool:
        self.eof = True
        if self.up is not None and self.up.transport is not None:
            if self.up.transport.can_write_eof():
                self.up.transport.write_eof()
        return True  # keep our side open for gRPC's answer

    def pause_writing(self) -> None:
        if self.up is not None and self.up.transport is not None:
            self.up.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.up is not None and self.up.transport is not None:
            self.up.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.close()

    def close(self) -> None:
        """Close both sides (what was queued towards each is still sent) and give back the
        place."""
        if self.closed:
            return
        self.closed = True
        if self.timer is not None:
            self.timer.cancel()
        self.gate._release(self)
        if self.transport is not None:
            self.transport.close()
        if self.up is not None and self.up.transport is not None:
            self.up.transport.close()

    def evict(self) -> None:
        """Drop at once (its place goes to a known source's connection)."""
        if self.transport is not None:
            self.transport.abort()
        self.close()


class _Up(asyncio.BufferedProtocol):
    """gRPC's side of one relayed connection."""

    def __init__(self, down: _Conn) -> None:
        self.down = down
        self.transport: asyncio.Transport | None = None
        self.port = 0

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.down.gate.buffer

    def buffer_updated(self, nbytes: int) -> None:
        if self.down.transport is not None:
            self.down.transport.write(self.down.gate.buffer[:nbytes])

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.port = transport.get_extra_info("sockname")[1]
        transport.set_write_buffer_limits(high=WRITE_HIGH)
        self.down.upstream_ready()

    def eof_received(self) -> bool:
        self.down.close()
        return False

    def pause_writing(self) -> None:
        if self.down.transport is not None:
            self.down.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.down.transport is not None:
            self.down.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.down.close()


class Gate:
    """Accepts on a TCP address and relays to gRPC on ``127.0.0.1:<upstream>`` (see the
    module's docstring for the rules). Made, started and stopped on its own asyncio loop (the
    one it runs on); :meth:`proven` and :meth:`stats` may be called from any thread."""

    def __init__(
        self, *, max_connections: int, per_source: int, first_byte_s: float, trust_s: float
    ) -> None:
        self.max_connections = max_connections
        self.per_source = per_source
        self.first_byte_s = first_byte_s
        self.trust_s = trust_s
        self.loop = asyncio.get_running_loop()
        self.upstream = 0
        # Every connection reads into this one buffer: the loop hands each read to its
        # protocol, which writes it on at once (a write the socket cannot take whole is copied
        # by the transport), before the next read; so memory does not grow with connections.
        self.buffer = memoryview(bytearray(READ_SIZE))
        self._server: asyncio.Server | None = None
        self._open: set[_Conn] = set()
        self._unproven: OrderedDict[_Conn, None] = OrderedDict()  # oldest first
        self._unproven_by_source: dict[str, int] = {}
        self._known: OrderedDict[str, float] = OrderedDict()  # source → when last proven
        self._by_port: dict[int, _Conn] = {}  # our end of the private connection → client's
        self.refused = 0
        self.evicted = 0

    async def start(self, host: str, port: int, upstream: int) -> int:
        """Listen on ``host:port``, relaying to gRPC's ``upstream`` port; returns the port
        listened on (the one chosen when ``port`` is 0). Raises OSError."""
        self.upstream = upstream
        sock = _listening_socket(host, port)
        # (the backlog again: asyncio would make it 100, and a burst of connections beyond
        # that has its handshakes dropped and retried a second later)
        self._server = await self.loop.create_server(
            lambda: _Conn(self), sock=sock, backlog=socket.SOMAXCONN
        )
        return int(sock.getsockname()[1])

    async def close_listener(self) -> None:
        """Accept no more connections (those open stay, to be answered while gRPC stops)."""
        if self._server is not None:
            self._server.close()

    async def stop(self) -> None:
        """Stop accepting and close every relayed connection."""
        await self.close_listener()
        for conn in list(self._open):
            conn.evict()

    # -- admission (on the gate's loop) ------------------------------------------------------

    def _admit(self, conn: _Conn) -> bool:
        known = self._is_known(conn.source)
        if self._unproven_by_source.get(conn.source, 0) >= self.per_source:
            self.refused += 1
            return False
        if len(self._open) >= self.max_connections:
            oldest = next(iter(self._unproven), None)
            if not known or oldest is None:
                self.refused += 1
                return False
            oldest.evict()
            self.evicted += 1
        self._open.add(conn)
        self._unproven[conn] = None
        self._unproven_by_source[conn.source] = self._unproven_by_source.get(conn.source, 0) + 1
        return True

    def _release(self, conn: _Conn) -> None:
        if conn not in self._open:
            return
        self._open.discard(conn)
        if conn.up is not None and self._by_port.get(conn.up.port) is conn:
            del self._by_port[conn.up.port]  # (only its own: the port may be in use again)
        if not conn.proven:
            self._unprove(conn)

    def _unprove(self, conn: _Conn) -> None:
        del self._unproven[conn]
        left = self._unproven_by_source[conn.source] - 1
        if left:
            self._unproven_by_source[conn.source] = left
        else:
            del self._unproven_by_source[conn.source]

    def _is_known(self, source: str) -> bool:
        when = self._known.get(source)
        return when is not None and time.monotonic() - when < self.trust_s

    def _prove(self, port: int) -> None:
        conn = self._by_port.get(port)
        if conn is None or conn.closed:
            return
        self._known[conn.source] = time.monotonic()
        self._known.move_to_end(conn.source)
        while len(self._known) > MAX_KNOWN:
            self._known.popitem(last=False)
        if not conn.proven:
            conn.proven = True
            self._unprove(conn)

    # -- from gRPC's loop ---------------------------------------------------------------------

    def proven(self, peer: str) -> None:
        """A call from ``peer`` (gRPC's ``context.peer()``) passed the token check."""
        _, _, port = peer.rpartition(":")
        if port.isdigit():
            with contextlib.suppress(RuntimeError):  # the gate has stopped: nothing to tell
                self.loop.call_soon_threadsafe(self._prove, int(port))

    def stats(self) -> dict[str, int]:
        """For /status: connections open, how many of them unproven, refused, evicted."""
        return {
            "open": len(self._open),
            "unproven": len(self._unproven),
            "known_sources": len(self._known),
            "refused": self.refused,
            "evicted": self.evicted,
        }


class ProvenInterceptor(grpc.aio.ServerInterceptor):
    """Tells the gate about each call that reached it past the token check (it runs after
    :class:`~cuzk.server.auth.TokenInterceptor`, which answers refused calls itself)."""

    def __init__(self, gate: Gate) -> None:
        self._gate = gate

    async def intercept_service(  # type: ignore[override]  # grpc's stub generics, not ours
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        behaviour = getattr(handler, "stream_unary", None)
        if behaviour is None:  # (every cuzk RPC is stream-unary; anything else passes as is)
            return handler
        gate = self._gate

        async def marked(requests: Any, context: grpc.aio.ServicerContext) -> Any:
            gate.proven(context.peer())
            return await behaviour(requests, context)

        return handler._replace(stream_unary=marked)  # type: ignore[attr-defined]  # namedtuple


def _listening_socket(host: str, port: int) -> socket.socket:
    """A listening socket as gRPC would make it: ``::`` takes both IPv4 and IPv6 (where the
    host has IPv6), ``0.0.0.0`` IPv4 only; a name is bound at its first address."""
    if host == "::" and socket.has_ipv6:
        try:
            sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        except OSError:
            pass  # no IPv6 here: IPv4's any-address below
        else:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            return _bind(sock, ("::", port))
    family, kind, proto, _, addr = socket.getaddrinfo(
        "0.0.0.0" if host == "::" else host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    return _bind(socket.socket(family, kind, proto), addr)


def _bind(sock: socket.socket, addr: Any) -> socket.socket:
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(socket.SOMAXCONN)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock
