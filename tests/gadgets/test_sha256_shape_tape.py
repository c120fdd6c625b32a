"""SHA-256 compressions in shape mode from recorded templates: every row of A, B and C, every
name, the variable counts and the returned words must be exactly what the per-constraint Python
gadget gives.

Every test starts from an empty template cache, and runs with first-use verification off
(``UNCHECKED``) unless it says otherwise, so templates are replayed from the very first
compression of each pattern (the production default would run the Python gadget for that first
one and compare).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from cuzk.gadgets.boolean import FALSE, TRUE, AllocatedBit, Boolean
from cuzk.gadgets.sha256 import IV, compression, iv, sha256
from cuzk.gadgets.sha256 import template as sha256_shape_tape
from cuzk.gadgets.uint32 import UInt32
from cuzk.r1cs import (
    DEFAULT_OPTIONS,
    PROCESS_CACHE,
    PYTHON_GADGETS,
    ShapeCS,
    SynthesisOptions,
    Variable,
)
from tests.gadgets.helpers import bit_key

Build = Callable[[ShapeCS], list[UInt32]]


#: Templates on, replayed from a pattern's first compression.
UNCHECKED = SynthesisOptions(verify_first_use=False)


@pytest.fixture(autouse=True)
def fresh_templates():
    PROCESS_CACHE.clear()
    yield
    PROCESS_CACHE.clear()


def _templates() -> sha256_shape_tape.Templates:
    """The process cache's templates (where the systems here record)."""
    return PROCESS_CACHE.memo(sha256_shape_tape.Templates)


def _content(cs: ShapeCS) -> tuple:
    return cs.num_inputs, cs.num_aux, cs.rows_from(0), cs.names


def _both(build: Build, options: SynthesisOptions = UNCHECKED) -> ShapeCS:
    """Run ``build`` with templates (under ``options``) and through the Python gadget; assert the
    same shape content and the same returned words (bits over the same variables, negations,
    values)."""
    tape_cs = ShapeCS(options)
    tape_words = build(tape_cs)
    ref_cs = ShapeCS(PYTHON_GADGETS)
    ref_words = build(ref_cs)
    assert tape_cs.num_aux == ref_cs.num_aux and tape_cs.num_inputs == ref_cs.num_inputs
    assert len(tape_cs.names) == len(ref_cs.names)
    diff = next(
        (i for i, (x, y) in enumerate(zip(tape_cs.names, ref_cs.names, strict=True)) if x != y),
        None,
    )
    assert diff is None, f"name {diff}: {tape_cs.names[diff]!r} != {ref_cs.names[diff]!r}"
    for m, (got, ref) in enumerate(zip(tape_cs.rows_from(0), ref_cs.rows_from(0), strict=True)):
        for part, g, r in zip(("row ends", "keys", "coefficients"), got, ref, strict=True):
            assert g == r, f"matrix {'ABC'[m]}: {part} differ"
    assert _content(tape_cs) == _content(ref_cs)
    assert [w.value for w in tape_words] == [w.value for w in ref_words]
    assert [bit_key(b) for w in tape_words for b in w.bits] == [
        bit_key(b) for w in ref_words for b in w.bits
    ]
    return tape_cs


class _Bits:
    """Shape-mode input Booleans of a random pattern: constants, allocated or negated bits, and
    (with ``p_alias``) slots reusing a bit handed out before, possibly negated."""

    def __init__(self, cs: ShapeCS, seed: int, p_const: float, p_alias: float = 0.0) -> None:
        self.cs = cs
        self.r = np.random.default_rng(seed)
        self.p_const, self.p_alias = p_const, p_alias
        self.made: list[AllocatedBit] = []

    def one(self) -> Boolean:
        u = self.r.random()
        if u < self.p_const:
            return Boolean.const(bool(self.r.integers(2)))
        if self.made and u < self.p_const + self.p_alias:
            bit = self.made[int(self.r.integers(len(self.made)))]
            return Boolean(bit, bool(self.r.integers(2)))
        bit = AllocatedBit.alloc(self.cs, None, f"in {len(self.made)}")
        self.made.append(bit)
        return Boolean(bit, bool(self.r.integers(2)))

    def bits(self, n: int) -> list[Boolean]:
        return [self.one() for _ in range(n)]

    def word(self) -> UInt32:
        bits = self.bits(32)
        value = None
        if all(b.bit is None for b in bits):
            value = sum(int(b.constant) << i for i, b in enumerate(bits))
        return UInt32(bits, value)


