"""Merkle trees over sectors too large to hold: a few explicit leaves on a structured
background, every other subtree shared.

A virtual 32 GiB sector has 2^30 leaves, of which a proof opens a few thousand. The rest form
the *background*: leaves whose value depends only on the leaf's offset in a repeating block
(``period``) and, optionally, on which ``region`` of the sector it lies in. Two subtrees with
the same leaves have the same digest, so a background node's digest is keyed by (level,
offset within the period, region) — one digest per level for a constant background — and is
computed once. Nodes wider than a region are keyed by their index; there are few of them.

*Touched* leaves override the background; their ancestors are hashed explicitly, level by
level, and every hash of a level (background or touched) goes through one bulk call. Memory
and time follow the number of touched leaves and distinct background keys, never the sector.

The same class covers TreeD (binary SHA-256, :func:`sha256_pairs`), TreeC and TreeR (Poseidon
with Merkle tags, :func:`poseidon_groups`, any base-sub-top arities), and a *forest* of
same-shaped trees side by side (leaves = trees × leaves per tree, the top level holding the
roots): WindowPoSt's sectors are built that way in one pass.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.gadgets.merkle import MerklePath
from cuzk.gadgets.poseidon.native import hash_many
from cuzk.gadgets.sha256.node import node_hash

_PATH_CHUNK = 1024  # paths whose missing background digests are gathered at once

#: Hash ``len(flat) / arity`` groups of ``arity`` consecutive children into their parents.
GroupHash = Callable[[list[int], int], list[int]]


def poseidon_groups(flat: list[int], arity: int) -> list[int]:
    """Poseidon (Merkle-tree tag of the arity) of consecutive groups: TreeC / TreeR nodes."""
    if not flat:
        return []
    return fr.to_ints(hash_many(fr.from_ints(flat), arity))


def sha256_pairs(flat: list[int], arity: int) -> list[int]:
    """Filecoin's SHA-256 node hash of consecutive pairs: TreeD nodes."""
    if arity != 2:
        raise BadInput(f"SHA-256 trees are binary, not arity {arity}")
    return [node_hash(flat[k : k + 2]) for k in range(0, len(flat), 2)]


