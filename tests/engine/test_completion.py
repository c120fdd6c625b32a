"""The completion callback: once per job, every terminal state, off the engine's threads."""

from __future__ import annotations

import threading

import pytest

from cuzk.engine import FaultInjection, JobCancelled, JobOutcome, JobState, ProofRequest
from cuzk.errors import BadInput, DeviceFault

from .conftest import SMALL
from .helpers import assert_verifies, partition_state, wait_until


class Recorder:
    """Collects outcomes with the thread that delivered each; can query the engine from
    inside the callback (which would deadlock if it ran under the engine lock)."""

    def __init__(self, engine=None) -> None:
        self.engine = engine
        self.outcomes: list[JobOutcome] = []
        self.threads: set[str] = set()
        self.lock = threading.Lock()

    def __call__(self, outcome: JobOutcome) -> None:
        if self.engine is not None:
            self.engine.status()  # the engine lock is free while the callback runs
        with self.lock:
            self.outcomes.append(outcome)
            self.threads.add(threading.current_thread().name)

    def by_id(self) -> dict[str, JobOutcome]:
        with self.lock:
            return {o.job_id: o for o in self.outcomes}


def test_every_terminal_state_is_delivered_once(make_engine, rng):
    # "doomed" sleeps in its kernel region (so others queue behind it), then fails there.
    faults = FaultInjection(
        kernel_error=1.0, slow_kernel=1.0, slow_kernel_s=0.6, targets=frozenset({"doomed"})
    )
    engine = make_engine(workers_per_device=1, synthesis_lookahead=1, faults=faults)
    rec = Recorder(engine)
    engine.on_complete(rec)
    seeds = [int(s) for s in rng.integers(0, 1 << 60, size=3)]
    doomed = engine.submit(ProofRequest.of(SMALL, seed=seeds[0], request_id="doomed"))
    wait_until(lambda: partition_state(engine, doomed) == "kernels")
    cancelled = engine.submit(ProofRequest.of(SMALL, partitions=2, seed=seeds[1]))
    assert engine.cancel(cancelled) is True
    ok = engine.submit(ProofRequest.of(SMALL, partitions=2, seed=seeds[2]))
    assert_verifies(engine.result(ok, timeout=60), 2)
    with pytest.raises(DeviceFault):
        engine.result(doomed, timeout=60)
    wait_until(lambda: len(rec.by_id()) == 3, what="three outcomes")
    engine.shutdown()
    outcomes = rec.by_id()
    assert len(rec.outcomes) == 3  # once each
    assert rec.threads == {"cuzk-completions"}
    good = outcomes[ok]
    assert good.state is JobState.SUCCEEDED and good.error is None
    assert good.result == engine.result(ok) and good.result.job_id == ok
    c = outcomes[cancelled]
    assert c.state is JobState.CANCELLED and c.result is None
    assert isinstance(c.error, JobCancelled) and "cancelled by the client" in str(c.error)
    d = outcomes[doomed]
    assert d.state is JobState.FAILED and d.request_id == "doomed" and d.circuit_id == SMALL
    assert isinstance(d.error, DeviceFault) and "partition 0 (kernels)" in str(d.error)
    with pytest.raises(DeviceFault) as raised:
        engine.result(doomed)
    assert str(raised.value) == str(d.error)  # the same message result() raises


def test_a_raising_callback_never_reaches_the_engine(make_engine, caplog):
    engine = make_engine()
    calls = []

    def explode(outcome: JobOutcome) -> None:
        calls.append(outcome.job_id)
        raise RuntimeError("callback bug")

    engine.on_complete(explode)
    jobs = [engine.submit(ProofRequest.of(SMALL, seed=s)) for s in (11, 12)]
    for j in jobs:
        assert_verifies(engine.result(j, timeout=60), 1)
    wait_until(lambda: len(calls) == 2)
    assert sorted(calls) == sorted(jobs)
    assert "callback bug" in caplog.text
    assert all(t.is_alive() for t in engine.threads)


def test_nongraceful_shutdown_delivers_every_cancellation_before_returning(make_engine):
    faults = FaultInjection(slow_kernel=1.0, slow_kernel_s=0.5)
    engine = make_engine(faults=faults)
    rec = Recorder()
    engine.on_complete(rec)
    jobs = [engine.submit(ProofRequest.of(SMALL, partitions=2, seed=s)) for s in range(5)]
    wait_until(lambda: partition_state(engine, jobs[0]) == "kernels")
    engine.shutdown(graceful=False)
    outcomes = rec.by_id()  # no waiting: shutdown returned after delivering
    assert set(outcomes) == set(jobs)
    assert all(o.state is JobState.CANCELLED for o in outcomes.values())
    assert not any(t.is_alive() for t in engine.threads)


def test_caller_named_jobs(make_engine):
    engine = make_engine()
    rec = Recorder()
    engine.on_complete(rec)
    first = engine.submit(ProofRequest.of(SMALL, seed=5, request_id="r"), "job-mine-1")
    assert first == "job-mine-1"
    # The caller owns request-id deduplication: the same request id is a new job.
    second = engine.submit(ProofRequest.of(SMALL, seed=5, request_id="r"), "job-mine-2")
    assert second == "job-mine-2"
    with pytest.raises(BadInput, match="already in use"):
        engine.submit(ProofRequest.of(SMALL, seed=6), "job-mine-1")
    for bad in ("", "x" * 129, "tab\there", 7):
        with pytest.raises(BadInput, match="job id"):
            engine.submit(ProofRequest.of(SMALL, seed=6), bad)  # type: ignore[arg-type]
    for j in (first, second):
        assert_verifies(engine.result(j, timeout=60), 1)
    wait_until(lambda: set(rec.by_id()) == {first, second})
    assert {t.job_id for t in engine.result(first).timelines} == {first}
    # Engine-named jobs still deduplicate.
    a = engine.submit(ProofRequest.of(SMALL, seed=9, request_id="q"))
    assert engine.submit(ProofRequest.of(SMALL, seed=9, request_id="q")) == a


def test_one_callback_per_engine(make_engine):
    engine = make_engine()
    engine.on_complete(Recorder())
    with pytest.raises(RuntimeError, match="already has"):
        engine.on_complete(Recorder())
    with pytest.raises(TypeError):
        make_engine().on_complete("not callable")  # type: ignore[arg-type]
