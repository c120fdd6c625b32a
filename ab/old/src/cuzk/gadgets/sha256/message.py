"""SHA-256 in witness mode of a message handed over in bulk, not as Boolean objects.

Filecoin's SHA-256 hashes (PoRep labels: 37 parent rows per label; TreeD nodes) take field
elements decomposed into 255 fresh bits, padded to 256 and bit-reversed per byte, and pack the
bit-reversed digest into one number. Done with Booleans, every bit is made three times over
(an AllocatedBit, a Boolean, a slot read by the tape's gather) although a replayed compression
only needs each slot's code and value. :class:`Message` holds exactly that — the slots' codes
and values as bytes, written in bulk — and :func:`sha256_packed` compresses it block by block
through the tapes (:class:`~cuzk.gadgets.sha256.tape.SlotBlock`) and packs the digest from the
output words' values. Same aux values, same order as the gadgets; the Booleans are made only
when a compression asks for them (a pattern's first, verified use; outputs aliasing inputs).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TypeGuard

from cuzk.errors import BadInput
from cuzk.gadgets._names import Name, leaf
from cuzk.gadgets.boolean import (
    FALSE,
    FR_NUM_BITS,
    TRUE,
    AllocatedBit,
    Boolean,
    alloc_bit_values,
    bits_le,
)
from cuzk.gadgets.multipack import FR_CAPACITY
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.sha256.circuit import _compression, iv
from cuzk.gadgets.sha256.slots import fill
from cuzk.gadgets.sha256.tape import SlotBlock, compress_witness
from cuzk.gadgets.uint32 import UInt32
from cuzk.r1cs import ConstraintSystem, Variable, WitnessCS, witness_mode

#: Slot j of a decomposed field element (255 bits + a zero pad, bytes bit-reversed) holds bit
#: _REVERSED[j] of the element (bit 255: the pad).
_REVERSED = tuple(8 * (j // 8) + 7 - j % 8 for j in range(256))
_FIELD_CODES = bytes(2 if i < FR_NUM_BITS else 0 for i in _REVERSED)
_PACK_MASK = (1 << FR_CAPACITY) - 1

_LOW_BITS = (1 << FR_NUM_BITS) - 1

#: A field element's fresh bits: (first variable key, the value of its 255 bits).
FieldBits = tuple[int, int]


def field_bits(cs: WitnessCS, num: AllocatedNum) -> FieldBits:
    """``num.to_bits_le(cs)`` in witness mode (the same 255 aux values), without objects."""
    if num.value is None:
        raise BadInput("a number decomposed into bits has no value (witness mode needs it)")
    return alloc_bit_values(cs, num.value, FR_NUM_BITS)[0], num.value & _LOW_BITS


def fast_path(cs: ConstraintSystem) -> TypeGuard[WitnessCS]:
    """Whether ``cs`` takes hashes through :class:`Message`: witness mode with tapes on (with
    them off, the gadgets are the reference and run as written)."""
    return witness_mode(cs) and cs.options.sha256_tapes


class Message:
    """A SHA-256 message as its slots' codes (0/1 constant, 2 a bit, 3 a negated bit) and
    underlying values, with what each stretch came from."""

    def __init__(self) -> None:
        self.codes = bytearray()
        self.vals = bytearray()
        self._parts: list[tuple[int, Sequence[Boolean] | int]] = []

    def add_bits(self, bits: Sequence[Boolean]) -> None:
        """Booleans as they are (read once)."""
        start = len(self.codes)
        self.codes.extend(bytes(len(bits)))
        self.vals.extend(bytes(len(bits)))
        _, n_bits, n_valued = fill(bits, (0,) * len(bits), self.codes, self.vals, None, start)
        if n_valued < n_bits:
            raise BadInput("a SHA-256 input bit has no value (witness mode needs every value)")
        self._parts.append((start, bits))

    def add_field(self, bits: FieldBits) -> None:
        """A decomposed field element: its 255 bits and a constant zero, each byte's bits
        reversed (``reverse_bit_numbering`` of ``to_bits_le``)."""
        key, value = bits
        self._parts.append((len(self.codes), key))
        self.codes += _FIELD_CODES
        # Bytes little-endian, each most significant bit first: the per-byte reversal of the
        # 256 bits least significant first (bit 255, the pad, is 0).
        swapped = int.from_bytes(value.to_bytes(32, "little"), "big")
        self.vals += bits_le(swapped, 256)[::-1]

    def pad(self) -> None:
        """SHA-256's padding, as constants (:func:`cuzk.gadgets.sha256.pad`)."""
        n = len(self.codes)
        assert n % 8 == 0, "SHA-256 input must be whole bytes"
        zeros = (-(n + 1) - 64) % 512
        tail = b"\x01" + bytes(zeros) + bytes((n >> i) & 1 for i in range(63, -1, -1))
        self.codes += tail
        self.vals += bytes(len(tail))

    def booleans(self, lo: int, hi: int) -> list[Boolean]:
        """The Booleans of slots lo…hi−1 (the given ones; new objects for field bits)."""
        out = [TRUE if c == 1 else FALSE for c in self.codes[lo:hi]]
        for start, part in self._parts:
            if isinstance(part, int):
                for j, src in enumerate(_REVERSED):
                    if src < FR_NUM_BITS and lo <= start + j < hi:
                        bit = AllocatedBit(Variable(part + src), self.vals[start + j] == 1)
                        out[start + j - lo] = Boolean(bit)
            else:
                for j, b in enumerate(part):
                    if lo <= start + j < hi:
                        out[start + j - lo] = b
        return out


def sha256_words(cs: WitnessCS, msg: Message, ns: Name = None) -> list[UInt32]:
    """SHA-256 of ``msg`` (padded here): the eight digest words, as
    :func:`cuzk.gadgets.sha256.sha256` computes them (block i under ``block i``)."""
    msg.pad()
    cur = iv()
    for lo in range(0, len(msg.codes), 512):
        hi = lo + 512
        block = SlotBlock(
            bytes(msg.codes[lo:hi]), bytes(msg.vals[lo:hi]), partial(msg.booleans, lo, hi)
        )
        gadget = partial(_gadget, cs, block, cur, leaf(ns, f"block {lo // 512}"))
        cur = compress_witness(cs, block, cur, gadget)
    return cur


def _gadget(cs: WitnessCS, block: SlotBlock, state: list[UInt32], ns: Name) -> list[UInt32]:
    return _compression(cs, block.booleans(), state, ns)


def sha256_packed(cs: WitnessCS, msg: Message, ns: Name = None) -> AllocatedNum:
    """SHA-256 of ``msg``, its digest's bits reversed per byte and the first 254 packed into one
    number: ``pack_bits(reverse_bit_numbering(sha256(bits))[:254])`` in witness mode."""
    words = sha256_words(cs, msg, leaf(ns, "hash"))
    # why the ignore below: in witness mode every word has a value
    digest = b"".join(w.value.to_bytes(4, "big") for w in words)  # type: ignore[union-attr]
    return AllocatedNum.alloc(cs, int.from_bytes(digest, "little") & _PACK_MASK, leaf(ns, "pack"))
