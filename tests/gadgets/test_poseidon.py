"""Poseidon: neptune's test vectors, native schedules against each other, the legacy circuit's
pinned counts, and circuit against native.

Known-answer vectors come from neptune's own tests (argumentcomputer/neptune, src/poseidon.rs,
``hash_values_aux``): the digest of [0, 1, …, arity − 1] under the Merkle-tree tag (standard and
strengthened), and of [0, 1, 2, 3] zero-padded under ``ConstantLength(4)``. Constraint counts come
from neptune's src/circuit.rs ``test_poseidon_hash`` (311/377/505/761 …) and FILECOIN.md (598).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.poseidon import constraint_count, poseidon_hash
from cuzk.gadgets.poseidon.constants import (
    Strength,
    constant_length_tag,
    custom_tag,
    invert,
    mat_mul,
    merkle_tree_tag,
    poseidon_constants,
    round_numbers,
)
from cuzk.gadgets.poseidon.native import hash_many, hash_one, hash_reference
from tests.gadgets.helpers import plus_one, synthesize_all, tampered

ARITIES = (2, 4, 8, 11, 16)


def _u64s(*limbs: int) -> int:
    """neptune's ``scalar_from_u64s``: little-endian 64-bit limbs."""
    return sum(x << (64 * i) for i, x in enumerate(limbs))


MERKLE_KAT = {
    2: _u64s(0x2E203C369A02E7FF, 0xA6FBA9339D05A69D, 0x739E0FD902EFE161, 0x396508D75E76A56B),
    4: _u64s(0x019814FF6662075D, 0xFB6B4605BF1327EC, 0x00DB3C6579229399, 0x58A54B10A9E5848A),
    8: _u64s(0x2A9934F56D38A5E6, 0x4B682E9D9CC4AED9, 0x1201004211677077, 0x2394611DA3A5DE55),
    11: _u64s(0xCEE3BBC32B693163, 0x09F3DCD8CCB08FC1, 0x6CA537E232EBE87A, 0x0C0FC1B2E5227F28),
    16: _u64s(0x1291C74060266D37, 0x5B8DBC6D30680A6F, 0xC1C2FB5A6F871E63, 0x2D3AE2663381AE8A),
}
STRENGTHENED_KAT = {
    2: _u64s(0x793DBAF54552CD69, 0x5278ECBF17040EA6, 0xC48B36ECC4CAB748, 0x33D28A753BAEE41B),
    4: _u64s(0x4650EE190212AA9A, 0xE5113A254D6F5C7E, 0x54013BDAF68BA4C2, 0x09D8207C51CA3F43),
    8: _u64s(0x9F0C3C93C3FC894E, 0xE843D4CFBA662DF1, 0xD69AAE8FE1CB63E8, 0x69E61465981AE17E),
    11: _u64s(0x778AF344D8F9E8B7, 0xC94FE2CA3F46D433, 0x07ABBCF9B406E8D8, 0x28BB83FF439753C0),
    16: _u64s(0x3CC2664C5FD6AE07, 0xD7431EAAA5E43189, 0x43BA5F418C6EF01D, 0x68D7856395AA217E),
}
CONSTANT_LENGTH_4_KAT = {
    4: _u64s(0x8935B00A07909D45, 0x4984DE08542C9977, 0x39443980077D7593, 0x3A21A6AE86754A29),
    8: _u64s(0x370A94532F818897, 0x203E3C7C4A85C1F9, 0xCAD8B9F8AEB1578F, 0x5C6DE4B69DE9D792),
    11: _u64s(0xE9B0CB7D6496F73B, 0x7D2807D793AF9582, 0xEF841B6BF51A5A39, 0x02550C3A2113C7CA),
    16: _u64s(0x6A1E563D359C1BDD, 0x6B4493D5D40BE9D3, 0x275A6EB04A0ECB37, 0x30EC6FA0FEC08504),
}
# neptune src/circuit.rs test_poseidon_hash, plus FILECOIN.md's 598 for arity 11.
CIRCUIT_CONSTRAINTS = {2: 311, 4: 377, 8: 505, 11: 598, 16: 761}
STRENGTHENED_CONSTRAINTS = {2: 367, 4: 433, 8: 565, 16: 821}


def test_grain_round_constants_match_the_hades_reference():
    """All 585 constants for t = 9, R_F = 8, R_P = 57 (arity 8) against the reference Sage
    script's output that neptune checks in (filecoin-project/neptune, parameters/
    round_constants-1-1-255-9-8-57-73EDA…0001.txt), by digest of their 32-byte big-endian
    encodings plus the first and last values."""
    import hashlib

    rc = poseidon_constants(8).round_constants
    assert len(rc) == 585
    assert rc[0] == 0x6CE90D12C4045FE08C3CADDB776DD84AC52B4AE7E48CD49443984154F2F4C2F9
    assert rc[-1] == 0x3B3A75EB91B0F723BCC4AB7E449E4A011B8960063EFE74670C05E545519D9A8C
    blob = b"".join(v.to_bytes(32, "big") for v in rc)
    assert hashlib.sha256(blob).hexdigest() == (
        "53d16e2f1c0141cbfd5d8bfa4cb69abcbbd056d13a523f929a93e981434ee9f7"
    )


def test_round_numbers():
    assert {a: round_numbers(a) for a in ARITIES} == {
        2: (8, 55),
        4: (8, 56),
        8: (8, 57),
        11: (8, 57),
        16: (8, 59),
    }
    assert round_numbers(2, Strength.STRENGTHENED) == (8, 69)


