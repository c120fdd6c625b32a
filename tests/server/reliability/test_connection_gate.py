"""The accept gate on TCP listeners (cuzk.server.gate): during a flood of idle connections,
renewed as fast as places free, a client that presents the token gets an answer within
seconds. One source's flood holds only its per-source share; a flood from many sources that
fills the cap gives way to a client from an address that has shown the token before. (Before,
the flood held gRPC's whole connection cap and every new client got UNAVAILABLE until the
flood's connections idled out, 10 s later, when the flood took the places back.) Also: what
relaying costs on a large request, against gRPC's own port behind the gate."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import grpc
import pytest

from cuzk.server import daemon as daemon_module
from cuzk.server.auth import bearer
from cuzk.server.client import Client
from cuzk.server.gate import source_of
from cuzk.server.proto import proving_pb2 as pb

from ..conftest import CIRCUIT
from .harness import report
from .test_connection_flood import HANDSHAKE

TOKEN = "gate-test-token"
CAP = 40  # connections at once (the daemon's cap, made small)
PER_SOURCE = 8


def _connect(port: int, source: str) -> socket.socket | None:
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=2, source_address=(source, 0))
        s.sendall(HANDSHAKE)
        return s
    except OSError:
        return None


def _closed(s: socket.socket) -> bool:
    s.setblocking(False)
    try:
        while s.recv(1 << 16):
            pass
        return True
    except BlockingIOError:
        return False
    except OSError:
        return True


@contextmanager
def _flood(port: int, sources: list[str], per_source: int, cap: int = CAP
           ) -> Iterator[dict[str, int]]:  # fmt: skip
    """Keep ``per_source`` idle connections open from each source, reopening each one the
    daemon closes, until the block ends (it starts once ``cap`` have been opened)."""
    stop = threading.Event()
    counts = {"opened": 0}
    held: dict[str, list[socket.socket]] = {source: [] for source in sources}

    def run() -> None:
        while not stop.is_set():
            for source, socks in held.items():
                for s in [s for s in socks if _closed(s)]:
                    socks.remove(s)
                    s.close()
                while len(socks) < per_source and not stop.is_set():
                    s = _connect(port, source)
                    if s is None:
                        break
                    socks.append(s)
                    counts["opened"] += 1
            stop.wait(0.05)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while counts["opened"] < min(cap, per_source * len(sources)):
            assert time.monotonic() < deadline, counts
            time.sleep(0.05)
        time.sleep(0.5)  # (the flood holds what it can)
        yield counts
    finally:
        stop.set()
        thread.join(5)
        for socks in held.values():
            for s in socks:
                s.close()


def _status_within(address: str, seconds: float) -> float:
    """Seconds until a new token-holding client is answered (fails past ``seconds``)."""
    t0 = time.monotonic()
    while True:
        channel = grpc.insecure_channel(address)
        try:
            rpc = channel.unary_unary("/cuzk.v1.ProvingEngine/GetStatus")
            # one call may use the whole budget: a new one's connection would queue anew
            left = seconds - (time.monotonic() - t0)
            rpc(b"", timeout=max(0.5, left), metadata=bearer(TOKEN))
            return time.monotonic() - t0
        except grpc.RpcError as e:  # refused while the flood holds the places
            assert time.monotonic() - t0 < seconds, f"no answer within {seconds} s: {e}"
            time.sleep(0.05)
        finally:
            channel.close()


@pytest.fixture
def gated(make_daemon, monkeypatch):
    monkeypatch.setattr(daemon_module, "MAX_CONNECTIONS", CAP)
    monkeypatch.setattr(daemon_module, "PER_SOURCE_CONNECTIONS", PER_SOURCE, raising=False)
    d = make_daemon(**{"server.listen": "127.0.0.1:0", "auth.token": TOKEN})
    return d, int(d.address.rsplit(":", 1)[1])


@pytest.mark.slow
def test_a_flood_from_one_source_leaves_room_for_a_token_holder(gated):
    d, port = gated
    with _flood(port, ["127.0.0.2"], CAP + 10) as counts:  # tries for more than the cap
        waited = _status_within(d.address, 3.0)
        held = d._gate.stats()
    assert held["unproven"] <= PER_SOURCE + 1, held
    assert d._status_doc()["daemon"]["connections"]["refused"] > 0  # (shown in /status)
    report("gate: one-source flood", cap=CAP, per_source=PER_SOURCE, opened=counts["opened"],
           token_client_answered_s=round(waited, 2), gate=held)  # fmt: skip


@pytest.mark.parametrize(
    "caps",
    [
        pytest.param((CAP, PER_SOURCE), marks=pytest.mark.slow, id="40-connections"),
        pytest.param(None, marks=pytest.mark.heavy, id="4096-connections-real-caps"),
    ],
)
def test_a_flood_from_many_sources_gives_way_to_a_known_client(make_daemon, monkeypatch, caps):
    if caps is not None:
        monkeypatch.setattr(daemon_module, "MAX_CONNECTIONS", caps[0])
        monkeypatch.setattr(daemon_module, "PER_SOURCE_CONNECTIONS", caps[1], raising=False)
    # (the flood's connections are not closed as idle here, so that it holds every place)
    monkeypatch.setattr(daemon_module, "CONNECTION_IDLE_MS", 120_000)
    cap = daemon_module.MAX_CONNECTIONS
    per_source = getattr(daemon_module, "PER_SOURCE_CONNECTIONS", 64)
    d = make_daemon(**{"server.listen": "127.0.0.1:0", "auth.token": TOKEN})
    port = int(d.address.rsplit(":", 1)[1])
    with Client(d.address, token=TOKEN) as c:  # this address has shown the token
        c.status()
    sources = [f"127.0.{i // 250}.{2 + i % 250}" for i in range(cap // per_source + 2)]
    with _flood(port, sources, per_source, cap) as counts:
        waited = _status_within(d.address, 5.0)
        deadline = time.monotonic() + 20
        while d._gate.stats()["unproven"] < cap:  # the client has gone, the flood holds all
            assert time.monotonic() < deadline, d._gate.stats()
            time.sleep(0.1)
        stranger = _connect(port, "127.0.9.9")  # an address that never showed the token
        assert stranger is None or _refused(stranger)
    report(f"gate: many-source flood ({cap} connections)", cap=cap, sources=len(sources),
           opened=counts["opened"], known_client_answered_s=round(waited, 2),
           gate=d._gate.stats())  # fmt: skip


def _refused(s: socket.socket) -> bool:
    """``s`` is closed by the daemon (within 10 s: it may wait in the accept queue behind the
    flood's renewals)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if _closed(s):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(not socket.has_ipv6, reason="no IPv6 on this host")
def test_the_any_address_takes_ipv4_and_ipv6_as_grpc_did(make_daemon):
    d = make_daemon(**{"server.listen": "[::]:0", "auth.token": TOKEN})
    port = int(d.address.rsplit(":", 1)[1])
    for host in ("127.0.0.1", "[::1]"):
        assert _status_within(f"{host}:{port}", 3.0) < 3.0


def test_sources_are_addresses_or_ipv6_networks():
    assert source_of("10.0.0.7") == "10.0.0.7"
    assert source_of("::ffff:10.0.0.7") == "10.0.0.7"
    assert source_of("2001:db8::1") == source_of("2001:db8::ffff:2") == "2001:db8::/64"
    assert source_of("fe80::1%eth0") == "fe80::/64"


@pytest.mark.slow
def test_relaying_a_large_request_costs_little(make_daemon):
    """A 48 MB SubmitProof (refused after decoding: its vanilla proof is junk) through the gate
    and straight to gRPC's private port, best of 5 each."""
    d = make_daemon(**{"server.listen": "127.0.0.1:0"})
    gated_port = int(d.address.rsplit(":", 1)[1])
    direct_port = d._gate.upstream
    payload = pb.SubmitProofRequest(circuit_id=CIRCUIT, vanilla_proof=bytes(48 << 20))
    raw = payload.SerializeToString()

    def best(port: int) -> float:
        times = []
        with grpc.insecure_channel(f"127.0.0.1:{port}", options=_big()) as ch:
            rpc = ch.unary_unary("/cuzk.v1.ProvingEngine/SubmitProof")
            for _ in range(5):
                t0 = time.perf_counter()
                with pytest.raises(grpc.RpcError) as e:
                    rpc(raw, timeout=60)
                times.append(time.perf_counter() - t0)
                assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        return min(times)

    direct, through = best(direct_port), best(gated_port)
    report("gate: 48 MB request", direct_ms=round(direct * 1000), gated_ms=round(through * 1000),
           whole_call_mb_per_s_gated=round(len(raw) / 1e6 / through))  # fmt: skip
    assert through < direct + 0.5, (direct, through)


def _big() -> list[tuple[str, int]]:
    return [("grpc.max_send_message_length", 1 << 30), ("grpc.max_receive_message_length", 1 << 30)]
