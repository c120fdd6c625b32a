"""Priorities, the memory budget and LRU residency, observed through a running engine."""

from __future__ import annotations

import time

import pytest

from cuzk.circuits import get_circuit
from cuzk.engine import FaultInjection, Priority, ProofRequest
from cuzk.engine.family import circuit_info
from cuzk.engine.srs_entry import shape_nbytes
from cuzk.errors import ResourceExhausted
from cuzk.r1cs import synthesize_shape
from cuzk.r1cs.cache import ShapeCache

from .conftest import LARGER, SMALL
from .helpers import assert_verifies, idle_budget, wait_until


def test_critical_behind_twenty_normal_starts_first(make_engine):
    """One device, one worker, look-ahead 1: while the first NORMAL job's kernel is held
    slow, a CRITICAL job arrives behind 20 NORMAL ones and must start (synthesis and
    kernels) before every NORMAL job that had not started yet."""
    faults = FaultInjection(slow_kernel=1.0, slow_kernel_s=1.0, targets=frozenset({"n0"}))
    engine = make_engine(workers_per_device=1, synthesis_lookahead=1, faults=faults)
    normal = [engine.submit(ProofRequest.of(SMALL, seed=i, request_id=f"n{i}")) for i in range(20)]
    wait_until(
        lambda: _job(engine, normal[0]).partitions[0].state.value == "kernels",
        what="the first job in its kernels",
    )
    before = {j.job_id: j.partitions[0].timeline for j in engine.status().jobs}
    not_started = [j for j in normal if before[j].synth_start is None]
    assert len(not_started) >= 15, "the pipeline should hold at most a couple of jobs"
    critical = engine.submit(ProofRequest.of(SMALL, seed=99, priority=Priority.CRITICAL))
    crit = engine.result(critical, timeout=60)
    results = {j: engine.result(j, timeout=60) for j in normal}
    c = crit.timelines[0]
    for j in not_started:
        t = results[j].timelines[0]
        assert c.synth_start < t.synth_start, j
        assert c.kernels_start < t.kernels_start, j
    assert_verifies(crit, 1)
    counts = engine.status().counts
    assert counts["CRITICAL"]["succeeded"] == 1 and counts["NORMAL"]["succeeded"] == 20


@pytest.mark.parametrize("lane", [True, False])
def test_critical_runs_before_a_partition_already_waiting_for_the_device(make_engine, lane):
    """Both workers of the device busy: n0 in its (slowed) kernels, n1 taken by the other
    worker and waiting for the compute lock. A CRITICAL job then arrives: the device's urgent
    lane takes it and the priority-ordered lock runs it before n1. Without the lane (the
    control, which shows the scene is set) no worker is free until n0 ends, and n1 goes
    first."""
    faults = FaultInjection(slow_kernel=1.0, slow_kernel_s=1.5, targets=frozenset({"n0", "n1"}))
    engine = make_engine(urgent_lane=lane, synthesis_lookahead=3, faults=faults)
    n0 = engine.submit(ProofRequest.of(SMALL, seed=1, request_id="n0"))
    wait_until(lambda: _job(engine, n0).partitions[0].state.value == "kernels")
    n1 = engine.submit(ProofRequest.of(SMALL, seed=2, request_id="n1"))
    wait_until(lambda: _job(engine, n1).partitions[0].state.value == "device_wait")
    critical = engine.submit(ProofRequest.of(SMALL, seed=3, priority=Priority.CRITICAL))
    crit = engine.result(critical, timeout=60).timelines[0]
    first = engine.result(n0, timeout=60).timelines[0]
    second = engine.result(n1, timeout=60).timelines[0]
    assert first.kernels_end <= min(crit.kernels_start, second.kernels_start)
    assert second.device_pick < crit.device_pick
    if lane:
        assert crit.kernels_start < second.kernels_start
        assert crit.worker == "cuzk-dev0-urgent"
    else:
        assert second.kernels_start < crit.kernels_start


def test_priority_classes_drain_in_order(make_engine):
    """Submitted all at once behind a slow job: jobs start in priority order, FIFO within a
    class."""
    # The slow kernel must outlast the eight submissions below (a loaded CI machine once took
    # longer than 0.5 s for them, letting a HIGH job take the look-ahead slot before the
    # CRITICAL ones existed).
    faults = FaultInjection(slow_kernel=1.0, slow_kernel_s=4.0, targets=frozenset({"slow"}))
    engine = make_engine(workers_per_device=1, synthesis_lookahead=1, faults=faults)
    first = engine.submit(ProofRequest.of(SMALL, request_id="slow"))
    wait_until(lambda: _job(engine, first).partitions[0].state.value == "kernels")
    # The look-ahead slot is filled before the jobs under test exist: otherwise whichever of
    # them the synthesis thread saw first took it (under load, not always the first submitted:
    # a NORMAL one then started before the CRITICAL ones).
    filler = engine.submit(ProofRequest.of(SMALL, seed=9, priority=Priority.LOW))
    wait_until(lambda: _job(engine, filler).partitions[0].state.value == "ready")
    order = [
        Priority.LOW,
        Priority.NORMAL,
        Priority.HIGH,
        Priority.LOW,
        Priority.CRITICAL,
        Priority.HIGH,
        Priority.NORMAL,
        Priority.CRITICAL,
    ]
    jobs = [
        (p, engine.submit(ProofRequest.of(SMALL, seed=10 + i, priority=p)))
        for i, p in enumerate(order)
    ]
    assert _job(engine, first).partitions[0].state.value == "kernels", (
        "submissions outlasted the slow kernel: test invalid"
    )
    starts = sorted(
        (engine.result(j, timeout=60).timelines[0].kernels_start, p, k)
        for k, (p, j) in enumerate(jobs)
    )
    started = [(p, k) for _, p, k in starts]
    assert started == sorted(started)
    assert engine.result(filler, timeout=60).timelines[0].kernels_start < starts[0][0]


