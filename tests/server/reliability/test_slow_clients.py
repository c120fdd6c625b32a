"""Slow and silent connections to the gRPC socket (no HTTP/2 preface, or half of one) do not
stop the daemon from answering; ``-m heavy`` also waits for the handshake timeout to close
them."""

from __future__ import annotations

import socket
import time

import pytest

from cuzk.server.client import Client
from cuzk.server.daemon import HANDSHAKE_TIMEOUT_MS

from .harness import Process, report

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def _open(path: str, n: int) -> list[socket.socket]:
    socks = []
    for i in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        if i % 2:
            s.sendall(PREFACE[: 1 + i % len(PREFACE)])  # a handshake that never finishes
        socks.append(s)
    return socks


def _closed(s: socket.socket) -> bool:
    """The daemon closed ``s`` (what it sent first, its HTTP/2 settings, is read and dropped)."""
    s.setblocking(False)
    try:
        while True:
            if s.recv(1 << 16) == b"":
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def _slow_clients(d, n: int, wait_close: bool) -> dict[str, object]:
    path = d.address.removeprefix("unix://")
    socks = _open(path, n)
    try:
        with Client(d.address) as c:
            t0 = time.perf_counter()
            c.status()
            status_s = time.perf_counter() - t0
        closed = 0
        if wait_close:
            time.sleep(HANDSHAKE_TIMEOUT_MS / 1000 + 5)
            closed = sum(_closed(s) for s in socks)
    finally:
        for s in socks:
            s.close()
    return {"connections": n, "status_ms": round(status_s * 1000, 1), "closed_by_daemon": closed,
            "threads": Process.now().threads}  # fmt: skip


def test_silent_connections_do_not_block_the_daemon(make_daemon):
    figures = _slow_clients(make_daemon(), 200, wait_close=False)
    assert figures["status_ms"] < 1000
    report("grpc slow connections (fast)", **figures)


@pytest.mark.heavy
def test_silent_connections_are_closed_after_the_handshake_timeout(make_daemon):
    figures = _slow_clients(make_daemon(), 300, wait_close=True)
    report("grpc slow connections (heavy)", **figures)
    assert figures["status_ms"] < 1000 and figures["closed_by_daemon"] == 300
