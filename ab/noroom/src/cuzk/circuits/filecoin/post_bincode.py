"""A PoSt partition's bincode ``FallbackPoStSectorProof``s read in bulk.

Curio sends a WindowPoSt partition as one bincode sector proof per sector: 2,349 of them for
32 GiB, 23,490 Merkle paths of ten levels. Read one value at a time (:mod:`.vanilla_bincode`
into serde's dicts, then :func:`.merkle_json.read_merkle_proof`) that is ≈ 10 s of one core. But
for a given tree every path has the same byte layout (bincode writes fixed-width integers and
raw 32-byte values), so the whole partition is a matrix of equal-length rows: its length fields
and positions are checked column by column with numpy, its field elements compared with r in
bulk, and its paths kept as those columns (:class:`~cuzk.gadgets.merkle.PathBatch`): no value
becomes a Python int until a synthesis worker walks its sector's paths.

Anything outside that layout — JSON text, another Merkle variant, a length that differs, a value
of r or more, bytes left over — makes :func:`read_sector_proofs` answer None, and the caller
reads those proofs the general way, which names what is wrong. Both ways give the same sectors
(tested), and the caller checks every hash either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cuzk import safejson
from cuzk.circuits.filecoin.post import SectorProof
from cuzk.field import fr
from cuzk.gadgets.merkle import PathBatch, TreeShape

_HEADER = 56  # sector_id u64, comm_r 32, vanilla_proof.sectors length u64, inclusion count u64
_TAIL = 64  # comm_c, comm_r_last


@dataclass(frozen=True)
class _Layout:
    """Byte offsets inside one Merkle proof of a tree shape."""

    size: int
    variant: int
    counts: tuple[tuple[int, int], ...]  # (offset of a u64 length, the value it must hold)
    siblings: tuple[tuple[int, int], ...]  # per level bottom-up: (offset, sibling count)
    positions: tuple[tuple[int, int], ...]  # per level: (offset of the u64 index, arity)
    root: int
    leaf: int


def layout(tree: TreeShape) -> _Layout:
    """Where each field of one of ``tree``'s Merkle proofs lies in its bincode."""
    groups = [tree.arities[: tree.base_levels]]
    groups += [[a] for a in (tree.sub_arity, tree.top_arity) if a]
    variant = len(groups) - 1  # Single, Sub, Top
    pos = 4
    if variant == 0:  # Single writes root and leaf before its path
        root, leaf, pos = pos, pos + 32, pos + 64
    counts, siblings, positions = [], [], []
    for group in groups:
        counts.append((pos, len(group)))
        pos += 8
        for arity in group:
            counts.append((pos, arity - 1))
            siblings.append((pos + 8, arity - 1))
            pos += 8 + 32 * (arity - 1)
            positions.append((pos, arity))
            pos += 8
    if variant:
        root, leaf, pos = pos, pos + 32, pos + 64
    return _Layout(pos, variant, tuple(counts), tuple(siblings), tuple(positions), root, leaf)


def read_sector_proofs(
    raws: Sequence[bytes], tree: TreeShape
) -> list[tuple[int, SectorProof]] | None:
    """(sector id, proof) of each bincode sector proof, or None if any is not in the layout of
    ``tree``'s proofs (read those the general way). Hashes are not checked here."""
    lay = layout(tree)
    heads, bodies, tails, counts = [], [], [], []
    for raw in raws:
        if len(raw) < _HEADER + _TAIL or _json_text(raw):
            return None
        if int.from_bytes(raw[40:48], "little") != 1:
            return None
        n = int.from_bytes(raw[48:56], "little")
        if n < 1 or len(raw) != _HEADER + n * lay.size + _TAIL:
            return None
        heads.append(raw[:40])
        bodies.append(raw[_HEADER : _HEADER + n * lay.size])
        tails.append(raw[-_TAIL:])
        counts.append(n)
    rows = np.frombuffer(b"".join(bodies), dtype=np.uint8).reshape(-1, lay.size)
    if not _fixed_fields_hold(rows, lay):
        return None
    head = np.frombuffer(b"".join(heads), dtype=np.uint8).reshape(-1, 40)
    tail = np.frombuffer(b"".join(tails), dtype=np.uint8).reshape(-1, _TAIL)
    values = [head[:, 8:40], tail[:, :32], tail[:, 32:], rows[:, lay.root : lay.root + 32],
              rows[:, lay.leaf : lay.leaf + 32]]  # fmt: skip
    values += [rows[:, off : off + 32 * k] for off, k in lay.siblings]
    if not all(_canonical(v) for v in values):
        return None
    sector_ids = _u64(head, 0).tolist()
    comm_r, comm_c, comm_r_last = (_ints(v) for v in values[:3])
    paths = PathBatch(
        _limbs(rows[:, lay.leaf : lay.leaf + 32]),
        tuple(_limbs(rows[:, off : off + 32 * k]).reshape(-1, k, 4) for off, k in lay.siblings),
        np.stack([_u64(rows, off).astype(np.int64) for off, _ in lay.positions], axis=1),
        _limbs(rows[:, lay.root : lay.root + 32]),
    )
    out, first = [], 0
    for s, n in enumerate(counts):
        proof = SectorProof(comm_r[s], comm_c[s], comm_r_last[s], paths[first : first + n])
        out.append((sector_ids[s], proof))
        first += n
    return out


def _json_text(raw: bytes) -> bool:
    """Whether the general reader would take ``raw`` as JSON (it tries JSON first on "{")."""
    return raw.lstrip()[:1] == b"{" and safejson.parse(raw)[1] is None


def _u64(rows: np.ndarray, offset: int) -> np.ndarray:
    return np.ascontiguousarray(rows[:, offset : offset + 8]).view("<u8").ravel()


def _fixed_fields_hold(rows: np.ndarray, lay: _Layout) -> bool:
    variant = np.ascontiguousarray(rows[:, :4]).view("<u4").ravel()
    if not (variant == lay.variant).all():
        return False
    if not all((_u64(rows, off) == value).all() for off, value in lay.counts):
        return False
    return all((_u64(rows, off) < arity).all() for off, arity in lay.positions)


def _canonical(values: np.ndarray) -> bool:
    """Whether every 32-byte little-endian value in the rows of ``values`` is below r."""
    return bool(fr.below_r(np.ascontiguousarray(values).view("<u8").reshape(-1, 4)).all())


def _limbs(values: np.ndarray) -> np.ndarray:
    """Rows of 32-byte little-endian values as (n, 4) uint64 limbs (a copy of their own)."""
    return np.ascontiguousarray(values).view("<u8").reshape(-1, 4).astype(np.uint64)


def _ints(values: np.ndarray) -> list[int]:
    return fr.limbs_to_ints(_limbs(values))