_P_CONST = [0.0, 0.05, 0.5, 0.95, 1.0]


@pytest.mark.parametrize("n_bytes", [20, 64, 100, 150])  # 1, 2, 2 and 3 blocks
def test_sha256_of_random_patterns(rng: np.random.Generator, n_bytes: int) -> None:
    p_const = float(rng.choice(_P_CONST))
    seed = int(rng.integers(1 << 32))

    def build(cs: ShapeCS) -> list[UInt32]:
        bits = _Bits(cs, seed, p_const).bits(8 * n_bytes)
        with cs.namespace("outer"):
            digest = sha256(cs, bits, "hash")
        return [UInt32.from_bits_be(digest[i : i + 32]) for i in range(0, 256, 32)]

    _both(build)


@pytest.mark.parametrize("ns_kind", ["none", "str", "callable", "empty"])
def test_compressions_with_random_state_and_namespaces(rng: np.random.Generator, ns_kind: str):
    """Allocated, negated and constant bits in block and state (whole constant state words
    among them), chained compressions, names under a path and each kind of namespace."""
    p_const = float(rng.choice(_P_CONST[:-1]))
    seed = int(rng.integers(1 << 32))
    ns = {"none": None, "str": "sha", "callable": lambda: "lazy sha", "empty": ""}[ns_kind]

    def build(cs: ShapeCS) -> list[UInt32]:
        src = _Bits(cs, seed, p_const)
        state = [src.word() if src.r.random() < 0.7 else UInt32.constant(IV[j]) for j in range(8)]
        block = src.bits(512)
        with cs.namespace("a"), cs.namespace("b"):
            out = compression(cs, block, state, ns)
        again = compression(cs, [b.not_() for b in block[::-1]], out, ns)
        third = compression(cs, src.bits(512), again, "last")
        return [*out, *again, *third]

    _both(build)


@pytest.mark.parametrize("p_alias", [0.01, 0.3])
def test_slots_sharing_a_variable(rng: np.random.Generator, p_alias: float) -> None:
    """Slots holding one variable (plain or negated, in block and state): the gadget merges
    their terms, and so must the template."""
    p_const = float(rng.choice([0.0, 0.2]))
    seed = int(rng.integers(1 << 32))

    def build(cs: ShapeCS) -> list[UInt32]:
        src = _Bits(cs, seed, p_const, p_alias)
        state = [src.word() for _ in range(8)]
        block = src.bits(512)
        out = compression(cs, block, state, "x")
        # The same pattern without aliasing, then the aliased one again (a replay).
        fresh = _Bits(cs, seed + 1, p_const)
        out2 = compression(cs, fresh.bits(512), [fresh.word() for _ in range(8)], "y")
        out3 = compression(cs, block, state, "z")
        return [*out, *out2, *out3]

    _both(build)


def test_xor_of_a_bit_with_itself_is_replayed_exactly() -> None:
    """Every block word equal to one allocated word: the message schedule xors bits with
    themselves, whose terms merge (and cancel) in the gadget."""

    def build(cs: ShapeCS) -> list[UInt32]:
        word = [Boolean(AllocatedBit.alloc(cs, None)) for _ in range(32)]
        out = []
        for _ in range(2):
            out += compression(cs, word * 16, iv(), "same")
        return out

    _both(build)
    assert len(_templates()) == 1


def test_all_constant_compression_appends_nothing() -> None:
    cs = _both(lambda cs: compression(cs, [TRUE] + [FALSE] * 511, iv()))
    assert cs.names == [] and cs.num_aux == 0


def test_repeated_pattern_reuses_one_template(rng: np.random.Generator) -> None:
    negated = rng.integers(0, 2, 512).astype(bool).tolist()

    def build(cs: ShapeCS) -> list[UInt32]:
        out = []
        for k in range(3):
            bits = [Boolean(AllocatedBit.alloc(cs, None), n != (k == 0)) for n in negated]
            out += compression(cs, bits, iv(), f"c{k}")
        return out

    _both(build)
    assert len(_templates()) == 2  # the first (flipped) pattern and the other


def test_values_in_shape_mode_run_the_gadget() -> None:
    """An input bit that carries a value: the gadget would compute the output words' values,
    the template has none; that compression is left to the gadget."""

    def build(cs: ShapeCS) -> list[UInt32]:
        bits = [Boolean(AllocatedBit.alloc(cs, None)) for _ in range(511)]
        bits.append(Boolean(AllocatedBit.alloc(cs, True)))
        return compression(cs, bits, iv())

    _both(build)
    assert _templates() == {}