def test_request_that_can_never_fit_is_refused_at_once(make_engine):
    engine = make_engine(memory_budget=200_000)
    t0 = time.monotonic()
    with pytest.raises(ResourceExhausted, match="can never run"):
        engine.submit(ProofRequest.of(SMALL))
    with pytest.raises(
        ResourceExhausted, match=f"the key of {SMALL} .* can never run .* engine.memory_budget"
    ):
        engine.preload(SMALL)
    assert time.monotonic() - t0 < 1.0
    assert engine.status().jobs == ()


def _sizes(param_dir, cid, shape_cache=None):
    """(residency, one partition) in bytes as the engine will reserve them. With a shape
    cache the shape's size is exact from the start; without, the estimate is an upper bound
    that the exact size replaces once loaded."""
    info = circuit_info(cid, param_dir / f"{cid.replace(':', '-')}.params", "cpu", 1, shape_cache)
    exact_shape = shape_nbytes(synthesize_shape(get_circuit(cid), cid))
    residency = info.srs_bytes + max(info.shape_bytes, exact_shape)
    return residency, sum(info.partition_parts.values())


def test_tight_budget_serialises_partitions(make_engine, param_dir, tmp_path):
    """Room for the residency and one and a half partitions: work still completes, and a
    partition is admitted only once the previous one has released its kernel working set
    (the first of the two release steps; its witness may still be held until finalize)."""
    ShapeCache(tmp_path).get(SMALL, get_circuit(SMALL))
    residency, part = _sizes(param_dir, SMALL, tmp_path)
    engine = make_engine(
        memory_budget=residency + part * 3 // 2, workers_per_device=2, shape_cache=tmp_path
    )
    jobs = [engine.submit(ProofRequest.of(SMALL, partitions=2, seed=10 * i)) for i in range(4)]
    results = [engine.result(j, timeout=60) for j in jobs]
    spans = sorted((t.synth_start, t.kernels_end) for r in results for t in r.timelines)
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        assert start >= end, "two partitions held kernel memory at once"
    for r in results:
        assert_verifies(r, 2)
    assert idle_budget(engine)


def test_lru_eviction_under_pressure(make_engine, param_dir):
    """Room for one circuit's residency at a time: switching circuits evicts the idle one."""
    small_res, small_part = _sizes(param_dir, SMALL)
    large_res, large_part = _sizes(param_dir, LARGER)
    budget = max(small_res + small_part, large_res + large_part) + 1000
    assert budget < small_res + large_res  # both cannot be resident together
    engine = make_engine(memory_budget=budget)
    assert_verifies(engine.prove(ProofRequest.of(SMALL, seed=1), timeout=60), 1)
    assert [e.circuit_id for e in engine.status().srs] == [SMALL]
    assert_verifies(engine.prove(ProofRequest.of(LARGER, seed=1), timeout=60), 1)
    assert [e.circuit_id for e in engine.status().srs] == [LARGER]
    assert engine.status().evictions == 1
    # Interleaved jobs of both circuits all complete (residency thrashes, nothing deadlocks).
    jobs = [engine.submit(ProofRequest.of(c, seed=i)) for i in range(3) for c in (SMALL, LARGER)]
    for j in jobs:
        assert_verifies(engine.result(j, timeout=60), 1)
    st = engine.status()
    assert st.budget.reserved <= st.budget.total and idle_budget(engine)


def test_room_budget_keeps_both_resident(make_engine):
    engine = make_engine()
    for c in (SMALL, LARGER, SMALL):
        engine.prove(ProofRequest.of(c), timeout=60)
    assert sorted(e.circuit_id for e in engine.status().srs) == [SMALL, LARGER]


def test_injected_budget_exhaustion_fails_only_that_job(make_engine):
    faults = FaultInjection(budget_exhaustion=1.0, targets=frozenset({"starved"}))
    engine = make_engine(faults=faults)
    bad = engine.submit(ProofRequest.of(SMALL, partitions=3, request_id="starved"))
    good = engine.submit(ProofRequest.of(SMALL, partitions=2, seed=5))
    with pytest.raises(ResourceExhausted, match="partition 0 .*budget exhausted"):
        engine.result(bad, timeout=60)
    assert_verifies(engine.result(good, timeout=60), 2)
    states = [p.state.value for p in _job(engine, bad).partitions]
    assert states == ["failed", "skipped", "skipped"]
    wait_until(lambda: idle_budget(engine))


def _job(engine, job_id):
    return next(j for j in engine.status().jobs if j.job_id == job_id)
