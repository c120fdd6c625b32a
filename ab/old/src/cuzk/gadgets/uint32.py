"""32-bit words in a circuit: bellperson's ``UInt32``, the building block of SHA-256.

A word is 32 :class:`~cuzk.gadgets.boolean.Boolean` s, least significant first. Rotations and
shifts only permute bits (free); xor, ch and maj cost what their bits cost (nothing for
constants); additions go through :func:`UInt32.addmany`, which allocates the sum's bits and
queues one equality in a :class:`~cuzk.gadgets.multieq.MultiEq`.
"""

from __future__ import annotations

from collections.abc import Sequence

from cuzk.field.constants import R
from cuzk.gadgets._names import Name, leaf
from cuzk.gadgets.boolean import FALSE, AllocatedBit, Boolean, sha256_ch, sha256_maj, xor
from cuzk.gadgets.multieq import MultiEq
from cuzk.r1cs import ConstraintSystem, witness_mode

_MASK32 = 0xFFFFFFFF


class UInt32:
    """An unsigned 32-bit integer as bits (LSB first) plus its value (``None`` in shape mode)."""

    __slots__ = ("bits", "value")

    def __init__(self, bits: list[Boolean], value: int | None) -> None:
        assert len(bits) == 32
        self.bits = bits
        self.value = value

    def __repr__(self) -> str:
        v = "?" if self.value is None else f"{self.value:#010x}"
        return f"UInt32({v})"

    @staticmethod
    def constant(value: int) -> UInt32:
        return UInt32([Boolean.const(bool((value >> i) & 1)) for i in range(32)], value)

    @staticmethod
    def alloc(cs: ConstraintSystem, value: int | None, ns: Name = None) -> UInt32:
        """32 allocated bits, LSB first (32 constraints)."""
        bits = [
            Boolean(
                AllocatedBit.alloc(
                    cs,
                    None if value is None else bool((value >> i) & 1),
                    leaf(ns, f"allocated bit {i}"),
                )
            )
            for i in range(32)
        ]
        return UInt32(bits, value)

    @property
    def is_constant(self) -> bool:
        return all(b.bit is None for b in self.bits)

    def into_bits_be(self) -> list[Boolean]:
        return self.bits[::-1]

    @staticmethod
    def from_bits_be(bits: Sequence[Boolean]) -> UInt32:
        assert len(bits) == 32
        return UInt32(list(bits[::-1]), _value_of(bits[::-1]))

    def into_bits(self) -> list[Boolean]:
        return list(self.bits)

    @staticmethod
    def from_bits(bits: Sequence[Boolean]) -> UInt32:
        assert len(bits) == 32
        return UInt32(list(bits), _value_of(bits))

    def rotr(self, by: int) -> UInt32:
        by %= 32
        bits = self.bits[by:] + self.bits[:by]
        v = self.value
        return UInt32(bits, None if v is None else ((v >> by) | (v << (32 - by))) & _MASK32)

    def shr(self, by: int) -> UInt32:
        by %= 32
        bits = self.bits[by:] + [FALSE] * by
        return UInt32(bits, None if self.value is None else self.value >> by)

    def xor(self, cs: ConstraintSystem, other: UInt32, ns: Name = None) -> UInt32:
        """Bitwise xor: one constraint per bit position where both bits are variables."""
        if witness_mode(cs):  # names are never read in witness mode
            bits = [xor(cs, a, b) for a, b in zip(self.bits, other.bits, strict=True)]
        else:
            bits = [
                xor(cs, a, b, leaf(ns, f"xor of bit {i}"))
                for i, (a, b) in enumerate(zip(self.bits, other.bits, strict=True))
            ]
        v = None if self.value is None or other.value is None else self.value ^ other.value
        return UInt32(bits, v)

    @staticmethod
    def sha256_ch(cs: ConstraintSystem, a: UInt32, b: UInt32, c: UInt32, ns: Name = None) -> UInt32:
        witness = witness_mode(cs)
        bits = [
            sha256_ch(cs, x, y, z, None if witness else leaf(ns, f"ch {i}"))
            for i, (x, y, z) in enumerate(zip(a.bits, b.bits, c.bits, strict=True))
        ]
        v = None
        if a.value is not None and b.value is not None and c.value is not None:
            v = (a.value & b.value) ^ (~a.value & _MASK32 & c.value)
        return UInt32(bits, v)

    @staticmethod
    def sha256_maj(
        cs: ConstraintSystem, a: UInt32, b: UInt32, c: UInt32, ns: Name = None
    ) -> UInt32:
        witness = witness_mode(cs)
        bits = [
            sha256_maj(cs, x, y, z, None if witness else leaf(ns, f"maj {i}"))
            for i, (x, y, z) in enumerate(zip(a.bits, b.bits, c.bits, strict=True))
        ]
        v = None
        if a.value is not None and b.value is not None and c.value is not None:
            v = (a.value & b.value) ^ (a.value & c.value) ^ (b.value & c.value)
        return UInt32(bits, v)

    @staticmethod
    def addmany(
        cs: ConstraintSystem, meq: MultiEq, operands: Sequence[UInt32], ns: Name = None
    ) -> UInt32:
        """Sum mod 2^32 of 2–10 words.

        All-constant operands fold to a constant. Otherwise the full sum's bits are allocated
        (33 bits for 2 operands … 36 for 10, each with its booleanity constraint) and
        "Σ operand bits = Σ sum bits" is queued in ``meq``; the carry bits are then dropped.
        """
        n = len(operands)
        assert 2 <= n <= 10, "addmany takes 2 to 10 operands"
        values = [op.value for op in operands]
        # why the ignore below: any() ruled None out; mypy does not narrow a list by it
        total = None if any(v is None for v in values) else sum(values)  # type: ignore[arg-type]
        if total is not None and all(b.bit is None for op in operands for b in op.bits):
            return UInt32.constant(total & _MASK32)
        num_bits = (n * _MASK32).bit_length()
        witness = witness_mode(cs)
        result = [
            AllocatedBit.alloc(
                cs,
                None if total is None else bool((total >> i) & 1),
                None if witness else leaf(ns, f"result bit {i}"),
            )
            for i in range(num_bits)
        ]
        ops = list(operands)

        def lhs(terms: dict[int, int], mult: int) -> None:
            for op in ops:
                coeff = mult
                for bit in op.bits:
                    bit.add_to(terms, coeff)
                    coeff = coeff * 2 % R

        def rhs(terms: dict[int, int], mult: int) -> None:
            coeff = mult
            for b in result:
                key = b.variable.key
                merged = (terms.get(key, 0) + coeff) % R
                if merged:
                    terms[key] = merged
                else:
                    terms.pop(key, None)
                coeff = coeff * 2 % R

        meq.enforce_equal(num_bits, lhs, rhs)
        return UInt32([Boolean(b) for b in result[:32]], None if total is None else total & _MASK32)


def _value_of(bits_le: Sequence[Boolean]) -> int | None:
    v = 0
    for i, b in enumerate(bits_le):
        bv = b.value
        if bv is None:
            return None
        if bv:
            v |= 1 << i
    return v
