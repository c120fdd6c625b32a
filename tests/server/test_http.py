"""The HTTP status server over real sockets (urllib), its token check, and /status JSON built
from a real engine that has finished a job."""

from __future__ import annotations

import dataclasses
import json
import socket
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cuzk.circuits import get_circuit, key_file_stem
from cuzk.engine import Engine, EngineConfig, JobState, PartitionState, Priority, ProofRequest
from cuzk.errors import BadInput
from cuzk.groth16.setup import generate_parameters
from cuzk.r1cs import synthesize_shape
from cuzk.server.http import TIMELINE_STAMPS, StatusServer, status_json
from cuzk.server.metrics import Metrics, stage_seconds

CIRCUIT = "synthetic:300"


def get(url: str, token: str | None = None, method: str = "GET") -> tuple[int, dict, bytes]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    req = urllib.request.Request(url, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


@pytest.fixture(scope="module")
def finished_engine(tmp_path_factory, pool):
    """A real engine with one finished two-partition job and its result."""
    keys: Path = tmp_path_factory.mktemp("http-keys")
    generate_parameters(
        synthesize_shape(get_circuit(CIRCUIT), CIRCUIT),
        keys,
        key_file_stem(CIRCUIT),
        seed=7,
        pool=pool,
    )
    engine = Engine(
        EngineConfig(
            param_dir=keys,
            devices=1,
            workers_per_device=2,
            msm_workers=1,
            memory_budget=1 << 30,
            join_timeout_s=10.0,
        )
    )
    try:
        result = engine.prove(
            ProofRequest.of(
                CIRCUIT, partitions=2, seed=11, priority=Priority.HIGH, request_id="req-1"
            ),
            timeout=120,
        )
        yield engine, result
    finally:
        engine.shutdown(graceful=False)


@pytest.fixture
def serve():
    """``serve(status_fn, metrics, token=None)`` → a started server; all stopped at the end."""
    servers: list[StatusServer] = []

    def start(status_fn, metrics, token=None) -> StatusServer:
        s = StatusServer("127.0.0.1", 0, status_fn, metrics, token=token)
        s.start()
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()


def test_status_json_of_a_real_engine(finished_engine):
    engine, result = finished_engine
    st = engine.status()
    body = json.loads(json.dumps(status_json(st)))  # JSON-clean, no custom types
    assert body["accepting"] is True and body["uptime_seconds"] == pytest.approx(st.uptime)

    b = body["budget"]
    assert b["total_bytes"] == 1 << 30 and b["reserved_bytes"] == st.budget.reserved
    assert b["free_bytes"] == b["total_bytes"] - b["reserved_bytes"]
    assert sum(b["reservations"].values()) == b["reserved_bytes"]
    assert b["reservations"]["partition"] == 0  # nothing in flight

    # honest counts: the per-priority table, totals and pending agree with the job list
    q = body["queues"]
    assert set(q["jobs"]) == {p.name.lower() for p in Priority}
    for state in (s.value for s in JobState):
        listed = sum(1 for j in body["jobs"] if j["state"] == state)
        assert q["totals"][state] == listed
    assert q["jobs"]["high"]["succeeded"] == 1 and all(v == 0 for v in q["pending"].values())
    assert q["partitions"]["done"] == 2
    assert sum(q["partitions"].values()) == sum(len(j["partitions"]) for j in body["jobs"])

    job = next(j for j in body["jobs"] if j["job_id"] == result.job_id)
    assert (job["request_id"], job["circuit_id"], job["kind"]) == ("req-1", CIRCUIT, "synthetic")
    assert (job["priority"], job["state"], job["error"]) == ("high", "succeeded", None)
    assert job["partition_counts"] == {"done": 2}
    for p, t in zip(job["partitions"], result.timelines, strict=True):
        assert p["state"] == PartitionState.DONE.value and p["device"] == 0 and p["worker"]
        stamps = [p["timeline"][s] for s in TIMELINE_STAMPS]
        assert None not in stamps and stamps == sorted(stamps)
        assert p["durations"] == pytest.approx(t.durations())
        assert set(p["durations"]) == {"queue", "synthesis", "device_wait", "kernels", "finalize"}

    assert {w["kind"] for w in body["workers"]} == {"synthesis", "device"}
    names = sorted(w["name"] for w in body["workers"])  # 2 workers + the device's urgent lane
    assert names == ["cuzk-dev0-urgent", "cuzk-dev0-w0", "cuzk-dev0-w1", "cuzk-synth-0"]
    assert all(w["busy_with"] is None for w in body["workers"])
    (dev,) = body["devices"]
    assert dev["kernel_seconds"] > 0 and 0 < dev["busy_ratio"] <= 1
    assert dev["busy_ratio"] == pytest.approx(dev["kernel_seconds"] / body["uptime_seconds"])
    assert dev["memory_give_backs"] == 0  # a CPU device has no pools to give back
    (srs,) = body["srs"]
    assert (srs["circuit_id"], srs["state"], srs["users"]) == (CIRCUIT, "resident", 0)
    # the one resident circuit holds all residency memory: its parameters and its shape
    assert srs["bytes"] == b["reservations"]["srs"] + b["reservations"]["shape"] > 0


def test_status_lists_active_jobs_and_the_latest_finished_ones_only(finished_engine, rng):
    """10,000 remembered jobs (the default retain_jobs) make a scrape of a few hundred KB,
    not ~15 MB: every queued and running job up to ACTIVE_SHOWN, the latest FINISHED_SHOWN."""
    from cuzk.server.http import ACTIVE_SHOWN, FINISHED_SHOWN

    engine, _ = finished_engine
    st = engine.status()
    (real,) = st.jobs
    states = [JobState.SUCCEEDED, JobState.FAILED, JobState.QUEUED, JobState.RUNNING]
    picks = rng.choice(len(states), size=10_000, p=[0.9, 0.04, 0.05, 0.01])
    many = tuple(
        dataclasses.replace(real, job_id=f"job-{i:05d}", state=states[k])
        for i, k in enumerate(picks)
    )
    body = json.dumps(status_json(dataclasses.replace(st, jobs=many)))
    doc = json.loads(body)
    active = [j.job_id for j in many if j.state in (JobState.QUEUED, JobState.RUNNING)]
    finished = [j.job_id for j in many if j.job_id not in set(active)]
    shown = [j["job_id"] for j in doc["jobs"]]
    assert shown == active[:ACTIVE_SHOWN] + finished[-FINISHED_SHOWN:]
    assert doc["jobs_omitted"] == len(many) - len(shown)
    assert len(body) < 2_000_000


def test_routes_over_http_with_a_real_engine(finished_engine, serve):
    engine, result = finished_engine
    metrics = Metrics(engine.status)
    for _ in range(2):
        metrics.job_finished(result.circuit_id, "succeeded", 1.5, stage_seconds(result.timelines))
    s = serve(lambda: status_json(engine.status()), metrics)
    base = f"http://127.0.0.1:{s.port}"

    code, _, body = get(base + "/healthz")
    assert (code, body) == (200, b"ok\n")

    code, headers, body = get(base + "/status")
    assert code == 200 and headers["Content-Type"].startswith("application/json")
    assert json.loads(body)["jobs"][0]["job_id"] == result.job_id

    code, headers, body = get(base + "/metrics")
    assert code == 200 and headers["Content-Type"].startswith("text/plain; version=")
    got = {
        (smp.name, frozenset(smp.labels.items())): smp.value
        for fam in text_string_to_metric_families(body.decode())
        for smp in fam.samples
    }
    assert got[("cuzk_proofs_completed_total", frozenset({("kind", "synthetic")}))] == 2
    assert got[("cuzk_partitions", frozenset({("state", "done")}))] == 2
    assert got[("cuzk_jobs", frozenset({("priority", "high"), ("state", "succeeded")}))] == 1
    assert got[("cuzk_device_busy_ratio", frozenset({("device", "0"), ("backend", "cpu")}))] > 0

    assert get(base + "/nope")[0] == 404
    assert get(base + "/status", method="POST")[0] == 405
    assert get(base + "/metrics", method="DELETE")[0] == 405


def test_token_is_required_except_for_healthz(serve, rng):
    token = rng.bytes(16).hex()
    metrics = Metrics(lambda: (_ for _ in ()).throw(RuntimeError("no engine")))
    s = serve(lambda: {"ok": True}, metrics, token=token)
    base = f"http://127.0.0.1:{s.port}"
    assert get(base + "/healthz")[0] == 200
    for route in ("/status", "/metrics", "/nope"):
        code, headers, _ = get(base + route)
        assert code == 401 and headers["WWW-Authenticate"].startswith("Bearer")
        assert get(base + route, token=token[:-1] + "x")[0] == 401
    code, _, body = get(base + "/status", token=token)
    assert (code, json.loads(body)) == (200, {"ok": True})
    code, _, body = get(base + "/metrics", token=token)
    assert code == 200 and b"cuzk_engine_status_up 0.0" in body
    assert get(base + "/nope", token=token)[0] == 404
    # "Basic" or a bare token is not a bearer token
    req = urllib.request.Request(base + "/status", headers={"Authorization": token})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=10)
    assert e.value.code == 401


