"""PathBatch: Merkle paths held as numpy columns give back exactly the paths they were made of,
hash to the roots the one-hash-at-a-time reference gives, and survive pickling (the engine
sends them between processes)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from cuzk.circuits.filecoin.merkle_json import leaf_index, path_root
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.gadgets.merkle import MerklePath, PathBatch, TreeShape, build_tree, prove

SHAPES = [TreeShape(64, 8), TreeShape(128, 8, 2), TreeShape(256, 2, 4, 2)]


def _paths(shape: TreeShape, rng: np.random.Generator) -> list[MerklePath]:
    tree = build_tree(fr.random(shape.leaves, rng), shape)
    paths = [prove(tree, shape, int(i)) for i in rng.integers(0, shape.leaves, 9)]
    sib = [fr.to_ints(fr.random(a - 1, rng)) for a in shape.arities]
    pos = [int(rng.integers(0, a)) for a in shape.arities]
    paths.append(MerklePath(fr.to_int(fr.random(1, rng)[0]), sib, pos, 12345))  # a wrong root
    return paths


@pytest.mark.parametrize("shape", SHAPES)
def test_a_batch_gives_back_its_paths(shape: TreeShape, rng) -> None:
    paths = _paths(shape, rng)
    batch = PathBatch.of(paths)
    assert len(batch) == len(paths)
    assert list(batch) == paths and batch[3] == paths[3] and batch[-1] == paths[-1]
    assert batch == tuple(paths) and batch == paths and batch != paths[:-1]
    assert batch[2:5] == paths[2:5] and isinstance(batch[2:5], PathBatch)
    assert PathBatch.of(batch) is batch
    assert PathBatch.concat([paths[:4], batch[4:]]) == paths
    assert batch.leaf_indices().tolist() == [leaf_index(mp, shape) for mp in paths]
    back = pickle.loads(pickle.dumps(batch[1:7]))  # made just above
    assert back == paths[1:7]
    with pytest.raises(IndexError):
        batch[len(paths)]


@pytest.mark.parametrize("shape", SHAPES)
def test_batch_roots_match_the_reference(shape: TreeShape, rng) -> None:
    paths = _paths(shape, rng)
    got = fr.limbs_to_ints(PathBatch.of(paths).hash_roots())
    assert got == [path_root(mp) for mp in paths]
    assert got[0] == paths[0].root and got[-1] != paths[-1].root


def test_paths_of_different_shapes_are_refused(rng) -> None:
    a, b = _paths(SHAPES[0], rng)[0], _paths(SHAPES[1], rng)[0]
    with pytest.raises(BadInput, match="different tree shapes"):
        PathBatch.of([a, b])
    with pytest.raises(BadInput, match="no inclusion paths"):
        PathBatch.of([])
    with pytest.raises(BadInput, match="different tree shapes"):
        PathBatch.concat([[a], [b]])


def test_limbs_to_ints_round_trips(rng) -> None:
    v = fr.random(17, rng)
    assert fr.limbs_to_ints(fr.to_canonical_limbs(v)) == fr.to_ints(v)
    assert fr.limbs_to_ints(np.zeros((0, 4), dtype=np.uint64)) == []
