"""Filecoin's vanilla proofs in bincode, the form filecoin-ffi hands to a proving client.

bincode 1.x with default options: integers little-endian at fixed width, sequence lengths and
``usize`` as u64, enum variants as a u32 index, a 32-byte domain element as its raw bytes,
struct fields in declaration order. The writers take the serde JSON trees this package's JSON
writers produce (:mod:`.merkle_json`, :mod:`.vanilla_json`, :mod:`.snap_vanilla`), so the
structure is defined once and bincode is only its other encoding:

* ``FallbackPoStSectorProof``: sector_id u64, comm_r, ``vanilla_proof.sectors`` (a sequence of
  {inclusion_proofs, comm_c, comm_r_last}); what ``GenerateSingleVanillaProof`` returns.
* SnapDeals ``PartitionProof``: comm_c, apex_leafs, challenge_proofs (each proof_r_old,
  proof_d_new, proof_r_new).
* ``MerkleProof``: variant Single (0: root, leaf, path), Sub (1: base_proof, sub_proof, root,
  leaf) or Top (2: base_proof, sub_proof, top_proof, root, leaf); a path is a sequence of
  {hashes, index}.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cuzk.errors import BadInput

_VARIANTS = {"Single": 0, "Sub": 1, "Top": 2}
_FIELDS = {
    "Single": ("root", "leaf", "path"),
    "Sub": ("base_proof", "sub_proof", "root", "leaf"),
    "Top": ("base_proof", "sub_proof", "top_proof", "root", "leaf"),
}


def _u64(v: int) -> bytes:
    return int(v).to_bytes(8, "little")


def _domain(v: Sequence[int]) -> bytes:
    b = bytes(v)
    if len(b) != 32:
        raise BadInput(f"a domain element is 32 bytes, got {len(b)}")
    return b


def _seq(items: Sequence[Any], item: Callable[[Any], bytes]) -> bytes:
    return _u64(len(items)) + b"".join(item(x) for x in items)


def _path(doc: dict[str, Any]) -> bytes:
    return _seq(doc["path"], lambda e: _seq(e["hashes"], _domain) + _u64(e["index"]))


def merkle_proof(doc: dict[str, Any]) -> bytes:
    """A ``MerkleProof`` from its serde JSON tree."""
    ((kind, body),) = doc["data"].items()
    out = [int(_VARIANTS[kind]).to_bytes(4, "little")]
    for name in _FIELDS[kind]:
        out.append(_domain(body[name]) if name in ("root", "leaf") else _path(body[name]))
    return b"".join(out)


def post_sector_proof(doc: dict[str, Any]) -> bytes:
    """A ``FallbackPoStSectorProof`` from its serde JSON tree."""

    def sector(s: dict[str, Any]) -> bytes:
        return (_seq(s["inclusion_proofs"], merkle_proof) + _domain(s["comm_c"])
                + _domain(s["comm_r_last"]))  # fmt: skip

    return (_u64(doc["sector_id"]) + _domain(doc["comm_r"])
            + _seq(doc["vanilla_proof"]["sectors"], sector))  # fmt: skip


def snap_partition_proof(doc: dict[str, Any]) -> bytes:
    """A SnapDeals ``PartitionProof`` from its serde JSON tree."""

    def challenge(c: dict[str, Any]) -> bytes:
        return b"".join(merkle_proof(c[k]) for k in ("proof_r_old", "proof_d_new", "proof_r_new"))

    return (_domain(doc["comm_c"]) + _seq(doc["apex_leafs"], _domain)
            + _seq(doc["challenge_proofs"], challenge))  # fmt: skip
