"""Cancellation and failure isolation: one job's trouble never touches another's."""

from __future__ import annotations

import pytest

from cuzk.engine import FaultInjection, JobCancelled, JobState, ProofRequest
from cuzk.errors import DeviceFault, InternalError

from .conftest import SMALL
from .helpers import assert_verifies, idle_budget, partition_state, wait_until


def _slow(*ids: str, seconds: float = 0.8) -> FaultInjection:
    return FaultInjection(slow_kernel=1.0, slow_kernel_s=seconds, targets=frozenset(ids))


def _job(engine, job_id):
    return next(j for j in engine.status().jobs if j.job_id == job_id)


def test_cancel_queued_job(make_engine):
    engine = make_engine(workers_per_device=1, synthesis_lookahead=1, faults=_slow("blocker"))
    blocker = engine.submit(ProofRequest.of(SMALL, request_id="blocker"))
    wait_until(lambda: partition_state(engine, blocker) == "kernels")
    queued = engine.submit(ProofRequest.of(SMALL, partitions=3, seed=10))
    later = engine.submit(ProofRequest.of(SMALL, partitions=3, seed=20))
    assert _job(engine, later).state is JobState.QUEUED
    assert engine.cancel(later) is True
    assert engine.cancel(later) is False  # already terminal
    with pytest.raises(JobCancelled, match="cancelled by the client"):
        engine.result(later, timeout=1)
    assert [p.state.value for p in _job(engine, later).partitions] == ["skipped"] * 3
    assert_verifies(engine.result(blocker, timeout=60), 1)
    assert_verifies(engine.result(queued, timeout=60), 3)
    assert engine.status().counts["NORMAL"] == {
        "queued": 0,
        "running": 0,
        "succeeded": 2,
        "failed": 0,
        "cancelled": 1,
    }
    wait_until(lambda: idle_budget(engine))


def test_cancel_running_job_discards_its_kernel_work(make_engine):
    engine = make_engine(faults=_slow("victim", seconds=0.6))
    victim = engine.submit(ProofRequest.of(SMALL, partitions=4, request_id="victim"))
    wait_until(lambda: partition_state(engine, victim) == "kernels")
    other = engine.submit(ProofRequest.of(SMALL, partitions=2, seed=40))
    assert engine.cancel(victim) is True
    with pytest.raises(JobCancelled):
        engine.result(victim, timeout=1)
    assert_verifies(engine.result(other, timeout=60), 2)
    # The running partition finishes its kernel region, then is discarded; memory returns.
    wait_until(lambda: idle_budget(engine), what="the cancelled job to drain")
    states = [p.state.value for p in _job(engine, victim).partitions]
    assert states[0] == "discarded"
    assert set(states) <= {"discarded", "skipped"}
    assert engine.status().budget.by_kind["partition"] == 0
    assert engine.cancel(other) is False


def test_synthesis_fault_fails_only_that_job(make_engine):
    faults = FaultInjection(synthesis_error=1.0, targets=frozenset({"broken"}))
    engine = make_engine(faults=faults)
    good = [engine.submit(ProofRequest.of(SMALL, partitions=2, seed=i * 2)) for i in range(3)]
    bad = engine.submit(ProofRequest.of(SMALL, partitions=3, request_id="broken"))
    with pytest.raises(InternalError, match=r"partition 0 \(synthesis\).*injected"):
        engine.result(bad, timeout=60)
    for j in good:
        assert_verifies(engine.result(j, timeout=60), 2)
    wait_until(lambda: idle_budget(engine))
    job = _job(engine, bad)
    assert job.state is JobState.FAILED and "partition 0" in job.error
    assert job.partitions[0].state.value == "failed"


