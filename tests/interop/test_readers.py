"""The .r1cs, .wtns and .zkey readers: what they read from real snarkjs/circom files, and the
error each kind of damage produces (it must name the file and the section)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import P, R
from cuzk.interop import read_r1cs, read_wtns, read_zkey
from cuzk.interop.curves import describe_prime
from tests.interop.conftest import edit_section, join_container, split_container

BN254_R = 21888242871839275222246405745257275088548364400416034343698204186575808495617

# The fixture circuit: 2·(64 bits + 1 sum) + 64 XOR + 200 rounds + output = 395 constraints.
N_CONSTRAINTS, N_WIRES, N_PUBLIC, DOMAIN = 395, 398, 3, 512


# -- what the readers read -------------------------------------------------------------------


def test_zkey_header_and_vk(fixtures):
    z = read_zkey(fixtures / "fixture.zkey")
    assert (z.n_vars, z.n_public, z.domain_size) == (N_WIRES, N_PUBLIC, DOMAIN)
    assert z.vk.num_inputs == N_PUBLIC + 1
    assert {name: s.id for name, s in z.vectors.items()} == {
        "a": 5,
        "b1": 6,
        "b2": 7,
        "c": 8,
        "h": 9,
    }
    assert z.a.num_rows == z.b.num_rows == DOMAIN


def test_zkey_matrices_match_the_r1cs(fixtures):
    """The R²-scaled coefficients decode to the circuit's own A and B, plus one A row per
    public signal (ONE included) after the constraints, as snarkjs's setup adds them."""
    z = read_zkey(fixtures / "fixture.zkey")
    r1cs = read_r1cs(fixtures / "fixture.r1cs")
    w = read_wtns(fixtures / "fixture.wtns").values
    n = r1cs.num_constraints
    assert fr.equal(z.a.matvec(w)[:n], r1cs.a.matvec(w))
    assert fr.equal(z.b.matvec(w)[:n], r1cs.b.matvec(w))
    extra = fr.to_ints(z.a.matvec(w)[n : n + N_PUBLIC + 1])
    assert extra == fr.to_ints(w[: N_PUBLIC + 1])
    assert not z.a.matvec(w)[n + N_PUBLIC + 1 :].any()
    assert not z.b.matvec(w)[n:].any()


def test_wtns_values(fixtures):
    w = read_wtns(fixtures / "fixture.wtns")
    assert len(w) == N_WIRES
    assert fr.to_int(w.values[0]) == 1
    expected = [int(x) for x in json.loads((fixtures / "snarkjs_public.json").read_text())]
    assert w.public(N_PUBLIC) == expected


def test_r1cs_header_and_satisfaction(fixtures):
    r1cs = read_r1cs(fixtures / "fixture.r1cs")
    assert (r1cs.num_constraints, r1cs.num_wires, r1cs.num_public) == (
        N_CONSTRAINTS,
        N_WIRES,
        N_PUBLIC,
    )
    assert (r1cs.num_outputs, r1cs.num_pub_inputs, r1cs.num_prv_inputs) == (1, 2, 2)
    w = read_wtns(fixtures / "fixture.wtns").values
    assert r1cs.first_unsatisfied(w) is None
    w2 = w.copy()
    w2[N_WIRES - 1] = fr.from_int(12345)
    assert r1cs.first_unsatisfied(w2) is not None


def test_sections_out_of_order_are_found(fixture_copy):
    """Readers index by id: reversing the stored order changes nothing."""
    path = fixture_copy / "fixture.zkey"
    magic, version, sections = split_container(path.read_bytes())
    path.write_bytes(join_container(magic, version, sections[::-1]))
    z = read_zkey(path)
    assert z.domain_size == DOMAIN


# -- damage ------------------------------------------------------------------------------------


def _expect(path: Path, reader, *fragments: str) -> None:
    with pytest.raises(BadInput) as info:
        reader(path)
    msg = str(info.value)
    assert str(path) in msg, msg
    for frag in fragments:
        assert frag in msg, msg


def test_wrong_magic(fixture_copy):
    _expect(fixture_copy / "fixture.wtns", read_zkey, "not a .zkey file")


