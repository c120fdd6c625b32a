"""Filecoin's JSON for Merkle inclusion proofs, and the JSON primitives its readers share.

Every family of vanilla proofs (PoSt, PoRep C1, SnapDeals) carries upstream's ``MerkleProof``
serde layout: ``{"data": {"Single" | "Sub" | "Top": {...}}}`` with a ``path`` (Single) or
``base_proof`` / ``sub_proof`` / ``top_proof`` paths, each a list of levels
``{"hashes": [arity − 1 siblings], "index": position}``, and ``leaf`` / ``root``. A 32-byte
value is a field element's little-endian bytes as 32 integers. One writer and one reader live
here so the three families cannot drift apart; readers name the bad field in every error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.gadgets.merkle import MerklePath, PathBatch, TreeShape
from cuzk.gadgets.poseidon.native import hash_one

# -- JSON primitives ----------------------------------------------------------------------------


def field(obj: Any, key: str, what: str) -> Any:
    """``obj[key]`` of a JSON object, or BadInput naming ``what`` and the key."""
    if not isinstance(obj, dict):
        raise BadInput(f"{what}: expected an object")
    if key not in obj:
        raise BadInput(f"{what}: missing {key!r}")
    return obj[key]


def array(v: Any, n: int | None, what: str) -> list[Any]:
    """A JSON array (of exactly ``n`` entries unless ``n`` is None)."""
    if not isinstance(v, list):
        raise BadInput(f"{what}: expected an array")
    if n is not None and len(v) != n:
        raise BadInput(f"{what}: expected {n} entries, got {len(v)}")
    return v


def bytes32(v: Any, what: str) -> bytes:
    """32 bytes written as an array of integers 0…255 (``bytes`` where the document was read
    with :func:`cuzk.safejson.loads`'s ``bytes32``, which checked them)."""
    if type(v) is bytes and len(v) == 32:
        return v
    if not (isinstance(v, list) and len(v) == 32
            and all(type(b) is int and 0 <= b < 256 for b in v)):  # fmt: skip
        raise BadInput(f"{what}: expected 32 bytes as an array of integers 0…255")
    return bytes(v)


def fe(v: Any, what: str) -> int:
    """A canonical field element from its 32 little-endian bytes."""
    x = int.from_bytes(bytes32(v, what), "little")
    if x >= R:
        raise BadInput(f"{what}: not a canonical field element")
    return x


def fe_list(values: list[Any], what: str) -> list[int]:
    """:func:`fe` of each value (``"<what> <i>"`` names value i in an error). Values packed by
    :func:`cuzk.safejson.loads` (``bytes32``) are read in one go: they are most of a request."""
    if all(type(v) is bytes and len(v) == 32 for v in values):
        xs = [int.from_bytes(v, "little") for v in values]
        if not xs or max(xs) < R:
            return xs
    return [fe(v, f"{what} {i}") for i, v in enumerate(values)]


def fe_json(x: int) -> list[int]:
    """The inverse of :func:`fe`."""
    return list(int(x).to_bytes(32, "little"))


def uint(v: Any, bits: int, what: str) -> int:
    """An unsigned integer below 2^bits."""
    if type(v) is not int or not 0 <= v < 1 << bits:
        raise BadInput(f"{what}: expected an unsigned {bits}-bit integer, got {v!r}")
    return v


# -- Merkle proofs --------------------------------------------------------------------------------


def _path_json(siblings: Sequence[Sequence[int]], positions: Sequence[int]) -> dict[str, Any]:
    return {
        "path": [
            {"hashes": [fe_json(h) for h in s], "index": p}
            for s, p in zip(siblings, positions, strict=True)
        ]
    }


def merkle_proof_json(mp: MerklePath, t: TreeShape) -> dict[str, Any]:
    """A MerkleProof in upstream's serde layout (Single, Sub or Top by the tree's shape)."""
    nb = t.base_levels
    base = _path_json(mp.siblings[:nb], mp.positions[:nb])
    root, leaf = fe_json(mp.root), fe_json(mp.leaf)
    if not t.sub_arity:
        return {"data": {"Single": {"root": root, "leaf": leaf, "path": base}}}
    sub = _path_json(mp.siblings[nb : nb + 1], mp.positions[nb : nb + 1])
    if not t.top_arity:
        return {"data": {"Sub": {"base_proof": base, "sub_proof": sub, "root": root, "leaf": leaf}}}
    top = _path_json(mp.siblings[nb + 1 :], mp.positions[nb + 1 :])
    return {"data": {"Top": {"base_proof": base, "sub_proof": sub, "top_proof": top,
                             "root": root, "leaf": leaf}}}  # fmt: skip


def read_path(obj: Any, arity: int, levels: int, what: str) -> tuple[list[list[int]], list[int]]:
    """One ``{"path": [...]}`` of ``levels`` levels of an arity-``arity`` tree: (siblings per
    level, position per level)."""
    elems = array(field(obj, "path", what), levels, f"{what} path")
    sibs, pos = [], []
    for k, e in enumerate(elems):
        w = f"{what} level {k}"
        hashes = array(field(e, "hashes", w), arity - 1, f"{w} hashes")
        index = field(e, "index", w)
        if type(index) is not int or not 0 <= index < arity:
            raise BadInput(f"{w}: index {index!r} out of range for arity {arity}")
        sibs.append(fe_list(hashes, f"{w} hash"))
        pos.append(index)
    return sibs, pos


def read_merkle_proof(obj: Any, tree: TreeShape, what: str) -> MerklePath:
    """Parse one MerkleProof of a tree of shape ``tree`` (its hashes are checked by the caller,
    many paths at once: :func:`poseidon_roots`)."""
    data = field(obj, "data", what)
    kind = "Top" if tree.top_arity else "Sub" if tree.sub_arity else "Single"
    if not isinstance(data, dict) or set(data) != {kind}:
        raise BadInput(f"{what}: expected a {kind!r} proof for this tree")
    body = data[kind]
    leaf = fe(field(body, "leaf", what), f"{what} leaf")
    root = fe(field(body, "root", what), f"{what} root")
    nb = tree.base_levels
    if kind == "Single":
        sibs, pos = read_path(field(body, "path", what), tree.base_arity, nb, what)
    else:
        sibs, pos = read_path(field(body, "base_proof", what), tree.base_arity, nb,
                              f"{what} base")  # fmt: skip
        s, p = read_path(field(body, "sub_proof", what), tree.sub_arity, 1, f"{what} sub")
        sibs, pos = sibs + s, pos + p
        if kind == "Top":
            s, p = read_path(field(body, "top_proof", what), tree.top_arity, 1, f"{what} top")
            sibs, pos = sibs + s, pos + p
    return MerklePath(leaf, sibs, pos, root)


def path_root(mp: MerklePath) -> int:
    """The root a Poseidon inclusion path hashes to (Merkle tags by arity), one hash at a time:
    the reference :func:`poseidon_roots` is checked against."""
    cur = mp.leaf
    for sibs, p in zip(mp.siblings, mp.positions, strict=True):
        cur = hash_one([*sibs[:p], cur, *sibs[p:]])
    return cur


def poseidon_roots(paths: Sequence[MerklePath], shape: TreeShape) -> list[int]:
    """The roots the Poseidon inclusion paths of a tree of shape ``shape`` hash to, in bulk
    (:meth:`PathBatch.hash_roots`)."""
    if not paths:
        return []
    batch = PathBatch.of(paths)
    if [w.shape[1] + 1 for w in batch.siblings] != shape.arities:
        raise BadInput("inclusion paths do not have the tree's levels")
    return fr.limbs_to_ints(batch.hash_roots())


def leaf_index(mp: MerklePath, tree: TreeShape) -> int:
    """The leaf a path proves (positions as mixed-radix digits, lowest level first) — also
    the value its packed index bits take as a public input."""
    index, scale = 0, 1
    for p, a in zip(mp.positions, tree.arities, strict=True):
        index += p * scale
        scale *= a
    return index