def test_a_failing_status_is_a_500_and_the_server_keeps_serving(serve):
    def broken() -> dict:
        raise RuntimeError("snapshot failed")

    s = serve(broken, Metrics(broken))
    base = f"http://127.0.0.1:{s.port}"
    code, _, body = get(base + "/status")
    assert code == 500 and "snapshot failed" in json.loads(body)["error"]
    assert get(base + "/healthz")[0] == 200


def test_stop_joins_and_closes_the_port():
    before = set(threading.enumerate())
    s = StatusServer("127.0.0.1", 0, dict, Metrics(dict))  # type: ignore[arg-type]
    s.start()
    port = s.port
    assert get(f"http://127.0.0.1:{port}/healthz")[0] == 200
    s.stop()
    s.stop()  # idempotent
    assert set(threading.enumerate()) == before  # no leaked thread (loop or executor)
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass
    with pytest.raises(RuntimeError):
        _ = s.port


def test_a_port_in_use_is_reported(serve):
    s = serve(dict, Metrics(dict))
    other = StatusServer("127.0.0.1", s.port, dict, Metrics(dict))  # type: ignore[arg-type]
    with pytest.raises(BadInput, match=f"cannot listen on 127.0.0.1:{s.port}"):
        other.start()
    other.stop()
    assert get(f"http://127.0.0.1:{s.port}/healthz")[0] == 200
