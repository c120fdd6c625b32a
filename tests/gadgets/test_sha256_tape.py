"""SHA-256 compressions replayed from tapes: the witness (every aux and input value, in order)
and the returned digest bits must be exactly what the per-bit Python gadget gives.

Every test starts from an empty tape cache, and runs with first-use verification off (``UNCHECKED``)
unless it says otherwise, so the tape is replayed from the very first compression of each pattern
(the production default would run the Python gadget for that first one).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np
import pytest

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.gadgets.boolean import FALSE, TRUE, AllocatedBit, Boolean
from cuzk.gadgets.multipack import bytes_to_bits
from cuzk.gadgets.sha256 import IV, compress_native, compression, iv, sha256
from cuzk.gadgets.sha256 import tape as sha256_tape
from cuzk.gadgets.sha256.native import compress_slots
from cuzk.gadgets.uint32 import UInt32
from cuzk.r1cs import (
    DEFAULT_OPTIONS,
    PROCESS_CACHE,
    PYTHON_GADGETS,
    ConstraintSystem,
    SynthesisOptions,
    Variable,
    WitnessCS,
)
from cuzk.r1cs.bitprog import AND, XOR
from cuzk.r1cs.deferred import DeferredAux
from tests.gadgets.helpers import bit_key, synthesize_all

#: Tapes on, replayed from a pattern's first compression.
UNCHECKED = SynthesisOptions(verify_first_use=False)
#: The same with the compressions' values deferred (the engine's GPU path).
DEFERRED = SynthesisOptions(verify_first_use=False, defer_bit_programs=True)


@pytest.fixture(autouse=True)
def fresh_tapes():
    PROCESS_CACHE.clear()
    yield
    PROCESS_CACHE.clear()


def _tapes() -> sha256_tape.Tapes:
    """The process cache's tapes (where the systems here record)."""
    return PROCESS_CACHE.memo(sha256_tape.Tapes)


def _both(
    build: Callable[[ConstraintSystem], list[Boolean]], options: SynthesisOptions = UNCHECKED
) -> tuple[WitnessCS, list[Boolean]]:
    """Run ``build`` through the tape (under ``options``) and through the Python gadget; assert
    equal witnesses and equal returned bits (same variables, values, negations); return the
    tape run."""
    tape_cs = WitnessCS(options)
    tape_bits = build(tape_cs)
    ref_cs = WitnessCS(PYTHON_GADGETS)
    ref_bits = build(ref_cs)
    assert tape_cs.inputs == ref_cs.inputs
    assert tape_cs.num_aux == len(ref_cs.aux)
    made = tape_cs.aux_vector()
    if isinstance(made, DeferredAux):  # the runs' values as the backend makes them
        assert made.deferred > 0
        assert np.array_equal(made.expand(), fr.from_ints(ref_cs.aux))
    else:
        diff = next(
            (i for i, (x, y) in enumerate(zip(tape_cs.aux, ref_cs.aux, strict=True)) if x != y),
            None,
        )
        assert diff is None, f"aux {diff} differs"
    assert [bit_key(b) for b in tape_bits] == [bit_key(b) for b in ref_bits]
    return tape_cs, tape_bits


def _random_bits(
    cs: ConstraintSystem, values: list[bool], rng: np.random.Generator, p_const: float
) -> list[Boolean]:
    """Booleans spelling ``values``: constants with probability ``p_const``, else allocated bits,
    half of them negated views of a bit holding the opposite value."""
    out = []
    for v in values:
        r = rng.random()
        if r < p_const:
            out.append(Boolean.const(v))
        elif r < p_const + (1 - p_const) / 2:
            out.append(Boolean(AllocatedBit.alloc(cs, v)))
        else:
            out.append(Boolean(AllocatedBit.alloc(cs, not v), True))
    return out


def _digest(bits: list[Boolean]) -> bytes:
    return bytes(
        sum(int(b.value) << (7 - j) for j, b in enumerate(bits[i : i + 8]))
        for i in range(0, 256, 8)
    )


@pytest.mark.parametrize("options", [UNCHECKED, DEFERRED], ids=["replayed", "deferred"])
@pytest.mark.parametrize("n_bytes", [32, 64, 100, 150])  # 1, 2, 2 and 3 blocks
def test_sha256_with_mixed_constant_bits(
    rng: np.random.Generator, n_bytes: int, options: SynthesisOptions
) -> None:
    data = rng.bytes(n_bytes)
    values = bytes_to_bits(data)
    p_const = rng.choice([0.0, 0.05, 0.5, 0.95])
    seed = int(rng.integers(1 << 32))

    def build(cs: ConstraintSystem) -> list[Boolean]:
        return sha256(cs, _random_bits(cs, values, np.random.default_rng(seed), p_const))

    _, bits = _both(build, options)
    assert _digest(bits) == hashlib.sha256(data).digest()


