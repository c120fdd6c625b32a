"""Field elements in a circuit: bellpepper-core's ``AllocatedNum`` and ``Num``.

:class:`AllocatedNum` is one variable holding a field element; :class:`Num` is a linear
combination with its value, used to add things up without constraints and allocate once at the
end. Values are canonical ints mod r, or ``None`` in shape mode.
"""

from __future__ import annotations

from cuzk.field.constants import R
from cuzk.gadgets._names import Name, leaf
from cuzk.gadgets.boolean import (
    FR_NUM_BITS,
    AllocatedBit,
    Boolean,
    field_into_allocated_bits_le,
)
from cuzk.r1cs import ONE, ConstraintSystem, LinearCombination, Variable

_ONE_KEY = ONE.key
#: 2^i mod r for i < 256 (below 254 bits, plain powers of two: a sum of them needs no reduction).
POW2 = [pow(2, i, R) for i in range(256)]


def _mul(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a * b % R


class AllocatedNum:
    """A variable holding one field element."""

    __slots__ = ("variable", "value")

    def __init__(self, variable: Variable, value: int | None) -> None:
        self.variable = variable
        self.value = value

    def __repr__(self) -> str:
        return f"AllocatedNum({self.variable!r}, {self.value})"

    @staticmethod
    def alloc(cs: ConstraintSystem, value: int | None, ns: Name = None) -> AllocatedNum:
        """A private variable (no constraint)."""
        value = None if value is None else value % R
        return AllocatedNum(cs.alloc(leaf(ns, "num"), value), value)

    @staticmethod
    def alloc_input(cs: ConstraintSystem, value: int | None, ns: Name = None) -> AllocatedNum:
        """A public input (no constraint)."""
        value = None if value is None else value % R
        return AllocatedNum(cs.alloc_input(leaf(ns, "input num"), value), value)

    def inputize(self, cs: ConstraintSystem, ns: Name = None) -> AllocatedNum:
        """Expose the value as a new public input: ``input · 1 = self`` (one constraint).

        Returns the input as an AllocatedNum (bellperson returns nothing; callers may ignore it).
        """
        inp = cs.alloc_input(leaf(ns, "input variable"), self.value)
        cs.enforce(leaf(ns, "enforce input is correct"), inp, ONE, self.variable)
        return AllocatedNum(inp, self.value)

    def to_bits_le(self, cs: ConstraintSystem, ns: Name = None) -> list[Boolean]:
        """255 allocated bits, least significant first, and ``0 · 0 = Σ 2^i b_i − self``:
        256 constraints. Non-strict: the bits may spell value + r when that fits in 255 bits."""
        if ns is not None:
            with cs.namespace(ns):
                return self.to_bits_le(cs)
        bits = field_into_allocated_bits_le(cs, self.value)
        var = self.variable

        def packed(lc: LinearCombination) -> LinearCombination:
            terms = lc.terms
            for b, p in zip(bits, POW2, strict=False):
                terms[b.variable.key] = p
            lc.add_term(var, R - 1)
            return lc

        cs.enforce("unpacking constraint", 0, 0, packed)
        return list(map(Boolean, bits))

    def to_bits_le_strict(self, cs: ConstraintSystem, ns: Name = None) -> list[Boolean]:
        """255 bits that must spell the canonical value (< r): bellpepper's runs-of-ones
        comparison against r − 1, then the unpacking constraint."""
        if ns is not None:
            with cs.namespace(ns):
                return self.to_bits_le_strict(cs)
        a = self.value
        b_bits = [((R - 1) >> i) & 1 for i in range(FR_NUM_BITS - 1, -1, -1)]  # big-endian
        result: list[AllocatedBit] = []
        last_run: AllocatedBit | None = None
        current_run: list[AllocatedBit] = []
        for i, bbit in enumerate(b_bits):
            a_bit = None if a is None else bool((a >> (FR_NUM_BITS - 1 - i)) & 1)
            if bbit:
                bit = AllocatedBit.alloc(cs, a_bit, lambda i=i: f"bit {i}")
                current_run.append(bit)
                result.append(bit)
            else:
                if current_run:
                    if last_run is not None:
                        current_run.append(last_run)
                    with cs.namespace(lambda i=i: f"run ending at {i}"):
                        last_run = _kary_and(cs, current_run)
                    current_run = []
                assert last_run is not None, "r − 1 starts with a one"
                result.append(
                    AllocatedBit.alloc_conditionally(cs, a_bit, last_run, lambda i=i: f"bit {i}")
                )
        assert not current_run
        var = self.variable
        le = result[::-1]

        def packed(lc: LinearCombination) -> LinearCombination:
            for b, p in zip(le, POW2, strict=False):
                lc.add_term(b.variable, p)
            return lc.add_term(var, R - 1)

        cs.enforce("unpacking constraint", 0, 0, packed)
        return [Boolean(b) for b in le]

    def mul(self, cs: ConstraintSystem, other: AllocatedNum, ns: Name = None) -> AllocatedNum:
        """self · other (one constraint)."""
        value = _mul(self.value, other.value)
        var = cs.alloc(leaf(ns, "product num"), value)
        cs.enforce(leaf(ns, "multiplication constraint"), self.variable, other.variable, var)
        return AllocatedNum(var, value)

    def square(self, cs: ConstraintSystem, ns: Name = None) -> AllocatedNum:
        """self² (one constraint)."""
        value = _mul(self.value, self.value)
        var = cs.alloc(leaf(ns, "squared num"), value)
        cs.enforce(leaf(ns, "squaring constraint"), self.variable, self.variable, var)
        return AllocatedNum(var, value)

    def assert_nonzero(self, cs: ConstraintSystem, ns: Name = None) -> None:
        """self · inv = 1 (one variable, one constraint); a zero value has no witness."""
        inv_value = None
        if self.value is not None:
            inv_value = pow(self.value, -1, R) if self.value else None
        inv = cs.alloc(leaf(ns, "ephemeral inverse"), inv_value)
        cs.enforce(leaf(ns, "nonzero assertion constraint"), self.variable, inv, ONE)

    @staticmethod
    def conditionally_reverse(
        cs: ConstraintSystem, a: AllocatedNum, b: AllocatedNum, condition: Boolean
    ) -> tuple[AllocatedNum, AllocatedNum]:
        """(b, a) if condition else (a, b): two variables, two constraints."""
        cond = condition.value
        av, bv = a.variable, b.variable
        c_val = None if cond is None else (b.value if cond else a.value)
        c = AllocatedNum.alloc(cs, c_val, "conditional reversal result 1")
        cs.enforce(
            "first conditional reversal",
            lambda lc: lc.add_term(av).add_term(bv, R - 1),
            lambda lc: condition.lc(),
            lambda lc: lc.add_term(av).add_term(c.variable, R - 1),
        )
        d_val = None if cond is None else (a.value if cond else b.value)
        d = AllocatedNum.alloc(cs, d_val, "conditional reversal result 2")
        cs.enforce(
            "second conditional reversal",
            lambda lc: lc.add_term(bv).add_term(av, R - 1),
            lambda lc: condition.lc(),
            lambda lc: lc.add_term(bv).add_term(d.variable, R - 1),
        )
        return c, d


def _kary_and(cs: ConstraintSystem, bits: list[AllocatedBit]) -> AllocatedBit:
    cur = bits[0]
    for i, b in enumerate(bits[1:], start=1):
        cur = AllocatedBit.and_(cs, cur, b, lambda i=i: f"and {i}")
    return cur


class Num:
    """A linear combination with its value: sums without constraints.

    ``terms`` is a raw ``{key: coeff}`` dict (see :mod:`cuzk.r1cs.lc`) so that long chains of
    additions (Poseidon's partial rounds) stay cheap; ``None`` means "not tracked" — witness
    mode, where nobody reads linear combinations.
    """

    __slots__ = ("value", "terms")

    def __init__(self, value: int | None, terms: dict[int, int] | None) -> None:
        self.value = value
        self.terms = terms

    @staticmethod
    def zero(track: bool = True) -> Num:
        return Num(0, {} if track else None)

    @staticmethod
    def of(num: AllocatedNum, track: bool = True) -> Num:
        return Num(num.value, {num.variable.key: 1} if track else None)

    @staticmethod
    def constant(value: int, track: bool = True) -> Num:
        value %= R
        return Num(value, ({_ONE_KEY: value} if value else {}) if track else None)

    def lc(self, coeff: int = 1) -> LinearCombination:
        terms = self.terms or {}
        if coeff == 1:
            return LinearCombination(dict(terms))
        return LinearCombination({k: c * coeff % R for k, c in terms.items() if c * coeff % R})

    def add_bool_with_coeff(self, bit: Boolean, coeff: int) -> Num:
        v, bv = self.value, bit.value
        value = None if v is None or bv is None else ((v + coeff) % R if bv else v)
        terms = None
        if self.terms is not None:
            terms = bit.add_to(dict(self.terms), coeff)
        return Num(value, terms)

    def add(self, other: Num) -> Num:
        """Sum of two combinations. A missing value on one side keeps the other (bellpepper
        0.2's behaviour; it only matters in shape mode, where values are never read)."""
        if self.value is None:
            value = other.value
        elif other.value is None:
            value = self.value
        else:
            value = (self.value + other.value) % R
        terms = None
        if self.terms is not None and other.terms is not None:
            terms = dict(self.terms)
            for k, c in other.terms.items():
                merged = (terms.get(k, 0) + c) % R
                if merged:
                    terms[k] = merged
                else:
                    terms.pop(k, None)
        return Num(value, terms)

    def scale(self, scalar: int) -> Num:
        scalar %= R
        value = None if self.value is None else self.value * scalar % R
        terms = None
        if self.terms is not None:
            terms = {k: c * scalar % R for k, c in self.terms.items()}
            terms = {k: c for k, c in terms.items() if c}
        return Num(value, terms)
