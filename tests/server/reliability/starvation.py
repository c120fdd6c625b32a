"""The starvation scenario, shared by the fast test and the heavy one: a long job, N clients
blocked on it (AwaitProof and unary Prove, as Curio calls it), and then, while they wait,
GetStatus, CancelProof and a CRITICAL SubmitProof, each timed."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import grpc

from cuzk.server.daemon import Daemon
from cuzk.server.proto import proving_pb2 as pb

from .harness import Process, call, percentile, target, timed, wait_until

BLOCKER = "blocker"  # the request id the slow-kernel fault targets
# Daemon overrides: only the blocker's kernel regions sleep, long enough to outlast the probes.
SLOW_BLOCKER = {
    "engine.faults.slow_kernel": 1.0,
    "engine.faults.slow_kernel_s": 2.0,
    "engine.faults.targets": [BLOCKER],
}


@dataclass(frozen=True)
class Starvation:
    waiters: int
    answered: int  # waiters answered CANCELLED once the blocker was cancelled
    status_s: list[float]
    cancel_s: list[float]
    critical_submit_s: list[float]
    threads_waiting: int  # the process's threads with every waiter blocked
    threads_before: int
    rss_mib_waiting: float

    def figures(self) -> dict[str, object]:
        def ms(xs: list[float]) -> dict[str, float]:
            return {"p50_ms": round(percentile(xs, 0.5) * 1000, 1),
                    "max_ms": round(max(xs) * 1000, 1), "n": len(xs)}  # fmt: skip

        return {
            "waiters": self.waiters,
            "answered": self.answered,
            "get_status": ms(self.status_s),
            "cancel": ms(self.cancel_s),
            "critical_submit": ms(self.critical_submit_s),
            "threads_before": self.threads_before,
            "threads_waiting": self.threads_waiting,
            "rss_mib_waiting": self.rss_mib_waiting,
        }


async def starve(daemon: Daemon, circuit: str, waiters: int, probes: int) -> Starvation:
    """Block ``waiters`` clients on one long job, then time ``probes`` rounds of status,
    cancel and CRITICAL submit. Channels carry 25 waiters each, like many client nodes."""
    service = daemon.service
    assert service is not None
    before = Process.now().threads
    channels = [grpc.aio.insecure_channel(target(daemon.address)) for _ in range(waiters // 25 + 1)]
    control = grpc.aio.insecure_channel(target(daemon.address))
    seeds = list(range(1, 9))  # 8 partitions of 2 s each: the job outlasts the probes
    blocker = pb.SubmitProofRequest(circuit_id=circuit, seeds=seeds, request_id=BLOCKER)
    try:
        job = (await call(control, "SubmitProof", blocker)).job_id
        tasks = []
        for i in range(waiters):
            ch = channels[i % len(channels)]
            if i % 4 == 3:  # a Prove of the same request id joins the same job
                tasks.append(call(ch, "Prove", pb.ProveRequest(submit=blocker), timeout=300))
            else:
                tasks.append(call(ch, "AwaitProof", pb.AwaitProofRequest(job_id=job), timeout=300))
        waiting = [asyncio.ensure_future(t) for t in tasks]
        await wait_until(lambda: service.waiting >= waiters, 60, f"{waiters} clients waiting")
        held = Process.now()
        status_s, cancel_s, submit_s = [], [], []
        for i in range(probes):
            dt, st = await timed(call(control, "GetStatus", pb.GetStatusRequest(), timeout=10))
            assert st.queues, "the blocker is not in the status"
            status_s.append(dt)
            low = pb.SubmitProofRequest(circuit_id=circuit, seeds=[1000 + i], priority=pb.LOW)
            victim = await call(control, "SubmitProof", low)
            cancel = pb.CancelProofRequest(job_id=victim.job_id)
            dt, r = await timed(call(control, "CancelProof", cancel, timeout=10))
            assert r.was_running
            cancel_s.append(dt)
            critical = pb.SubmitProofRequest(circuit_id=circuit, seeds=[2000 + i],
                                             priority=pb.CRITICAL)  # fmt: skip
            dt, r = await timed(call(control, "SubmitProof", critical, timeout=10))
            assert r.job_id
            submit_s.append(dt)
        assert service.waiting >= waiters, "a waiter gave up while the probes ran"
        await call(control, "CancelProof", pb.CancelProofRequest(job_id=job))
        answers = await asyncio.gather(*waiting)
        cancelled = pb.AwaitProofResponse.CANCELLED
        answered = sum(
            (a.result.status if isinstance(a, pb.ProveResponse) else a.status) == cancelled
            for a in answers
        )
        return Starvation(waiters, answered, status_s, cancel_s, submit_s,
                          held.threads, before, held.rss_mib)  # fmt: skip
    finally:
        for ch in (*channels, control):
            await ch.close()