def test_sha256_of_allocated_bits_all_modes(rng: np.random.Generator) -> None:
    """Check mode (the Python gadget) and witness mode (the tape) allocate the same values, and
    the shape's rows, recorded without values, hold on the tape's witness."""
    data = rng.bytes(int(rng.integers(1, 120)))

    def build(cs: ConstraintSystem, with_values: bool) -> list[Boolean]:
        bits = [
            Boolean(AllocatedBit.alloc(cs, b if with_values else None)) for b in bytes_to_bits(data)
        ]
        return sha256(cs, bits)

    run = synthesize_all(build)
    assert _digest(run.witness_result) == hashlib.sha256(data).digest()


@pytest.mark.parametrize("options", [UNCHECKED, DEFERRED], ids=["replayed", "deferred"])
def test_compression_with_allocated_and_mixed_state(
    rng: np.random.Generator, options: SynthesisOptions
) -> None:
    """A state of allocated words, partly constant or negated bits, and a deferred chain of two
    compressions whose second block reuses bits of the first."""
    block = rng.bytes(64)
    state = [int(x) for x in rng.integers(0, 1 << 32, size=8)]
    seed = int(rng.integers(1 << 32))

    def build(cs: ConstraintSystem) -> list[Boolean]:
        r = np.random.default_rng(seed)
        words = [
            UInt32(_random_bits(cs, [bool((v >> i) & 1) for i in range(32)], r, 0.2), v)
            for v in state
        ]
        bits = _random_bits(cs, bytes_to_bits(block), r, 0.1)
        out = compression(cs, bits, words)
        again = compression(cs, [b.not_() for b in bits[::-1]], out)
        return [b for w in (*out, *again) for b in w.into_bits_be()]

    _, bits = _both(build, options)
    first = compress_native(state, block)
    assert [b.value for b in bits[:256]] == [
        bool((w >> (31 - i)) & 1) for w in first for i in range(32)
    ]


def test_native_compression_of_slots_equals_the_bit_program_and_fips(
    rng: np.random.Generator,
) -> None:
    """The output words taken natively from a compression's 768 input slots (constants, bits,
    negated bits in random mixes) equal the words its recorded bit program computes and FIPS
    180-4's compression of the slots' values."""
    for p_const in (0.0, 0.05, 0.5, 0.95):
        n = 768
        codes = np.where(
            rng.random(n) < p_const, rng.integers(0, 2, n), rng.integers(2, 4, n)
        ).astype(np.uint8)
        vals = rng.integers(0, 2, n).astype(np.uint8)  # ignored where a slot is constant
        eff = np.where(codes < 2, codes, vals ^ (codes & 1)).astype(np.uint8)
        block = np.packbits(eff[:512]).tobytes()  # big-endian bits: SHA-256's byte order
        state = [sum(int(b) << k for k, b in enumerate(eff[512 + 32 * j : 544 + 32 * j]))
                 for j in range(8)]  # fmt: skip
        got = compress_slots(codes, vals).tolist()
        assert tuple(got) == compress_native(state, block)
        _, words = sha256_tape._replay(sha256_tape.record(codes.tobytes()), vals)
        assert words.tolist() == got


@pytest.mark.parametrize("options", [UNCHECKED, DEFERRED], ids=["replayed", "deferred"])
def test_replayed_words_make_their_bits_once_and_read_as_bits(
    rng: np.random.Generator, options: SynthesisOptions
) -> None:
    """A plain replayed compression returns words whose Booleans are made on first read (once,
    then the same objects), and the next compression reads such a word's slots exactly as it
    reads an ordinary word of the same bits."""
    cs = WitnessCS(options)
    bits = [Boolean(AllocatedBit.alloc(cs, bool(b))) for b in rng.integers(0, 2, size=512)]
    out = compression(cs, bits, iv())
    assert all(type(w) is sha256_tape._TapeWord for w in out)
    block = _random_bits(cs, bytes_to_bits(rng.bytes(64)), rng, 0.2)
    lazy = sha256_tape._gather(block, out)
    first = out[3].bits
    assert out[3].bits is first and out[3].into_bits_be()[0] is first[-1]
    words = [UInt32(list(w.bits), w.value) for w in out]
    assert lazy is not None and lazy == sha256_tape._gather(block, words)
    assert [w.value for w in out] == [UInt32.from_bits(w.bits).value for w in out]


def test_all_constant_compression_allocates_nothing() -> None:
    def build(cs: ConstraintSystem) -> list[Boolean]:
        return [b for w in compression(cs, [TRUE] + [FALSE] * 511, iv()) for b in w.bits]

    cs, bits = _both(build)
    assert cs.aux == [] and all(b.bit is None for b in bits)


