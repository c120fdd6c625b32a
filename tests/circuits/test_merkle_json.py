"""Bulk Poseidon path roots against the one-hash-at-a-time reference."""

import numpy as np
import pytest

from cuzk.circuits.filecoin.merkle_json import path_root, poseidon_roots
from cuzk.field import fr
from cuzk.gadgets.merkle import MerklePath, TreeShape, build_tree, prove


@pytest.mark.parametrize("shape", [TreeShape(64, 8), TreeShape(128, 8, 2), TreeShape(256, 2, 4, 2)])
def test_poseidon_roots_match_reference(shape: TreeShape) -> None:
    rng = np.random.default_rng(7)
    tree = build_tree(fr.random(shape.leaves, rng), shape)
    leaves = [int(i) for i in rng.integers(0, shape.leaves, 12)]
    paths = [prove(tree, shape, i) for i in leaves]
    paths += paths[:3]  # repeated paths share every preimage: deduplicated, same roots
    # Random paths (nothing shared with the tree) and one tampered sibling.
    for _ in range(4):
        sib = [[int(x) for x in fr.to_ints(fr.random(a - 1, rng))] for a in shape.arities]
        pos = [int(rng.integers(0, a)) for a in shape.arities]
        paths.append(MerklePath(fr.to_int(fr.random(1, rng)[0]), sib, pos, 0))
    bad = paths[0]
    sibs = [list(s) for s in bad.siblings]
    sibs[-1][0] ^= 1
    paths.append(MerklePath(bad.leaf, sibs, bad.positions, bad.root))
    got = poseidon_roots(paths, shape)
    assert got == [path_root(mp) for mp in paths]
    assert poseidon_roots(paths[-5:], shape) == got[-5:]  # nothing shared: no repeats to skip
    root = fr.to_int(tree[-1][0])
    assert got[: len(leaves) + 3] == [root] * (len(leaves) + 3)
    assert got[-1] != root


def test_poseidon_roots_empty() -> None:
    assert poseidon_roots([], TreeShape(64, 8)) == []
