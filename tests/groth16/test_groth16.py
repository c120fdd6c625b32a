"""End-to-end Groth16: setup → prove → verify, with every way a proof should be refused."""

from __future__ import annotations

import pytest

from cuzk.circuits.synthetic import SyntheticCircuit
from cuzk.errors import BadInput, DeviceFault, UnsatisfiedConstraint
from cuzk.field.constants import R
from cuzk.groth16 import (
    PROOF_SIZE,
    Proof,
    proofs_from_bytes,
    prove,
    read_vk,
    verify,
    verify_batch,
)
from cuzk.groth16.params_io import read_header
from cuzk.groth16.prover import check_compatible, start, synthesize, wait_kernels
from cuzk.groth16.setup import generate_parameters
from cuzk.r1cs import synthesize_shape
from tests.r1cs.circuits import CubeCircuit

N = 400  # synthetic:400 → 11 blocks, domain 512


@pytest.fixture(scope="module")
def synthetic_keys(tmp_path_factory, pool):
    shape = synthesize_shape(SyntheticCircuit(N), f"synthetic:{N}")
    out = tmp_path_factory.mktemp("keys")
    params = generate_parameters(shape, out, "syn", seed=1, pool=pool)
    return shape, params, out


@pytest.fixture(scope="module")
def other_keys(tmp_path_factory, pool):
    """Same circuit, independent setup: same shape, unrelated keys."""
    shape = synthesize_shape(SyntheticCircuit(N), f"synthetic:{N}")
    out = tmp_path_factory.mktemp("other")
    return generate_parameters(shape, out, "syn", seed=2, pool=pool)


@pytest.fixture(scope="module")
def proved(synthetic_keys, cpu_backend):
    shape, params, _ = synthetic_keys
    proof, inputs = prove(SyntheticCircuit(N, seed=12345), shape, params, cpu_backend)
    return proof, inputs


def test_proof_verifies_and_has_192_bytes(synthetic_keys, proved):
    _, params, _ = synthetic_keys
    proof, inputs = proved
    assert len(proof.to_bytes()) == PROOF_SIZE
    assert len(inputs) == 4
    assert verify(params.vk, inputs, proof)
    assert Proof.from_bytes(proof.to_bytes()) == proof


def test_fresh_random_witnesses_verify(synthetic_keys, cpu_backend, seed):
    shape, params, _ = synthetic_keys
    proof, inputs = prove(SyntheticCircuit(N, seed=seed), shape, params, cpu_backend)
    assert verify(params.vk, inputs, proof), f"seed {seed}"
    # Randomised proofs: the same witness proves to different bytes.
    again, _ = prove(SyntheticCircuit(N, seed=seed), shape, params, cpu_backend)
    assert again.to_bytes() != proof.to_bytes() and verify(params.vk, inputs, again)


def test_independent_pairing_oracle_accepts_proof(synthetic_keys, proved):
    """py_ecc (pure Python, written by others) checks the pairing equation on our bytes."""
    from py_ecc.bls.point_compression import decompress_G1, decompress_G2
    from py_ecc.optimized_bls12_381 import pairing

    from cuzk.curve.encoding import g1_to_bytes, g2_to_bytes
    from cuzk.groth16.verifier import input_commitment

    _, params, _ = synthetic_keys
    proof, inputs = proved
    vk = params.vk

    def g1(p):
        return decompress_G1(int.from_bytes(g1_to_bytes(p, compressed=True), "big"))

    def g2(p):
        raw = g2_to_bytes(p, compressed=True)
        return decompress_G2((int.from_bytes(raw[:48], "big"), int.from_bytes(raw[48:], "big")))

    lhs = pairing(g2(proof.b), g1(proof.a))
    rhs = (
        pairing(g2(vk.beta_g2), g1(vk.alpha_g1))
        * pairing(g2(vk.gamma_g2), g1(input_commitment(vk, inputs)))
        * pairing(g2(vk.delta_g2), g1(proof.c))
    )
    assert lhs == rhs
    assert lhs != rhs * pairing(g2(vk.delta_g2), g1(vk.alpha_g1))  # the check can fail