def test_repeated_pattern_reuses_one_tape(rng: np.random.Generator) -> None:
    cs = WitnessCS(UNCHECKED)
    for _ in range(3):
        bits = [Boolean(AllocatedBit.alloc(cs, bool(b))) for b in rng.integers(0, 2, size=512)]
        compression(cs, bits, iv())
    assert len(_tapes()) == 1


def test_first_use_verification_rejects_a_wrong_tape(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tape that disagrees with the gadget (here: every xor recorded as an and) is caught on
    its first compression; that and every later compression of the pattern get the Python
    witness."""
    real = sha256_tape.record

    def broken(pattern: bytes) -> sha256_tape.Tape:
        tape = real(pattern)
        ops = tape.program.ops
        ops[ops[:, 0] == XOR, 0] = AND
        return tape

    monkeypatch.setattr(sha256_tape, "record", broken)
    datas = [rng.bytes(64) for _ in range(2)]

    def build(cs: ConstraintSystem) -> list[Boolean]:
        out = []
        for d in datas:
            out += sha256(cs, [Boolean(AllocatedBit.alloc(cs, b)) for b in bytes_to_bits(d)])
        return out

    _both(build, DEFAULT_OPTIONS)
    # Two patterns (an allocated block on the IV; the constant padding block): never replayed.
    assert list(_tapes().values()) == [None, None]


@pytest.mark.parametrize("defer", [False, True])
def test_first_use_verification_accepts_the_real_tape(
    rng: np.random.Generator, defer: bool
) -> None:
    data = rng.bytes(40)
    seed = int(rng.integers(1 << 32))

    def build(cs: ConstraintSystem) -> list[Boolean]:
        bits = _random_bits(cs, bytes_to_bits(data), np.random.default_rng(seed), 0.3)
        return sha256(cs, bits) + sha256(cs, bits)

    _both(build, SynthesisOptions(defer_bit_programs=defer))
    assert _tapes() and all(t is not None for t in _tapes().values())


def test_missing_value_raises_as_before() -> None:
    """A bit without a value in witness mode: the tape is skipped and the gadget reports it."""
    cs = WitnessCS(UNCHECKED)
    bits = [Boolean(AllocatedBit(Variable(i), True)) for i in range(511)]
    bits.append(Boolean(AllocatedBit(Variable(511), None)))
    with pytest.raises(BadInput):
        compression(cs, bits, iv())


def test_state_value_disagreeing_with_bits_follows_the_gadget(rng: np.random.Generator) -> None:
    """The gadget's additions read word values, the tape reads bits: a state word whose value
    contradicts its bits is left to the gadget, whatever it makes of it."""
    block = rng.bytes(64)

    def build(cs: ConstraintSystem) -> list[Boolean]:
        state = iv()
        state[3] = UInt32(state[3].bits, IV[3] ^ 1)
        bits = [Boolean(AllocatedBit.alloc(cs, b)) for b in bytes_to_bits(block)]
        return [b for w in compression(cs, bits, state) for b in w.bits]

    _both(build)
    assert _tapes() == {}


def test_patterns_beyond_the_cap_run_the_gadget(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sha256_tape, "MAX_TAPES", 1)
    data = rng.bytes(64)  # two patterns: the message block, then the padding block

    def build(cs: ConstraintSystem) -> list[Boolean]:
        return sha256(cs, [Boolean(AllocatedBit.alloc(cs, b)) for b in bytes_to_bits(data)])

    _, bits = _both(build)
    assert len(_tapes()) == 1
    assert _digest(bits) == hashlib.sha256(data).digest()


def _circuit_equality(cid: str, doc: str) -> None:
    from cuzk.circuits import open_statement
    from cuzk.r1cs import synthesize_witness

    circuit = open_statement(cid, payload=doc.encode()).circuit(0)
    tape = synthesize_witness(circuit, UNCHECKED)
    assert _tapes(), "the circuit ran no SHA-256 compression through a tape"
    ref = synthesize_witness(circuit, SynthesisOptions(sha256_tapes=False))
    assert tape.inputs == ref.inputs
    tape_aux, ref_aux = tape.aux_ints(), ref.aux_ints()
    assert len(tape_aux) == len(ref_aux)
    diff = next((i for i, (x, y) in enumerate(zip(tape_aux, ref_aux, strict=True)) if x != y), None)
    assert diff is None, f"aux {diff} differs"


def test_snapdeals_2k_witness_equals_python_path(seed: int) -> None:
    from cuzk.circuits.filecoin.snap_vanilla import generate_update

    _circuit_equality("snap-2k", generate_update(2048, seed))


@pytest.mark.slow
def test_porep_2k_witness_equals_python_path(seed: int) -> None:
    from cuzk.circuits.filecoin.seal import generate_c1

    _circuit_equality("porep-2k", generate_c1(2048, seed))
