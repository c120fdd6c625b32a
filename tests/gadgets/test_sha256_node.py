"""Filecoin's SHA-256 node hash: the empty-sector comm_d, circuit against native, and the SHA-256
PoR counts of rust-fil-proofs storage-proofs-core/tests/por_circuit.rs (public root, 64 leaves):
binary 272,295, quaternary 216,258, octal 250,987."""

from __future__ import annotations

import random

import pytest

from cuzk.field.constants import R
from cuzk.gadgets.merkle import TreeShape
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.por import PathLevel, por
from cuzk.gadgets.sha256.node import node_hash, sha256_hash2, sha256_node, trim_to_fr32
from cuzk.r1cs import CheckCS
from tests.gadgets.helpers import plus_one, synthesize_all, tampered

# 272,295 = 6 levels · (1 index bit + 2 insert + node hash) + pack + root equality + inputize.
NODE_HASH_2 = (272_295 - 3) // 6 - 3
SHA256_POR = {2: 272_295, 4: 216_258, 8: 250_987}


def test_empty_2kib_comm_d():
    """FILECOIN.md: comm_d of an all-zero 2 KiB sector (64 nodes, binary SHA-256 tree)."""
    level = [0] * 64
    while len(level) > 1:
        level = [node_hash(level[i : i + 2]) for i in range(0, len(level), 2)]
    assert level[0].to_bytes(32, "little").hex() == (
        "fc7e928296e516faade986b28f92d44a4f24b935485223376a799027bc18f833"
    )


def test_trim():
    assert trim_to_fr32(b"\xff" * 32) == b"\xff" * 31 + b"\x3f"
    assert int.from_bytes(trim_to_fr32(b"\xff" * 32), "little") < R


@pytest.mark.parametrize("arity", [2, 3])
def test_node_hash_circuit_matches_native(arity, seed):
    rnd = random.Random(seed + arity)
    vals = [rnd.randrange(R) for _ in range(arity)]

    def build(cs, values):
        nums = [AllocatedNum.alloc(cs, v if values else None, f"c{i}") for i, v in enumerate(vals)]
        if arity == 2:
            return sha256_hash2(cs, nums[0], nums[1], "h")
        return sha256_node(cs, nums, "h")

    run = synthesize_all(build)
    assert run.result.value == node_hash(vals)
    if arity == 2:
        assert run.num_constraints == NODE_HASH_2 == 45_379
    # The packed digest is the last variable; a wrong value breaks the packing.
    assert tampered(build, run.shape.num_aux - 1, plus_one)[1] == "h/pack_le/packing constraint"


def _sha_tree(leaves: list[int], shape: TreeShape) -> list[list[int]]:
    levels = [leaves]
    for a in shape.arities:
        prev = levels[-1]
        levels.append([node_hash(prev[i : i + a]) for i in range(0, len(prev), a)])
    return levels


@pytest.mark.parametrize(
    "arity", [2, pytest.param(4, marks=pytest.mark.slow), pytest.param(8, marks=pytest.mark.slow)]
)
def test_sha256_por_counts(arity, seed):
    rnd = random.Random(seed)
    shape = TreeShape(64, arity)
    leaves = [rnd.randrange(R) for _ in range(64)]
    levels = _sha_tree(leaves, shape)
    index = rnd.randrange(64)
    print(f"challenge {index}")
    path, node = [], index
    for level, a in zip(levels, shape.arities, strict=False):
        start, pos = node - node % a, node % a
        group = level[start : start + a]
        path.append(PathLevel(group[:pos] + group[pos + 1 :], pos))
        node //= a
    cs = CheckCS()
    computed = por(cs, leaves[index], path, shape, levels[-1][0], private=False, hasher=sha256_node)
    assert cs.is_satisfied(), cs.first_failure
    assert computed.value == levels[-1][0]
    assert cs.num_constraints == SHA256_POR[arity]