@pytest.mark.parametrize("arity", ARITIES)
def test_merkle_vectors(arity):
    pre = list(range(arity))
    assert hash_reference(pre) == MERKLE_KAT[arity]
    assert hash_one(pre) == MERKLE_KAT[arity]
    assert fr.to_ints(hash_many(fr.from_ints(pre), arity)) == [MERKLE_KAT[arity]]
    assert hash_one(pre, strength=Strength.STRENGTHENED) == STRENGTHENED_KAT[arity]


@pytest.mark.parametrize("arity", sorted(CONSTANT_LENGTH_4_KAT))
def test_constant_length_vectors(arity):
    pre = [0, 1, 2, 3] + [0] * (arity - 4)
    assert hash_one(pre, tag=constant_length_tag(4)) == CONSTANT_LENGTH_4_KAT[arity]


def test_domain_tags():
    assert merkle_tree_tag(8) == 0xFF
    assert custom_tag(1) == 1 << 40
    with pytest.raises(BadInput):
        custom_tag(0)


@pytest.mark.parametrize("arity", ARITIES)
def test_preprocessed_constants_are_consistent(arity):
    """M · M⁻¹ = I, and the compressed schedule equals the textbook permutation on random data
    under both tag kinds (the sparse factorisation and constant compression are exact)."""
    c = poseidon_constants(arity)
    m = [list(r) for r in c.mds]
    assert mat_mul(m, invert(m)) == [[int(i == j) for j in range(c.width)] for i in range(c.width)]
    assert len(c.compressed_round_constants) == c.full_rounds * c.width + c.partial_rounds
    rnd = random.Random(arity)
    pre = [rnd.randrange(R) for _ in range(arity)]
    for tag in (None, custom_tag(1)):
        assert hash_one(pre, tag) == hash_reference(pre, tag)


@pytest.mark.parametrize("arity", ARITIES)
def test_bulk_matches_one_at_a_time(arity, rng):
    n = 37
    pre = fr.random(n * arity, rng)
    ints = fr.to_ints(pre)
    for tag in (None, custom_tag(1)):
        got = fr.to_ints(hash_many(pre, arity, tag))
        want = [hash_one(ints[i * arity : (i + 1) * arity], tag) for i in range(n)]
        assert got == want


def test_bulk_rejects_ragged_input():
    with pytest.raises(BadInput):
        hash_many(fr.from_ints([1, 2, 3]), 2)
    with pytest.raises(BadInput):
        hash_reference([])  # no arity-0 Poseidon
    from cuzk.r1cs import CheckCS

    with pytest.raises(BadInput):
        poseidon_hash(CheckCS(), [])


@pytest.mark.parametrize("arity", ARITIES)
def test_circuit_matches_native_with_pinned_count(arity, seed):
    rnd = random.Random(seed + arity)
    vals = [rnd.randrange(R) for _ in range(arity)]
    tag = custom_tag(1) if arity == 2 else None  # SnapDeals' Custom(1) on the binary hash

    def build(cs, values):
        pre = [AllocatedNum.alloc(cs, v if values else None, f"x{i}") for i, v in enumerate(vals)]
        return poseidon_hash(cs, pre, tag, ns="poseidon")

    run = synthesize_all(build)
    assert run.num_constraints == CIRCUIT_CONSTRAINTS[arity] == constraint_count(arity)
    assert (
        CIRCUIT_CONSTRAINTS[arity] == 3 * arity + 28 * (arity + 1) + 4 * round_numbers(arity)[1] + 1
    )
    assert run.result.value == run.witness_result.value == hash_one(vals, tag)
    # One variable per constraint: the witness has arity inputs + one per constraint.
    assert run.shape.num_aux == arity + CIRCUIT_CONSTRAINTS[arity]
    # Negative: corrupt an S-box input of the second round; its allocation check catches it.
    i, name = tampered(build, arity + 3 * arity, plus_one)
    assert (
        name == "poseidon/initial full round 1/quintic s-box 0/S-box input/"
        "enforce num allocation preserves lc"
    ), (i, name)
    # ... and a corrupted digest is caught by the final allocation.
    last = run.shape.num_aux - 1
    assert (
        tampered(build, last, plus_one)[1]
        == "poseidon/hash result/enforce num allocation preserves lc"
    )


@pytest.mark.parametrize("arity", sorted(STRENGTHENED_CONSTRAINTS))
def test_strengthened_circuit_counts(arity):
    vals = list(range(arity))

    def build(cs, values):
        pre = [AllocatedNum.alloc(cs, v if values else None) for v in vals]
        return poseidon_hash(cs, pre, strength=Strength.STRENGTHENED)

    run = synthesize_all(build)
    assert run.num_constraints == STRENGTHENED_CONSTRAINTS[arity]
    assert run.result.value == STRENGTHENED_KAT[arity]


def test_circuit_on_known_answer():
    from cuzk.r1cs import WitnessCS

    for arity in ARITIES:
        cs = WitnessCS()
        pre = [AllocatedNum.alloc(cs, v) for v in range(arity)]
        assert poseidon_hash(cs, pre).value == MERKLE_KAT[arity]


def test_tree_scale_throughput(rng):
    """Bulk hashing is a kernel, not a Python loop: 20,000 arity-8 hashes in well under a
    second on two cores (about 60 µs each per core)."""
    import time

    pre = fr.random(20_000 * 8, rng)
    hash_many(pre[:8], 8)  # compile / load from numba's cache outside the timing
    t = time.perf_counter()
    out = hash_many(pre, 8)
    elapsed = time.perf_counter() - t
    assert out.shape == (20_000, 4)
    assert elapsed < 5.0, f"{elapsed:.2f} s"
    print(f"arity 8: {elapsed / 20_000 * 1e6:.1f} µs per hash")
    assert np.array_equal(out[:1], hash_many(pre[:8], 8))
