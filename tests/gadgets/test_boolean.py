"""Boolean gadgets: values, constant folding and exact constraint counts (bellpepper-core)."""

from __future__ import annotations

import itertools

import pytest

from cuzk.errors import BadInput
from cuzk.field.constants import R
from cuzk.gadgets import boolean as B
from cuzk.gadgets.boolean import AllocatedBit, Boolean
from cuzk.r1cs import ONE, CheckCS, ConstraintSystem, ShapeCS, Variable, WitnessCS
from cuzk.r1cs.lc import resolve
from tests.gadgets.helpers import flip, synthesize_all, tampered

KINDS = ("false", "true", "is", "not")


def make(cs: ConstraintSystem, kind: str, value: bool, values: bool, ns: str) -> Boolean:
    """A Boolean of the given kind whose value is ``value`` (for variables)."""
    if kind == "false":
        return B.FALSE
    if kind == "true":
        return B.TRUE
    negated = kind == "not"
    bit = AllocatedBit.alloc(cs, (value != negated) if values else None, ns)
    return Boolean(bit, negated)


def value_of(kind: str, value: bool) -> bool:
    return {"false": False, "true": True}.get(kind, value)


class RecordingCS(CheckCS):
    """CheckCS that also keeps each constraint's resolved A, B, C."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[dict, dict, dict]] = []

    def enforce(self, name, a, b, c):
        self.rows.append(tuple(resolve(x).terms for x in (a, b, c)))
        super().enforce(name, a, b, c)


@pytest.mark.parametrize("op", ["xor", "and_", "and_not", "nor"])
def test_allocated_bit_truth_tables(op):
    fn = {
        "xor": lambda a, b: a != b,
        "and_": lambda a, b: a and b,
        "and_not": lambda a, b: a and not b,
        "nor": lambda a, b: not a and not b,
    }[op]
    for av, bv in itertools.product((False, True), repeat=2):

        def build(cs, values, av=av, bv=bv):
            a = AllocatedBit.alloc(cs, av if values else None, "a")
            b = AllocatedBit.alloc(cs, bv if values else None, "b")
            return getattr(AllocatedBit, op)(cs, a, b)

        run = synthesize_all(build)
        assert run.result.value == fn(av, bv)
        assert run.num_constraints == 3  # two booleanity constraints and the gate
        # The gate's output is aux 2; its other value breaks exactly the gate.
        _, name = tampered(build, 2, flip)
        assert name.endswith(
            ("xor constraint", "and constraint", "and not constraint", "nor constraint")
        )


def test_alloc_booleanity_is_named():
    def build(cs, values):
        return AllocatedBit.alloc(cs, True if values else None, "bit")

    run = synthesize_all(build)
    assert run.num_constraints == 1 and run.witness.aux == [1]
    assert tampered(build, 0, lambda v: 2) == (0, "bit/boolean constraint")


def test_alloc_conditionally():
    for must_be_false, v in itertools.product((False, True), repeat=2):

        def build(cs, values, m=must_be_false, v=v):
            mb = AllocatedBit.alloc(cs, m if values else None, "m")
            return AllocatedBit.alloc_conditionally(cs, v if values else None, mb, "a")

        if must_be_false and v:
            cs = CheckCS()
            build(cs, True)
            assert cs.first_failure == (1, "a/boolean constraint")
        else:
            assert synthesize_all(build).num_constraints == 2


def test_xor_puts_the_plain_operand_in_a():
    """Is ⊕ Not is computed as ¬(is ⊕ not's bit): the un-negated bit must be the one in A."""
    for order in ("is-not", "not-is"):
        cs = RecordingCS()
        p = AllocatedBit.alloc(cs, True, "p")
        q = AllocatedBit.alloc(cs, False, "q")
        a, b = (
            (Boolean(p), Boolean(q, True)) if order == "is-not" else (Boolean(q, True), Boolean(p))
        )
        out = B.xor(cs, a, b)
        assert out.is_negated and out.value is False  # p ⊕ ¬q = 1 ⊕ 1
        a_terms, b_terms, _ = cs.rows[-1]
        assert a_terms == {p.variable.key: 2} and b_terms == {q.variable.key: 1}
        assert cs.is_satisfied()


@pytest.mark.parametrize("op", ["xor", "and_", "or_"])
def test_boolean_ops_fold_constants(op):
    fn = {"xor": lambda a, b: a != b, "and_": lambda a, b: a and b, "or_": lambda a, b: a or b}[op]
    for ka, kb in itertools.product(KINDS, repeat=2):
        for av, bv in itertools.product((False, True), repeat=2):

            def build(cs, values, ka=ka, kb=kb, av=av, bv=bv):
                a = make(cs, ka, av, values, "a")
                b = make(cs, kb, bv, values, "b")
                return getattr(B, op)(cs, a, b)

            run = synthesize_all(build)
            expect = fn(value_of(ka, av), value_of(kb, bv))
            assert run.result.value == expect, (op, ka, kb, av, bv)
            variables = sum(k in ("is", "not") for k in (ka, kb))
            # Booleanity per variable operand, plus one gate only when both are variables.
            assert run.num_constraints == variables + (1 if variables == 2 else 0)
            if variables < 2 and run.result.bit is None:
                assert run.result.constant == expect


# ch/maj: constraint counts per (a, b, c) kind pattern, from bellpepper's match arms:
# all constant → 0; a pattern that reduces to one AND of two variables → 1; otherwise the
# general gate: ch 1 constraint, maj 2 (maj and the inner b ∧ c).
def _ch_gate_count(ka: str, kb: str, kc: str) -> int:
    var = {"a": ka in ("is", "not"), "b": kb in ("is", "not"), "c": kc in ("is", "not")}
    if not any(var.values()) or ka == "false":
        return 0
    if kb == "false":
        return int(var["a"] and var["c"])
    if kc in ("false", "true"):
        return int(var["a"] and var["b"])
    if kb == "true":
        return int(var["a"] and var["c"])
    return 1  # a true or variable, b and c variables


def _maj_gate_count(ka: str, kb: str, kc: str) -> int:
    kinds = (ka, kb, kc)
    var = [k in ("is", "not") for k in kinds]
    if not any(var):
        return 0
    if "false" in kinds or "true" in kinds:
        # One constant picks an AND (or a NOR under negation) of the other two.
        first_const = (
            next(i for i in (0, 1, 2) if kinds[i] == "false")
            if "false" in kinds
            else next(i for i in (2, 1, 0) if kinds[i] == "true")
        )
        others = [var[i] for i in (0, 1, 2) if i != first_const]
        return int(all(others))
    return 2


@pytest.mark.parametrize("op", ["ch", "maj"])
def test_sha256_ch_maj_every_kind_pattern(op):
    gadget = B.sha256_ch if op == "ch" else B.sha256_maj
    count = _ch_gate_count if op == "ch" else _maj_gate_count
    for kinds in itertools.product(KINDS, repeat=3):
        for vals in itertools.product((False, True), repeat=3):

            def build(cs, values, kinds=kinds, vals=vals):
                xs = [make(cs, k, v, values, n) for k, v, n in zip(kinds, vals, "abc", strict=True)]
                return gadget(cs, *xs)

            run = synthesize_all(build)
            a, b, c = (value_of(k, v) for k, v in zip(kinds, vals, strict=True))
            expect = (
                ((a and b) != ((not a) and c))
                if op == "ch"
                else (((a and b) != (a and c)) != (b and c))
            )
            assert run.result.value == expect, (op, kinds, vals)
            booleanity = sum(k in ("is", "not") for k in kinds)
            assert run.num_constraints == booleanity + count(*kinds), (op, kinds)


def test_maj_general_gate_order_and_negative():
    """Three variables: maj is allocated before b ∧ c, then the maj constraint."""

    def build(cs, values):
        xs = [
            Boolean(AllocatedBit.alloc(cs, v if values else None, n))
            for v, n in zip((True, False, True), "abc", strict=True)
        ]
        return B.sha256_maj(cs, *xs, ns="maj 0")

    run = synthesize_all(build)
    assert run.shape.names[3:5] == ("maj 0/b and c/and constraint", "maj 0/maj computation")
    assert run.witness.aux == [1, 0, 1, 1, 0]  # a, b, c, maj, b∧c
    assert tampered(build, 3, flip)[1] == "maj 0/maj computation"


def test_enforce_equal():
    for ka, kb in itertools.product(KINDS, repeat=2):
        for av, bv in itertools.product((False, True), repeat=2):
            va, vb = value_of(ka, av), value_of(kb, bv)

            def build(cs, values, ka=ka, kb=kb, av=av, bv=bv):
                B.enforce_equal(cs, make(cs, ka, av, values, "a"), make(cs, kb, bv, values, "b"))

            if ka in ("false", "true") and kb in ("false", "true"):
                if va != vb:
                    with pytest.raises(BadInput):
                        build(CheckCS(), True)
                else:
                    assert synthesize_all(build).num_constraints == 0
                continue
            cs = CheckCS()
            build(cs, True)
            assert cs.is_satisfied() == (va == vb), (ka, kb, av, bv)
            variables = sum(k in ("is", "not") for k in (ka, kb))
            assert cs.num_constraints == variables + 1


def test_lc_of_negation():
    bit = AllocatedBit(Variable.aux(5), True)
    assert Boolean(bit, True).lc(3).terms == {ONE.key: 3, 5: R - 3}
    assert B.TRUE.lc(7).terms == {ONE.key: 7}
    assert B.FALSE.lc(7).terms == {}


def test_u64_and_field_bits(seed):
    import random

    rnd = random.Random(seed)
    v = rnd.getrandbits(64)
    x = rnd.randrange(R)

    def build(cs, values):
        bits = B.u64_into_boolean_vec_le(cs, v if values else None)
        fbits = B.field_into_boolean_vec_le(cs, x if values else None)
        return bits, fbits

    run = synthesize_all(build)
    bits, fbits = run.result
    assert run.num_constraints == 64 + 255
    assert sum(int(b.value) << i for i, b in enumerate(bits)) == v
    assert sum(int(b.value) << i for i, b in enumerate(fbits)) == x


def test_shape_mode_needs_no_values():
    cs = ShapeCS()
    a = Boolean(AllocatedBit.alloc(cs, None))
    b = Boolean(AllocatedBit.alloc(cs, None), True)
    assert B.xor(cs, a, b).value is None
    assert B.sha256_maj(cs, a, b, a).value is None


def test_field_bits_in_bulk_equal_bit_by_bit(seed):
    """Witness mode decomposes a field element in bulk: the same aux values, variables (after
    deferred values: ``gap``) and bool values as one AllocatedBit.alloc per bit."""
    import random

    rnd = random.Random(seed)
    for x in (0, 1, R - 1, rnd.randrange(R), rnd.getrandbits(300)):
        bulk, single = WitnessCS(), WitnessCS()
        for cs in (bulk, single):
            cs.aux.extend([5, 6])
            cs.gap = 1000
        got = B.field_into_allocated_bits_le(bulk, x)
        want = [AllocatedBit.alloc(single, bool((x >> i) & 1)) for i in range(B.FR_NUM_BITS)]
        assert bulk.aux == single.aux
        assert [(b.variable.key, b.value) for b in got] == [(b.variable.key, b.value) for b in want]
        assert all(type(b.value) is bool for b in got)
