"""Tracing a SHA-256 compression into a tape: what it appends, as a bit program.

*What* one compression allocates, in which order, and from which operands, depends only on its
input pattern (:mod:`.slots`) — never on the values. :func:`record` traces the gadget's
structure for one pattern into a :class:`Tape`, which :mod:`.tape` replays over every later
compression's values.

The tracer mirrors the gadget branch for branch (constant folding of ``xor``, ``and_``,
``sha256_ch``, ``sha256_maj`` in :mod:`~cuzk.gadgets.boolean`, ``addmany``'s fold, the deferred
``a``/``e`` additions of the compression). It works on *literals*: ``node << 1 | negated``, where
node 0 is the constant zero (so ``0`` is FALSE and ``1`` TRUE), nodes ``1..768`` are the input
slots and later nodes are the values the gadget appends, in append order. Being a second copy of
the gadget's logic, it is checked against the gadget on each pattern's first use (:mod:`.tape`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cuzk.gadgets.sha256.constants import ROUND_CONSTANTS
from cuzk.gadgets.sha256.slots import N_SLOTS
from cuzk.r1cs.bitprog import ADD, AND, CH, MAJ, XOR, BitProgram

_MASK32 = 0xFFFFFFFF


# Opcodes (:mod:`cuzk.r1cs.bitprog`). Bit ops append one value; _ADD appends ``z`` bits of a
# sum of ``y`` words whose literals start at ``x`` in the tape's word-literal array.
_XOR, _AND, _CH, _MAJ, _ADD = XOR, AND, CH, MAJ, ADD

Word = list[int]  # 32 literals, least significant first


@dataclass
class Tape:
    """One pattern's recorded compression: the bit program of its appended values and where
    its output bits are."""

    program: BitProgram
    out: np.ndarray  # (256,) int32 literals of the output words, word-major, LSB first
    out_spec: list[tuple[int, bool]]  # (node, negated) per output literal, for the Python loop
    #: When every output literal is a distinct appended value, not negated (the usual case:
    #: the final additions' sum bits), their offsets from the first appended value.
    plain_out: list[int] | None = None

    @property
    def n_aux(self) -> int:
        """Values appended per compression."""
        return self.program.n_aux


class _Tracer:
    """Builds a tape while mirroring the witness-mode gadget's folding and allocation order."""

    def __init__(self) -> None:
        self.n_nodes = 1 + N_SLOTS
        self.ops: list[tuple[int, int, int, int]] = []
        self.words: list[int] = []

    def _new(self, op: int, x: int, y: int, z: int = 0) -> int:
        self.ops.append((op, x, y, z))
        node = self.n_nodes
        self.n_nodes += 1
        return node << 1

    # --- boolean.py ---------------------------------------------------------------------------
    def xor(self, a: int, b: int) -> int:
        if a == 0:
            return b
        if b == 0:
            return a
        if a == 1:
            return b ^ 1
        if b == 1:
            return a ^ 1
        # AllocatedBit.xor of the two underlying bits; negated iff exactly one side was.
        return self._new(_XOR, a & ~1, b & ~1) | ((a ^ b) & 1)

    def and_(self, a: int, b: int) -> int:
        if a == 0 or b == 0:
            return 0
        if a == 1:
            return b
        if b == 1:
            return a
        # and / and_not / nor: the value is always (lit a) ∧ (lit b).
        return self._new(_AND, a, b)

    def ch(self, a: int, b: int, c: int) -> int:
        if a < 2 and b < 2 and c < 2:
            return (a & b) ^ ((a ^ 1) & c)
        if a == 0:
            return c
        if b == 0:
            return self.and_(a ^ 1, c)
        if c == 0:
            return self.and_(a, b)
        if c == 1:
            return self.and_(a, b ^ 1) ^ 1
        if b == 1:
            return self.and_(a ^ 1, c ^ 1) ^ 1
        return self._new(_CH, a, b, c)

    def maj(self, a: int, b: int, c: int) -> int:
        if a < 2 and b < 2 and c < 2:
            return (a & b) ^ (a & c) ^ (b & c)
        if a == 0:
            return self.and_(b, c)
        if b == 0:
            return self.and_(a, c)
        if c == 0:
            return self.and_(a, b)
        if c == 1:
            return self.and_(a ^ 1, b ^ 1) ^ 1
        if b == 1:
            return self.and_(a ^ 1, c ^ 1) ^ 1
        if a == 1:
            return self.and_(b ^ 1, c ^ 1) ^ 1
        out = self._new(_MAJ, a, b, c)
        self.and_(b, c)  # the gadget's second variable, b ∧ c
        return out

    # --- uint32.py ----------------------------------------------------------------------------
    def wxor(self, x: Word, y: Word) -> Word:
        return [self.xor(a, b) for a, b in zip(x, y, strict=True)]

    def wch(self, x: Word, y: Word, z: Word) -> Word:
        return [self.ch(a, b, c) for a, b, c in zip(x, y, z, strict=True)]

    def wmaj(self, x: Word, y: Word, z: Word) -> Word:
        return [self.maj(a, b, c) for a, b, c in zip(x, y, z, strict=True)]

    def addmany(self, operands: Sequence[Word]) -> Word:
        n = len(operands)
        assert 2 <= n <= 10
        if all(lit < 2 for w in operands for lit in w):
            total = sum(_const_value(w) for w in operands)
            return _const_word(total & _MASK32)
        num_bits = (n * _MASK32).bit_length()
        start = len(self.words)
        for w in operands:
            self.words.extend(w)
        self.ops.append((_ADD, start, n, num_bits))
        first = self.n_nodes
        self.n_nodes += num_bits
        return [(first + i) << 1 for i in range(32)]

    # --- sha256.py ----------------------------------------------------------------------------
    def compression(self, block: Word, state: list[Word]) -> list[Word]:
        w = [block[i : i + 32][::-1] for i in range(0, 512, 32)]
        for i in range(16, 64):
            x15, x2 = w[i - 15], w[i - 2]
            s0 = self.wxor(self.wxor(_rotr(x15, 7), _rotr(x15, 18)), _shr(x15, 3))
            s1 = self.wxor(self.wxor(_rotr(x2, 17), _rotr(x2, 19)), _shr(x2, 10))
            w.append(self.addmany([w[i - 16], s0, w[i - 7], s1]))

        # A deferred word is a tuple of operand words; a concrete one a list of literals.
        a: Word | tuple[Word, ...] = state[0]
        b, c, d = state[1], state[2], state[3]
        e: Word | tuple[Word, ...] = state[4]
        f, g, h = state[5], state[6], state[7]

        def compute(x: Word | tuple[Word, ...], others: Sequence[Word]) -> Word:
            return x if isinstance(x, list) else self.addmany([*x, *others])

        for i in range(64):
            new_e = compute(e, ())
            s1 = self.wxor(self.wxor(_rotr(new_e, 6), _rotr(new_e, 11)), _rotr(new_e, 25))
            ch = self.wch(new_e, f, g)
            temp1 = [h, s1, ch, _const_word(ROUND_CONSTANTS[i]), w[i]]
            new_a = compute(a, ())
            s0 = self.wxor(self.wxor(_rotr(new_a, 2), _rotr(new_a, 13)), _rotr(new_a, 22))
            maj = self.wmaj(new_a, b, c)
            h, g, f = g, f, new_e
            e = (*temp1, d)
            d, c, b = c, b, new_a
            a = (*temp1, s0, maj)

        return [
            compute(a, [state[0]]),
            self.addmany([state[1], b]),
            self.addmany([state[2], c]),
            self.addmany([state[3], d]),
            compute(e, [state[4]]),
            self.addmany([state[5], f]),
            self.addmany([state[6], g]),
            self.addmany([state[7], h]),
        ]

    def tape(self, pattern: bytes, out: list[Word]) -> Tape:
        lits = [lit for w in out for lit in w]
        program = BitProgram(
            key=b"sha256:" + pattern,
            ops=np.array(self.ops, dtype=np.int32).reshape(-1, 4),
            words=np.array(self.words, dtype=np.int32),
            n_in=N_SLOTS,
            n_aux=self.n_nodes - 1 - N_SLOTS,
        )
        return Tape(
            program=program,
            out=np.array(lits, dtype=np.int32),
            out_spec=[(lit >> 1, bool(lit & 1)) for lit in lits],
            plain_out=_plain_offsets(lits),
        )


def _plain_offsets(lits: list[int]) -> list[int] | None:
    nodes = [lit >> 1 for lit in lits]
    if any(lit & 1 or lit >> 1 <= N_SLOTS for lit in lits) or len(set(nodes)) != len(nodes):
        return None
    return [n - 1 - N_SLOTS for n in nodes]


def _rotr(x: Word, by: int) -> Word:
    by %= 32
    return x[by:] + x[:by]


def _shr(x: Word, by: int) -> Word:
    return x[by:] + [0] * by


def _const_word(value: int) -> Word:
    return [(value >> i) & 1 for i in range(32)]


def _const_value(w: Word) -> int:
    return sum(lit << i for i, lit in enumerate(w))


def record(pattern: bytes) -> Tape:
    """Trace one compression whose input slots have the given codes (0 FALSE, 1 TRUE, 2 a bit,
    3 a negated bit; block bits then state words' bits LSB first)."""
    assert len(pattern) == N_SLOTS
    lits = [code if code < 2 else ((1 + i) << 1) | (code & 1) for i, code in enumerate(pattern)]
    tr = _Tracer()
    out = tr.compression(lits[:512], [lits[512 + 32 * j : 544 + 32 * j] for j in range(8)])
    return tr.tape(pattern, out)
