"""Native Poseidon Merkle trees of Filecoin's shapes: the data the PoR gadget is checked against.

Filecoin's TreeR is a "base-sub-top" tree: base trees of arity 8 over contiguous runs of leaves,
optionally a sub-tree level (arity 8, 4 or 2) over the base roots, and a top level over those.
That equals one tree whose levels have arities [base, …, base, sub, top] bottom-up with
contiguous grouping, which is how it is built here: one bulk :func:`hash_many` call per level,
never a Python loop per hash.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.gadgets.poseidon.native import hash_many


@dataclass(frozen=True)
class TreeShape:
    """A base-sub-top tree over ``leaves`` leaves (sub/top arity 0: that level is absent)."""

    leaves: int  # number of leaves
    base_arity: int = 8  # arity of the base trees
    sub_arity: int = 0  # arity of the sub-tree level, 0 for none
    top_arity: int = 0  # arity of the top level, 0 for none (needs a sub level)

    def __post_init__(self) -> None:
        for a in (self.base_arity, self.sub_arity, self.top_arity):
            if a and a & (a - 1):
                raise BadInput(f"tree arities must be powers of two, got {a}")
        if self.base_arity < 2:
            raise BadInput(f"base arity must be at least 2, got {self.base_arity}")
        if self.top_arity and not self.sub_arity:
            raise BadInput("a top level needs a sub level")
        per_base, rem = divmod(self.leaves, max(self.sub_arity, 1) * max(self.top_arity, 1))
        if rem or per_base < 1 or self.base_arity**self.base_levels != per_base:
            raise BadInput(
                f"{self.leaves} leaves do not fit a "
                f"{self.base_arity}-{self.sub_arity}-{self.top_arity} tree"
            )

    @property
    def base_levels(self) -> int:
        """Path elements in the base tree (upstream's ``base_path_length``)."""
        per_base = self.leaves // (max(self.sub_arity, 1) * max(self.top_arity, 1))
        levels = 0
        while per_base > 1:
            per_base //= self.base_arity
            levels += 1
        return levels

    @property
    def arities(self) -> list[int]:
        """Arity of each level, bottom-up."""
        out = [self.base_arity] * self.base_levels
        out += [a for a in (self.sub_arity, self.top_arity) if a]
        return out


@dataclass(frozen=True)
class MerklePath:
    """An inclusion proof: the leaf, per level its siblings (arity − 1) and the node's position
    among the arity children, and the root."""

    leaf: int
    siblings: list[list[int]]  # per level, bottom-up
    positions: list[int]  # per level, 0 … arity − 1
    root: int


def build_tree(leaves: fr.FrVec, shape: TreeShape) -> list[fr.FrVec]:
    """Every level of the tree, leaves first and the 1-element root level last.

    Raises:
        BadInput: the leaf count differs from the shape's.
    """
    if leaves.shape[0] != shape.leaves:
        raise BadInput(f"shape has {shape.leaves} leaves, got {leaves.shape[0]}")
    levels = [leaves]
    for arity in shape.arities:
        levels.append(hash_many(levels[-1], arity))
    assert levels[-1].shape[0] == 1
    return levels


def prove(levels: Sequence[fr.FrVec], shape: TreeShape, index: int) -> MerklePath:
    """The inclusion proof of leaf ``index``."""
    if not 0 <= index < shape.leaves:
        raise BadInput(f"leaf index {index} out of range for {shape.leaves} leaves")
    siblings, positions = [], []
    node = index
    for level, arity in zip(levels, shape.arities, strict=False):
        start = node - node % arity
        group = fr.to_ints(level[start : start + arity])
        pos = node % arity
        positions.append(pos)
        siblings.append(group[:pos] + group[pos + 1 :])
        node //= arity
    return MerklePath(
        leaf=fr.to_int(levels[0][index]),
        siblings=siblings,
        positions=positions,
        root=fr.to_int(levels[-1][0]),
    )


def challenge_bits(index: int, shape: TreeShape) -> list[bool]:
    """The leaf index as the little-endian bits the PoR gadget allocates (log2 of each arity per
    level, lowest level first): simply the index's binary expansion."""
    nbits = sum(a.bit_length() - 1 for a in shape.arities)
    return [bool((index >> i) & 1) for i in range(nbits)]
