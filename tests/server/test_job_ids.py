"""One job id from SubmitProof to the journal to every status, and no thread per job: the
engine's completion callback journals each end, even one that comes before the journal row."""

from __future__ import annotations

import threading
import time

from cuzk.engine import JobState
from cuzk.server.client import Client

from .conftest import CIRCUIT


def _wait(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_one_id_everywhere_and_no_thread_per_job(make_daemon, rng):
    d = make_daemon(
        **{
            "engine.faults.slow_kernel": 1.0,
            "engine.faults.slow_kernel_s": 1.0,
            "engine.faults.targets": ["blocker"],
        }
    )
    seeds = [int(x) for x in rng.integers(1, 1 << 62, size=40)]
    with Client(d.address) as c:
        blocker = c.submit_circuit(CIRCUIT, [seeds[0]], request_id="blocker")
        _wait(lambda: c.status().gpus[0].current_job_id == blocker)
        assert c.status().gpus[0].current_proof_kind == CIRCUIT
        before = threading.active_count()
        queued = [c.submit_circuit(CIRCUIT, [s]) for s in seeds[1:]]
        grown = threading.active_count() - before
        assert grown < 8, f"{grown} threads for {len(queued)} jobs"
        engine_ids = {j.job_id for j in d.engine.status().jobs}
        assert {blocker, *queued} <= engine_ids  # the engine runs them under the same ids
        outcomes = [c.await_proof(j, timeout_s=120) for j in (blocker, *queued)]
    assert [o.status for o in outcomes] == ["completed"] * len(seeds)
    for job, o in zip((blocker, *queued), outcomes, strict=True):
        assert o.job_id == job and {t.job_id for t in o.timelines} == {job}
    assert not any(t.name.startswith("cuzk-collect") for t in threading.enumerate())


def test_an_end_before_the_journal_row_is_recorded(make_daemon, monkeypatch):
    """A job refused at admission may end before SubmitProof has written its row; the outcome
    waits for the row instead of being lost."""
    d = make_daemon(**{"engine.faults.budget_exhaustion": 1.0, "engine.faults.targets": ["early"]})
    journal, engine = d.service.journal, d.engine
    real_add = journal.add

    def slow_add(entry, **kw):  # written after the job ended
        _wait(lambda: any(j.job_id == entry.id and j.state is JobState.FAILED
                          for j in engine.status().jobs))  # fmt: skip
        time.sleep(0.2)  # the outcome reaches the service first
        return real_add(entry, **kw)

    monkeypatch.setattr(journal, "add", slow_add)
    with Client(d.address) as c:
        job = c.submit_circuit(CIRCUIT, [3], request_id="early")
        outcome = c.await_proof(job, timeout_s=30)
    assert outcome.status == "failed" and "memory budget" in outcome.error
    assert job in outcome.error  # the message names the job by the id the client holds
    assert journal.get(job).state == "failed"
    assert d.service.failed == 1
