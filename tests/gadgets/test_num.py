"""AllocatedNum, Num and multipack against direct arithmetic, with pinned constraint counts."""

from __future__ import annotations

import random

import pytest

from cuzk.field.constants import R
from cuzk.gadgets.boolean import AllocatedBit, Boolean
from cuzk.gadgets.multipack import (
    FR_CAPACITY,
    bytes_to_bits,
    bytes_to_bits_le,
    compute_multipacking,
    pack_bits,
    pack_into_inputs,
)
from cuzk.gadgets.num import AllocatedNum, Num
from cuzk.r1cs import CheckCS
from tests.gadgets.helpers import flip, plus_one, synthesize_all, tampered


def _v(values: bool, x: int) -> int | None:
    return x if values else None


def test_mul_square_inputize(seed):
    rnd = random.Random(seed)
    x, y = rnd.randrange(R), rnd.randrange(R)

    def build(cs, values):
        a = AllocatedNum.alloc(cs, _v(values, x), "a")
        b = AllocatedNum.alloc(cs, _v(values, y), "b")
        p = a.mul(cs, b, "mul")
        s = a.square(cs, "square")
        p.inputize(cs, "expose")
        return p, s

    run = synthesize_all(build)
    p, s = run.result
    assert (p.value, s.value) == (x * y % R, x * x % R)
    assert run.num_constraints == 3  # mul, square, inputize
    assert run.witness.inputs == [1, x * y % R]
    assert tampered(build, 2, plus_one)[1] == "mul/multiplication constraint"
    assert tampered(build, 3, plus_one)[1] == "square/squaring constraint"


def test_to_bits_le_is_256_constraints(seed):
    rnd = random.Random(seed)
    x = rnd.randrange(R)

    def build(cs, values):
        return AllocatedNum.alloc(cs, _v(values, x), "x").to_bits_le(cs, "bits")

    run = synthesize_all(build)
    bits = run.result
    assert len(bits) == 255 and run.num_constraints == 256
    assert sum(int(b.value) << i for i, b in enumerate(bits)) == x
    assert run.shape.names[255] == "bits/unpacking constraint"
    # Flip bit 7: its booleanity holds, the unpacking does not.
    assert tampered(build, 1 + 7, flip)[1] == "bits/unpacking constraint"
    assert tampered(build, 1 + 7, lambda v: 3)[1] == "bits/bit 7/boolean constraint"


def test_to_bits_le_is_not_strict():
    """The non-strict decomposition also accepts the bits of x + r when they fit in 255 bits
    (what "non-strict" means)."""
    x = 5
    alias = x + R
    assert alias < 1 << 255

    class AliasBits(CheckCS):
        def alloc(self, name, value):
            var = super().alloc(name, value)
            if 1 <= var.index <= 255:
                self.aux[-1] = (alias >> (var.index - 1)) & 1
            return var

    cs = AliasBits()
    AllocatedNum.alloc(cs, x).to_bits_le(cs)
    assert cs.is_satisfied()


def test_to_bits_le_strict(seed):
    rnd = random.Random(seed)
    for x in (0, 1, R - 1, rnd.randrange(R)):

        def build(cs, values, x=x):
            return AllocatedNum.alloc(cs, _v(values, x), "x").to_bits_le_strict(cs)

        run = synthesize_all(build)
        assert sum(int(b.value) << i for i, b in enumerate(run.result)) == x
        # 255 bits, one AND per extra member of each run of ones in r − 1, and the unpacking.
        assert run.num_constraints == run.shape.num_aux  # every aux after x has one constraint