def test_kernel_fault_fails_only_that_job(make_engine):
    faults = FaultInjection(kernel_error=1.0, targets=frozenset({"gpu-died"}))
    engine = make_engine(devices=2, workers_per_device=1, faults=faults)
    bad = engine.submit(ProofRequest.of(SMALL, partitions=2, request_id="gpu-died"))
    good = engine.submit(ProofRequest.of(SMALL, partitions=2, seed=9))
    with pytest.raises(DeviceFault, match=r"\(kernels\).*injected fault: kernel failed") as got:
        engine.result(bad, timeout=60)
    # The job keeps its error but not the frames it passed through (nor their device arrays).
    assert got.value.__cause__ is not None and got.value.__cause__.__traceback__ is None
    assert_verifies(engine.result(good, timeout=60), 2)
    wait_until(lambda: idle_budget(engine))
    # The device keeps working after a kernel fault.
    assert_verifies(engine.prove(ProofRequest.of(SMALL, seed=77), timeout=60), 1)


def test_bad_proof_is_never_returned(make_engine):
    """A corrupted partition proof is caught by the assembler, which names the partition."""
    faults = FaultInjection(bad_proof=1.0, targets=frozenset({"corrupt"}))
    engine = make_engine(faults=faults)
    bad = engine.submit(ProofRequest.of(SMALL, partitions=3, request_id="corrupt"))
    with pytest.raises(InternalError, match="partition 0: the proof did not verify"):
        engine.result(bad, timeout=60)
    job = _job(engine, bad)
    assert job.state is JobState.FAILED
    assert engine.status().counts["NORMAL"]["succeeded"] == 0
    assert_verifies(engine.prove(ProofRequest.of(SMALL, seed=5), timeout=60), 1)


def test_fault_in_a_later_partition_names_it(make_engine):
    class OnlyPartition2(FaultInjection):
        def fires(self, kind, request_key, partition):
            return kind == "synthesis" and partition == 2

    engine = make_engine(workers_per_device=1, faults=OnlyPartition2())
    job = engine.submit(ProofRequest.of(SMALL, partitions=6))
    with pytest.raises(InternalError, match="partition 2"):
        engine.result(job, timeout=60)
    wait_until(lambda: idle_budget(engine))
    states = [p.state.value for p in _job(engine, job).partitions]
    assert states[2] == "failed"
    assert set(states[3:]) <= {"skipped", "discarded"}
    assert set(states[:2]) <= {"done", "discarded"}


def test_nongraceful_shutdown_cancels_everything(make_engine):
    engine = make_engine(faults=_slow("a", seconds=0.5))
    jobs = [
        engine.submit(ProofRequest.of(SMALL, partitions=2, seed=i, request_id=r))
        for i, r in enumerate(("a", "b", "c"))
    ]
    wait_until(lambda: partition_state(engine, jobs[0]) == "kernels")
    engine.shutdown(graceful=False)
    with pytest.raises(JobCancelled, match="shut down"):
        engine.result(jobs[2], timeout=1)
    st = engine.status()
    assert all(j.state.terminal for j in st.jobs)
    assert st.budget.reserved == 0
    assert not any(t.is_alive() for t in engine.threads)


def test_a_deferred_check_failure_fails_only_that_job(make_engine, monkeypatch):
    """Where the backend settles a·b = c after the H pipeline (CUDA under a cap), a failed
    verdict surfaces from the kernel region's wait: that job fails as the caller's fault
    with the constraint named, its staged inputs and working set go back, and the device
    proves the next job. (The CPU backend stands in: its verdict is forced to fail and its
    exact check to name row 3.)"""
    import numpy as np

    from cuzk.backend.cpu import CpuBackend
    from cuzk.errors import BadInput

    engine = make_engine(workers_per_device=2)
    assert_verifies(engine.prove(ProofRequest.of(SMALL, seed=3), timeout=60), 1)
    monkeypatch.setattr(CpuBackend, "defer_abc_check", lambda self, a, b, c: lambda: False)
    monkeypatch.setattr(
        CpuBackend, "unsatisfied_rows", lambda self, a, b, c, limit=16: np.array([3])
    )
    bad = engine.submit(ProofRequest.of(SMALL, partitions=3, seed=4))
    with pytest.raises(BadInput, match=r"\(kernels\).*constraint 3 .* is not satisfied"):
        engine.result(bad, timeout=60)
    wait_until(lambda: idle_budget(engine), what="the failed job's memory to return")
    monkeypatch.undo()
    assert_verifies(engine.prove(ProofRequest.of(SMALL, seed=5), timeout=60), 1)
