"""Vanilla proofs as filecoin-ffi hands them out: bincode ``FallbackPoStSectorProof``s (PoSt)
and SnapDeals ``PartitionProof``s.

``GenerateSingleVanillaProof`` returns one sector's proof bincode-encoded and
``GenerateUpdateVanillaProofs`` one ``PartitionProof`` per partition (what Curio forwards);
:mod:`.vanilla_json` and :mod:`.snap_vanilla` read the same structures in serde's JSON layout.
This module decodes bincode into exactly the dict that JSON would parse to, so one reader per
kind (:func:`.vanilla_json.loads`, :func:`.snap_vanilla.read_update`) checks both.

bincode 1.x with its default options: integers little-endian and fixed width, sequence lengths
and usize as u64, enum variants as a u32 index, a 32-byte domain element as its 32 raw bytes,
struct fields in declaration order. Every length is checked against the bytes that remain
before anything is allocated for it, so a hostile length cannot make the reader allocate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cuzk import safejson
from cuzk.errors import BadInput


class _Reader:
    """``raw32``: 32-byte domain elements come back as ``bytes``, as
    :func:`cuzk.safejson.loads` with ``bytes32`` gives them (the readers take both; bytes
    skip a list of 32 ints per value), instead of the list of ints serde's JSON holds."""

    def __init__(self, data: bytes, what: str, raw32: bool = False) -> None:
        self.data, self.pos, self.what, self.raw32 = data, 0, what, raw32

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise BadInput(
                f"{self.what}: truncated bincode (needs {n} bytes at offset "
                f"{self.pos}, {len(self.data)} in all)"
            )
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def u64(self) -> int:
        return int.from_bytes(self.take(8), "little")

    def domain(self) -> list[int] | bytes:
        value = self.take(32)
        return value if self.raw32 else list(value)

    def length(self, min_item_bytes: int) -> int:
        """A sequence's length, refused before anything is allocated for it if its items
        cannot fit the bytes that remain."""
        n = self.u64()
        if n * min_item_bytes > len(self.data) - self.pos:
            raise BadInput(
                f"{self.what}: bincode sequence of {n} items at offset "
                f"{self.pos - 8} is longer than the data"
            )
        return n

    def seq(self, item: Callable[[], Any], min_item_bytes: int) -> list[Any]:
        return [item() for _ in range(self.length(min_item_bytes))]

    def domains(self) -> list[Any]:
        """A sequence of domain elements, taken in one slice (most of a PoSt proof)."""
        raw = self.take(32 * self.length(32))
        if self.raw32:
            return [raw[i : i + 32] for i in range(0, len(raw), 32)]
        return [list(raw[i : i + 32]) for i in range(0, len(raw), 32)]

    def path(self) -> dict[str, Any]:
        return {"path": self.seq(lambda: {"hashes": self.domains(), "index": self.u64()}, 16)}

    def merkle_proof(self) -> dict[str, Any]:
        variant = int.from_bytes(self.take(4), "little")
        if variant == 0:
            root, leaf = self.domain(), self.domain()
            return {"data": {"Single": {"root": root, "leaf": leaf, "path": self.path()}}}
        if variant == 1:
            base, sub = self.path(), self.path()
            body = {"base_proof": base, "sub_proof": sub}
            return {"data": {"Sub": {**body, "root": self.domain(), "leaf": self.domain()}}}
        if variant == 2:
            base, sub, top = self.path(), self.path(), self.path()
            body = {"base_proof": base, "sub_proof": sub, "top_proof": top}
            return {"data": {"Top": {**body, "root": self.domain(), "leaf": self.domain()}}}
        raise BadInput(f"{self.what}: unknown Merkle proof variant {variant} in bincode")

    def sector(self) -> dict[str, Any]:
        return {
            "inclusion_proofs": self.seq(self.merkle_proof, 4),
            "comm_c": self.domain(),
            "comm_r_last": self.domain(),
        }

    def challenge(self) -> dict[str, Any]:
        names = ("proof_r_old", "proof_d_new", "proof_r_new")
        return {name: self.merkle_proof() for name in names}

    def whole(self, read: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """``read()`` over all of the data: bytes left over are an error, not ignored."""
        out = read()
        if self.pos != len(self.data):
            raise BadInput(
                f"{self.what}: {len(self.data) - self.pos} bytes left over after the bincode proof"
            )
        return out


def sector_proof_from_bincode(data: bytes, what: str, raw32: bool = False) -> dict[str, Any]:
    """A bincode ``FallbackPoStSectorProof`` as the dict its serde JSON would parse to (its
    32-byte values as ``bytes`` with ``raw32``)."""
    r = _Reader(data, what, raw32)
    return r.whole(lambda: {
        "sector_id": r.u64(),
        "comm_r": r.domain(),
        "vanilla_proof": {"sectors": r.seq(r.sector, 72)},
    })  # fmt: skip


def partition_proof_from_bincode(data: bytes, what: str) -> dict[str, Any]:
    """A bincode SnapDeals ``PartitionProof`` (comm_c, apex_leafs, challenge_proofs of three
    Merkle proofs each) as the dict its serde JSON would parse to."""
    r = _Reader(data, what)
    return r.whole(lambda: {
        "comm_c": r.domain(),
        "apex_leafs": r.seq(r.domain, 32),
        "challenge_proofs": r.seq(r.challenge, 12),
    })  # fmt: skip


def read_sector_proof(raw: bytes, what: str, raw32: bool = False) -> dict[str, Any]:
    """One ``FallbackPoStSectorProof`` in either encoding, as its serde JSON dict (32-byte
    values as ``bytes`` with ``raw32``)."""
    return read_either(raw, what, lambda d, w: sector_proof_from_bincode(d, w, raw32), raw32)


def read_partition_proof(raw: bytes, what: str) -> dict[str, Any]:
    """One SnapDeals ``PartitionProof`` in either encoding, as its serde JSON dict."""
    return read_either(raw, what, partition_proof_from_bincode)


def read_either(
    raw: bytes,
    what: str,
    from_bincode: Callable[[bytes, str], dict[str, Any]],
    raw32: bool = False,
) -> dict[str, Any]:
    """A vanilla proof as serde JSON text or bincode, as its serde JSON dict.

    Text starting with "{" is tried as JSON first; bincode can start with that byte too (a
    sector id or comm_c whose low byte is 123), so on a JSON error it is read as bincode before
    being refused. The dict is checked later, with the rest of the request.
    """
    json_error = None
    if raw.lstrip()[:1] == b"{":
        doc, json_error = safejson.parse(raw, bytes32=raw32)  # an object or an error
        if json_error is None:
            return doc
    try:
        return from_bincode(bytes(raw), what)
    except BadInput as e:
        if json_error is not None:
            raise BadInput(f"{what}: neither JSON ({json_error}) nor bincode ({e})") from None
        raise
