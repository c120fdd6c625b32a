"""Checks shared by the engine tests."""

from __future__ import annotations

import time
from pathlib import Path

from cuzk.circuits import open_statement
from cuzk.engine import Engine, EngineConfig, JobResult, ProofRequest
from cuzk.groth16 import proofs_from_bytes, read_vk, verify

STAMP_ORDER = (
    "queued",
    "synth_start",
    "synth_end",
    "device_pick",
    "kernels_start",
    "kernels_end",
    "finalize_end",
)


def assert_verifies(result: JobResult, partitions: int) -> None:
    """Every partition proof checks against the key on disk, independently of the engine."""
    vk = read_vk(result.vk_path)
    proofs = proofs_from_bytes(result.proof)
    assert len(proofs) == partitions == len(result.public_inputs)
    for k, (inputs, proof) in enumerate(zip(result.public_inputs, proofs, strict=True)):
        assert len(inputs) == 4
        assert verify(vk, inputs, proof), f"partition {k} does not verify"


def prove_payload(circuit_id: str, payload: bytes, param_dir: Path) -> JobResult:
    """One request through a one-device CPU engine, checked: its public inputs are the ones the
    payload states and every partition proof verifies against the key on disk."""
    stated = open_statement(circuit_id, payload=payload)
    cfg = EngineConfig(param_dir=param_dir, devices=1, workers_per_device=1, join_timeout_s=30.0)
    with Engine(cfg) as engine:
        result = engine.prove(ProofRequest(circuit_id, payload=payload), timeout=3600)
    assert result.public_inputs == tuple(stated.expected(i) for i in range(stated.partitions))
    vk = read_vk(result.vk_path)
    proofs = proofs_from_bytes(result.proof)
    assert all(verify(vk, x, p) for x, p in zip(result.public_inputs, proofs, strict=True))
    return result


def assert_timeline_ordered(result: JobResult) -> None:
    for t in result.timelines:
        stamps = [getattr(t, s) for s in STAMP_ORDER]
        assert None not in stamps, t
        assert stamps == sorted(stamps), t


def wait_until(predicate, timeout: float = 20.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def partition_state(engine: Engine, job_id: str, index: int = 0) -> str:
    job = next(j for j in engine.status().jobs if j.job_id == job_id)
    return job.partitions[index].state.value


def idle_budget(engine: Engine) -> bool:
    """No partition holds memory; only residency (srs, shape) may remain."""
    st = engine.status()
    return (
        st.budget.by_kind["partition"] == 0
        and st.partitions["synthesizing"] == 0
        and all(st.partitions[s] == 0 for s in ("ready", "device_wait", "kernels", "finalizing"))
    )
