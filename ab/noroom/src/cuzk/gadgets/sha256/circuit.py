"""SHA-256 in a circuit: bellperson's ``sha256`` gadget, constraint for constraint.

Bits are big-endian within each 32-bit word (SHA-256's own order); padding, IV and round
constants are constant booleans, so they cost nothing and fold through xor/ch/maj/addmany. Two
tricks of the upstream gadget shape the constraint order and must be kept:

* the new ``a`` and ``e`` of each round are *deferred*: their operand lists are kept and summed
  by the next round's ``addmany`` (one addition of 5–7 operands instead of two);
* all additions of one compression share a :class:`~cuzk.gadgets.multieq.MultiEq`, flushed when
  a batch would overflow 253 bits and once after the final ``h0..h7`` additions.

Counts (upstream tests): compression of 512 allocated bits 25,840 constraints; ``sha256`` of 512
allocated bits (a second, all-constant padding block) 44,874.
"""

from __future__ import annotations

from collections.abc import Sequence

from cuzk.gadgets._names import Name, leaf
from cuzk.gadgets.boolean import FALSE, TRUE, Boolean
from cuzk.gadgets.multieq import MultiEq
from cuzk.gadgets.sha256.constants import IV, ROUND_CONSTANTS
from cuzk.gadgets.sha256.tape import compress_witness
from cuzk.gadgets.sha256.template import compress_shape
from cuzk.gadgets.uint32 import UInt32
from cuzk.r1cs import ConstraintSystem, shape_mode, witness_mode


def iv() -> list[UInt32]:
    return [UInt32.constant(v) for v in IV]


class _Deferred:
    """A word known only as a sum still to be computed (upstream's ``Maybe::Deferred``)."""

    __slots__ = ("operands",)

    def __init__(self, operands: list[UInt32]) -> None:
        self.operands = operands


def _compute(
    cs: ConstraintSystem, meq: MultiEq, x: UInt32 | _Deferred, others: Sequence[UInt32], ns: Name
) -> UInt32:
    if isinstance(x, UInt32):
        return x  # upstream returns a concrete word as is, ignoring `others`
    return UInt32.addmany(cs, meq, [*x.operands, *others], ns)


def compression(
    cs: ConstraintSystem, block: Sequence[Boolean], state: Sequence[UInt32], ns: Name = None
) -> list[UInt32]:
    """One SHA-256 compression of a 512-bit block (big-endian bits) into ``state``.

    In witness mode the compression is replayed from a recorded tape
    (:mod:`~cuzk.gadgets.sha256.tape`): the same values in the same order, computed natively.
    In shape mode the rows a compression appends are a recorded template's, mapped to this
    call's variables (:mod:`~cuzk.gadgets.sha256.template`): the same rows and names.
    """
    assert len(block) == 512 and len(state) == 8
    if witness_mode(cs):
        return compress_witness(cs, block, state, lambda: _compression(cs, block, state, ns))
    if shape_mode(cs):
        return compress_shape(cs, block, state, ns, _compression)
    return _compression(cs, block, state, ns)


