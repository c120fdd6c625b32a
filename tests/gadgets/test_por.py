"""Merkle inclusion against natively built base/sub/top trees, with upstream's pinned counts.

Counts: rust-fil-proofs storage-proofs-core/tests/por_circuit.rs (Poseidon trees of
64 · base-tree-count leaves; public root: 3 inputs with ONE). The FallbackPoSt totals of
FILECOIN.md (16,869 / 22,674 / 27,384 and WindowPoSt 2 KiB's 21,866) follow from these gadget
counts and are checked as sums too.
"""

from __future__ import annotations

import pytest

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.gadgets.boolean import AllocatedBit
from cuzk.gadgets.merkle import TreeShape, build_tree, challenge_bits, prove
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.por import PathLevel, por, por_no_challenge_input
from cuzk.gadgets.poseidon.native import hash_one
from tests.gadgets.helpers import plus_one, synthesize_all, tampered

# (leaves, base, sub, top) -> constraints with a public root (upstream test_por_circuit).
PUBLIC_ROOT = {
    (64, 2, 0, 0): 1_887,
    (64, 4, 0, 0): 1_164,
    (64, 8, 0, 0): 1_063,
    (128, 8, 2, 0): 1_377,
    (512, 8, 4, 2): 1_764,
    (512, 8, 8, 0): 1_593,
    (1024, 8, 8, 2): 1_907,
    (512, 8, 2, 4): 1_764,
}
# Private root (test_por_circuit_private_root): one constraint less, no root input.
PRIVATE_ROOT = {(64, 2, 0, 0): 1_886, (64, 4, 0, 0): 1_163, (64, 8, 0, 0): 1_062}


def _path(levels, shape, index, values=True):
    mp = prove(levels, shape, index)
    if not values:
        return mp, [PathLevel([None] * len(s), None) for s in mp.siblings]
    return mp, [PathLevel(s, p) for s, p in zip(mp.siblings, mp.positions, strict=True)]


@pytest.mark.parametrize("key", sorted(PUBLIC_ROOT))
def test_por_public_root(key, rng):
    shape = TreeShape(*key)
    levels = build_tree(fr.random(shape.leaves, rng), shape)
    index = int(rng.integers(shape.leaves))
    print(f"tree {key}, challenge {index}")
    mp, path = _path(levels, shape, index)
    _, blank = _path(levels, shape, index, values=False)

    def build(cs, values):
        return por(
            cs,
            mp.leaf if values else None,
            path if values else blank,
            shape,
            mp.root if values else None,
            private=False,
            ns="por",
        )

    run = synthesize_all(build)
    assert run.num_constraints == PUBLIC_ROOT[key]
    assert run.result.value == mp.root == fr.to_int(levels[-1][0])
    # Public inputs: ONE, the packed challenge bits, the root.
    bits = challenge_bits(index, shape)
    assert run.witness.inputs == [1, sum(int(b) << i for i, b in enumerate(bits)), mp.root]
    assert run.shape.num_inputs == 3


@pytest.mark.parametrize("key", sorted(PRIVATE_ROOT))
def test_por_private_root_and_wrong_witnesses(key, rng):
    shape = TreeShape(*key)
    levels = build_tree(fr.random(shape.leaves, rng), shape)
    index = int(rng.integers(shape.leaves))
    print(f"tree {key}, challenge {index}")
    mp, path = _path(levels, shape, index)

    def build(cs, values, leaf=mp.leaf, path=path):
        root = AllocatedNum.alloc(cs, mp.root if values else None, "comm_r_last")
        return por(cs, leaf if values else None, path, shape, root, private=True, ns="por")

    run = synthesize_all(build)
    assert run.num_constraints == PRIVATE_ROOT[key]
    assert run.shape.num_inputs == 2  # ONE and the packed path

    # A wrong leaf, a wrong sibling or a wrong root all end at the root equality.
    from cuzk.r1cs import CheckCS

    for bad_leaf, bad_path in ((mp.leaf + 1, path), (mp.leaf, _corrupt(path))):
        cs = CheckCS()
        build(cs, True, bad_leaf, bad_path)
        assert cs.first_failure is not None and cs.first_failure[1] == "por/enforce root is correct"
    assert tampered(build, 0, plus_one)[1] == "por/enforce root is correct"
    # A wrong index bit breaks its booleanity (value 2) or, flipped, the root equality.
    first_bit = 2  # after the root and the leaf
    assert (
        tampered(build, first_bit, lambda v: 2)[1]
        == "por/base/merkle tree hash 0/index bit 0/boolean constraint"
    )


