"""proof.json / public.json / verification_key.json: round trips, snarkjs's exact text, and
BadInput (never a traceback or a silent False) for malformed files."""

from __future__ import annotations

import copy

import pytest

from cuzk.curve import g1_generator, g1_identity, g1_mul, g2_generator, g2_identity, g2_mul
from cuzk.errors import BadInput
from cuzk.field.constants import P, R
from cuzk.interop.snarkjs_json import (
    dumps,
    g1_from_json,
    g1_to_json,
    g2_from_json,
    g2_to_json,
    number,
    proof_from_json,
    public_from_json,
    read_json,
    vk_from_json,
    write_json,
)
from cuzk.interop.verify import verify_files, verify_json


def test_point_round_trips():
    for p in (g1_mul(g1_generator(), 77), g1_identity()):
        assert g1_from_json(g1_to_json(p), "p") == p
    for q in (g2_mul(g2_generator(), 5), g2_identity()):
        assert g2_from_json(g2_to_json(q), "q") == q
    assert g1_to_json(g1_identity()) == ["0", "1", "0"]
    assert g2_to_json(g2_identity())[2] == ["0", "0"]


def test_numbers_as_snarkjs_accepts_them():
    assert number("123", "n") == 123
    assert number("0x1f", "n") == 31
    assert number(5, "n") == 5
    for bad in ("-1", "1.5", "", " 1", True, None, 2.0, [1]):
        with pytest.raises(BadInput):
            number(bad, "n")


def test_write_json_is_snarkjs_text(tmp_path):
    write_json(tmp_path / "p.json", ["1", "2"])
    assert (tmp_path / "p.json").read_text() == '[\n "1",\n "2"\n]'
    assert dumps({"a": [["1"]]}) == '{\n "a": [\n  [\n   "1"\n  ]\n ]\n}'


def _good(fixtures):
    return (
        read_json(fixtures / "fixture_vk.json"),
        read_json(fixtures / "snarkjs_public.json"),
        read_json(fixtures / "snarkjs_proof.json"),
    )


def _mutations():
    def coordinate_ge_p(vk, pub, proof):
        proof["pi_a"][0] = str(P)

    def off_curve(vk, pub, proof):
        proof["pi_a"][1] = str(int(proof["pi_a"][1]) ^ 1)

    def g2_off_curve(vk, pub, proof):
        proof["pi_b"][0][0] = "1"

    def not_affine(vk, pub, proof):
        proof["pi_c"][2] = "2"

    def missing_point(vk, pub, proof):
        del proof["pi_b"]

    def wrong_shape(vk, pub, proof):
        proof["pi_b"] = ["1", "2", "3"]

    def wrong_curve(vk, pub, proof):
        proof["curve"] = "bn128"

    def wrong_protocol(vk, pub, proof):
        vk["protocol"] = "plonk"

    def signal_ge_r(vk, pub, proof):
        pub[0] = str(R)

    def signal_not_number(vk, pub, proof):
        pub[0] = "twelve"

    def too_few_signals(vk, pub, proof):
        del pub[-1]

    def npublic_disagrees(vk, pub, proof):
        vk["nPublic"] = 7

    def empty_ic(vk, pub, proof):
        vk["IC"] = []

    return [
        coordinate_ge_p,
        off_curve,
        g2_off_curve,
        not_affine,
        missing_point,
        wrong_shape,
        wrong_curve,
        wrong_protocol,
        signal_ge_r,
        signal_not_number,
        too_few_signals,
        npublic_disagrees,
        empty_ic,
    ]


@pytest.mark.parametrize("mutate", _mutations(), ids=lambda f: f.__name__)
def test_malformed_statements_raise(fixtures, mutate):
    vk, pub, proof = copy.deepcopy(_good(fixtures))
    mutate(vk, pub, proof)
    with pytest.raises(BadInput):
        verify_json(vk, pub, proof)


def test_not_json(tmp_path, fixtures):
    bad = tmp_path / "proof.json"
    bad.write_text("{not json")
    with pytest.raises(BadInput, match="not JSON"):
        verify_files(fixtures / "fixture_vk.json", fixtures / "snarkjs_public.json", bad)


def test_readers_name_their_source(fixtures):
    vk, pub, proof = _good(fixtures)
    proof["pi_a"][1] = "3"
    with pytest.raises(BadInput, match="my-proof: pi_a"):
        proof_from_json(proof, "my-proof")
    with pytest.raises(BadInput, match="pub.json: expected a JSON list"):
        public_from_json({"a": 1}, "pub.json")
    with pytest.raises(BadInput, match="vk.json: missing 'IC'"):
        vk_from_json({"protocol": "groth16"}, "vk.json")