@dataclass(frozen=True)
class Background:
    """The value of every untouched leaf: ``leaf(j)`` must depend only on ``j mod period``
    and (when ``region`` is set) on ``j // region``. Both are powers of two."""

    leaf: Callable[[int], int]
    period: int = 1
    region: int = 0  # 0: one region (no dependence on j beyond j mod period)

    def __post_init__(self) -> None:
        for what, v in (("period", self.period), ("region", self.region or 1)):
            if v < 1 or v & (v - 1):
                raise BadInput(f"background {what} must be a power of two, got {v}")

    def key(self, level: int, index: int, width: int) -> Hashable:
        """Equal keys ⇒ equal subtrees (``width`` leaves under node ``index`` of ``level``)."""
        first = index * width
        if self.region and width > self.region:
            return (level, index)
        offset = first % self.period if width < self.period else 0
        return (level, offset, first // self.region if self.region else 0)


def constant(value: int) -> Background:
    """Every untouched leaf equal: one digest per level."""
    return Background(lambda _j: value)


def periodic(block: Sequence[int]) -> Background:
    """Leaf j = block[j mod len(block)] (a random block of data repeated over the sector)."""
    vals = list(block)
    return Background(lambda j: vals[j % len(vals)], period=len(vals))


class SparseTree:
    """A Merkle tree (or forest) given by a background and touched leaves.

    Args:
        leaves: leaf count; a multiple of the product of ``arities`` (the top level then holds
            ``leaves / product`` roots).
        arities: per level, bottom-up.
        hash_groups: :func:`poseidon_groups` or :func:`sha256_pairs`.
        background: untouched leaves.
        touched: explicit leaves, index → value.
    Raises:
        BadInput: a shape that does not divide, a leaf index out of range.
    """

    def __init__(
        self,
        leaves: int,
        arities: Sequence[int],
        hash_groups: GroupHash,
        background: Background,
        touched: Mapping[int, int] | None = None,
    ) -> None:
        self.arities = list(arities)
        self.widths = [1]
        for a in self.arities:
            self.widths.append(self.widths[-1] * a)
        if leaves < 1 or leaves % self.widths[-1]:
            raise BadInput(f"{leaves} leaves do not fit arities {self.arities}")
        self.leaves = leaves
        self._hash = hash_groups
        self.background = background
        self._memo: dict[Hashable, int] = {}
        base = {int(i): int(v) % R for i, v in (touched or {}).items()}
        if base and not (0 <= min(base) and max(base) < leaves):
            raise BadInput(f"touched leaf out of range 0…{leaves - 1}")
        self._levels: list[dict[int, int]] = [base]
        for level, a in enumerate(self.arities):
            below = self._levels[level]
            parents = sorted({i // a for i in below})
            kids = [p * a + t for p in parents for t in range(a)]
            self._fill([(level, c) for c in kids if c not in below])
            vals = self._hash([self._value(level, c) for c in kids], a)
            self._levels.append(dict(zip(parents, vals, strict=True)))

    @property
    def height(self) -> int:
        return len(self.arities)

    @property
    def root(self) -> int:
        """The root of a single tree."""
        if self.leaves != self.widths[-1]:
            raise BadInput("a forest has one root per tree; use node(height, i)")
        return self.node(self.height, 0)

    @property
    def hashes(self) -> int:
        """Hashes computed so far (touched ancestors and background keys)."""
        background = sum(1 for k in self._memo if cast(tuple[int, ...], k)[0] > 0)
        return sum(len(d) for d in self._levels[1:]) + background

    def _key(self, level: int, index: int) -> Hashable:
        return self.background.key(level, index, self.widths[level])

    def _value(self, level: int, index: int) -> int:
        v = self._levels[level].get(index)
        return self._memo[self._key(level, index)] if v is None else v

    def _fill(self, requests: Iterable[tuple[int, int]]) -> None:
        """Compute the background digests the requested (untouched) nodes need: collect the
        missing keys top-down with a representative node each, hash bottom-up in bulk."""
        need: list[dict[Hashable, int]] = [{} for _ in range(self.height + 1)]
        for level, index in requests:
            k = self._key(level, index)
            if k not in self._memo:
                need[level].setdefault(k, index)
        for level in range(self.height, 0, -1):
            a = self.arities[level - 1]
            for index in need[level].values():
                for c in range(index * a, index * a + a):
                    k = self._key(level - 1, c)
                    if k not in self._memo:
                        need[level - 1].setdefault(k, c)
        for k, index in need[0].items():
            self._memo[k] = self.background.leaf(index) % R
        for level in range(1, self.height + 1):
            if not need[level]:
                continue
            a = self.arities[level - 1]
            flat = [
                self._memo[self._key(level - 1, c)]
                for index in need[level].values()
                for c in range(index * a, index * a + a)
            ]
            for k, v in zip(need[level], self._hash(flat, a), strict=True):
                self._memo[k] = v

    def nodes(self, requests: Sequence[tuple[int, int]]) -> list[int]:
        """Digests of (level, index) nodes (level 0: leaves)."""
        for level, index in requests:
            if not (0 <= level <= self.height and 0 <= index < self.leaves // self.widths[level]):
                raise BadInput(f"no node {index} at level {level}")
        self._fill([(lv, i) for lv, i in requests if i not in self._levels[lv]])
        return [self._value(lv, i) for lv, i in requests]

    def node(self, level: int, index: int) -> int:
        return self.nodes([(level, index)])[0]

    def paths(self, indices: Sequence[int]) -> list[MerklePath]:
        """Inclusion paths of leaves (positions per level as the circuit reads them); the root
        of each is its tree's root (the forest's top-level node above it)."""
        for i in indices:
            if not 0 <= i < self.leaves:
                raise BadInput(f"leaf {i} out of range 0…{self.leaves - 1}")
        out: list[MerklePath] = []
        for k in range(0, len(indices), _PATH_CHUNK):
            out += self._paths(indices[k : k + _PATH_CHUNK])
        return out

    def _paths(self, indices: Sequence[int]) -> list[MerklePath]:
        wanted: list[tuple[int, int]] = []
        for i in indices:
            node = i
            wanted.append((0, i))
            for level, a in enumerate(self.arities):
                start = node - node % a
                wanted += [(level, c) for c in range(start, start + a)]
                node //= a
            wanted.append((self.height, node))
        self._fill([(lv, i) for lv, i in wanted if i not in self._levels[lv]])
        out = []
        for i in indices:
            siblings, positions = [], []
            node = i
            for level, a in enumerate(self.arities):
                start, pos = node - node % a, node % a
                group = [self._value(level, c) for c in range(start, start + a)]
                siblings.append(group[:pos] + group[pos + 1 :])
                positions.append(pos)
                node //= a
            out.append(MerklePath(self._value(0, i), siblings, positions,
                                  self._value(self.height, node)))  # fmt: skip
        return out

    def path(self, index: int) -> MerklePath:
        return self.paths([index])[0]