def test_unsupported_version(fixture_copy):
    path = fixture_copy / "fixture.zkey"
    data = bytearray(path.read_bytes())
    data[4:8] = struct.pack("<I", 99)
    path.write_bytes(data)
    _expect(path, read_zkey, "version 99")


@pytest.mark.parametrize("keep", [0, 7, 11, 30, 1000, -100])
def test_truncated_zkey(fixture_copy, keep):
    path = fixture_copy / "fixture.zkey"
    data = path.read_bytes()
    path.write_bytes(data[:keep])
    with pytest.raises(BadInput) as info:
        read_zkey(path)
    assert str(path) in str(info.value)
    assert "short" in str(info.value) or "truncated" in str(info.value)


def test_truncated_section_names_it(fixture_copy):
    path = fixture_copy / "fixture.zkey"
    data = path.read_bytes()
    path.write_bytes(data[:-100])  # the last section loses its tail
    last_id = split_container(data)[2][-1][0]
    _expect(path, read_zkey, f"section {last_id}", "truncated")


def test_missing_section(fixture_copy):
    path = fixture_copy / "fixture.zkey"
    magic, version, sections = split_container(path.read_bytes())
    path.write_bytes(join_container(magic, version, [(s, b) for s, b in sections if s != 9]))
    _expect(path, read_zkey, "section 9 (H points)", "missing")


def test_duplicated_section(fixture_copy):
    path = fixture_copy / "fixture.zkey"
    magic, version, sections = split_container(path.read_bytes())
    path.write_bytes(join_container(magic, version, sections + [sections[0]]))
    _expect(path, read_zkey, f"section {sections[0][0]}", "2 times")


def test_sizes_that_disagree(fixture_copy):
    """nVars in the header grows by one: the point sections no longer fit it."""
    path = fixture_copy / "fixture.zkey"

    def bump(body: bytearray) -> bytearray:
        off = 4 + 48 + 4 + 32  # n8q, q, n8r, r
        n_vars = struct.unpack_from("<I", body, off)[0]
        struct.pack_into("<I", body, off, n_vars + 1)
        return body

    edit_section(path, 2, bump)
    _expect(path, read_zkey, "section 5 (A points)", "expected")


def test_not_groth16(fixture_copy):
    path = edit_section(fixture_copy / "fixture.zkey", 1, lambda b: struct.pack("<I", 2))
    _expect(path, read_zkey, "section 1 (protocol)", "PLONK")


def test_wrong_curve_zkey(fixture_copy):
    def bn_r(body: bytearray) -> bytearray:
        body[56:88] = BN254_R.to_bytes(32, "little")
        return body

    path = edit_section(fixture_copy / "fixture.zkey", 2, bn_r)
    _expect(path, read_zkey, "section 2 (Groth16 header)", "BN254")


def _break_y(body: bytearray, at: int) -> bytearray:
    """Replace the y coordinate of the G1 point at ``at`` by a value that is off the curve."""
    body[at + 48 : at + 96] = (5 * 2**384 % P).to_bytes(48, "little")  # y = 5
    return body


def test_header_point_off_curve(fixture_copy):
    path = edit_section(fixture_copy / "fixture.zkey", 2, lambda b: _break_y(b, 100))
    _expect(path, read_zkey, "section 2 (Groth16 header)", "vk_alpha_1", "not on curve")


def test_ic_point_off_curve(fixture_copy):
    path = edit_section(fixture_copy / "fixture.zkey", 3, lambda b: _break_y(b, 96))
    _expect(path, read_zkey, "IC[1]", "not on curve")


def test_coordinate_not_reduced(fixture_copy):
    def big_x(body: bytearray) -> bytearray:
        body[0:48] = P.to_bytes(48, "little")
        return body

    path = edit_section(fixture_copy / "fixture.zkey", 3, big_x)
    _expect(path, read_zkey, "IC[0]", "≥ p")


def test_coefficient_not_canonical(fixture_copy):
    def big(body: bytearray) -> bytearray:
        body[4 + 44 * 3 + 12 : 4 + 44 * 4] = R.to_bytes(32, "little")
        return body

    path = edit_section(fixture_copy / "fixture.zkey", 4, big)
    _expect(path, read_zkey, "section 4 (A/B coefficients)", "entry 3", "canonical")


