"""Request ids as Curio uses them: reused across retries, never refused.

An identical request joins the job in flight (or gets its proof), a request whose job failed or
was cancelled runs again, another payload under an id in flight supersedes that job; ids with
spaces and brackets survive the journal, a restart, the log, /status and the metrics. Prove
cancels its job when its caller gives up (deadline, cancellation), unless someone else waits.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.request

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from cuzk.engine import JobState
from cuzk.server.client import Client, DaemonUnavailable
from cuzk.server.daemon import Daemon
from cuzk.server.journal import Journal
from cuzk.server.proto import proving_pb2 as pb
from cuzk.server.proto import proving_pb2_grpc as pb_grpc
from cuzk.server.service import request_id_rule

from .conftest import CIRCUIT, daemon_config
from .test_daemon import _check_valid

CURIO_ID = "wdpost-1000-0-[12 34 56]"  # Curio's WindowPoSt id: spaces and brackets


def _wait(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _slow(targets: list[str], seconds: float = 1.0) -> dict:
    """Config overrides: every partition of the jobs under ``targets`` sleeps in its kernels."""
    return {
        "engine.faults.slow_kernel": 1.0,
        "engine.faults.slow_kernel_s": seconds,
        "engine.faults.targets": targets,
    }


def _recover(d: Daemon) -> None:
    """The device stops failing (the injected faults are switched off in the running engine)."""
    faults = d.engine.config.faults
    for name in ("kernel_error", "slow_kernel"):
        object.__setattr__(faults, name, 0.0)


def _status_error(c: Client, job_id: str) -> str | None:
    """The error GetStatus's job list shows for ``job_id``."""
    jobs = json.loads(c.status().status_json)["jobs"]
    (job,) = (j for j in jobs if j["job_id"] == job_id)
    return job["error"]


def _running(d: Daemon, job_id: str) -> bool:
    return any(j.job_id == job_id and j.state is JobState.RUNNING for j in d.engine.status().jobs)


def _prove(circuit: str, seeds: list[int], request_id: str, **kw) -> pb.SubmitProofRequest:
    return pb.SubmitProofRequest(circuit_id=circuit, seeds=seeds, request_id=request_id, **kw)


@pytest.mark.parametrize(
    ("held_by", "same", "action"),
    [
        (None, True, "new"),
        (None, False, "new"),
        ("pending", True, "join"),
        ("pending", False, "supersede"),
        ("succeeded", True, "join"),
        ("succeeded", False, "new"),
        ("failed", True, "new"),
        ("failed", False, "new"),
        ("cancelled", True, "new"),
        ("cancelled", False, "new"),
    ],
)
def test_the_rule(held_by, same, action):
    assert request_id_rule(held_by, same) == action


def test_an_identical_request_joins_and_is_proved_once(make_daemon, rng):
    d = make_daemon(**_slow(["blocker"]))
    seeds = [int(x) for x in rng.integers(1, 1 << 62, size=2)]
    with Client(d.address) as c:
        blocker = c.submit_circuit(CIRCUIT, [seeds[0]], request_id="blocker")
        _wait(lambda: _running(d, blocker))
        first = c.submit_circuit(CIRCUIT, [seeds[1]], request_id=CURIO_ID)
        assert c.submit_circuit(CIRCUIT, [seeds[1]], request_id=CURIO_ID) == first
        # priority is not part of what is proved
        assert c.submit_circuit(CIRCUIT, [seeds[1]], request_id=CURIO_ID, priority=pb.HIGH) == first
        proved = c.prove(_prove(CIRCUIT, [seeds[1]], CURIO_ID))  # a Prove joins it too
        assert proved.job_id == first
        _check_valid(proved)
        # once proved, a retry gets the same proof at once
        again = c.prove(_prove(CIRCUIT, [seeds[1]], CURIO_ID), timeout_s=5)
        assert again.job_id == first and again.proof == proved.proof
        assert c.submit_circuit(CIRCUIT, [seeds[1]], request_id=CURIO_ID) == first
    assert [j.job_id for j in d.engine.status().jobs if j.request_id == CURIO_ID] == [first]


def test_a_failed_job_runs_again_and_its_failure_is_never_handed_out(make_daemon, rng):
    d = make_daemon(**{"engine.faults.kernel_error": 1.0, "engine.faults.targets": ["flaky"]})
    seed = int(rng.integers(1, 1 << 62))
    with Client(d.address) as c:
        failed = c.prove(_prove(CIRCUIT, [seed], "flaky"))
        assert failed.status == "failed" and "injected fault" in failed.error
        _recover(d)
        retried = c.prove(_prove(CIRCUIT, [seed], "flaky"))
        assert retried.job_id != failed.job_id
        _check_valid(retried)
        assert c.submit_circuit(CIRCUIT, [seed], request_id="flaky") == retried.job_id
        assert c.await_proof(failed.job_id).status == "failed"  # the old job still answers
    journal = d.service.journal
    assert journal.by_request_id("flaky").id == retried.job_id
    old = journal.get(failed.job_id)
    assert old.state == "failed" and old.request_id is None  # it gave the id up