def _corrupt(path: list[PathLevel]) -> list[PathLevel]:
    first = path[0]
    return [PathLevel([first.siblings[0] + 1, *first.siblings[1:]], first.position), *path[1:]]


def test_fallback_post_counts_follow_from_gadgets():
    """FILECOIN.md's FallbackPoSt totals = sectors · (comm_r inputize 1 + Poseidon-2 311
    + equality 1 + challenges · private-root PoR)."""

    def por_count(shape: TreeShape) -> int:
        def build(cs, values):
            root = AllocatedNum.alloc(cs, None)
            path = [PathLevel([None] * (a - 1), None) for a in shape.arities]
            por(cs, None, path, shape, root, private=True)

        from cuzk.r1cs import ShapeCS

        cs = ShapeCS()
        build(cs, False)
        return len(cs.names)

    def post(shape: TreeShape, sectors: int, challenges: int) -> int:
        return sectors * (1 + 311 + 1 + challenges * por_count(shape))

    assert post(TreeShape(64, 8), 3, 5) == 16_869
    assert post(TreeShape(256, 8, 4), 3, 5) == 22_674
    assert post(TreeShape(512, 8, 4, 2), 3, 5) == 27_384
    assert post(TreeShape(64, 8), 2, 10) == 21_866  # WindowPoSt 2 KiB


def test_por_no_challenge_input(rng):
    shape = TreeShape(512, 8, 4, 2)
    levels = build_tree(fr.random(shape.leaves, rng), shape)
    index = int(rng.integers(shape.leaves))
    mp = prove(levels, shape, index)
    bits = challenge_bits(index, shape)

    def build(cs, values):
        cb = [AllocatedBit.alloc(cs, b if values else None) for b in bits]
        leaf = AllocatedNum.alloc(cs, mp.leaf if values else None)
        sib = [[AllocatedNum.alloc(cs, s if values else None) for s in lvl] for lvl in mp.siblings]
        root = AllocatedNum.alloc(cs, mp.root if values else None)
        por_no_challenge_input(cs, cb, leaf, sib, root, shape, ns="por")

    run = synthesize_all(build)
    # 9 index bits; inserts 22 + 22 + 8 + 2; hashes 505 + 505 + 377 + 311; the root equality.
    assert run.num_constraints == 9 + 54 + 1698 + 1


def test_native_tree_matches_per_node_hashing(rng):
    shape = TreeShape(32, 2, 4, 2)  # base trees of 32 / (4 · 2) = 4 leaves: two binary levels
    assert shape.arities == [2, 2, 4, 2]
    leaves = fr.random(32, rng)
    levels = build_tree(leaves, shape)
    level = fr.to_ints(leaves)
    for arity, built in zip(shape.arities, levels[1:], strict=True):
        level = [hash_one(level[i : i + arity]) for i in range(0, len(level), arity)]
        assert fr.to_ints(built) == level


def test_tree_shape_validation():
    assert TreeShape(64, 8).arities == [8, 8]
    assert TreeShape(512, 8, 8, 0).arities == [8, 8, 8]
    for bad in ((63, 8), (64, 8, 0, 2), (64, 6), (96, 8, 0, 0)):
        with pytest.raises(BadInput):
            TreeShape(*bad)
    shape = TreeShape(64, 8)
    levels = build_tree(fr.from_ints(list(range(64))), shape)
    with pytest.raises(BadInput):
        prove(levels, shape, 64)
    with pytest.raises(BadInput):
        build_tree(fr.from_ints(list(range(63))), shape)