@pytest.mark.parametrize(
    "field, value, complaint",
    [(0, 2, "matrix id"), (4, DOMAIN, "domainSize"), (8, N_WIRES, "nVars")],
)
def test_coefficient_out_of_range(fixture_copy, field, value, complaint):
    def poke(body: bytearray) -> bytearray:
        struct.pack_into("<I", body, 4 + 44 * 5 + field, value)
        return body

    path = edit_section(fixture_copy / "fixture.zkey", 4, poke)
    _expect(path, read_zkey, "section 4", "entry 5", complaint)


def test_coefficient_count_disagrees(fixture_copy):
    path = edit_section(fixture_copy / "fixture.zkey", 4, lambda b: b[:-44])
    _expect(path, read_zkey, "section 4", "declares")


# -- .wtns ---------------------------------------------------------------------------------


def test_wtns_wrong_curve(fixture_copy):
    def bn(body: bytearray) -> bytearray:
        body[4:36] = BN254_R.to_bytes(32, "little")
        return body

    path = edit_section(fixture_copy / "fixture.wtns", 1, bn)
    _expect(path, read_wtns, "section 1 (header)", "BN254", "--prime bls12381")


def test_wtns_count_disagrees(fixture_copy):
    path = edit_section(fixture_copy / "fixture.wtns", 2, lambda b: b[:-32])
    _expect(path, read_wtns, "section 2 (witness values)", "expected")


def test_wtns_value_not_canonical(fixture_copy):
    def big(body: bytearray) -> bytearray:
        body[32 * 7 : 32 * 8] = (R + 1).to_bytes(32, "little")
        return body

    path = edit_section(fixture_copy / "fixture.wtns", 2, big)
    _expect(path, read_wtns, "section 2", "value 7")


def test_wtns_wire0_must_be_one(fixture_copy):
    def zero(body: bytearray) -> bytearray:
        body[0:32] = bytes(32)
        return body

    path = edit_section(fixture_copy / "fixture.wtns", 2, zero)
    _expect(path, read_wtns, "wire 0")


# -- .r1cs ---------------------------------------------------------------------------------


def test_r1cs_truncated_constraints(fixture_copy):
    path = edit_section(fixture_copy / "fixture.r1cs", 2, lambda b: b[:-10])
    _expect(path, read_r1cs, "section 2 (constraints)", "truncated in constraint")


def test_r1cs_wire_out_of_range(fixture_copy):
    def poke(body: bytearray) -> bytearray:
        # Constraint 0, matrix A: u32 count, then the first term's wire.
        struct.pack_into("<I", body, 4, N_WIRES + 5)
        return body

    path = edit_section(fixture_copy / "fixture.r1cs", 2, poke)
    _expect(path, read_r1cs, "section 2", f"wire {N_WIRES + 5}")


def test_r1cs_custom_gates_refused(fixture_copy):
    path = fixture_copy / "fixture.r1cs"
    magic, version, sections = split_container(path.read_bytes())
    path.write_bytes(join_container(magic, version, sections + [(4, b"\0" * 4)]))
    _expect(path, read_r1cs, "custom gates")


def test_describe_prime():
    assert "BLS12-381" in describe_prime(R)
    assert "unknown" in describe_prime(101)


def test_unreadable_file(tmp_path):
    _expect(tmp_path / "absent.zkey", read_zkey, "cannot read")


def test_empty_file(tmp_path):
    path = tmp_path / "empty.wtns"
    path.write_bytes(b"")
    _expect(path, read_wtns, "too short")


def test_results_outlive_the_file(fixture_copy):
    """Readers close their mapping: nothing they return may still point into the file (a view
    would crash with SIGBUS once the file shrinks)."""
    path = fixture_copy / "fixture.zkey"
    z = read_zkey(path)
    w = read_wtns(fixture_copy / "fixture.wtns")
    path.write_bytes(b"")
    (fixture_copy / "fixture.wtns").write_bytes(b"")
    assert z.a.matvec(w.values).shape == (DOMAIN, 4)