def test_a_cancelled_job_runs_again(make_daemon, rng):
    d = make_daemon(**_slow(["blocker"]))
    seed = int(rng.integers(1, 1 << 62))
    with Client(d.address) as c:
        blocker = c.submit_circuit(CIRCUIT, [1], request_id="blocker")
        _wait(lambda: _running(d, blocker))
        first = c.submit_circuit(CIRCUIT, [seed], request_id="again")
        assert c.cancel(first)
        assert c.await_proof(first, timeout_s=30).error == "cancelled by the client"
        assert _status_error(c, first) == "cancelled by the client"
        second = c.submit_circuit(CIRCUIT, [seed], request_id="again")
        assert second != first
        _check_valid(c.await_proof(second, timeout_s=60))


def test_another_payload_supersedes_the_job_in_flight(make_daemon, rng):
    """A WindowPoSt retry that skips a newly faulty sector: same id, another vanilla set."""
    d = make_daemon(**_slow(["blocker"]))
    a, b = (int(x) for x in rng.integers(1, 1 << 62, size=2))
    with Client(d.address) as c:
        blocker = c.submit_circuit(CIRCUIT, [1], request_id="blocker")
        _wait(lambda: _running(d, blocker))
        waiting: list = []
        first_call = threading.Thread(
            target=lambda: waiting.append(c.prove(_prove(CIRCUIT, [a], CURIO_ID)))
        )
        first_call.start()
        _wait(lambda: d.service.journal.by_request_id(CURIO_ID) is not None)
        first = d.service.journal.by_request_id(CURIO_ID).id
        second = c.submit_circuit(CIRCUIT, [b, a], request_id=CURIO_ID)
        assert second != first
        first_call.join(60)
        (superseded,) = waiting
        assert superseded.job_id == first and superseded.status == "cancelled"
        assert superseded.error == f"superseded by {second}: request_id reused for another payload"
        assert _status_error(c, first) == superseded.error
        proved = c.await_proof(second, timeout_s=60)
        _check_valid(proved)
        assert len(proved.public_inputs) == 2
        # the first payload again, after the second was proved: a new job again
        third = c.prove(_prove(CIRCUIT, [a], CURIO_ID))
        assert third.job_id not in (first, second)
        _check_valid(third)


def test_a_bad_payload_under_a_used_id_leaves_the_job_in_flight(make_daemon):
    d = make_daemon(**_slow(["blocker"]))
    with Client(d.address) as c:
        blocker = c.submit_circuit(CIRCUIT, [1], request_id="blocker")
        _wait(lambda: _running(d, blocker))
        first = c.submit_circuit(CIRCUIT, [5], request_id="kept")
        with pytest.raises(Exception) as info:
            c.submit(
                pb.SubmitProofRequest(circuit_id=CIRCUIT, vanilla_proof=b"x", request_id="kept")
            )
        assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
        _check_valid(c.await_proof(first, timeout_s=60))
        assert d.service.journal.by_request_id("kept").id == first


def test_curio_ids_survive_journal_restart_log_status_and_metrics(
    tmp_path, server_keys, rng, caplog
):
    caplog.set_level(logging.INFO, logger="cuzk.server")
    seed = int(rng.integers(1, 1 << 62))
    cfg = daemon_config(tmp_path, server_keys, **_slow([CURIO_ID], 2.0))
    d = Daemon(cfg)
    d.start()
    try:
        with Client(d.address) as c:
            job = c.submit_circuit(CIRCUIT, [seed, seed + 1], request_id=CURIO_ID)
            _wait(lambda: _running(d, job))
    finally:
        d.stop(graceful=True, grace=0.0)  # it stays pending in the journal
    j = Journal(cfg.journal.path, 3600)
    row = j.by_request_id(CURIO_ID)
    assert row.id == job and row.state == "pending" and row.request_id == CURIO_ID
    j.close()
    with Daemon(daemon_config(tmp_path, server_keys)) as d, Client(d.address) as c:
        # the resumed job answers a retry under the same id
        assert c.submit_circuit(CIRCUIT, [seed, seed + 1], request_id=CURIO_ID) == job
        _check_valid(c.await_proof(job, timeout_s=120))
        with urllib.request.urlopen(f"http://127.0.0.1:{d.http_port}/status") as r:
            status = json.loads(r.read())
        assert [x["request_id"] for x in status["jobs"] if x["job_id"] == job] == [CURIO_ID]
        metrics = c.metrics()
    assert CURIO_ID not in metrics and "wdpost-1000" not in metrics  # ids are never labels
    names = {f.name for f in text_string_to_metric_families(metrics)}
    assert "cuzk_proofs_completed" in names
    said = [r.getMessage() for r in caplog.records if job in r.getMessage()]
    assert any(f'request_id "{CURIO_ID}"' in line for line in said), said
    hostile = "a\nb\x00[c d]"  # a line break never splits a log line
    with Daemon(daemon_config(tmp_path, server_keys)) as d, Client(d.address) as c:
        _check_valid(c.prove(_prove(CIRCUIT, [seed], hostile)))
    assert any('request_id "a\\nb\\u0000[c d]"' in r.getMessage() for r in caplog.records)


