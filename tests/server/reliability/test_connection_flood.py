"""A flood of TCP connections that finish the HTTP/2 handshake and then never call fills the
connection cap; the daemon closes them within its idle budget (ones that send nothing at all,
within its handshake budget: test_slow_clients), so a client gets back in within seconds of the
flood stopping, and a client whose idle connection was closed reconnects on its next call.
(Before, connections that finished the handshake kept the cap full while they stayed open.)
The accept gate's per-source cap and its room for known sources are switched off here (every
source a stranger allowed the whole cap), to see the idle budget alone; test_connection_gate
shows what they add."""

from __future__ import annotations

import socket
import time

import grpc
import pytest

from cuzk.server import daemon as daemon_module
from cuzk.server.client import Client

from .harness import report

# The HTTP/2 client preface and an empty SETTINGS frame: a handshake finished, then nothing.
HANDSHAKE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def _status(address: str, timeout: float) -> None:
    channel = grpc.insecure_channel(address)
    try:
        channel.unary_unary("/cuzk.v1.ProvingEngine/GetStatus")(b"", timeout=timeout)
    finally:
        channel.close()


def _back_in(address: str, within: float) -> float:
    """Seconds until a new client's call is answered (AssertionError after ``within``)."""
    t0 = time.monotonic()
    while True:
        try:
            _status(address, 1.0)
            return time.monotonic() - t0
        except grpc.RpcError as e:
            assert time.monotonic() - t0 < within, f"still refused after {within} s: {e}"
            time.sleep(0.1)


@pytest.mark.parametrize(
    "budgets",
    [
        pytest.param((40, 1500), marks=pytest.mark.slow, id="40-connections"),
        pytest.param(None, marks=pytest.mark.heavy, id="4096-connections-real-budgets"),
    ],
)
def test_a_connection_flood_lets_clients_back_in_within_seconds(make_daemon, monkeypatch,
                                                                budgets):  # fmt: skip
    if budgets is not None:
        cap, budget_ms = budgets
        monkeypatch.setattr(daemon_module, "MAX_CONNECTIONS", cap)
        monkeypatch.setattr(daemon_module, "HANDSHAKE_TIMEOUT_MS", budget_ms)
        monkeypatch.setattr(daemon_module, "CONNECTION_IDLE_MS", budget_ms, raising=False)
    cap, budget_ms = daemon_module.MAX_CONNECTIONS, daemon_module.CONNECTION_IDLE_MS
    monkeypatch.setattr(daemon_module, "PER_SOURCE_CONNECTIONS", cap + 10)
    monkeypatch.setattr(daemon_module, "KNOWN_SOURCE_S", 0.0)
    d = make_daemon(**{"server.listen": "127.0.0.1:0"})
    port = int(d.address.rsplit(":", 1)[1])
    with Client(d.address) as existing:
        existing.status()
        flood = []
        try:
            for _ in range(cap + 10):  # (more than the cap: the excess is refused at once)
                s = socket.create_connection(("127.0.0.1", port))
                s.sendall(HANDSHAKE)
                flood.append(s)
            waited = _back_in(d.address, budget_ms / 1000 + 5)
            assert waited > 0.5  # (the flood did fill the cap)
            # the existing client's idle connection was closed too: it reconnects
            time.sleep(budget_ms / 1000 + 0.5)
            assert existing.status().uptime_seconds >= 0
        finally:
            for s in flood:
                s.close()
    report(f"connection flood ({cap + 10} connections)", cap=cap, budget_ms=budget_ms,
           back_in_s=round(waited, 2))  # fmt: skip
