"""Filecoin requests end to end through the engine: a sealed 2 KiB sector's C1 output and a
2 KiB SnapDeals update, each proved from its payload and verified against keys from setup;
on a GPU also a 4-partition 8 MiB SnapDeals update.

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
from tests.engine.helpers import prove_payload

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
    result = prove_payload(circuit_id, _payload(circuit_id, seed), tmp_path)
    vk = read_vk(result.vk_path)
    proofs = proofs_from_bytes(result.proof)
    tampered = list(result.public_inputs[0])
    tampered[-1] = (tampered[-1] + 1) % (1 << 250)
    assert not verify(vk, tampered, proofs[0])


def _cuda_state() -> tuple[bool, str]:
    from cuzk.backend.cuda.device import cuda_available

    return cuda_available()


_CUDA_OK, _CUDA_WHY = _cuda_state()


@pytest.mark.gpu
@pytest.mark.skipif(not _CUDA_OK, reason=_CUDA_WHY)
def test_snap_8m_four_partitions_on_cuda(tmp_path, seed):
    """8 MiB SnapDeals (4 partitions of 10,007,503 constraints, a 2^24 domain) from its
    payload through the engine on a GPU: keys made on the GPU, partitions assembled in order,
    every partition proof checked here again and a tampered input refused. Minutes on an
    H200; setup alone would take hours on two cores."""
    import time

    from cuzk.circuits.filecoin.snap_vanilla import generate_update
    from cuzk.cli.tasks import run_setup

    circuit_id, shapes = "snap-8m", tmp_path / "shapes"
    t0 = time.perf_counter()
    run_setup(circuit_id, tmp_path, seed=seed, workers=None, shape_cache=shapes, backend="cuda")
    t_setup = time.perf_counter() - t0
    payload = generate_update(8 << 20, seed).encode()
    stated = open_statement(circuit_id, payload=payload)
    assert stated.partitions == 4
    cfg = EngineConfig(
        param_dir=tmp_path,
        backend="cuda",
        devices=1,
        workers_per_device=2,
        shape_cache=shapes,
        join_timeout_s=60.0,
    )
    with Engine(cfg) as engine:
        t0 = time.perf_counter()
        engine.preload(circuit_id)
        t_load = time.perf_counter() - t0
        t0 = time.perf_counter()
        result = engine.prove(ProofRequest(circuit_id, payload=payload), timeout=1800)
        t_prove = time.perf_counter() - t0
    print(
        f"\nsnap-8m on cuda: setup {t_setup:.1f} s, load {t_load:.1f} s, "
        f"prove (4 partitions) {t_prove:.1f} s; per partition "
        + "; ".join(f"{k} {v:.2f} s" for k, v in result.timelines[0].stages.items())
    )
    assert result.public_inputs == tuple(stated.expected(i) for i in range(4))
    vk = read_vk(result.vk_path)
    proofs = proofs_from_bytes(result.proof)
    assert len(proofs) == 4
    assert all(verify(vk, x, p) for x, p in zip(result.public_inputs, proofs, strict=True))
    tampered = list(result.public_inputs[3])
    tampered[-1] = (tampered[-1] + 1) % (1 << 250)
    assert not verify(vk, tampered, proofs[3])
    # a partition's proof does not verify in another partition's place
    assert not verify(vk, result.public_inputs[0], proofs[1])
