"""Bits in a circuit: bellpepper-core's ``AllocatedBit`` and ``Boolean`` (v0.2, what bellperson
0.27 and Filecoin use), constraint for constraint.

A :class:`Boolean` is a constant, a bit variable, or the negation of one. Operations fold
constants and negations *before* touching the constraint system, so how many constraints an
expression costs (and the order its variables are allocated in) depends on which operands are
constant — SHA-256's padding and IV save thousands of constraints this way. Every branch below
follows the order of bellpepper's ``match`` arms: when two arms could apply, the first wins, and
that choice fixes which operand lands in A and which in B.

Values are ``bool`` (or ``None`` in shape mode, where nobody reads them).
"""

from __future__ import annotations

from cuzk.errors import BadInput
from cuzk.field.constants import R
from cuzk.gadgets._names import Name, leaf
from cuzk.r1cs import ONE, ConstraintSystem, LinearCombination, Variable, WitnessCS, witness_mode

_ONE_KEY = ONE.key
_NEG1 = R - 1

#: Bits in a field element's canonical representation (bellpepper's ``Scalar::NUM_BITS``).
FR_NUM_BITS = 255


def _and_values(a: bool | None, b: bool | None) -> bool | None:
    return None if a is None or b is None else (a and b)


def _fr(value: bool | None) -> int | None:
    return None if value is None else int(value)


class AllocatedBit:
    """A variable constrained to be 0 or 1 (by whoever allocated it)."""

    __slots__ = ("variable", "value")

    def __init__(self, variable: Variable, value: bool | None) -> None:
        self.variable = variable
        self.value = value

    def __repr__(self) -> str:
        return f"AllocatedBit({self.variable!r}, {self.value})"

    @staticmethod
    def alloc(cs: ConstraintSystem, value: bool | None, ns: Name = None) -> AllocatedBit:
        """A new bit with booleanity ``(1 − a) · a = 0``: one variable, one constraint."""
        if value is not None and witness_mode(cs):
            return AllocatedBit(cs.push(1 if value else 0), value)
        var = cs.alloc(leaf(ns, "boolean"), _fr(value))
        cs.enforce(
            leaf(ns, "boolean constraint"),
            lambda lc: lc.add_term(ONE).add_term(var, _NEG1),
            var,
            0,
        )
        return AllocatedBit(var, value)

    @staticmethod
    def alloc_conditionally(
        cs: ConstraintSystem, value: bool | None, must_be_false: AllocatedBit, ns: Name = None
    ) -> AllocatedBit:
        """A new bit forced to 0 when ``must_be_false`` is 1: ``(1 − m − a) · a = 0``."""
        var = cs.alloc(leaf(ns, "boolean"), _fr(value))
        m = must_be_false.variable
        cs.enforce(
            leaf(ns, "boolean constraint"),
            lambda lc: lc.add_term(ONE).add_term(m, _NEG1).add_term(var, _NEG1),
            var,
            0,
        )
        return AllocatedBit(var, value)

    @staticmethod
    def xor(
        cs: ConstraintSystem, a: AllocatedBit, b: AllocatedBit, ns: Name = None
    ) -> AllocatedBit:
        """c = a ⊕ b with ``(a + a) · b = a + b − c`` (a in A, b in B: the order matters)."""
        value = None if a.value is None or b.value is None else (a.value != b.value)
        if value is not None and witness_mode(cs):
            return AllocatedBit(cs.push(1 if value else 0), value)
        c = cs.alloc(leaf(ns, "xor result"), _fr(value))
        av, bv = a.variable, b.variable
        cs.enforce(
            leaf(ns, "xor constraint"),
            lambda lc: lc.add_term(av, 2),
            bv,
            lambda lc: lc.add_term(av).add_term(bv).add_term(c, _NEG1),
        )
        return AllocatedBit(c, value)

    @staticmethod
    def and_(
        cs: ConstraintSystem, a: AllocatedBit, b: AllocatedBit, ns: Name = None
    ) -> AllocatedBit:
        """c = a ∧ b with ``a · b = c``."""
        value = _and_values(a.value, b.value)
        if value is not None and witness_mode(cs):
            return AllocatedBit(cs.push(1 if value else 0), value)
        c = cs.alloc(leaf(ns, "and result"), _fr(value))
        cs.enforce(leaf(ns, "and constraint"), a.variable, b.variable, c)
        return AllocatedBit(c, value)

    @staticmethod
    def and_not(
        cs: ConstraintSystem, a: AllocatedBit, b: AllocatedBit, ns: Name = None
    ) -> AllocatedBit:
        """c = a ∧ ¬b with ``a · (1 − b) = c``."""
        value = None if a.value is None or b.value is None else (a.value and not b.value)
        if value is not None and witness_mode(cs):
            return AllocatedBit(cs.push(1 if value else 0), value)
        c = cs.alloc(leaf(ns, "and not result"), _fr(value))
        bv = b.variable
        cs.enforce(
            leaf(ns, "and not constraint"),
            a.variable,
            lambda lc: lc.add_term(ONE).add_term(bv, _NEG1),
            c,
        )
        return AllocatedBit(c, value)

    @staticmethod
    def nor(
        cs: ConstraintSystem, a: AllocatedBit, b: AllocatedBit, ns: Name = None
    ) -> AllocatedBit:
        """c = ¬a ∧ ¬b with ``(1 − a) · (1 − b) = c``."""
        value = None if a.value is None or b.value is None else (not a.value and not b.value)
        if value is not None and witness_mode(cs):
            return AllocatedBit(cs.push(1 if value else 0), value)
        c = cs.alloc(leaf(ns, "nor result"), _fr(value))
        av, bv = a.variable, b.variable
        cs.enforce(
            leaf(ns, "nor constraint"),
            lambda lc: lc.add_term(ONE).add_term(av, _NEG1),
            lambda lc: lc.add_term(ONE).add_term(bv, _NEG1),
            c,
        )
        return AllocatedBit(c, value)


