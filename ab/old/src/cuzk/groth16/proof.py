"""Proof bytes: A (G1, 48) ‖ B (G2, 96) ‖ C (G1, 48), compressed — 192 bytes per partition.

A multi-partition proof (PoRep: 10 partitions) is the plain concatenation of partition proofs.
Decoding checks every point (on curve, in subgroup) and rejects identities, as bellperson does;
proof bytes come from outside and are never trusted.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuzk.curve import G1, G2, g1_identity, g2_identity
from cuzk.curve.encoding import g1_from_bytes, g1_to_bytes, g2_from_bytes, g2_to_bytes
from cuzk.errors import BadInput

PROOF_SIZE = 192


@dataclass(frozen=True)
class Proof:
    a: G1  # [A]₁ = α + ΣA + r·δ
    b: G2  # [B]₂ = β + ΣB + s·δ
    c: G1  # [C]₁

    def to_bytes(self) -> bytes:
        return (
            g1_to_bytes(self.a, compressed=True)
            + g2_to_bytes(self.b, compressed=True)
            + g1_to_bytes(self.c, compressed=True)
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> Proof:
        """Decode one 192-byte proof; raises BadInput naming the bad part."""
        if len(data) != PROOF_SIZE:
            raise BadInput(f"a proof is {PROOF_SIZE} bytes, got {len(data)}")
        try:
            a = g1_from_bytes(data[:48], compressed=True)
        except BadInput as e:
            raise BadInput(f"proof point A: {e}") from e
        try:
            b = g2_from_bytes(data[48:144], compressed=True)
        except BadInput as e:
            raise BadInput(f"proof point B: {e}") from e
        try:
            c = g1_from_bytes(data[144:], compressed=True)
        except BadInput as e:
            raise BadInput(f"proof point C: {e}") from e
        if a == g1_identity() or b == g2_identity() or c == g1_identity():
            raise BadInput("proof contains a point at infinity")
        return cls(a, b, c)


def proofs_to_bytes(proofs: list[Proof]) -> bytes:
    return b"".join(p.to_bytes() for p in proofs)


def proofs_from_bytes(data: bytes) -> list[Proof]:
    """Split a (multi-partition) proof into its 192-byte parts."""
    if not data or len(data) % PROOF_SIZE:
        raise BadInput(f"proof bytes must be a non-zero multiple of {PROOF_SIZE}, got {len(data)}")
    out = []
    for i in range(0, len(data), PROOF_SIZE):
        try:
            out.append(Proof.from_bytes(data[i : i + PROOF_SIZE]))
        except BadInput as e:
            raise BadInput(f"partition {i // PROOF_SIZE}: {e}") from e
    return out
