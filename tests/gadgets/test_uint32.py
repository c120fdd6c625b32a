"""UInt32 and MultiEq: values against u32 arithmetic, free rotations, batching and its flushes."""

from __future__ import annotations

import random

import pytest

from cuzk.gadgets.boolean import TRUE
from cuzk.gadgets.multieq import MultiEq
from cuzk.gadgets.uint32 import UInt32
from tests.gadgets.helpers import flip, synthesize_all, tampered

M32 = 0xFFFFFFFF


def _word(cs, values, v, ns):
    return UInt32.alloc(cs, v if values else None, ns)


def test_bits_round_trip_and_free_permutations(seed):
    rnd = random.Random(seed)
    v = rnd.getrandbits(32)

    def build(cs, values):
        w = _word(cs, values, v, "w")
        return (
            w,
            w.rotr(7),
            w.shr(3),
            UInt32.from_bits_be(w.into_bits_be()),
            UInt32.from_bits(w.into_bits()),
        )

    run = synthesize_all(build)
    w, r, s, be, le = run.result
    assert run.num_constraints == 32  # booleanity only: rotations and shifts are free
    assert w.value == v and be.value == v and le.value == v
    assert r.value == ((v >> 7) | (v << 25)) & M32 and s.value == v >> 3
    assert [b.value for b in r.bits] == [bool((r.value >> i) & 1) for i in range(32)]
    assert s.bits[-3:] == [s.bits[-1]] * 3 and s.bits[-1].is_constant


def test_xor_costs_one_constraint_per_variable_pair(seed):
    rnd = random.Random(seed)
    a, b, k = rnd.getrandbits(32), rnd.getrandbits(32), rnd.getrandbits(32)

    def build(cs, values):
        x, y = _word(cs, values, a, "x"), _word(cs, values, b, "y")
        xy = x.xor(cs, y, "xy")
        xk = x.xor(cs, UInt32.constant(k), "xk")
        kk = UInt32.constant(k).xor(cs, UInt32.constant(a), "kk")
        return xy, xk, kk

    run = synthesize_all(build)
    xy, xk, kk = run.result
    assert (xy.value, xk.value, kk.value) == (a ^ b, a ^ k, k ^ a)
    assert [bit.value for bit in xy.bits] == [bool(((a ^ b) >> i) & 1) for i in range(32)]
    assert run.num_constraints == 64 + 32  # only x ⊕ y allocates
    assert kk.is_constant
    assert tampered(build, 64, flip)[1] == "xy/xor of bit 0/xor constraint"


@pytest.mark.parametrize("n", [2, 3, 4, 5, 7, 10])
def test_addmany_values_and_bits(seed, n):
    rnd = random.Random(seed * 31 + n)
    vals = [rnd.getrandbits(32) for _ in range(n)]
    sum_bits = (n * M32).bit_length()

    def build(cs, values):
        meq = MultiEq(cs)
        ops = [_word(cs, values, v, f"op{i}") for i, v in enumerate(vals)]
        # A negated operand exercises the 1 − b terms of the batched equality.
        ops[0] = UInt32([b.not_() for b in ops[0].bits], None if not values else (~vals[0]) & M32)
        out = UInt32.addmany(cs, meq, ops, "sum")
        meq.finish()
        return out

    run = synthesize_all(build)
    expect = ((~vals[0] & M32) + sum(vals[1:])) & M32
    assert run.result.value == expect
    assert [b.value for b in run.result.bits] == [bool((expect >> i) & 1) for i in range(32)]
    assert run.num_constraints == 32 * n + sum_bits + 1
    # A sum bit flipped: its booleanity holds, the batched equality does not.
    first_sum_bit = 32 * n
    assert tampered(build, first_sum_bit + 1, flip)[1] == "multieq 0"


def test_addmany_folds_constants_and_keeps_mixed():
    def build(cs, values):
        meq = MultiEq(cs)
        k = UInt32.addmany(cs, meq, [UInt32.constant(0xFFFFFFFF), UInt32.constant(2)])
        one_var = UInt32(
            [TRUE] * 31 + [_word(cs, values, 0, "w").bits[0]], None if not values else 0x7FFFFFFF
        )
        mixed = UInt32.addmany(cs, meq, [one_var, UInt32.constant(1)], "mixed")
        meq.finish()
        return k, mixed

    run = synthesize_all(build)
    k, mixed = run.result
    assert k.is_constant and k.value == 1
    assert mixed.value == 0x80000000 and not mixed.is_constant
    assert run.num_constraints == 32 + 33 + 1


def test_multieq_flushes_before_overflow(seed):
    """2-operand sums span 33 bits: seven share one batch (231 bits), the eighth would reach 264
    ≥ 254, so the batch is flushed right after the eighth sum's bits are allocated."""
    rnd = random.Random(seed)
    pairs = [(rnd.getrandbits(32), rnd.getrandbits(32)) for _ in range(9)]

    def build(cs, values):
        meq = MultiEq(cs)
        outs = []
        for i, (a, b) in enumerate(pairs):
            outs.append(
                UInt32.addmany(
                    cs,
                    meq,
                    [_word(cs, values, a, f"a{i}"), _word(cs, values, b, f"b{i}")],
                    f"add {i}",
                )
            )
        meq.finish()
        return outs

    run = synthesize_all(build)
    assert [o.value for o in run.result] == [(a + b) & M32 for a, b in pairs]
    per_add = 64 + 33
    assert run.num_constraints == 9 * per_add + 2
    names = run.shape.names
    assert names[8 * per_add] == "multieq 0"  # after the 8th addition's 97 constraints
    assert names[9 * per_add + 1] == "multieq 1"  # the final flush


def test_sha256_ch_maj_words(seed):
    rnd = random.Random(seed)
    a, b, c = (rnd.getrandbits(32) for _ in range(3))

    def build(cs, values):
        x, y = _word(cs, values, a, "a"), _word(cs, values, b, "b")
        z = UInt32.constant(c)
        return UInt32.sha256_ch(cs, x, y, z, "ch"), UInt32.sha256_maj(cs, x, y, z, "maj")

    run = synthesize_all(build)
    ch, maj = run.result
    assert ch.value == (a & b) ^ (~a & c & M32)
    assert maj.value == (a & b) ^ (a & c) ^ (b & c)
    assert [x.value for x in ch.bits] == [bool((ch.value >> i) & 1) for i in range(32)]
    # With c constant every bit folds to a single AND-type gate for both ch and maj.
    assert run.num_constraints == 64 + 32 + 32
