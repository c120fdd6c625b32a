"""Filecoin requests end to end through the engine: a sealed 2 KiB sector's C1 output and a
2 KiB SnapDeals update, each proved from its payload and verified against keys from setup.

Setup for these 2^21–2^22-domain circuits takes minutes on two cores (seconds with
``cuzk setup --backend cuda``), hence ``heavy`` (run with ``pytest -m heavy``).
"""

from __future__ import annotations

import pytest

from cuzk.circuits import get_circuit, key_file_stem, open_statement
from cuzk.engine import Engine, EngineConfig, ProofRequest
from cuzk.groth16 import proofs_from_bytes, read_vk, verify
from cuzk.groth16.setup import generate_parameters
from cuzk.r1cs import synthesize_shape

pytestmark = pytest.mark.heavy


def _payload(kind: str, seed: int) -> bytes:
    if kind == "porep-2k":
        from cuzk.circuits.filecoin.seal import generate_c1

        return generate_c1(2048, seed).encode()
    from cuzk.circuits.filecoin.snap_vanilla import generate_update

    return generate_update(2048, seed).encode()


@pytest.mark.parametrize("circuit_id", ["porep-2k", "snap-2k"])
def test_filecoin_payload_proved_through_the_engine(circuit_id, tmp_path, pool, seed):
    shape = synthesize_shape(get_circuit(circuit_id), circuit_id)
    generate_parameters(shape, tmp_path, key_file_stem(circuit_id), seed=seed, pool=pool)
    payload = _payload(circuit_id, seed)
    stated = open_statement(circuit_id, payload=payload)
    cfg = EngineConfig(param_dir=tmp_path, devices=1, workers_per_device=1,
                       join_timeout_s=30.0)  # fmt: skip
    with Engine(cfg) as engine:
        result = engine.prove(ProofRequest(circuit_id, payload=payload), timeout=3600)
    assert result.public_inputs == tuple(stated.expected(i) for i in range(stated.partitions))
    vk = read_vk(result.vk_path)
    proofs = proofs_from_bytes(result.proof)
    assert all(verify(vk, x, p) for x, p in zip(result.public_inputs, proofs, strict=True))
    tampered = list(result.public_inputs[0])
    tampered[-1] = (tampered[-1] + 1) % (1 << 250)
    assert not verify(vk, tampered, proofs[0])
