"""SHA-256 compressions in witness mode from a recorded tape, replayed natively.

The per-bit Python gadget (:func:`cuzk.gadgets.sha256.compression`) costs ~0.1 s per compression
in witness mode (~26,000 values), and the SHA-256 based Filecoin circuits run many (104 in one
2 KiB PoRep partition, nearly all of its witness time). Yet what one compression appends depends
only on its input pattern (:mod:`.slots`), so each pattern's first compression is traced into a
tape (:mod:`.trace`), and every later compression with the same pattern replays the tape over
the input bit values in numba and appends the resulting aux values in bulk.

When the system defers bit programs (``options.defer_bit_programs``: the backend runs them),
the host needs only a compression's eight output words, and takes them from SHA-256's own
compression of the input values (:mod:`~cuzk.gadgets.sha256.native`) instead of running the
program; the first-use check below compares those words too. A plain replay's outputs are
words whose Booleans are made only when read (:class:`_TapeWord`): the next compression of a
hash reads their values, and callers that hand over the block in bulk
(:class:`SlotBlock`, :mod:`~cuzk.gadgets.sha256.message`) skip the per-bit walk as well.

Because the tracer is a second copy of the gadget's logic, a pattern's first compression in a
synthesis cache (with the system's ``options.verify_first_use`` on, the default) runs the Python
gadget, replays the tape over the same inputs, and compares every appended value and every
output bit; a pattern that disagrees is never replayed (and logged). That check is deterministic
for *what* is allocated (counts, output variables) and catches any wrong value rule that shows
on those inputs — a systematic error in the tracer shows on thousands of bits; the tests compare
the two paths on random patterns and values. Check mode never comes here; shape mode has its own
templates (:mod:`~cuzk.gadgets.sha256.template`). Both run only where the constraint system's
:class:`~cuzk.r1cs.SynthesisOptions` has ``sha256_tapes`` on (the default).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np
from numba import njit

from cuzk.gadgets.boolean import FALSE, TRUE, AllocatedBit, Boolean, bits_le
from cuzk.gadgets.sha256.native import compress_slots
from cuzk.gadgets.sha256.slots import BIT_WEIGHTS, N_SLOTS, NO_WEIGHTS, fill
from cuzk.gadgets.sha256.trace import Tape, record
from cuzk.gadgets.uint32 import UInt32
from cuzk.r1cs import Variable, WitnessCS

log = logging.getLogger(__name__)

#: Patterns remembered at most (a tape is ~0.4 MB; Filecoin circuits use a handful); patterns
#: beyond it run the Python gadget.
MAX_TAPES = 256


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
    return v[1 + N_SLOTS :], _words_of(v, tape.out)


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
    # why the ignore below: a tape word makes its bits on demand where UInt32 stores them
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
    codes = bytearray(N_SLOTS)
    vals = bytearray(N_SLOTS)
    if isinstance(block, SlotBlock):
        codes[:512] = block.codes
        vals[:512] = block.vals
    else:
        _, n_bits, n_valued = fill(block, NO_WEIGHTS, codes, vals, None, 0)
        if n_valued < n_bits:
            return None
    i = 512
    for word in state:
        if type(word) is _TapeWord:
            v = word.value
            assert v is not None
            codes[i : i + 32] = _ALLOCATED32
            vals[i : i + 32] = bits_le(v, 32)
        else:
            wv, n_bits, n_valued = fill(word.bits, BIT_WEIGHTS, codes, vals, None, i)
            if n_valued < n_bits or wv != word.value:
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
        if node <= N_SLOTS:
            ab = inputs[node - 1]
        else:
            ab = made.get(node)
            if ab is None:
                ab = made[node] = AllocatedBit(Variable(base + node - 1 - N_SLOTS), bv != neg)
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
                # why the ignore below: neither bit is None here (the branch above took the
                # constants)
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
