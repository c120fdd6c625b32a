"""``cuzk serve`` as a child process: a client proves over the unix socket; killed with SIGKILL
in the middle of a job, the restarted daemon finishes that job from its journal; SIGTERM shuts
it down cleanly."""

from __future__ import annotations

import json
import signal
import time

from cuzk.groth16 import proofs_from_bytes, read_vk, verify
from cuzk.server.client import Client
from cuzk.server.proto import proving_pb2 as pb

from .conftest import CIRCUIT, SLOW_CIRCUIT, daemon_log, spawn_daemon


def _valid(outcome, tmp) -> bool:
    assert outcome.status == "completed", (
        f"{outcome.job_id}: {outcome.status}: {outcome.error}\n{daemon_log(tmp)}"
    )
    vk = read_vk(outcome.vk_path)
    return all(
        verify(vk, inputs, proof)
        for inputs, proof in zip(
            outcome.public_inputs, proofs_from_bytes(outcome.proof), strict=True
        )
    )


def _running(client: Client, job_partitions: int) -> bool:
    doc = json.loads(client.status().status_json)
    return any(
        j["state"] == "running" and len(j["partitions"]) == job_partitions for j in doc["jobs"]
    )


def test_sigkill_mid_job_then_restart_completes_it(tmp_path, server_keys, rng):
    sock = f"unix://{tmp_path}/cuzk.sock"
    proc = spawn_daemon(tmp_path, server_keys)
    try:
        with Client(sock) as c:
            quick = c.prove(pb.SubmitProofRequest(circuit_id=CIRCUIT, seeds=[5]))
            assert _valid(quick, tmp_path)
            seeds = [int(x) for x in rng.integers(0, 1 << 62, size=8)]
            job = c.submit_circuit(SLOW_CIRCUIT, seeds, request_id="survivor")
            deadline = time.monotonic() + 60
            while not _running(c, len(seeds)):
                assert time.monotonic() < deadline, "the job never started"
                time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    proc = spawn_daemon(tmp_path, server_keys)
    try:
        with Client(sock) as c:
            outcome = c.await_proof(job, timeout_s=120)
            assert _valid(outcome, tmp_path)
            assert "resumed 1 journalled job" in daemon_log(tmp_path)  # it was unfinished
            assert len(outcome.public_inputs) == len(seeds)
            assert c.submit_circuit(SLOW_CIRCUIT, seeds, request_id="survivor") == job
            assert c.await_proof(quick.job_id).proof == quick.proof  # served from the journal
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
        assert not (tmp_path / "cuzk.sock").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
