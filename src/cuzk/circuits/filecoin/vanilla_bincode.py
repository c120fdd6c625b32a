"""PoSt vanilla proofs as filecoin-ffi hands them out: bincode ``FallbackPoStSectorProof``s.

``GenerateSingleVanillaProof`` returns one sector's proof bincode-encoded (what the reference's
Go client forwards); :mod:`.vanilla_json` reads the same structure in serde's JSON layout. This
module decodes bincode into exactly the dict that JSON would parse to, so one reader
(:func:`.vanilla_json.loads`) checks both.

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
    def __init__(self, data: bytes, what: str) -> None:
        self.data, self.pos, self.what = data, 0, what

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

    def domain(self) -> list[int]:
        return list(self.take(32))

    def seq(self, item: Callable[[], Any], min_item_bytes: int) -> list[Any]:
        n = self.u64()
        if n * min_item_bytes > len(self.data) - self.pos:
            raise BadInput(
                f"{self.what}: bincode sequence of {n} items at offset "
                f"{self.pos - 8} is longer than the data"
            )
        return [item() for _ in range(n)]

    def path(self) -> dict[str, Any]:
        return {
            "path": self.seq(lambda: {"hashes": self.seq(self.domain, 32), "index": self.u64()}, 16)
        }

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


def sector_proof_from_bincode(data: bytes, what: str) -> dict[str, Any]:
    """A bincode ``FallbackPoStSectorProof`` as the dict its serde JSON would parse to."""
    r = _Reader(data, what)
    out = {
        "sector_id": r.u64(),
        "comm_r": r.domain(),
        "vanilla_proof": {"sectors": r.seq(r.sector, 72)},
    }
    if r.pos != len(data):
        raise BadInput(f"{what}: {len(data) - r.pos} bytes left over after the bincode proof")
    return out


def read_sector_proof(raw: bytes, what: str) -> dict[str, Any]:
    """One ``FallbackPoStSectorProof`` in either encoding, as its serde JSON dict.

    Text starting with "{" is tried as JSON first; a bincode proof can start with that byte
    too (sector id 123 mod 256), so on a JSON error it is read as bincode before being refused.
    The dict is checked later, with the rest of the request (:func:`.vanilla_json.loads`).
    """
    json_error = None
    if raw.lstrip()[:1] == b"{":
        doc, json_error = safejson.parse(raw)  # text starting with "{": an object or an error
        if json_error is None:
            return doc
    try:
        return sector_proof_from_bincode(bytes(raw), what)
    except BadInput as e:
        if json_error is not None:
            raise BadInput(f"{what}: neither JSON ({json_error}) nor bincode ({e})") from None
        raise
