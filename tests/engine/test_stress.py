"""Chaos: many small jobs, mixed priorities, injected faults and random cancellations on two
virtual devices with two workers each. Every wait is bounded, so a hang fails the test."""

from __future__ import annotations

import faulthandler
import multiprocessing
import random
import sys
import threading
import time

import pytest

from cuzk.engine import (
    Engine,
    EngineConfig,
    FaultInjection,
    JobCancelled,
    JobState,
    Priority,
    ProofRequest,
)
from cuzk.engine.family import circuit_info
from cuzk.engine.workers import staged_bytes_for
from cuzk.errors import CuzkError

from .conftest import LARGER, SMALL
from .helpers import assert_timeline_ordered, assert_verifies, idle_budget, wait_until

JOBS = 60
DEADLINE_S = 150.0
FAILING_KINDS = ("synthesis", "kernel", "budget", "bad_proof")


def _tight_budget(param_dir) -> int:
    """Room for one circuit's residency (on both devices) and two partitions: the two
    circuits cannot be resident together, so residency is evicted and reloaded under load."""
    infos = [
        circuit_info(c, param_dir / f"{c.replace(':', '-')}.params", "cpu", 2)
        for c in (SMALL, LARGER)
    ]
    budget = max(i.srs_bytes + i.shape_bytes for i in infos) + 2 * max(
        sum(i.partition_parts.values()) for i in infos
    )
    assert budget < sum(i.srs_bytes for i in infos)
    return budget


def _one_staged_partition(param_dir) -> int:
    """A staging budget with room for exactly one staged partition of the larger circuit."""
    info = circuit_info(LARGER, param_dir / f"{LARGER.replace(':', '-')}.params", "cpu", 2)
    return staged_bytes_for(info)


@pytest.mark.parametrize("budget", ["roomy", "tight", "tight+staging"])
def test_stress_every_job_ends_once_and_nothing_leaks(param_dir, seed, budget):
    rng = random.Random(seed)
    threads_before = set(threading.enumerate())
    children_before = set(multiprocessing.active_children())
    faults = FaultInjection(
        synthesis_error=0.04,
        kernel_error=0.04,
        slow_kernel=0.1,
        slow_kernel_s=0.05,
        budget_exhaustion=0.03,
        bad_proof=0.03,
        seed=seed,
    )
    config = EngineConfig(
        param_dir=param_dir,
        devices=2,
        workers_per_device=2,
        synthesis_workers=2,
        msm_workers=1,
        memory_budget=1 << 30 if budget == "roomy" else _tight_budget(param_dir),
        faults=faults,
        join_timeout_s=20.0,
        staging=budget.endswith("staging"),
        staging_budget=_one_staged_partition(param_dir),
    )
    t_start = time.monotonic()
    # If anything hangs, dump every thread's stack before the bounded waits give up.
    faulthandler.dump_traceback_later(DEADLINE_S, exit=False, file=sys.stderr)
    engine = Engine(config)
    try:
        requests = [
            ProofRequest.of(
                rng.choice((SMALL, SMALL, LARGER)),
                partitions=rng.randint(1, 3),
                seed=rng.randrange(1 << 32),
                priority=rng.choice(list(Priority)),
                request_id=f"stress-{i}",
            )
            for i in range(JOBS)
        ]
        ids: list[str] = []
        cancelled: set[str] = set()

        def cancel_some() -> None:
            local = random.Random(seed + 1)
            for _ in range(12):
                time.sleep(local.uniform(0.0, 0.25))
                if not ids:
                    continue
                victim = local.choice(list(ids))
                if engine.cancel(victim):
                    cancelled.add(victim)

        killer = threading.Thread(target=cancel_some, name="stress-canceller")
        killer.start()
        for r in requests:
            ids.append(engine.submit(r))
            if rng.random() < 0.2:
                time.sleep(rng.uniform(0.0, 0.05))
        killer.join(timeout=30)
        assert not killer.is_alive()

        outcomes: dict[str, str] = {}
        for job_id, req in zip(ids, requests, strict=True):
            remaining = DEADLINE_S - (time.monotonic() - t_start)
            try:
                result = engine.result(job_id, timeout=max(1.0, remaining))
            except JobCancelled:
                outcomes[job_id] = "cancelled"
            except CuzkError:
                outcomes[job_id] = "failed"
            else:
                outcomes[job_id] = "succeeded"
                assert_verifies(result, req.partitions)
                assert_timeline_ordered(result)

        # Exactly one terminal state each, agreeing with what result() reported.
        status = {j.job_id: j for j in engine.status().jobs}
        assert len(status) == JOBS
        for job_id, req in zip(ids, requests, strict=True):
            job = status[job_id]
            assert job.state.terminal
            assert job.state.value == outcomes[job_id], (job_id, job.error)
            if job_id in cancelled:
                assert job.state is JobState.CANCELLED
            faulted = any(
                faults.fires(k, req.request_id, p)
                for k in FAILING_KINDS
                for p in range(req.partitions)
            )
            if job.state is JobState.FAILED:
                assert faulted, f"{job_id} failed without an injected fault: {job.error}"
                assert job.error and job.error.startswith(("partition", "verification"))
            if not faulted and job_id not in cancelled:
                assert job.state is JobState.SUCCEEDED, (job_id, job.error)
        counts = engine.status().counts
        assert sum(c["succeeded"] + c["failed"] + c["cancelled"] for c in counts.values()) == JOBS
        assert sum(c["queued"] + c["running"] for c in counts.values()) == 0
        print(
            {
                s: sum(o == s for o in outcomes.values())
                for s in ("succeeded", "failed", "cancelled")
            }
        )
        assert any(o == "succeeded" for o in outcomes.values())

        # Budget accounting returns to idle: only residency remains reserved.
        wait_until(lambda: idle_budget(engine), timeout=20, what="partitions to drain")
        st = engine.status()
        assert st.budget.by_kind["partition"] == 0
        assert st.budget.reserved == sum(e.bytes for e in st.srs)
        assert engine.budget_live_reservations == 2 * len(st.srs)
        assert all(e.users == 0 for e in st.srs)
        assert all(w.busy_with is None for w in st.workers)
        assert all(d.staged_bytes == 0 and d.pinned_lent == 0 for d in st.devices)
        busy = [d.kernel_seconds for d in st.devices]
        assert all(b > 0 for b in busy), "both virtual devices ran kernels"
        if budget == "tight":
            assert st.evictions > 0, "the tight budget should have forced evictions"
    finally:
        engine.shutdown(graceful=False)
        faulthandler.cancel_dump_traceback_later()

    st = engine.status()
    assert st.budget.reserved == 0 and engine.budget_live_reservations == 0
    leaked = [t for t in threading.enumerate() if t not in threads_before and t.is_alive()]
    assert leaked == [], f"threads left behind: {[t.name for t in leaked]}"
    wait_until(
        lambda: not (set(multiprocessing.active_children()) - children_before),
        timeout=10,
        what="MSM worker processes to exit",
    )
    assert time.monotonic() - t_start < DEADLINE_S
