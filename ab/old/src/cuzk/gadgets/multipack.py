"""Packing bits into field elements: bellperson's ``multipack`` (inputs and single numbers).

Bits pack little-endian (bit i has weight 2^i) in chunks of 254 bits — Fr's ``CAPACITY``, the
most bits that always fit below r.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress
from operator import attrgetter

from cuzk.field.constants import R
from cuzk.gadgets._names import Name, leaf
from cuzk.gadgets.boolean import Boolean
from cuzk.gadgets.num import POW2, AllocatedNum, Num
from cuzk.r1cs import ONE, ConstraintSystem

#: Bits that always fit in one Fr element (bellpepper's ``Scalar::CAPACITY``).
FR_CAPACITY = 254


_VALUE = attrgetter("value")


def _pack(bits: Sequence[Boolean], track: bool) -> Num:
    """Σ 2^i b_i over at most 254 bits, with its linear combination when ``track``."""
    if not track:  # witness mode: the value alone, summed in C
        values = list(map(_VALUE, bits))
        if None in values:
            return Num(None, None)
        return Num(sum(compress(POW2, values)), None)
    num = Num.zero(track)
    coeff = 1
    for bit in bits:
        num = num.add_bool_with_coeff(bit, coeff)
        coeff = coeff * 2 % R
    return num


def pack_into_inputs(cs: ConstraintSystem, bits: Sequence[Boolean], ns: Name = None) -> None:
    """One public input per 254-bit chunk, each with ``Σ 2^i b_i · 1 = input``."""
    track = cs.needs_constraints
    for i in range(0, len(bits), FR_CAPACITY):
        chunk = i // FR_CAPACITY
        num = _pack(bits[i : i + FR_CAPACITY], track)
        inp = cs.alloc_input(leaf(ns, f"input {chunk}"), num.value)
        cs.enforce(leaf(ns, f"packing constraint {chunk}"), lambda lc, n=num: n.lc(), ONE, inp)


def pack_bits(cs: ConstraintSystem, bits: Sequence[Boolean], ns: Name = None) -> AllocatedNum:
    """The first 254 bits as one private number (one variable, one constraint)."""
    num = _pack(bits[:FR_CAPACITY], cs.needs_constraints)
    alloc = AllocatedNum.alloc(cs, num.value, leaf(ns, "input"))
    cs.enforce(leaf(ns, "packing constraint"), lambda lc: num.lc(), ONE, alloc.variable)
    return alloc


def compute_multipacking(bits: Sequence[bool]) -> list[int]:
    """The public-input values :func:`pack_into_inputs` allocates for these bits."""
    out = []
    for i in range(0, len(bits), FR_CAPACITY):
        out.append(sum(1 << j for j, b in enumerate(bits[i : i + FR_CAPACITY]) if b) % R)
    return out


def bytes_to_bits(data: bytes) -> list[bool]:
    """Most significant bit of each byte first (SHA-256's order)."""
    return [bool((v >> i) & 1) for v in data for i in range(7, -1, -1)]


def bytes_to_bits_le(data: bytes) -> list[bool]:
    """Least significant bit of each byte first."""
    return [bool((v >> i) & 1) for v in data for i in range(8)]
