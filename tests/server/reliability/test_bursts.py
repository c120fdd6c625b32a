"""A burst of waiters arriving at once: each call waits for its job or is refused with
RESOURCE_EXHAUSTED and a message saying what to do; none is CANCELLED while its job was not.
(gRPC's core cancelled calls at random once more than 1,000 were waiting to be taken by the
server: 18-44 % of bursts of 4,000-10,000.) ``-m heavy`` runs it with 10,000 calls."""

from __future__ import annotations

import asyncio
import collections
import time

import grpc
import pytest

from cuzk.server.proto import proving_pb2 as pb

from ..conftest import CIRCUIT
from .harness import call, report, target, wait_until
from .starvation import BLOCKER, SLOW_BLOCKER


async def _burst(daemon, calls: int, channels: int) -> collections.Counter:
    """``calls`` AwaitProof/Prove calls (one in four a Prove joining the job) at once on a long
    job; once each waits or was refused, GetStatus answers, then the job is cancelled."""
    service = daemon.service
    chans = [grpc.aio.insecure_channel(target(daemon.address)) for _ in range(channels)]
    control = grpc.aio.insecure_channel(target(daemon.address))
    blocker = pb.SubmitProofRequest(circuit_id=CIRCUIT, seeds=list(range(1, 9)),
                                    request_id=BLOCKER)  # fmt: skip
    outcomes: collections.Counter = collections.Counter()

    async def one(i: int) -> None:
        ch = chans[i % channels]
        try:
            if i % 4 == 3:
                r = (await call(ch, "Prove", pb.ProveRequest(submit=blocker), timeout=300)).result
            else:
                r = await call(ch, "AwaitProof", pb.AwaitProofRequest(job_id=job), timeout=300)
            outcomes[f"answer {pb.AwaitProofResponse.Status.Name(r.status)}"] += 1
        except grpc.aio.AioRpcError as e:
            outcomes[e.code().name] += 1
            if e.code() is grpc.StatusCode.RESOURCE_EXHAUSTED:
                assert "server.max_waiting_calls" in e.details() and "Retry later" in e.details()

    try:
        job = (await call(control, "SubmitProof", blocker)).job_id
        tasks = [asyncio.ensure_future(one(i)) for i in range(calls)]
        limit = service.max_waiting_calls
        await wait_until(lambda: service.waiting + sum(outcomes.values()) >= calls, 120,
                         "every call waiting or answered")  # fmt: skip
        assert service.waiting == min(calls, limit)
        t0 = time.perf_counter()
        await call(control, "GetStatus", pb.GetStatusRequest(), timeout=10)
        assert time.perf_counter() - t0 < 1.0
        await call(control, "CancelProof", pb.CancelProofRequest(job_id=job))
        await asyncio.gather(*tasks)
    finally:
        for ch in (*chans, control):
            await ch.close()
    return outcomes


@pytest.mark.parametrize(
    ("calls", "limit", "channels"),
    [
        pytest.param(3000, 2000, 30, marks=pytest.mark.slow),
        pytest.param(10_000, 8000, 100, marks=pytest.mark.heavy),
    ],
)
def test_a_burst_of_waiters_waits_or_is_refused_never_cancelled(make_daemon, calls, limit,
                                                                 channels):  # fmt: skip
    d = make_daemon(**SLOW_BLOCKER, **{"server.max_waiting_calls": limit})
    outcomes = asyncio.run(_burst(d, calls, channels))
    assert outcomes == {"answer CANCELLED": limit, "RESOURCE_EXHAUSTED": calls - limit}, outcomes
    report(f"burst ({calls:,} calls, {limit:,} may wait)", **outcomes)
