"""The HTTP status server under hostile clients: slow heads are cut off, connections are
capped, malformed requests are answered without a traceback, a body is never read, and the
token is checked first; an honest client is served all along."""

from __future__ import annotations

import logging
import os
import random
import socket
import threading
import time

import pytest

from cuzk.server.http import StatusServer
from cuzk.server.metrics import Metrics

from ..test_http import get
from .harness import report

TOKEN = "t0ken"


@pytest.fixture
def server():
    s = StatusServer(
        "127.0.0.1",
        0,
        lambda: {"ok": True},
        Metrics(dict),  # type: ignore[arg-type]
        token=TOKEN,
        header_timeout_s=0.5,
        max_connections=8,
    )
    s.start()
    yield s
    s.stop()


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """The server closes ``sock`` (EOF or reset) within ``seconds``; what it sends first is
    read and dropped."""
    sock.settimeout(seconds)
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            if not sock.recv(4096):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False
    return False


def test_a_slow_head_is_cut_off(server):
    sock = _connect(server.port)
    try:
        sock.sendall(b"GET /status HTTP/1.1\r\nHost: x\r\n")  # ... and never the rest
        t0 = time.monotonic()
        assert _closed_within(sock, 5)
        assert time.monotonic() - t0 < 3
    finally:
        sock.close()
    silent = _connect(server.port)  # sends nothing at all
    try:
        assert _closed_within(silent, 5)
    finally:
        silent.close()


def test_half_open_connections_never_keep_a_health_check_out(server):
    """Peers holding every place with half-open or silent connections, renewed as they are
    closed: each new connection takes the place of the oldest idle one, so /healthz and
    /status answer 200 on every poll (they answered 503 before)."""
    held = []
    try:
        for round_ in range(3):
            for i in range(8):  # the cap, again each round
                sock = _connect(server.port)
                if i % 2:
                    sock.sendall(b"GET /status HTTP/1.1\r\nHost: x\r\n")  # never finished
                held.append(sock)
            time.sleep(0.05)
            assert get(f"http://127.0.0.1:{server.port}/healthz")[0] == 200, round_
            assert get(f"http://127.0.0.1:{server.port}/status", token=TOKEN)[0] == 200, round_
        assert sum(_closed_within(s, 0.2) for s in held[:8]) == 8  # the oldest made room
    finally:
        for s in held:
            s.close()


def test_connections_beyond_the_cap_are_refused_while_every_one_is_answered():
    """Only when every place is answering a request does a new connection get a 503; those
    clients are served once the answers are out."""
    release = threading.Event()

    def slow_status() -> dict:
        release.wait(10)
        return {"ok": True}

    s = StatusServer("127.0.0.1", 0, slow_status, Metrics(dict), max_connections=4)  # type: ignore[arg-type]
    s.start()
    held = []
    try:
        for _ in range(4):
            sock = _connect(s.port)
            sock.sendall(b"GET /status HTTP/1.1\r\nHost: x\r\n\r\n")
            held.append(sock)
        time.sleep(0.2)
        extra = _connect(s.port)
        extra.settimeout(5)
        assert extra.recv(100).startswith(b"HTTP/1.1 503")
        extra.close()
        release.set()
        for sock in held:
            sock.settimeout(5)
            assert sock.recv(100).startswith(b"HTTP/1.1 200")
        assert get(f"http://127.0.0.1:{s.port}/healthz")[0] == 200
    finally:
        release.set()
        for sock in held:
            sock.close()
        s.stop()


def test_a_request_with_a_body_is_refused_unread_and_auth_comes_first(server):
    sock = _connect(server.port)
    try:  # claims 1 GB of body, sends 10 bytes: answered at once, the rest never awaited
        sock.sendall(
            b"GET /status HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n0123456789"
        )
        sock.settimeout(5)
        assert sock.recv(100).startswith(b"HTTP/1.1 401")
    finally:
        sock.close()
    sock = _connect(server.port)
    try:
        sock.sendall(
            f"GET /status HTTP/1.1\r\nHost: x\r\nAuthorization: bearer {TOKEN}\r\n"
            "Content-Length: 1000000000\r\n\r\n0123".encode()
        )
        sock.settimeout(5)
        assert sock.recv(100).startswith(b"HTTP/1.1 413")
    finally:
        sock.close()


MALFORMED = [
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(64),  # a TLS hello
    b"GET /status HTTP/9.9\r\n\r\n",
    b"GET " + b"/" * 10_000 + b" HTTP/1.1\r\n\r\n",
    b"GET /status HTTP/1.1\r\n" + b"X: y\r\n" * 200 + b"\r\n",
    b"GET /status HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
    b"GET /status HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"\x00\xff" * 100 + b"\r\n\r\n",
    b"GET /status HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \xff\xfe\r\n\r\n",
    b"BREW /status HTTP/1.1\r\n\r\n",
]


def test_malformed_requests_are_answered_without_tracebacks(server, caplog):
    caplog.set_level(logging.DEBUG)
    for raw in MALFORMED * 5:
        sock = _connect(server.port)
        try:
            sock.sendall(raw)
            assert _closed_within(sock, 5), raw[:40]  # answered (4xx) and closed, never hung
        finally:
            sock.close()
    assert get(f"http://127.0.0.1:{server.port}/status", token=TOKEN)[0] == 200
    tracebacks = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert not tracebacks, [r.getMessage() for r in tracebacks]
    report("http malformed (fast)", requests=len(MALFORMED) * 5, tracebacks=len(tracebacks))


def _fds() -> int:
    return len(os.listdir(f"/proc/{os.getpid()}/fd"))


@pytest.mark.heavy
def test_http_storm_of_malformed_requests_and_slow_clients(caplog, seed):
    """1,000 seeded malformed or mutated requests and 300 slow connections against a server
    with the default timeouts and cap: no traceback, honest clients served, no descriptor
    left open afterwards."""
    caplog.set_level(logging.DEBUG)
    r = random.Random(seed)
    s = StatusServer("127.0.0.1", 0, lambda: {"ok": True}, Metrics(dict), token=TOKEN)  # type: ignore[arg-type]
    s.start()
    before = _fds()
    try:
        slow = []
        for _ in range(300):  # more than the cap: the rest are refused with 503
            sock = _connect(s.port)
            sock.sendall(b"GET /status HTTP/1.1\r\n")
            slow.append(sock)
        valid = f"GET /status HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode()
        for sock in slow:
            sock.close()
        answered = 0
        for _ in range(1000):
            raw = r.choice(MALFORMED) if r.random() < 0.3 else bytearray(valid)
            if isinstance(raw, bytearray):
                for _ in range(r.randrange(1, 6)):
                    raw[r.randrange(len(raw))] = r.randrange(256)
            sock = _connect(s.port)
            try:
                sock.sendall(bytes(raw))
                sock.shutdown(socket.SHUT_WR)
                answered += _closed_within(sock, 15)
            finally:
                sock.close()
        assert get(f"http://127.0.0.1:{s.port}/status", token=TOKEN)[0] == 200
        time.sleep(1)
        after = _fds()
    finally:
        s.stop()
    tracebacks = [x for x in caplog.records if x.exc_info or x.levelno >= logging.ERROR]
    report("http storm (heavy)", seed=seed, requests=1000, slow_connections=300,
           answered_and_closed=answered, tracebacks=len(tracebacks),
           fds_before=before, fds_after=after)  # fmt: skip
    assert not tracebacks and answered == 1000 and after <= before + 2