def test_flipped_bits_are_rejected(synthetic_keys, proved, seed):
    import random

    _, params, _ = synthetic_keys
    proof, inputs = proved
    raw = bytearray(proof.to_bytes())
    rnd = random.Random(seed)
    for _ in range(12):
        bad = bytearray(raw)
        pos = rnd.randrange(PROOF_SIZE * 8)
        bad[pos // 8] ^= 1 << (pos % 8)
        try:
            tampered = Proof.from_bytes(bytes(bad))
        except BadInput:
            continue  # not a valid encoding: refused at decode
        assert not verify(params.vk, inputs, tampered), f"bit {pos} (seed {seed})"


def test_wrong_public_input_is_rejected(synthetic_keys, proved):
    _, params, _ = synthetic_keys
    proof, inputs = proved
    for i in range(len(inputs)):
        wrong = list(inputs)
        wrong[i] = (wrong[i] + 1) % R
        assert not verify(params.vk, wrong, proof)


def test_other_key_is_rejected(other_keys, proved):
    proof, inputs = proved
    assert not verify(other_keys.vk, inputs, proof)


def test_bad_statement_shape_raises(synthetic_keys, proved):
    _, params, _ = synthetic_keys
    proof, inputs = proved
    with pytest.raises(BadInput, match="public inputs"):
        verify(params.vk, inputs[:-1], proof)
    with pytest.raises(BadInput, match="field element"):
        verify(params.vk, [2**255, *inputs[1:]], proof)


def test_batch_verification(synthetic_keys, cpu_backend, proved):
    shape, params, _ = synthetic_keys
    p2, i2 = prove(SyntheticCircuit(N, seed=99), shape, params, cpu_backend)
    statements = [(proved[1], proved[0]), (i2, p2)]
    assert verify_batch(params.vk, statements)
    assert not verify_batch(params.vk, [(proved[1], p2), (i2, p2)])
    assert verify_batch(params.vk, [])


def test_unsatisfied_circuit_names_constraint_and_gives_no_proof(tmp_path, pool, cpu_backend):
    shape = synthesize_shape(CubeCircuit(3), "test:cube")
    params = generate_parameters(shape, tmp_path, "cube", seed=3, pool=pool)
    proof, inputs = prove(CubeCircuit(3), shape, params, cpu_backend)
    assert verify(params.vk, inputs, proof)
    # The L and B MSMs start before the check (A's only once h is made); the refusal comes
    # only once they have ended, so no work of the refused partition outlives it.
    submitted = []
    split_msm = cpu_backend.split_msm

    def spy(bases, scalars, rows=None):
        submitted.append(split_msm(bases, scalars, rows))
        return submitted[-1]

    cpu_backend.split_msm = spy
    try:
        with pytest.raises(UnsatisfiedConstraint, match="cube/cube") as info:
            prove(CubeCircuit(3, cheat=True), shape, params, cpu_backend)
    finally:
        del cpu_backend.split_msm
    assert info.value.index == 1
    assert len(submitted) == 3 and all(f.done() for f in submitted)


def test_a_deferred_check_refuses_after_the_device_work(tmp_path, pool, cpu_backend):
    """A backend may settle a·b = c where the H pipeline makes c (the CUDA backend under a
    cap: Backend.defer_abc_check). The prover then queues every MSM, and wait_kernels
    refuses a bad witness once all five have ended, naming the constraint the exact check
    names; it drops z (the engine frees it next). A failed verdict with every row holding
    is the device's fault, not the witness's."""
    shape = synthesize_shape(CubeCircuit(3), "test:cube")
    params = generate_parameters(shape, tmp_path, "cube", seed=5, pool=pool)
    verdicts: list[bool] = []

    def defer(a, b, c):
        ok = len(cpu_backend.unsatisfied_rows(a, b, c)) == 0  # (h may be made in their memory)

        def satisfied():
            verdicts.append(ok)
            return ok

        return satisfied

    cpu_backend.defer_abc_check = defer
    try:
        proof, inputs = prove(CubeCircuit(3), shape, params, cpu_backend)
        assert verify(params.vk, inputs, proof) and verdicts == [True]
        pending = start(synthesize(CubeCircuit(3, cheat=True)), shape, params, cpu_backend)
        assert pending.abc_check is not None  # start() did not refuse: nothing was checked
        with pytest.raises(UnsatisfiedConstraint, match="cube/cube") as info:
            wait_kernels(pending)
        assert info.value.index == 1 and verdicts == [True, False]
        futures = (pending.h, pending.l, pending.a, pending.b_g1, pending.b_g2)
        assert pending.abc_check is None and all(f.done() for f in futures)
        pending = start(synthesize(CubeCircuit(3)), shape, params, cpu_backend)
        check = pending.abc_check
        assert check is not None and check.z is not None
        check.satisfied = lambda: False
        with pytest.raises(DeviceFault, match="every row holds"):
            wait_kernels(pending)
        assert check.z is None
    finally:
        del cpu_backend.defer_abc_check


def test_parameters_of_another_circuit_are_refused(synthetic_keys, tmp_path, pool):
    shape, _, _ = synthetic_keys
    small = synthesize_shape(CubeCircuit(1), "test:cube")
    params = generate_parameters(small, tmp_path, "cube", seed=4, pool=pool)
    with pytest.raises(BadInput, match="not made for circuit"):
        check_compatible(params, shape)


def test_file_layout_matches_bellperson(synthetic_keys):
    shape, params, out = synthetic_keys
    vk_bytes = (out / "syn.vk").read_bytes()
    assert len(vk_bytes) == 868 + 96 * shape.num_inputs
    assert (out / "syn.params").read_bytes()[: len(vk_bytes)] == vk_bytes
    header = read_header(out / "syn.params")
    assert header.kind == "params" and header.num_ic == shape.num_inputs
    assert header.counts["h"] == 512 - 1
    assert header.counts["l"] == shape.num_aux
    assert header.counts["a"] == shape.num_inputs + shape.a_aux_density.sum()
    b = shape.b_input_density.sum() + shape.b_aux_density.sum()
    assert header.counts["b_g1"] == header.counts["b_g2"] == b
    assert read_header(out / "syn.vk").kind == "vk"
    assert read_vk(out / "syn.vk") == params.vk


# Malformed parameter files: tests/groth16/test_params_io.py.


def test_malformed_proofs_are_refused(proved):
    proof, _ = proved
    raw = proof.to_bytes()
    with pytest.raises(BadInput, match="192"):
        Proof.from_bytes(raw[:-1])
    identity_a = bytes([0xC0]) + bytes(47) + raw[48:]
    with pytest.raises(BadInput, match="infinity"):
        Proof.from_bytes(identity_a)
    not_compressed = bytes([raw[0] & 0x7F]) + raw[1:]
    with pytest.raises(BadInput, match="A"):
        Proof.from_bytes(not_compressed)
    with pytest.raises(BadInput, match="multiple"):
        proofs_from_bytes(raw + b"x")
    assert len(proofs_from_bytes(raw * 3)) == 3
