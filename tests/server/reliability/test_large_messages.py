"""The memory of requests in flight is bounded: large requests are admitted against a byte
budget (RESOURCE_EXHAUSTED beyond it, nothing held), decoded one at a time, read only a few at
a time, and the memory goes back to the system afterwards. ``-m heavy``: six 200 MB requests
against a ``cuzk serve`` child, its resident memory sampled."""

from __future__ import annotations

import asyncio
import os
import threading
import time

import grpc
import pytest

from cuzk.errors import ResourceExhausted
from cuzk.server.admission import LARGE_BYTES, Admission
from cuzk.server.proto import proving_pb2 as pb

from ..conftest import CIRCUIT, spawn_daemon
from .harness import call, report, target


def test_admission_budget_refuses_beyond_the_limit_and_lets_small_requests_pass():
    async def scenario() -> None:
        a = Admission(3 * LARGE_BYTES)
        async with a.admit(2 * LARGE_BYTES, "first"):
            assert a.held == 2 * LARGE_BYTES
            with pytest.raises(ResourceExhausted, match="server.max_inflight_bytes"):
                async with a.admit(2 * LARGE_BYTES, "second"):
                    pass
            async with a.admit(LARGE_BYTES - 1, "small"):  # never counted, never waits
                assert a.held == 2 * LARGE_BYTES
        assert a.held == 0 and a.refused == 1
        # one large request is decoded at a time; the next waits (on the loop) for its turn
        order: list[str] = []

        async def one(name: str) -> None:
            async with a.admit(LARGE_BYTES, name):
                order.append(f"{name}+")
                await asyncio.sleep(0.05)
                order.append(f"{name}-")

        await asyncio.gather(one("a"), one("b"))
        assert order == ["a+", "a-", "b+", "b-"] and a.held == 0

    asyncio.run(scenario())


def test_concurrent_large_requests_are_answered_and_nothing_stays_held(make_daemon, rng):
    d = make_daemon(**{"server.max_message_bytes": "4MiB", "server.max_inflight_bytes": "4MiB"})
    junk = [bytes(rng.integers(0, 256, size=3 << 20, dtype="u1")) for _ in range(3)]

    async def storm() -> list[grpc.StatusCode]:
        async with grpc.aio.insecure_channel(target(d.address)) as ch:

            async def one(i: int) -> grpc.StatusCode:
                req = pb.SubmitProofRequest(circuit_id=CIRCUIT, vanilla_proof=junk[i % 3])
                try:
                    await call(ch, "SubmitProof", req, timeout=60)
                except grpc.aio.AioRpcError as e:
                    return e.code()
                return grpc.StatusCode.OK

            return await asyncio.gather(*(one(i) for i in range(24)))

    codes = asyncio.run(storm())
    # each is refused for its content or for the budget; none fails otherwise or hangs
    allowed = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED}
    assert set(codes) <= allowed, codes
    assert d.service.admission.held == 0
    report(
        "large messages (fast, 24 × 3 MiB at once, 4 MiB budget)",
        invalid=codes.count(grpc.StatusCode.INVALID_ARGUMENT),
        refused_for_memory=codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED),
    )


def test_a_call_without_a_request_message_is_invalid(make_daemon):
    d = make_daemon()

    async def empty() -> grpc.StatusCode:
        async with grpc.aio.insecure_channel(target(d.address)) as ch:
            rpc = ch.stream_unary("/cuzk.v1.ProvingEngine/GetStatus")
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await rpc(iter(()), timeout=10)
            return info.value.code()

    assert asyncio.run(empty()) == grpc.StatusCode.INVALID_ARGUMENT


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


@pytest.mark.heavy
def test_six_200mb_requests_at_once(tmp_path, server_keys):
    """The issue's probe: six 200 MB SubmitProof calls at once (all refused). The daemon's
    memory peak stays bounded and falls back to where it was."""
    proc = spawn_daemon(tmp_path, server_keys)
    try:
        idle = _rss_mib(proc.pid)
        peak = [idle]
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], _rss_mib(proc.pid))
                time.sleep(0.01)

        sampler = threading.Thread(target=sample)
        sampler.start()
        msg = pb.SubmitProofRequest(circuit_id=CIRCUIT, vanilla_proof=os.urandom(200 << 20))

        async def six() -> list[grpc.StatusCode]:
            opts = [("grpc.max_send_message_length", 1 << 30)]
            async with grpc.aio.insecure_channel(
                f"unix://{tmp_path}/cuzk.sock", options=opts
            ) as ch:

                async def one() -> grpc.StatusCode:
                    try:
                        await call(ch, "SubmitProof", msg, timeout=120)
                    except grpc.aio.AioRpcError as e:
                        return e.code()
                    return grpc.StatusCode.OK

                return await asyncio.gather(*(one() for _ in range(6)))

        codes = asyncio.run(six())
        time.sleep(2)
        done.set()
        sampler.join()
        after = _rss_mib(proc.pid)
    finally:
        proc.kill()
        proc.wait(10)
    assert set(codes) <= {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED}
    report("large messages (heavy, 6 × 200 MB at once)", rss_idle_mib=round(idle),
           rss_peak_mib=round(peak[0]), rss_after_mib=round(after),
           answers=sorted(c.name for c in codes))  # fmt: skip
    assert after < idle + 100, (idle, peak[0], after)
    assert peak[0] < idle + 2000, (idle, peak[0], after)
