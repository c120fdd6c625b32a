"""Proofs for snarkjs keys: ours verify with our verifier and with snarkjs itself, snarkjs
rejects tampered ones, and our verifier accepts snarkjs's own proof."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cuzk.curve.points import P
from cuzk.errors import BadInput, UnsatisfiedConstraint
from cuzk.interop import (
    proof_to_json,
    prove,
    public_to_json,
    read_r1cs,
    read_wtns,
    read_zkey,
    verify_json,
    write_json,
)
from cuzk.interop.prover import prepare
from cuzk.interop.snarkjs_json import dumps, read_json
from tests.interop import toolchain
from tests.interop.conftest import edit_section


@pytest.fixture(scope="module")
def our_proof(prepared_fixture, cpu_backend, fixtures):
    proof, public = prove(prepared_fixture, read_wtns(fixtures / "fixture.wtns"), cpu_backend)
    return proof_to_json(proof), public_to_json(public)


def _files(tmp_path: Path, proof: dict, public: list) -> tuple[Path, Path]:
    write_json(tmp_path / "proof.json", proof)
    write_json(tmp_path / "public.json", public)
    return tmp_path / "proof.json", tmp_path / "public.json"


def test_our_proof_verifies_with_our_verifier(our_proof, fixtures):
    proof, public = our_proof
    vk = read_json(fixtures / "fixture_vk.json")
    assert verify_json(vk, public, proof)
    assert public == read_json(fixtures / "snarkjs_public.json")


def test_proof_json_has_snarkjs_shape(our_proof, fixtures):
    """Same keys in the same order, same nesting, z = "1" / ["1", "0"], decimal strings."""
    proof, _ = our_proof
    theirs = read_json(fixtures / "snarkjs_proof.json")
    assert list(proof) == list(theirs)
    assert proof["pi_a"][2] == "1" and proof["pi_c"][2] == "1"
    assert proof["pi_b"][2] == ["1", "0"]
    assert [len(c) for c in proof["pi_b"]] == [2, 2, 2]
    assert all(s.isdigit() for s in proof["pi_a"] + proof["pi_c"])
    assert (proof["protocol"], proof["curve"]) == ("groth16", "bls12381")
    # Byte-exact formatting: re-serialising snarkjs's own file reproduces it.
    text = (fixtures / "snarkjs_proof.json").read_text()
    assert dumps(json.loads(text)) == text


def test_snarkjs_verifies_our_proof(npm_bin, our_proof, fixtures, tmp_path):
    proof_path, public_path = _files(tmp_path, *our_proof)
    assert toolchain.snarkjs_verifies(fixtures / "fixture_vk.json", public_path, proof_path)


def _negate_y(point: list[str]) -> list[str]:
    """The point's negative: still on the curve, so only the pairing check can catch it."""
    return [point[0], str(P - int(point[1])), point[2]]


def test_snarkjs_rejects_tampered_proofs(npm_bin, our_proof, fixtures, tmp_path):
    proof, public = our_proof
    vk = fixtures / "fixture_vk.json"
    tampered = dict(proof, pi_a=_negate_y(proof["pi_a"]))
    proof_path, public_path = _files(tmp_path, tampered, public)
    assert not toolchain.snarkjs_verifies(vk, public_path, proof_path)
    assert not verify_json(read_json(vk), public, tampered)
    wrong_public = [str(int(public[0]) + 1)] + public[1:]
    proof_path, public_path = _files(tmp_path, proof, wrong_public)
    assert not toolchain.snarkjs_verifies(vk, public_path, proof_path)


def test_our_verifier_accepts_snarkjs_proof(fixtures):
    vk = read_json(fixtures / "fixture_vk.json")
    proof = read_json(fixtures / "snarkjs_proof.json")
    public = read_json(fixtures / "snarkjs_public.json")
    assert verify_json(vk, public, proof)
    assert not verify_json(vk, public, dict(proof, pi_c=_negate_y(proof["pi_c"])))
    assert not verify_json(vk, ["7"] + public[1:], proof)


def test_proofs_are_randomised(prepared_fixture, cpu_backend, fixtures, our_proof):
    proof, _ = prove(prepared_fixture, read_wtns(fixtures / "fixture.wtns"), cpu_backend)
    assert proof_to_json(proof) != our_proof[0]


def _bad_witness(fixture_copy: Path) -> Path:
    """The fixture witness with its last (internal) wire changed."""

    def poke(body: bytearray) -> bytearray:
        body[-32:] = (12345).to_bytes(32, "little")
        return body

    return edit_section(fixture_copy / "fixture.wtns", 2, poke)


def test_unsatisfying_witness_is_refused(prepared_fixture, cpu_backend, fixture_copy):
    witness = read_wtns(_bad_witness(fixture_copy))
    with pytest.raises(BadInput, match="did not verify"):
        prove(prepared_fixture, witness, cpu_backend)


def test_r1cs_names_the_failing_constraint(prepared_fixture, cpu_backend, fixture_copy):
    witness = read_wtns(_bad_witness(fixture_copy))
    r1cs = read_r1cs(fixture_copy / "fixture.r1cs")
    with pytest.raises(UnsatisfiedConstraint, match="fixture.r1cs") as info:
        prove(prepared_fixture, witness, cpu_backend, r1cs)
    assert 0 <= info.value.index < r1cs.num_constraints


def test_witness_length_must_match(prepared_fixture, cpu_backend, fixtures):
    witness = read_wtns(fixtures / "fixture.wtns")
    short = type(witness)(witness.path, witness.values[:-1])
    with pytest.raises(BadInput, match="nVars = 398"):
        prove(prepared_fixture, short, cpu_backend)


def test_off_curve_base_names_its_section(cpu_backend, fixture_copy):
    """A point section is checked when the backend loads it; the error names the section."""

    def break_point(body: bytearray) -> bytearray:
        body[96 * 2 + 48 : 96 * 3] = (5 * 2**384 % P).to_bytes(48, "little")
        return body

    path = edit_section(fixture_copy / "fixture.zkey", 5, break_point)
    key = prepare(read_zkey(path))
    try:
        with pytest.raises(BadInput, match=r"section 5 \(A points\).*not on curve"):
            prove(key, read_wtns(fixture_copy / "fixture.wtns"), cpu_backend)
    finally:
        key.evict_from(cpu_backend)
        key.close()


def test_unreduced_base_coordinate_names_its_section(fixture_copy):
    def big(body: bytearray) -> bytearray:
        body[96 * 7 : 96 * 7 + 48] = P.to_bytes(48, "little")
        return body

    path = edit_section(fixture_copy / "fixture.zkey", 9, big)
    with pytest.raises(BadInput, match=r"section 9 \(H points\): point 7: .*≥ p"):
        prepare(read_zkey(path))


def test_translated_bases_are_removed(fixtures):
    key = prepare(read_zkey(fixtures / "fixture.zkey"))
    path = Path(key.bases.path)
    assert path.exists()
    key.close()
    assert not path.exists() and not path.parent.exists()