# -- Prove and its caller's deadline ---------------------------------------------------------


def _ended_early(d: Daemon, job_id: str, partitions: int) -> None:
    """The job is cancelled and most of its partitions never reached the device."""
    _wait(lambda: d.service.journal.get(job_id).state == "cancelled", 10)
    (job,) = (j for j in d.engine.status().jobs if j.job_id == job_id)
    assert job.state is JobState.CANCELLED
    ran = [p for p in job.partitions if p.timeline.kernels_start is not None]
    assert len(ran) <= 2 < partitions, [p.state for p in job.partitions]
    _wait(lambda: not d.engine.status().budget.by_kind.get("partition"), 10)  # memory is back


def test_prove_deadline_cancels_the_job_and_frees_the_device(make_daemon, rng):
    d = make_daemon(**_slow(["curio"], 1.0))
    seeds = [int(x) for x in rng.integers(1, 1 << 62, size=6)]  # six 1-s partitions
    with Client(d.address) as c:
        t0 = time.monotonic()
        with pytest.raises(DaemonUnavailable) as info:
            c.prove(_prove(CIRCUIT, seeds, "curio"), timeout_s=0.8)
        assert info.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
        job = d.service.journal.by_request_id("curio").id
        _ended_early(d, job, len(seeds))
        entry = d.service.journal.get(job)
        assert "Prove call ended before the proof" in entry.error
        assert _status_error(c, job) == entry.error  # GetStatus gives the same reason
        # the device is free: another proof long before the six seconds are up
        _check_valid(c.prove(_prove(CIRCUIT, [seeds[0]], "next"), timeout_s=30))
        assert time.monotonic() - t0 < 4.5
        # Curio retries under the same id: the cancelled job runs again
        _recover(d)
        retried = c.prove(_prove(CIRCUIT, seeds, "curio"), timeout_s=60)
        assert retried.job_id != job
        _check_valid(retried)


def test_prove_cancelled_by_its_client_cancels_the_job(make_daemon, rng):
    d = make_daemon(**_slow(["gone"], 1.0))
    seeds = [int(x) for x in rng.integers(1, 1 << 62, size=6)]
    with grpc.insecure_channel(d.address) as channel:
        stub = pb_grpc.ProvingEngineStub(channel)
        call = stub.Prove.future(pb.ProveRequest(submit=_prove(CIRCUIT, seeds, "gone")))
        _wait(lambda: d.service.journal.by_request_id("gone") is not None)
        job = d.service.journal.by_request_id("gone").id
        _wait(lambda: _running(d, job))
        call.cancel()
    _ended_early(d, job, len(seeds))


def test_a_job_someone_else_waits_for_outlives_a_caller_that_gives_up(make_daemon, rng):
    d = make_daemon(**_slow(["shared", "held"], 0.5))
    seeds = [int(x) for x in rng.integers(1, 1 << 62, size=3)]
    with Client(d.address) as c:
        # two Prove calls share a job; one gives up, the other still gets the proof
        results: list = []
        patient = threading.Thread(
            target=lambda: results.append(c.prove(_prove(CIRCUIT, seeds, "shared"), 60))
        )
        patient.start()
        _wait(lambda: d.service.journal.by_request_id("shared") is not None)
        with pytest.raises(DaemonUnavailable):
            c.prove(_prove(CIRCUIT, seeds, "shared"), timeout_s=0.3)
        patient.join(60)
        (outcome,) = results
        _check_valid(outcome)
        # a job submitted with SubmitProof belongs to whoever holds its id: a Prove that
        # joins it and gives up leaves it running
        held = c.submit_circuit(CIRCUIT, seeds, request_id="held")
        with pytest.raises(DaemonUnavailable):
            c.prove(_prove(CIRCUIT, seeds, "held"), timeout_s=0.3)
        _check_valid(c.await_proof(held, timeout_s=60))
