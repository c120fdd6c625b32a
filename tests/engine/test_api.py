"""The engine's API: round trip, deduplication, validation, residency and shutdown."""

from __future__ import annotations

import threading

import pytest

from cuzk.engine import JobState, PartitionState, Priority, ProofRequest
from cuzk.errors import BadInput, ResourceExhausted
from cuzk.groth16 import PROOF_SIZE

from .conftest import LARGER, SMALL
from .helpers import assert_timeline_ordered, assert_verifies, idle_budget, wait_until


def test_round_trip_multi_partition(make_engine):
    engine = make_engine()
    result = engine.prove(ProofRequest.of(SMALL, partitions=3, seed=7), timeout=60)
    assert len(result.proof) == 3 * PROOF_SIZE
    assert result.circuit_id == SMALL and result.vk_path.endswith("synthetic-300.vk")
    assert_verifies(result, 3)
    # Distinct seeds are distinct witnesses, hence distinct statements.
    assert len(set(result.public_inputs)) == 3
    assert_timeline_ordered(result)
    st = engine.status()
    assert st.counts["NORMAL"]["succeeded"] == 1
    assert st.partitions["done"] == 3
    (job,) = st.jobs
    assert job.state is JobState.SUCCEEDED and job.error is None
    assert all(p.state is PartitionState.DONE for p in job.partitions)
    assert all(p.timeline.device == 0 for p in job.partitions)
    assert all("wait_msm" in p.timeline.stages for p in job.partitions)
    assert idle_budget(engine)
    assert [s.circuit_id for s in st.srs] == [SMALL] and st.srs[0].users == 0
    assert {w.kind for w in st.workers} == {"synthesis", "device"}


def test_same_seed_same_statement_fresh_proof(make_engine):
    engine = make_engine()
    a = engine.prove(ProofRequest.of(SMALL, seed=3), timeout=60)
    b = engine.prove(ProofRequest.of(SMALL, seed=3), timeout=60)
    assert a.job_id != b.job_id
    assert a.public_inputs == b.public_inputs
    assert a.proof != b.proof  # r and s are fresh per proof


def test_dedup_by_request_id(make_engine):
    engine = make_engine()
    req = ProofRequest.of(SMALL, partitions=2, seed=11, request_id="client-42")
    first = engine.submit(req)
    # Same payload, other priority: still the same job.
    again = engine.submit(ProofRequest(SMALL, req.seeds, Priority.HIGH, "client-42"))
    assert again == first
    with pytest.raises(BadInput, match="client-42"):
        engine.submit(ProofRequest.of(SMALL, partitions=2, seed=12, request_id="client-42"))
    with pytest.raises(BadInput, match="client-42"):
        engine.submit(ProofRequest.of(LARGER, partitions=2, seed=11, request_id="client-42"))
    result = engine.result(first, timeout=60)
    assert_verifies(result, 2)
    # After completion the id still maps to the finished job.
    assert engine.submit(req) == first
    assert len(engine.status().jobs) == 1


