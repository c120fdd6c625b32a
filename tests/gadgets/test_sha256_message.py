"""SHA-256 of a message handed over in bulk (:mod:`cuzk.gadgets.sha256.message`): the witness
(every aux value, deferred or not), the packed digest and, where asked for, the Booleans equal
what the Boolean gadgets give, on random messages of constants, bits, negated bits and field
elements, with first-use verification on and off."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.gadgets.boolean import AllocatedBit, Boolean
from cuzk.gadgets.multipack import pack_bits
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.sha256 import sha256
from cuzk.gadgets.sha256 import tape as sha256_tape
from cuzk.gadgets.sha256.message import Message, fast_path, field_bits, sha256_packed
from cuzk.gadgets.sha256.node import node_hash, sha256_hash2, sha256_node
from cuzk.r1cs import PROCESS_CACHE, PYTHON_GADGETS, SynthesisOptions, Variable, WitnessCS
from cuzk.r1cs.deferred import DeferredAux
from tests.gadgets.helpers import bit_key

OPTIONS = {
    "replayed": SynthesisOptions(verify_first_use=False),
    "deferred": SynthesisOptions(verify_first_use=False, defer_bit_programs=True),
    "verified+deferred": SynthesisOptions(defer_bit_programs=True),
}


@pytest.fixture(autouse=True)
def fresh_tapes():
    PROCESS_CACHE.clear()
    yield
    PROCESS_CACHE.clear()


def _tapes() -> sha256_tape.Tapes:
    """The process cache's tapes (where the systems here record)."""
    return PROCESS_CACHE.memo(sha256_tape.Tapes)


def _reversed_bytes(bits: list[Boolean]) -> list[Boolean]:
    padded = bits + [Boolean.const(False)] * (-len(bits) % 8)
    return [b for i in range(0, len(padded), 8) for b in reversed(padded[i : i + 8])]


def _plan(rng: np.random.Generator) -> list[tuple]:
    """A random message layout: runs of Booleans (constant share p) and field elements."""
    plan = []
    for _ in range(int(rng.integers(1, 6))):
        if rng.random() < 0.5:
            n = 8 * int(rng.integers(1, 80))
            p = float(rng.choice([0.0, 0.3, 0.95]))
            plan.append(("bits", rng.integers(0, 2, n).tolist(), rng.random(n).tolist(), p))
        else:
            plan.append(("field", int(rng.integers(0, 2**62)) * int(rng.integers(1, 2**62)) % R))
    return plan


def _bits(cs: WitnessCS, plan: list[tuple], bulk: bool) -> tuple[Message | None, list[Boolean]]:
    """Allocate the plan's values in order; the message in bulk and as Booleans."""
    msg = Message() if bulk else None
    out: list[Boolean] = []
    for item in plan:
        if item[0] == "bits":
            _, values, draws, p = item
            bits = []
            for v, r in zip(values, draws, strict=True):
                if r < p:
                    bits.append(Boolean.const(bool(v)))
                elif r < p + (1 - p) / 2:
                    bits.append(Boolean(AllocatedBit.alloc(cs, bool(v))))
                else:
                    bits.append(Boolean(AllocatedBit.alloc(cs, not v), True))
            if msg is not None:
                msg.add_bits(bits)
            out += bits
        else:
            num = AllocatedNum.alloc(cs, item[1])
            if msg is not None:
                msg.add_field(field_bits(cs, num))
            else:
                out += _reversed_bytes(num.to_bits_le(cs))
    return msg, out


def _aux(cs: WitnessCS) -> np.ndarray:
    made = cs.aux_vector()
    return made.expand() if isinstance(made, DeferredAux) else made