def _compression(
    cs: ConstraintSystem, block: Sequence[Boolean], state: Sequence[UInt32], ns: Name
) -> list[UInt32]:
    """The gadget itself, bit by bit (every mode; the reference for the tape)."""
    meq = MultiEq(cs)
    w = [UInt32.from_bits_be(block[i : i + 32]) for i in range(0, 512, 32)]

    for i in range(16, 64):
        p = leaf(ns, f"w extension {i}")
        x15, x2 = w[i - 15], w[i - 2]
        s0 = x15.rotr(7).xor(cs, x15.rotr(18), leaf(p, "first xor for s0"))
        s0 = s0.xor(cs, x15.shr(3), leaf(p, "second xor for s0"))
        s1 = x2.rotr(17).xor(cs, x2.rotr(19), leaf(p, "first xor for s1"))
        s1 = s1.xor(cs, x2.shr(10), leaf(p, "second xor for s1"))
        w.append(
            UInt32.addmany(cs, meq, [w[i - 16], s0, w[i - 7], s1], leaf(p, "computation of w[i]"))
        )

    a: UInt32 | _Deferred = state[0]
    b, c, d = state[1], state[2], state[3]
    e: UInt32 | _Deferred = state[4]
    f, g, h = state[5], state[6], state[7]

    for i in range(64):
        p = leaf(ns, f"compression round {i}")
        new_e = _compute(cs, meq, e, (), leaf(p, "deferred e computation"))
        s1 = new_e.rotr(6).xor(cs, new_e.rotr(11), leaf(p, "first xor for s1"))
        s1 = s1.xor(cs, new_e.rotr(25), leaf(p, "second xor for s1"))
        ch = UInt32.sha256_ch(cs, new_e, f, g, leaf(p, "ch"))
        temp1 = [h, s1, ch, UInt32.constant(ROUND_CONSTANTS[i]), w[i]]

        new_a = _compute(cs, meq, a, (), leaf(p, "deferred a computation"))
        s0 = new_a.rotr(2).xor(cs, new_a.rotr(13), leaf(p, "first xor for s0"))
        s0 = s0.xor(cs, new_a.rotr(22), leaf(p, "second xor for s0"))
        maj = UInt32.sha256_maj(cs, new_a, b, c, leaf(p, "maj"))

        h, g, f = g, f, new_e
        e = _Deferred([*temp1, d])
        d, c, b = c, b, new_a
        a = _Deferred([*temp1, s0, maj])

    out = [
        _compute(cs, meq, a, [state[0]], leaf(ns, "deferred h0 computation")),
        UInt32.addmany(cs, meq, [state[1], b], leaf(ns, "new h1")),
        UInt32.addmany(cs, meq, [state[2], c], leaf(ns, "new h2")),
        UInt32.addmany(cs, meq, [state[3], d], leaf(ns, "new h3")),
        _compute(cs, meq, e, [state[4]], leaf(ns, "deferred h4 computation")),
        UInt32.addmany(cs, meq, [state[5], f], leaf(ns, "new h5")),
        UInt32.addmany(cs, meq, [state[6], g], leaf(ns, "new h6")),
        UInt32.addmany(cs, meq, [state[7], h], leaf(ns, "new h7")),
    ]
    meq.finish()
    return out


def sha256_block_no_padding(
    cs: ConstraintSystem, block: Sequence[Boolean], ns: Name = None
) -> list[Boolean]:
    """The IV compressed with one 512-bit block, no padding: 256 big-endian digest bits."""
    return [bit for word in compression(cs, block, iv(), ns) for bit in word.into_bits_be()]


def pad(bits: Sequence[Boolean]) -> list[Boolean]:
    """SHA-256 padding with constant bits: 1, zeros, then the bit length as 64 bits."""
    assert len(bits) % 8 == 0, "SHA-256 input must be whole bytes"
    n = len(bits)
    padded = [*bits, TRUE]
    padded.extend([FALSE] * ((-len(padded) - 64) % 512))
    padded.extend(Boolean.const(bool((n >> i) & 1)) for i in range(63, -1, -1))
    assert len(padded) % 512 == 0
    return padded


def compress_native(state: Sequence[int], block: bytes) -> tuple[int, ...]:
    """The native counterpart of :func:`compression`: FIPS 180-4's compression of one 64-byte
    block into eight 32-bit words (no padding)."""
    assert len(block) == 64 and len(state) == 8

    def rotr(x: int, n: int) -> int:
        return ((x >> n) | (x << (32 - n))) & 0xFFFFFFFF

    w = [int.from_bytes(block[i : i + 4], "big") for i in range(0, 64, 4)]
    for i in range(16, 64):
        s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3)
        s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10)
        w.append((w[i - 16] + s0 + w[i - 7] + s1) & 0xFFFFFFFF)
    a, b, c, d, e, f, g, h = state
    for i in range(64):
        s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)
        ch = (e & f) ^ (~e & g)
        t1 = (h + s1 + ch + ROUND_CONSTANTS[i] + w[i]) & 0xFFFFFFFF
        s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)
        maj = (a & b) ^ (a & c) ^ (b & c)
        h, g, f, e, d, c, b, a = (
            g,
            f,
            e,
            (d + t1) & 0xFFFFFFFF,
            c,
            b,
            a,
            (t1 + s0 + maj) & 0xFFFFFFFF,
        )
    return tuple((x + y) & 0xFFFFFFFF for x, y in zip(state, (a, b, c, d, e, f, g, h), strict=True))


def sha256(cs: ConstraintSystem, bits: Sequence[Boolean], ns: Name = None) -> list[Boolean]:
    """SHA-256 of a whole number of bytes (bits big-endian per byte): 256 digest bits, big-endian.

    Each block is compressed under the namespace ``block i``.
    """
    padded = pad(bits)
    cur = iv()
    for i in range(0, len(padded), 512):
        cur = compression(cs, padded[i : i + 512], cur, leaf(ns, f"block {i // 512}"))
    return [bit for word in cur for bit in word.into_bits_be()]