def test_constant_state_word_disagreeing_with_its_value_runs_the_gadget() -> None:
    def build(cs: ShapeCS) -> list[UInt32]:
        state = iv()
        state[3] = UInt32(state[3].bits, IV[3] ^ 1)
        return compression(cs, [Boolean(AllocatedBit.alloc(cs, None)) for _ in range(512)], state)

    _both(build)
    assert _templates() == {}


def test_a_slot_holding_one_runs_the_gadget() -> None:
    def build(cs: ShapeCS) -> list[UInt32]:
        bits = [Boolean(AllocatedBit.alloc(cs, None)) for _ in range(511)]
        bits.append(Boolean(AllocatedBit(Variable(-1), None)))
        return compression(cs, bits, iv())

    _both(build)
    assert _templates() == {}


def test_first_use_verification_accepts_the_real_template(rng: np.random.Generator) -> None:
    seed = int(rng.integers(1 << 32))

    def build(cs: ShapeCS) -> list[UInt32]:
        bits = _Bits(cs, seed, 0.3, 0.05).bits(320)
        digests = sha256(cs, bits, "one") + sha256(cs, bits, "two")
        return [UInt32.from_bits_be(digests[i : i + 32]) for i in range(0, 512, 32)]

    _both(build, DEFAULT_OPTIONS)
    assert _templates()
    assert all(t is not None for t in _templates().values())


@pytest.mark.parametrize("corrupt", ["coefficient", "name", "output"])
def test_first_use_verification_rejects_a_wrong_template(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch, corrupt: str
) -> None:
    """A template that disagrees with the gadget is caught on its first compression; that and
    every later compression of the pattern get the gadget's rows."""
    real = sha256_shape_tape.record

    def broken(pattern: bytes, gadget):
        t = real(pattern, gadget)
        if corrupt == "coefficient" and t.coeffs[2]:
            t.coeffs[2][-1] += 1
        elif corrupt == "name" and t.suffixes:
            t.suffixes[0] += "!"
        elif t.out and t.out[0][0]:
            t.out[0] = (t.out[0][0], 0, not t.out[0][2])
        return t

    monkeypatch.setattr(sha256_shape_tape, "record", broken)
    negated = rng.integers(0, 2, 512).astype(bool).tolist()

    def build(cs: ShapeCS) -> list[UInt32]:
        out = []
        for k in range(2):
            bits = [Boolean(AllocatedBit.alloc(cs, None), n) for n in negated]
            out += compression(cs, bits, iv(), f"c{k}")
        return out

    _both(build, DEFAULT_OPTIONS)
    assert list(_templates().values()) == [None]


def test_patterns_beyond_the_cap_run_the_gadget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sha256_shape_tape, "MAX_TEMPLATES", 1)

    def build(cs: ShapeCS) -> list[UInt32]:
        digest = sha256(cs, [Boolean(AllocatedBit.alloc(cs, None)) for _ in range(512)])
        return [UInt32.from_bits_be(digest[i : i + 32]) for i in range(0, 256, 32)]

    _both(build)  # two patterns: the message block, then the padding block
    assert len(_templates()) == 1


def _circuit_equality(cid: str) -> None:
    from cuzk.circuits import get_circuit
    from cuzk.r1cs import synthesize_shape

    tape = synthesize_shape(get_circuit(cid), cid)
    assert _templates(), "the circuit ran no SHA-256 compression from a template"
    assert all(t is not None for t in _templates().values())
    ref = synthesize_shape(get_circuit(cid), cid, SynthesisOptions(sha256_tapes=False))
    assert (tape.num_inputs, tape.num_aux) == (ref.num_inputs, ref.num_aux)
    for label in "abc":
        x, y = getattr(tape, label), getattr(ref, label)
        for part in ("indptr", "indices", "coeffs"):
            assert np.array_equal(getattr(x, part), getattr(y, part)), f"{label}.{part} differ"
    assert tape.names == ref.names


@pytest.mark.slow
def test_snapdeals_2k_shape_equals_python_path() -> None:
    _circuit_equality("snap-2k")


@pytest.mark.heavy
def test_porep_2k_shape_equals_python_path() -> None:
    _circuit_equality("porep-2k")