@pytest.mark.parametrize("mode", list(OPTIONS))
def test_packed_hash_equals_the_gadgets(rng: np.random.Generator, mode: str) -> None:
    for _ in range(3):
        plan = _plan(rng)
        cs = WitnessCS(OPTIONS[mode])
        assert fast_path(cs)
        msg, _ = _bits(cs, plan, bulk=True)
        assert msg is not None
        got = sha256_packed(cs, msg)
        ref = WitnessCS(PYTHON_GADGETS)
        assert not fast_path(ref)
        _, bits = _bits(ref, plan, bulk=False)
        digest = sha256(ref, bits)
        want = pack_bits(ref, _reversed_bytes(digest)[:254])
        assert got.value == want.value and got.variable.key == want.variable.key
        assert cs.inputs == ref.inputs and cs.num_aux == len(ref.aux)
        assert np.array_equal(_aux(cs), fr.from_ints(ref.aux))
        data = bytes(
            sum(int(b.value) << (7 - j) for j, b in enumerate(bits[i : i + 8]))
            for i in range(0, len(bits), 8)
        )
        packed = int.from_bytes(hashlib.sha256(data).digest(), "little") & ((1 << 254) - 1)
        assert got.value == packed


def test_message_booleans_are_the_gadgets_bits(rng: np.random.Generator) -> None:
    """The Booleans a compression may ask for: the given objects, and for field elements new
    bits on the variables and values ``to_bits_le`` allocates."""
    plan = _plan(rng) + [("field", R - 1)]
    cs, ref = WitnessCS(), WitnessCS(PYTHON_GADGETS)
    msg, given = _bits(cs, plan, bulk=True)
    _, bits = _bits(ref, plan, bulk=False)
    assert msg is not None and cs.aux == ref.aux
    n = len(msg.codes)
    assert n == len(bits)
    assert [bit_key(b) for b in msg.booleans(0, n)] == [bit_key(b) for b in bits]
    lo, hi = sorted(int(x) for x in rng.integers(0, n + 1, 2))
    assert [bit_key(b) for b in msg.booleans(lo, hi)] == [bit_key(b) for b in bits[lo:hi]]
    ours = {id(b) for b in msg.booleans(0, n)}
    assert all(id(b) in ours for b in given)  # the given objects themselves


def test_node_hashes_equal_the_gadgets(rng: np.random.Generator) -> None:
    children = [int(x) * int(y) % R for x, y in rng.integers(0, 2**62, size=(3, 2))]
    for mode in ("deferred", "verified+deferred"):
        PROCESS_CACHE.clear()
        cs, ref = WitnessCS(OPTIONS[mode]), WitnessCS(PYTHON_GADGETS)
        out = []
        for c in (cs, ref):
            nums = [AllocatedNum.alloc(c, v) for v in children]
            out.append((sha256_node(c, nums), sha256_hash2(c, nums[0], nums[1])))
        (a1, a2), (b1, b2) = out
        assert (a1.value, a2.value) == (b1.value, b2.value)
        assert a1.value == node_hash(children) and a2.value == node_hash(children[:2])
        assert np.array_equal(_aux(cs), fr.from_ints(ref.aux))


def test_missing_values_are_bad_input() -> None:
    cs = WitnessCS()
    with pytest.raises(BadInput):
        Message().add_bits([Boolean(AllocatedBit(Variable(0), None))])
    with pytest.raises(BadInput):
        field_bits(cs, AllocatedNum(Variable(0), None))


def test_all_constant_message_takes_the_aliasing_path(rng: np.random.Generator) -> None:
    """Constant blocks on the constant IV: outputs are constants, not fresh bits, so the
    compression reads the block's Booleans (made from the message) as the gadget returns them."""
    values = rng.integers(0, 2, 8 * int(rng.integers(1, 100))).tolist()
    plan = [("bits", values, [0.0] * len(values), 1.0)]
    cs, ref = WitnessCS(OPTIONS["deferred"]), WitnessCS(PYTHON_GADGETS)
    msg, _ = _bits(cs, plan, bulk=True)
    assert msg is not None
    got = sha256_packed(cs, msg)
    assert any(t is not None and t.plain_out is None for t in _tapes().values())
    _, bits = _bits(ref, plan, bulk=False)
    want = pack_bits(ref, _reversed_bytes(sha256(ref, bits))[:254])
    assert got.value == want.value and cs.aux == ref.aux == [want.value]