def test_conditionally_reverse_and_nonzero(seed):
    rnd = random.Random(seed)
    x, y = rnd.randrange(1, R), rnd.randrange(R)
    for cond in (False, True):

        def build(cs, values, cond=cond):
            a = AllocatedNum.alloc(cs, _v(values, x), "a")
            b = AllocatedNum.alloc(cs, _v(values, y), "b")
            c = Boolean(AllocatedBit.alloc(cs, cond if values else None, "cond"))
            a.assert_nonzero(cs, "nz")
            return AllocatedNum.conditionally_reverse(cs, a, b, c)

        run = synthesize_all(build)
        c, d = run.result
        assert (c.value, d.value) == ((y, x) if cond else (x, y))
        assert run.num_constraints == 4
        assert tampered(build, 4, plus_one)[1] == "first conditional reversal"


def test_nonzero_rejects_zero():
    from cuzk.errors import BadInput

    cs = CheckCS()
    a = AllocatedNum.alloc(cs, 0)
    with pytest.raises(BadInput):  # no inverse: the witness cannot be built
        a.assert_nonzero(cs)


def test_num_accumulates_without_constraints(seed):
    rnd = random.Random(seed)
    cs = CheckCS()
    x = AllocatedNum.alloc(cs, rnd.randrange(R))
    bit = Boolean(AllocatedBit.alloc(cs, True), negated=True)  # value False
    n = Num.of(x).scale(3).add(Num.constant(7)).add_bool_with_coeff(bit, 5)
    assert n.value == (3 * x.value + 7) % R
    assert n.lc().terms == {x.variable.key: 3, -1: 12, bit.bit.variable.key: R - 5}
    assert cs.num_constraints == 1


def test_pack_into_inputs_one_per_chunk(seed):
    rnd = random.Random(seed)
    n = FR_CAPACITY + 46  # two chunks
    vals = [bool(rnd.getrandbits(1)) for _ in range(n)]

    def build(cs, values):
        bits = [
            Boolean(AllocatedBit.alloc(cs, v if values else None, f"b{i}"), negated=(i % 3 == 0))
            for i, v in enumerate(vals)
        ]
        pack_into_inputs(cs, bits, "path")
        return bits

    run = synthesize_all(build)
    assert run.num_constraints == n + 2
    seen = [b.value for b in run.result]
    assert run.witness.inputs[1:] == compute_multipacking(seen)
    assert run.shape.names[n : n + 2] == ("path/packing constraint 0", "path/packing constraint 1")


def test_pack_bits(seed):
    rnd = random.Random(seed)
    vals = [bool(rnd.getrandbits(1)) for _ in range(256)]

    def build(cs, values):
        bits = [Boolean(AllocatedBit.alloc(cs, v if values else None)) for v in vals]
        return pack_bits(cs, bits, "pack")

    run = synthesize_all(build)
    assert run.num_constraints == 256 + 1
    assert run.result.value == sum(1 << i for i, v in enumerate(vals[:254]) if v)
    assert tampered(build, 256, plus_one)[1] == "pack/packing constraint"


def test_byte_bit_orders():
    assert bytes_to_bits(b"\x80\x01") == [True] + [False] * 14 + [True]
    assert bytes_to_bits_le(b"\x80\x01") == [False] * 7 + [True, True] + [False] * 7


def test_witness_mode_packing_equals_the_tracked_sum(seed):
    """Witness mode sums the set bits' weights directly; the value is the tracked chain's for
    any mix of constant, allocated and negated bits, and None when a bit has none."""
    from cuzk.gadgets.multipack import _pack

    rnd = random.Random(seed)
    cs = CheckCS()
    for n in (0, 1, 100, 254):
        bits = []
        for _ in range(n):
            r = rnd.random()
            if r < 0.2:
                bits.append(Boolean.const(rnd.random() < 0.5))
            else:
                ab = AllocatedBit.alloc(cs, rnd.random() < 0.5)
                bits.append(Boolean(ab, r > 0.6))
        assert _pack(bits, False).value == _pack(bits, True).value
        assert _pack(bits, True).value == sum(int(b.value) << i for i, b in enumerate(bits))
    missing = [
        Boolean.const(True),
        Boolean(AllocatedBit(AllocatedBit.alloc(cs, True).variable, None)),
    ]
    assert _pack(missing, False).value is None and _pack(missing, True).value is None