def test_concurrent_duplicate_submits_make_one_job(make_engine):
    engine = make_engine()
    req = ProofRequest.of(SMALL, seed=5, request_id="twin")
    ids: list[str] = []
    threads = [threading.Thread(target=lambda: ids.append(engine.submit(req))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == 1
    engine.result(ids[0], timeout=60)


def test_bad_requests_are_refused_at_submit(make_engine, param_dir):
    engine = make_engine(max_partitions=4)
    with pytest.raises(BadInput, match="synthetic-1000.params"):
        engine.submit(ProofRequest.of("synthetic:1000"))
    with pytest.raises(BadInput, match="unknown circuit"):
        engine.submit(ProofRequest.of("sha:17"))
    with pytest.raises(BadInput, match="exceed the limit"):
        engine.submit(ProofRequest.of(SMALL, partitions=5))
    with pytest.raises(BadInput):
        ProofRequest(SMALL, ())
    with pytest.raises(BadInput):
        ProofRequest(SMALL, (-1,))
    with pytest.raises(BadInput):
        ProofRequest(SMALL, (1,), request_id="")
    with pytest.raises(BadInput):
        engine.submit("not a request")  # type: ignore[arg-type]
    with pytest.raises(BadInput, match="unknown job"):
        engine.result("job-999")
    with pytest.raises(BadInput, match="unknown job"):
        engine.cancel("job-999")
    assert engine.status().jobs == ()


def test_wrong_key_for_circuit_fails_the_job(make_engine, param_dir, tmp_path):
    """A key file for another circuit is caught when the circuit is loaded, and named."""
    (tmp_path / "synthetic-300.params").write_bytes(
        (param_dir / "synthetic-400.params").read_bytes()
    )
    engine = make_engine(param_dir=tmp_path)
    job = engine.submit(ProofRequest.of(SMALL))
    with pytest.raises(BadInput, match="not made for circuit"):
        engine.result(job, timeout=60)
    wait_until(lambda: idle_budget(engine))
    assert engine.status().srs == ()  # a failed load leaves nothing resident
    assert engine.status().budget.reserved == 0


def test_result_timeout(make_engine):
    from cuzk.engine import FaultInjection

    engine = make_engine(faults=FaultInjection(slow_kernel=1.0, slow_kernel_s=1.0))
    job = engine.submit(ProofRequest.of(SMALL))
    with pytest.raises(TimeoutError):
        engine.result(job, timeout=0.05)
    assert_verifies(engine.result(job, timeout=60), 1)


def test_preload_evict_and_residency(make_engine):
    engine = make_engine()
    assert engine.status().srs == ()
    engine.preload(SMALL)
    (entry,) = engine.status().srs
    assert entry.circuit_id == SMALL and entry.state == "resident" and entry.users == 0
    assert engine.status().budget.by_kind["srs"] > 0
    assert engine.evict(SMALL) is True
    assert engine.evict(SMALL) is False  # not resident any more
    st = engine.status()
    assert st.srs == () and st.budget.reserved == 0
    # Work reloads it on demand.
    assert_verifies(engine.prove(ProofRequest.of(SMALL, seed=1), timeout=60), 1)
    assert [e.circuit_id for e in engine.status().srs] == [SMALL]


def test_one_circuit_under_every_spelling_of_its_id(make_engine, rng):
    """synthetic:0300 is synthetic:300: one key file, one residency entry, one dedup digest."""
    engine = make_engine()
    spelled = "synthetic:0_300"
    engine.preload(spelled)
    assert [e.circuit_id for e in engine.status().srs] == [SMALL]
    seed = int(rng.integers(1 << 60))
    job = engine.submit(ProofRequest.of(spelled, seed=seed, request_id="spelled"))
    assert engine.submit(ProofRequest.of(SMALL, seed=seed, request_id="spelled")) == job
    result = engine.result(job, timeout=60)
    assert result.circuit_id == SMALL and result.vk_path.endswith("synthetic-300.vk")
    assert_verifies(result, 1)
    assert [e.circuit_id for e in engine.status().srs] == [SMALL]
    assert engine.evict("synthetic:300_") is False  # malformed: nothing of it is resident
    assert engine.evict(spelled) is True and engine.status().srs == ()


def test_shutdown_graceful_finishes_work_then_refuses(make_engine):
    engine = make_engine()
    jobs = [engine.submit(ProofRequest.of(SMALL, seed=i)) for i in range(4)]
    engine.shutdown(graceful=True, timeout=60)
    for j in jobs:
        assert_verifies(engine.result(j, timeout=1), 1)
    with pytest.raises(ResourceExhausted, match="shutting down"):
        engine.submit(ProofRequest.of(SMALL))
    st = engine.status()
    assert not st.accepting and st.budget.reserved == 0 and st.srs == ()
    assert not any(t.is_alive() for t in engine.threads)
    engine.shutdown()  # idempotent


def test_context_manager(param_dir):
    from cuzk.engine import Engine, EngineConfig

    cfg = EngineConfig(param_dir=param_dir, msm_workers=1, memory_budget=1 << 30)
    with Engine(cfg) as engine:
        result = engine.prove(ProofRequest.of(LARGER, seed=2), timeout=60)
    assert_verifies(result, 1)
    assert not any(t.is_alive() for t in engine.threads)
