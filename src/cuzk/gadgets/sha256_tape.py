"""SHA-256 compressions in witness mode from a recorded tape, replayed natively.

The per-bit Python gadget (:func:`cuzk.gadgets.sha256.compression`) costs ~0.1 s per compression
in witness mode (~26,000 values), and the SHA-256 based Filecoin circuits run many (104 in one
2 KiB PoRep partition, nearly all of its witness time). Yet *what* one
compression allocates, in which order, and from which operands, depends only on which of its
768 input bits (512 block bits, 8 state words) are constant and which are negated — never on the
values. So for each such *pattern* the gadget's structure is traced once into a tape, and every
later compression with the same pattern replays the tape over the input bit values in numba and
appends the resulting aux values in bulk.

The tracer below mirrors the gadget branch for branch (constant folding of ``xor``, ``and_``,
``sha256_ch``, ``sha256_maj`` in :mod:`~cuzk.gadgets.boolean`, ``addmany``'s fold, the deferred
``a``/``e`` additions of the compression). It works on *literals*: ``node << 1 | negated``, where
node 0 is the constant zero (so ``0`` is FALSE and ``1`` TRUE), nodes ``1..768`` are the input
slots and later nodes are the values the gadget appends to ``cs.aux``, in append order.

When the system defers bit programs (``options.defer_bit_programs``: the backend runs them),
the host needs only a compression's eight output words, and takes them from SHA-256's own
compression of the input values (:mod:`~cuzk.gadgets.sha256_native`) instead of running the
program; the first-use check below compares those words too. A plain replay's outputs are
words whose Booleans are made only when read (:class:`_TapeWord`): the next compression of a
hash reads their values, and callers that hand over the block in bulk
(:class:`SlotBlock`, :mod:`~cuzk.gadgets.sha256_message`) skip the per-bit walk as well.

Because the tracer is a second copy of the gadget's logic, a pattern's first compression in a
process (with the system's ``options.verify_first_use`` on, the default) runs the Python gadget,
replays the tape over the same inputs, and compares every appended value and every output bit;
a pattern that disagrees is never replayed (and logged). That check is deterministic for *what*
is allocated (counts, output variables) and catches any wrong value rule that shows on those
inputs — a systematic error in the tracer shows on thousands of bits; the tests compare the two
paths on random patterns and values. Check mode never comes here; shape mode has its own templates
(:mod:`~cuzk.gadgets.sha256_shape_tape`). Both run only where the constraint system's
:class:`~cuzk.r1cs.SynthesisOptions` has ``sha256_tapes`` on (the default).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numba import njit

from cuzk.gadgets.boolean import FALSE, TRUE, AllocatedBit, Boolean, bits_le
from cuzk.gadgets.sha256_constants import ROUND_CONSTANTS
from cuzk.gadgets.sha256_native import compress_slots
from cuzk.gadgets.uint32 import UInt32
from cuzk.r1cs import Variable, WitnessCS
from cuzk.r1cs.bitprog import ADD, AND, CH, MAJ, XOR, BitProgram

log = logging.getLogger(__name__)

#: Patterns remembered at most (a tape is ~0.4 MB; Filecoin circuits use a handful); patterns
#: beyond it run the Python gadget.
MAX_TAPES = 256

_MASK32 = 0xFFFFFFFF
_N_IN = 512 + 256  # input slots: block bits in the caller's order, then state[j].bits[k]
_BIT_WEIGHTS = tuple(1 << k for k in range(32))
_NO_WEIGHTS = (0,) * 512


def input_groups(
    block: Sequence[Boolean], state: Sequence[UInt32]
) -> Iterator[tuple[UInt32 | None, Sequence[Boolean], tuple[int, ...]]]:
    """The 768 input slots in order, as (word, bits, weights) groups: the block (no word, zero
    weights), then each state word with 2^k weights, so a walk that sums ``weights[k]`` over a
    group's set bits gets a state word's value without building a 512-bit one for the block."""
    yield None, block, _NO_WEIGHTS
    for word in state:
        yield word, word.bits, _BIT_WEIGHTS


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
        self.n_nodes = 1 + _N_IN
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
            n_in=_N_IN,
            n_aux=self.n_nodes - 1 - _N_IN,
        )
        return Tape(
            program=program,
            out=np.array(lits, dtype=np.int32),
            out_spec=[(lit >> 1, bool(lit & 1)) for lit in lits],
            plain_out=_plain_offsets(lits),
        )


def _plain_offsets(lits: list[int]) -> list[int] | None:
    nodes = [lit >> 1 for lit in lits]
    if any(lit & 1 or lit >> 1 <= _N_IN for lit in lits) or len(set(nodes)) != len(nodes):
        return None
    return [n - 1 - _N_IN for n in nodes]


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
    assert len(pattern) == _N_IN
    lits = [code if code < 2 else ((1 + i) << 1) | (code & 1) for i, code in enumerate(pattern)]
    tr = _Tracer()
    out = tr.compression(lits[:512], [lits[512 + 32 * j : 544 + 32 * j] for j in range(8)])
    return tr.tape(pattern, out)


@njit(cache=True, nogil=True)
def _words_of(v, out):  # pragma: no cover - numba
    """The eight output words' values from node values."""
    words = np.zeros(out.shape[0] // 32, dtype=np.int64)
    for j in range(out.shape[0]):
        lit = out[j]
        words[j >> 5] |= np.int64(v[lit >> 1] ^ (lit & 1)) << (j & 31)
    return words


def _replay(tape: Tape, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The appended values and the output words' values, by running the tape's program."""
    v = tape.program.run(inputs)
    return v[1 + _N_IN :], _words_of(v, tape.out)


class Tapes(dict[bytes, Tape | None]):
    """Each input pattern's tape, in a :class:`~cuzk.r1cs.memo.SynthesisCache` (None: the tape
    disagreed with the gadget; never replayed)."""


_UINT32_BITS = UInt32.__dict__["bits"]  # UInt32's slot, read and filled by _TapeWord.bits


class _TapeWord(UInt32):
    """A plain output word of a replayed compression (32 fresh, non-negated aux bits, value
    known): its Booleans are made on first use. A compression's outputs mostly feed the next
    compression of the same hash, whose :func:`_gather` reads the value alone, so the 256
    Boolean and AllocatedBit objects per compression are never made."""

    __slots__ = ("_base", "_offsets", "_at")

    def __init__(self, value: int, base: int, offsets: list[int], at: int) -> None:
        self.value = value
        self._base = base  # aux index of the compression's first appended value
        self._offsets = offsets  # the tape's plain_out
        self._at = at  # this word's first entry in offsets

    @property
    def bits(self) -> list[Boolean]:  # type: ignore[override]
        try:
            return _UINT32_BITS.__get__(self)
        except AttributeError:
            base, v, at = self._base, self.value, self._at
            assert v is not None
            offs = self._offsets[at : at + 32]
            made = [
                Boolean(AllocatedBit(Variable(base + o), (v >> k) & 1 == 1))
                for k, o in enumerate(offs)
            ]
            _UINT32_BITS.__set__(self, made)
            return made


_ALLOCATED32 = b"\x02" * 32


def _walk(
    group: Sequence[Boolean], weights: tuple[int, ...], codes: bytearray, vals: bytearray, i: int
) -> int | None:
    """Fill slots i… with ``group``'s codes and bit values; the sum of ``weights`` over its
    true bits, or None when a value is missing."""
    wv = 0
    for k, b in enumerate(group):
        ab = b.bit
        if ab is None:
            if b.constant:
                codes[i] = 1
                wv |= weights[k]
        else:
            v = ab.value
            if v is None:
                return None
            codes[i] = 3 if b.negated else 2
            vals[i] = 1 if v else 0
            if v != b.negated:
                wv |= weights[k]
        i += 1
    return wv


class SlotBlock:
    """A compression's 512 block bits handed over in bulk: the slots' codes and underlying bit
    values (what :func:`_gather` reads from Booleans) and a function making the Booleans, for
    the rare compression that needs them (a pattern's first use, outputs that alias inputs)."""

    __slots__ = ("codes", "vals", "booleans")

    def __init__(self, codes: bytes, vals: bytes, booleans: Callable[[], list[Boolean]]) -> None:
        assert len(codes) == len(vals) == 512
        self.codes = codes
        self.vals = vals
        self.booleans = booleans


Block = Sequence[Boolean] | SlotBlock


def _gather(block: Block, state: Sequence[UInt32]) -> tuple[bytes, bytearray] | None:
    """Pattern codes and underlying bit values of the 768 input slots; None when a value is
    missing or a state word's value disagrees with its bits (the gadget's additions read word
    values, the tape reads bits). A state word that a replay made (:class:`_TapeWord`) is
    read from its value."""
    codes = bytearray(_N_IN)
    vals = bytearray(_N_IN)
    if isinstance(block, SlotBlock):
        codes[:512] = block.codes
        vals[:512] = block.vals
    elif _walk(block, _NO_WEIGHTS, codes, vals, 0) is None:
        return None
    i = 512
    for word in state:
        if type(word) is _TapeWord:
            v = word.value
            assert v is not None
            codes[i : i + 32] = _ALLOCATED32
            vals[i : i + 32] = bits_le(v, 32)
        elif _walk(word.bits, _BIT_WEIGHTS, codes, vals, i) != word.value:
            return None
        i += 32
    return bytes(codes), vals


def _input_bits(block: Block, state: Sequence[UInt32]) -> list[AllocatedBit | None]:
    """The AllocatedBits of the 768 input slots (None for constants)."""
    bits = block.booleans() if isinstance(block, SlotBlock) else block
    return [b.bit for b in bits] + [b.bit for word in state for b in word.bits]


def _outputs(
    tape: Tape, words: list[int], base: int, block: Block, state: Sequence[UInt32]
) -> list[UInt32]:
    """The eight output words (values ``words``): Booleans over the appended values (aux
    ``base`` on), the input bits, or constants, as the gadget returns them."""
    plain = tape.plain_out
    if plain is not None:  # fresh bits, no constants, no aliasing: made when first read
        return [_TapeWord(v, base, plain, 32 * j) for j, v in enumerate(words)]
    inputs = _input_bits(block, state)
    made: dict[int, AllocatedBit] = {}
    bits: list[Boolean] = []
    append = bits.append
    for (node, neg), w in zip(tape.out_spec, _bits_of(words), strict=True):
        bv = w == 1
        if node == 0:
            append(TRUE if bv else FALSE)
            continue
        if node <= _N_IN:
            ab = inputs[node - 1]
        else:
            ab = made.get(node)
            if ab is None:
                ab = made[node] = AllocatedBit(Variable(base + node - 1 - _N_IN), bv != neg)
        append(Boolean(ab, neg))
    return [UInt32(bits[32 * j : 32 * j + 32], v) for j, v in enumerate(words)]


def _bits_of(words: list[int]) -> list[int]:
    """The words' bits, word by word, least significant first (the output literals' values)."""
    return [(w >> k) & 1 for w in words for k in range(32)]


def _same_words(xs: Sequence[UInt32], ys: Sequence[UInt32]) -> bool:
    for x, y in zip(xs, ys, strict=True):
        if x.value != y.value:
            return False
        for a, b in zip(x.bits, y.bits, strict=True):
            if (a.bit is None) != (b.bit is None):
                return False
            if a.bit is None:
                if a.constant != b.constant:
                    return False
            elif (
                a.negated != b.negated
                or a.bit.variable.key != b.bit.variable.key  # type: ignore[union-attr]
                or a.bit.value != b.bit.value  # type: ignore[union-attr]
            ):
                return False
    return True


def compress_witness(
    cs: WitnessCS, block: Block, state: Sequence[UInt32], python: Callable[[], list[UInt32]]
) -> list[UInt32]:
    """One compression in witness mode: replayed from the pattern's tape when possible, else
    (tapes off in ``cs.options``, a value missing, a new pattern under verification) by
    ``python()``. The block is Booleans, or their slots in bulk (:class:`SlotBlock`)."""
    options = cs.options
    got = _gather(block, state) if options.sha256_tapes else None
    if got is None:
        return python()
    pattern, vals = got
    tapes = cs.cache.memo(Tapes)
    tape = tapes.get(pattern, False)
    if tape is None:
        return python()
    verify = tape is False
    if verify:
        if len(tapes) >= MAX_TAPES:
            return python()
        tape = record(pattern)
        if not options.verify_first_use:
            tapes[pattern] = tape
            verify = False
    assert isinstance(tape, Tape)
    base = cs.num_aux
    if not verify and options.defer_bit_programs:
        # The program runs later (backend); only the output words are needed now.
        words = _native_words(pattern, vals)
        cs.defer(tape.program, bytes(vals))
        return _outputs(tape, words, base, block, state)
    appended, replayed = _replay(tape, np.frombuffer(vals, dtype=np.uint8))
    if not verify:
        cs.push_all(appended.tolist())
        return _outputs(tape, replayed.tolist(), base, block, state)
    local = len(cs.aux)
    ref = python()
    words = replayed.tolist()
    ok = (
        cs.aux[local:] == appended.tolist()
        and _native_words(pattern, vals) == words
        and _same_words(ref, _outputs(tape, words, base, block, state))
    )
    if ok:
        tapes[pattern] = tape
    else:
        tapes[pattern] = None
        log.warning("SHA-256 tape disagrees with the gadget for one input pattern; not replayed")
    return ref


def _native_words(pattern: bytes, vals: bytearray) -> list[int]:
    """The output words by SHA-256's own compression of the input slots' values."""
    codes = np.frombuffer(pattern, dtype=np.uint8)
    return compress_slots(codes, np.frombuffer(vals, dtype=np.uint8)).tolist()
