"""Native Poseidon Merkle trees of Filecoin's shapes: the data the PoR gadget is checked against.

Filecoin's TreeR is a "base-sub-top" tree: base trees of arity 8 over contiguous runs of leaves,
optionally a sub-tree level (arity 8, 4 or 2) over the base roots, and a top level over those.
That equals one tree whose levels have arities [base, …, base, sub, top] bottom-up with
contiguous grouping, which is how it is built here: one bulk :func:`hash_many` call per level,
never a Python loop per hash.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np

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


@dataclass(frozen=True, eq=False)
class PathBatch(Sequence[MerklePath]):
    """Inclusion paths of one tree shape, column by column.

    A full 32 GiB WindowPoSt partition carries 23,490 paths of ten levels: 1.7M field elements.
    As Python ints in :class:`MerklePath` objects they take seconds to make, to hash (converted
    back to Montgomery form) and to pickle to the engine and its synthesis workers. Held here
    as numpy columns, a request is read, hash-checked and sent between processes without a
    per-value step; a path becomes a :class:`MerklePath` only where a gadget walks it (one
    sector's ten, in the synthesis worker that proves it). Values are canonical (below r),
    as (…, 4) little-endian uint64 limbs.
    """

    leaves: np.ndarray  # (n, 4)
    siblings: tuple[np.ndarray, ...]  # per level, bottom-up: (n, arity − 1, 4)
    positions: np.ndarray  # (n, levels) int64, each 0 … arity − 1
    roots: np.ndarray  # (n, 4)
    #: Per level, the (n, 4) Montgomery digest each path reaches there, once someone hashed
    #: them (:meth:`with_digests`: the request's hash check, so synthesis need not hash again).
    digests: tuple[np.ndarray, ...] | None = None

    @classmethod
    def of(cls, paths: Sequence[MerklePath]) -> PathBatch:
        """The batch of ``paths`` (returned as is when it is one already).

        Raises:
            BadInput: the paths have different level counts or arities.
        """
        if isinstance(paths, PathBatch):
            return paths
        if not paths:
            raise BadInput("no inclusion paths")
        widths = [len(s) for s in paths[0].siblings]
        if any([len(s) for s in mp.siblings] != widths for mp in paths):
            raise BadInput("inclusion paths of different tree shapes in one batch")
        n = len(paths)

        def limbs(values: list[int], shape: tuple[int, ...]) -> np.ndarray:
            return fr.to_canonical_limbs(fr.from_ints(values)).reshape(*shape, 4)

        return cls(
            limbs([mp.leaf for mp in paths], (n,)),
            tuple(
                limbs([x for mp in paths for x in mp.siblings[k]], (n, w))
                for k, w in enumerate(widths)
            ),
            np.array([mp.positions for mp in paths], dtype=np.int64).reshape(n, len(widths)),
            limbs([mp.root for mp in paths], (n,)),
        )

    @classmethod
    def concat(cls, batches: Sequence[Sequence[MerklePath]]) -> PathBatch:
        """One batch of every path of ``batches`` in order (of one tree shape)."""
        parts = [cls.of(b) for b in batches]
        widths = {tuple(level.shape[1] for level in b.siblings) for b in parts}
        if len(widths) > 1:
            raise BadInput("inclusion paths of different tree shapes in one batch")

        def levels(columns: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
            return tuple(np.concatenate(level) for level in zip(*columns, strict=True))

        digests = [b.digests for b in parts]
        return cls(
            np.concatenate([b.leaves for b in parts]),
            levels([b.siblings for b in parts]),
            np.concatenate([b.positions for b in parts]),
            np.concatenate([b.roots for b in parts]),
            # why the ignore below: any() ruled None out; mypy does not narrow a list by it
            None if any(d is None for d in digests) else levels(digests),  # type: ignore[arg-type]
        )

    def __len__(self) -> int:
        return self.leaves.shape[0]

    @overload
    def __getitem__(self, index: int) -> MerklePath: ...
    @overload
    def __getitem__(self, index: slice) -> PathBatch: ...
    def __getitem__(self, index: int | slice) -> MerklePath | PathBatch:
        if isinstance(index, slice):
            digests = None if self.digests is None else tuple(d[index] for d in self.digests)
            return PathBatch(self.leaves[index], tuple(s[index] for s in self.siblings),
                             self.positions[index], self.roots[index], digests)  # fmt: skip
        i = range(len(self))[index]  # IndexError past the end; negative indices count back
        return MerklePath(
            fr.limbs_to_ints(self.leaves[i])[0],
            [fr.limbs_to_ints(s[i]) for s in self.siblings],
            self.positions[i].tolist(),
            fr.limbs_to_ints(self.roots[i])[0],
        )

    def __iter__(self) -> Iterator[MerklePath]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        """Equal to any sequence of the same paths (the general readers give tuples)."""
        if not isinstance(other, Sequence) or len(other) != len(self):
            return False
        if isinstance(other, PathBatch):
            return all(np.array_equal(a, b) for a, b in zip(self._columns(), other._columns(),
                                                              strict=True))  # fmt: skip
        return all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable arrays inside, like MerklePath's lists

    def _columns(self) -> tuple[np.ndarray, ...]:
        return (self.leaves, *self.siblings, self.positions, self.roots)

    def leaf_indices(self) -> np.ndarray:
        """The leaf each path proves (positions as mixed-radix digits, lowest level first)."""
        index = np.zeros(len(self), dtype=np.int64)
        scale = 1
        for k, level in enumerate(self.siblings):
            index += self.positions[:, k] * scale
            scale *= level.shape[1] + 1
        return index

    def hash_roots(self) -> np.ndarray:
        """The roots the paths hash to with Poseidon (Merkle tags by arity), as (n, 4) limbs,
        hashed here (never taken from :attr:`digests`: this is what checks a request)."""
        return fr.to_canonical_limbs(self.hash_levels()[-1])

    def with_digests(self, digests: Sequence[fr.FrVec]) -> PathBatch:
        """This batch carrying ``digests`` (from :meth:`hash_levels` of these very paths)."""
        return dataclasses.replace(self, digests=tuple(digests))

    def level_digests(self) -> list[fr.FrVec]:
        """:attr:`digests` where they are known, else :meth:`hash_levels`."""
        return list(self.digests) if self.digests is not None else self.hash_levels()

    def hash_levels(self) -> list[fr.FrVec]:
        """Per level bottom-up, the (n, 4) Montgomery digest each path reaches there (the last
        level's are the roots).

        One bulk :func:`hash_many` per level, and each distinct preimage of a level hashed
        once: a Poseidon hash costs ~80 µs of a core natively, and paths to one root share
        their top levels (a level ``d`` below the root has at most arity^d distinct nodes), so
        a request's thousands of paths cost about a third less than every level of every path.
        """
        n = len(self)
        cur = fr.from_canonical_limbs(self.leaves)
        rows = np.arange(n)[:, None]
        out = []
        for k, level in enumerate(self.siblings):
            width = level.shape[1]
            pos = self.positions[:, k]
            pre = np.empty((n, width + 1, 4), dtype=np.uint64)
            pre[rows[:, 0], pos] = cur
            # Sibling j of a path sits in slot j, or j + 1 at and after the path's own position.
            slots = np.arange(width)[None, :]
            sibs = fr.from_canonical_limbs(level.reshape(-1, 4)).reshape(n, width, 4)
            pre[rows, slots + (slots >= pos[:, None])] = sibs
            cur = _hash_distinct(pre, width + 1)
            out.append(cur)
        return out


def _hash_distinct(pre: np.ndarray, arity: int) -> fr.FrVec:
    """``hash_many`` of the (n, arity, 4) preimages, each distinct one hashed once (a dict of
    their bytes finds repeats faster than sorting rows of 8·32 bytes)."""
    raw, width = pre.tobytes(), arity * 32
    seen: dict[bytes, int] = {}  # preimage -> its number among the distinct ones
    back = np.array([seen.setdefault(raw[i : i + width], len(seen))
                     for i in range(0, len(raw), width)], dtype=np.int64)  # fmt: skip
    if len(seen) == len(pre):
        return hash_many(pre.reshape(-1, 4), arity)
    first = np.unique(back, return_index=True)[1]  # where distinct preimage j first occurs
    return hash_many(pre[first].reshape(-1, 4), arity)[back]


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