class Boolean:
    """A constant, an allocated bit, or a negated allocated bit (bellpepper's three variants).

    ``bit is None`` means constant (``constant`` holds it); otherwise ``negated`` says whether
    this is ``Not(bit)``. Negation is free: it only flips the view.
    """

    __slots__ = ("bit", "negated", "constant")

    def __init__(self, bit: AllocatedBit | None, negated: bool = False, constant: bool = False):
        self.bit = bit
        self.negated = negated
        self.constant = constant

    @staticmethod
    def const(value: bool) -> Boolean:
        return TRUE if value else FALSE

    @staticmethod
    def of(bit: AllocatedBit) -> Boolean:
        """``Boolean::Is(bit)``."""
        return Boolean(bit)

    @property
    def is_constant(self) -> bool:
        return self.bit is None

    @property
    def is_negated(self) -> bool:
        return self.bit is not None and self.negated

    @property
    def value(self) -> bool | None:
        bit = self.bit
        if bit is None:
            return self.constant
        v = bit.value
        return None if v is None else (v != self.negated)

    def not_(self) -> Boolean:
        if self.bit is None:
            return Boolean.const(not self.constant)
        return Boolean(self.bit, not self.negated)

    def lc(self, coeff: int = 1) -> LinearCombination:
        """coeff · self as a linear combination (``Boolean::lc``): ONE for true, 1 − b for ¬b."""
        return LinearCombination(self.add_to(None, coeff))

    def add_to(self, terms: dict[int, int] | None, coeff: int) -> dict[int, int]:
        """Add coeff · self into ``terms`` in place (a new dict if None); the hot path of
        addmany's batched equalities, so it works on raw ``{key: coeff}`` dicts."""
        if terms is None:
            terms = {}
        coeff %= R
        bit = self.bit
        if bit is None:
            if self.constant:
                _add(terms, _ONE_KEY, coeff)
            return terms
        if self.negated:
            _add(terms, _ONE_KEY, coeff)
            _add(terms, bit.variable.key, R - coeff)
        else:
            _add(terms, bit.variable.key, coeff)
        return terms

    def __repr__(self) -> str:
        if self.bit is None:
            return f"Boolean.const({self.constant})"
        return f"Boolean({'Not' if self.negated else 'Is'} {self.bit.variable!r}={self.bit.value})"


def _add(terms: dict[int, int], key: int, coeff: int) -> None:
    merged = (terms.get(key, 0) + coeff) % R
    if merged:
        terms[key] = merged
    else:
        terms.pop(key, None)


TRUE = Boolean(None, constant=True)
FALSE = Boolean(None, constant=False)


def _is_false(x: Boolean) -> bool:
    return x.bit is None and not x.constant


def _is_true(x: Boolean) -> bool:
    return x.bit is None and x.constant


