"""Crash and restart: ``cuzk serve`` is killed with SIGKILL at random moments while jobs are
submitted and proved, then started again; at the end every accepted job has exactly one id
(resubmitting its request id gives the same one) and a valid proof. 3 kills in the default
run, 30 with ``-m heavy``."""

from __future__ import annotations

import random
import signal
import time

import pytest

from cuzk.groth16 import proofs_from_bytes, read_vk, verify
from cuzk.server.client import Client

from ..conftest import CIRCUIT, SLOW_CIRCUIT, daemon_log, spawn_daemon
from .harness import report


def _valid(outcome) -> bool:
    if outcome.status != "completed":
        return False
    vk = read_vk(outcome.vk_path)
    proofs = proofs_from_bytes(outcome.proof)
    return all(verify(vk, i, p) for i, p in zip(outcome.public_inputs, proofs, strict=True))


def kill_storm(tmp, keys, kills: int, seed: int) -> dict[str, object]:
    r = random.Random(seed)
    sock = f"unix://{tmp}/cuzk.sock"
    accepted: dict[str, tuple[str, str, list[int]]] = {}  # request id → (job, circuit, seeds)
    duplicated = 0
    for k in range(kills):
        proc = spawn_daemon(tmp, keys)
        try:
            with Client(sock) as c:
                for i in range(r.randrange(1, 5)):
                    circuit = r.choice((CIRCUIT, CIRCUIT, SLOW_CIRCUIT))
                    seeds = [r.randrange(1, 2**62) for _ in range(r.randrange(1, 4))]
                    rid = f"kill-{k}-{i}"
                    accepted[rid] = (c.submit_circuit(circuit, seeds, request_id=rid), circuit,
                                     seeds)  # fmt: skip
                for rid in r.sample(sorted(accepted), min(3, len(accepted))):
                    job, circuit, seeds = accepted[rid]  # a retried submission: the same job
                    duplicated += c.submit_circuit(circuit, seeds, request_id=rid) != job
                time.sleep(r.uniform(0.0, 1.5))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
    proc = spawn_daemon(tmp, keys)
    lost, wrong = [], 0
    try:
        with Client(sock) as c:
            for rid, (job, circuit, seeds) in accepted.items():
                duplicated += c.submit_circuit(circuit, seeds, request_id=rid) != job
                outcome = c.await_proof(job, timeout_s=300)
                if outcome.status != "completed":
                    lost.append((rid, outcome.status, outcome.error))
                elif not _valid(outcome):
                    wrong += 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, daemon_log(tmp)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert not lost, (lost[:5], daemon_log(tmp))
    return {"kills": kills, "accepted_jobs": len(accepted), "jobs_lost": len(lost),
            "duplicated": duplicated, "wrong_proofs": wrong}  # fmt: skip


def test_sigkill_three_times_loses_nothing(tmp_path, server_keys, seed):
    figures = kill_storm(tmp_path, server_keys, 3, seed)
    report("kill -9 (fast)", seed=seed, **figures)
    assert figures["duplicated"] == 0 and figures["wrong_proofs"] == 0


@pytest.mark.heavy
def test_sigkill_thirty_times_loses_nothing(tmp_path, server_keys, seed):
    figures = kill_storm(tmp_path, server_keys, 30, seed)
    report("kill -9 (heavy)", seed=seed, **figures)
    assert figures["duplicated"] == 0 and figures["wrong_proofs"] == 0