def xor(cs: ConstraintSystem, a: Boolean, b: Boolean, ns: Name = None) -> Boolean:
    """a ⊕ b: free when either side is constant, else one constraint.

    With one side negated, bellpepper xors the *plain* operand first and negates the result, so
    the un-negated bit lands in A.
    """
    if _is_false(a):
        return b
    if _is_false(b):
        return a
    if _is_true(a):
        return b.not_()
    if _is_true(b):
        return a.not_()
    assert a.bit is not None and b.bit is not None
    if a.negated == b.negated:
        return Boolean(AllocatedBit.xor(cs, a.bit, b.bit, ns))
    plain, neg = (a, b) if not a.negated else (b, a)
    # why the ignore below: both operands are allocated here (the constant cases returned above)
    return Boolean(AllocatedBit.xor(cs, plain.bit, neg.bit, ns), True)  # type: ignore[arg-type]


def and_(cs: ConstraintSystem, a: Boolean, b: Boolean, ns: Name = None) -> Boolean:
    """a ∧ b: free with a constant operand, else one of and / and-not / nor (one constraint)."""
    if _is_false(a) or _is_false(b):
        return FALSE
    if _is_true(a):
        return b
    if _is_true(b):
        return a
    assert a.bit is not None and b.bit is not None
    if not a.negated and b.negated:
        return Boolean(AllocatedBit.and_not(cs, a.bit, b.bit, ns))
    if a.negated and not b.negated:
        return Boolean(AllocatedBit.and_not(cs, b.bit, a.bit, ns))
    if a.negated and b.negated:
        return Boolean(AllocatedBit.nor(cs, a.bit, b.bit, ns))
    return Boolean(AllocatedBit.and_(cs, a.bit, b.bit, ns))


def or_(cs: ConstraintSystem, a: Boolean, b: Boolean, ns: Name = None) -> Boolean:
    """a ∨ b = ¬(¬a ∧ ¬b), with bellpepper's inner namespace."""
    return and_(cs, a.not_(), b.not_(), leaf(ns, "not and (not a) (not b)")).not_()


def enforce_equal(cs: ConstraintSystem, a: Boolean, b: Boolean, ns: Name = None) -> None:
    """a = b as ``0 · 0 = a − b`` (or against ONE / nothing when a side is constant).

    Raises:
        BadInput: both sides are constants and differ (bellpepper's ``Unsatisfiable``).
    """
    if a.bit is None and b.bit is None:
        if a.constant != b.constant:
            raise BadInput("enforce_equal on two different constant booleans")
        return
    if _is_true(a) or _is_true(b):
        x = b if _is_true(a) else a
        cs.enforce(
            leaf(ns, "enforce equal to one"),
            0,
            0,
            lambda lc: LinearCombination(x.add_to({_ONE_KEY: 1}, R - 1)),
        )
        return
    if _is_false(a) or _is_false(b):
        x = b if _is_false(a) else a
        cs.enforce(leaf(ns, "enforce equal to zero"), 0, 0, lambda lc: x.lc())
        return
    cs.enforce(
        leaf(ns, "enforce equal"),
        0,
        0,
        lambda lc: LinearCombination(b.add_to(a.add_to(None, 1), R - 1)),
    )


def sha256_ch(cs: ConstraintSystem, a: Boolean, b: Boolean, c: Boolean, ns: Name = None) -> Boolean:
    """ch = (a ∧ b) ⊕ (¬a ∧ c), folding constants exactly as bellpepper's arms do."""
    av, bv, cv = a.value, b.value, c.value
    value = None if av is None or bv is None or cv is None else ((av and bv) != ((not av) and cv))
    if a.bit is None and b.bit is None and c.bit is None:
        return Boolean.const(bool(value))
    if _is_false(a):
        return c
    if _is_false(b):
        return and_(cs, a.not_(), c, ns)
    if _is_false(c):
        return and_(cs, a, b, ns)
    if _is_true(c):
        return and_(cs, a, b.not_(), ns).not_()
    if _is_true(b):
        return and_(cs, a.not_(), c.not_(), ns).not_()
    # a is true or a variable; b and c are variables: a · (b − c) = ch − c.
    if value is not None and witness_mode(cs):
        return Boolean(AllocatedBit(cs.push(1 if value else 0), value))
    ch = cs.alloc(leaf(ns, "ch"), _fr(value))
    cs.enforce(
        leaf(ns, "ch computation"),
        lambda lc: LinearCombination(c.add_to(b.add_to(None, 1), R - 1)),
        lambda lc: a.lc(),
        lambda lc: LinearCombination(c.add_to({ch.key: 1}, R - 1)),
    )
    return Boolean(AllocatedBit(ch, value))


def sha256_maj(
    cs: ConstraintSystem, a: Boolean, b: Boolean, c: Boolean, ns: Name = None
) -> Boolean:
    """maj = (a ∧ b) ⊕ (a ∧ c) ⊕ (b ∧ c): with no constant operand, two variables (maj, then
    b ∧ c) and two constraints."""
    av, bv, cv = a.value, b.value, c.value
    value = (
        None
        if av is None or bv is None or cv is None
        else ((av and bv) != (av and cv)) != (bv and cv)
    )
    if a.bit is None and b.bit is None and c.bit is None:
        return Boolean.const(bool(value))
    if _is_false(a):
        return and_(cs, b, c, ns)
    if _is_false(b):
        return and_(cs, a, c, ns)
    if _is_false(c):
        return and_(cs, a, b, ns)
    if _is_true(c):
        return and_(cs, a.not_(), b.not_(), ns).not_()
    if _is_true(b):
        return and_(cs, a.not_(), c.not_(), ns).not_()
    if _is_true(a):
        return and_(cs, b.not_(), c.not_(), ns).not_()
    if value is not None and witness_mode(cs):
        maj_var = cs.push(1 if value else 0)
        and_(cs, b, c)  # b ∧ c is the circuit's second variable
        return Boolean(AllocatedBit(maj_var, value))
    maj = cs.alloc(leaf(ns, "maj"), _fr(value))
    bc = and_(cs, b, c, leaf(ns, "b and c"))
    # (bc + bc − b − c) · a = bc − maj
    cs.enforce(
        leaf(ns, "maj computation"),
        lambda lc: LinearCombination(c.add_to(b.add_to(bc.add_to(None, 2), R - 1), R - 1)),
        lambda lc: a.lc(),
        lambda lc: LinearCombination(bc.add_to({maj.key: R - 1}, 1)),
    )
    return Boolean(AllocatedBit(maj, value))


def u64_into_boolean_vec_le(cs: ConstraintSystem, value: int | None) -> list[Boolean]:
    """64 allocated bits of ``value``, least significant first (64 constraints)."""
    return [
        Boolean(
            AllocatedBit.alloc(
                cs, None if value is None else bool((value >> i) & 1), lambda i=i: f"bit {i}"
            )
        )
        for i in range(64)
    ]


def field_into_allocated_bits_le(cs: ConstraintSystem, value: int | None) -> list[AllocatedBit]:
    """The 255 bits of a field element, allocated least significant first (255 constraints)."""
    if value is not None and witness_mode(cs):
        return _witness_bits_le(cs, value, FR_NUM_BITS)
    return [
        AllocatedBit.alloc(
            cs, None if value is None else bool((value >> i) & 1), lambda i=i: f"bit {i}"
        )
        for i in range(FR_NUM_BITS)
    ]


def field_into_boolean_vec_le(cs: ConstraintSystem, value: int | None) -> list[Boolean]:
    return list(map(Boolean, field_into_allocated_bits_le(cs, value)))


_ASCII_TO_BIT = bytes.maketrans(b"01", b"\x00\x01")


def bits_le(value: int, n: int) -> bytes:
    """The low ``n`` bits of ``value`` as bytes 0/1, least significant first (C-level string
    conversions: ~1 µs for 255 bits)."""
    return format(value & ((1 << n) - 1), f"0{n}b")[::-1].encode().translate(_ASCII_TO_BIT)


def alloc_bit_values(cs: WitnessCS, value: int, n: int) -> tuple[int, bytes]:
    """What ``n`` :meth:`AllocatedBit.alloc` calls for the low bits of ``value`` (least
    significant first) append in witness mode, in one aux extend: (the first bit's variable
    key, the bits as bytes 0/1). For callers that hand the bits on in bulk, not as objects."""
    raw = bits_le(value, n)
    return cs.push_all(raw), raw


def _witness_bits_le(cs: WitnessCS, value: int, n: int) -> list[AllocatedBit]:
    """:func:`alloc_bit_values` with the bits as objects, made by C-level maps instead of ~1 µs
    of Python per bit (a PoRep challenge decomposes ~53,000)."""
    start, raw = alloc_bit_values(cs, value, n)
    return list(map(AllocatedBit, map(Variable, range(start, start + n)), map(bool, raw)))
