"""Insertion and selection by index bits: storage-proofs-core's ``gadgets::insertion``.

A Merkle path step knows the current node and its arity − 1 siblings; the index bits say where
the node sits among them. :func:`insert` builds the full preimage with the node moved into
place. Arities 2, 4 and 8 use upstream's hand-optimised tables (2, 8 and 22 constraints); other
powers of two fall back to one :func:`select` per position (size · (size − 1) constraints).
Index bits are little-endian, and for arity 8 they must be plain allocated bits (upstream's
``nor``/``and`` on the low two bits requires it).
"""

from __future__ import annotations

from collections.abc import Sequence

from cuzk.errors import BadInput
from cuzk.field.constants import R
from cuzk.gadgets._names import Name, leaf
from cuzk.gadgets.boolean import AllocatedBit, Boolean
from cuzk.gadgets.num import AllocatedNum
from cuzk.r1cs import ConstraintSystem


def pick(
    cs: ConstraintSystem, condition: Boolean, a: AllocatedNum, b: AllocatedNum, ns: Name = None
) -> AllocatedNum:
    """a if condition else b, with ``(b − a) · condition = b − c`` (one constraint)."""
    cond = condition.value
    value = None if cond is None else (a.value if cond else b.value)
    c = AllocatedNum.alloc(cs, value, leaf(ns, "pick result"))
    av, bv, cv = a.variable, b.variable, c.variable
    cs.enforce(
        leaf(ns, "pick"),
        lambda lc: lc.add_term(bv).add_term(av, R - 1),
        lambda lc: condition.lc(),
        lambda lc: lc.add_term(bv).add_term(cv, R - 1),
    )
    return c


def select(
    cs: ConstraintSystem, options: Sequence[AllocatedNum], bits: Sequence[Boolean], ns: Name = None
) -> AllocatedNum:
    """options[index] for little-endian index bits: a binary tree of picks, most significant
    bit first (len(options) − 1 constraints)."""
    if 1 << len(bits) != len(options):
        raise BadInput(f"{len(bits)} index bits cannot select among {len(options)} options")
    state = list(options)
    half = len(options) // 2
    for i, bit in enumerate(reversed(bits)):
        state = [
            pick(cs, bit, state[half + j], state[j], leaf(ns, f"pick {i}, {j}"))
            for j in range(half)
        ]
        half //= 2
    return state[0]


def insert(
    cs: ConstraintSystem,
    element: AllocatedNum,
    bits: Sequence[Boolean],
    elements: Sequence[AllocatedNum],
    ns: Name = None,
) -> list[AllocatedNum]:
    """``elements`` with ``element`` inserted at position index (little-endian ``bits``).

    Raises:
        BadInput: len(elements) + 1 is not 2^len(bits).
    """
    size = len(elements) + 1
    if 1 << len(bits) != size:
        raise BadInput(f"{len(bits)} index bits cannot place into {size} positions")
    if size == 2:
        return _insert_2(cs, element, bits, elements, ns)
    if size == 4:
        return _insert_4(cs, element, bits, elements, ns)
    if size == 8:
        return _insert_8(cs, element, bits, elements, ns)
    out = []
    for pos in range(size):
        # Column `pos` of the table "result for each index": elements shift right past the index.
        choices = [
            elements[pos] if pos < index else (element if pos == index else elements[pos - 1])
            for index in range(size)
        ]
        out.append(select(cs, choices, bits, leaf(ns, f"choice at {pos}")))
    return out


def _insert_2(
    cs: ConstraintSystem,
    element: AllocatedNum,
    bits: Sequence[Boolean],
    elements: Sequence[AllocatedNum],
    ns: Name,
) -> list[AllocatedNum]:
    b0, x = bits[0], elements[0]
    return [
        pick(cs, b0, x, element, leaf(ns, "binary insert 0")),
        pick(cs, b0, element, x, leaf(ns, "binary insert 1")),
    ]


def _insert_4(
    cs: ConstraintSystem,
    element: AllocatedNum,
    bits: Sequence[Boolean],
    elements: Sequence[AllocatedNum],
    ns: Name,
) -> list[AllocatedNum]:
    b0, b1 = bits
    a, b, c, d = element, *elements

    def w(name: str, cond: Boolean, x: AllocatedNum, y: AllocatedNum) -> AllocatedNum:
        return pick(cs, cond, x, y, leaf(ns, name))

    p0_x0 = w("p0_x0", b0, b, a)
    p0 = w("p0", b1, b, p0_x0)
    p1_x0 = w("p1_x0", b0, a, b)
    p1 = w("p1", b1, c, p1_x0)
    p2_x1 = w("p2_x1", b0, d, a)
    p2 = w("p2", b1, p2_x1, c)
    p3_x1 = w("p3_x1", b0, a, d)
    p3 = w("p3", b1, p3_x1, d)
    return [p0, p1, p2, p3]


def _insert_8(
    cs: ConstraintSystem,
    element: AllocatedNum,
    bits: Sequence[Boolean],
    elements: Sequence[AllocatedNum],
    ns: Name,
) -> list[AllocatedNum]:
    b0, b1, b2 = bits
    if b0.is_constant or b0.is_negated or b1.is_constant or b1.is_negated:
        raise BadInput("arity-8 insertion needs allocated, unnegated index bits")
    a, b, c, d, e, f, g, h = element, *elements
    b0_nor_b1 = Boolean(AllocatedBit.nor(cs, b0.bit, b1.bit, leaf(ns, "b0 nor b1")))  # type: ignore[arg-type]
    b0_and_b1 = Boolean(AllocatedBit.and_(cs, b0.bit, b1.bit, leaf(ns, "b0 and b1")))  # type: ignore[arg-type]

    def w(name: str, cond: Boolean, x: AllocatedNum, y: AllocatedNum) -> AllocatedNum:
        return pick(cs, cond, x, y, leaf(ns, name))

    p0_xx0 = w("p0_xx0", b0_nor_b1, a, b)
    p0 = w("p0", b2, b, p0_xx0)
    p1_x00 = w("p1_x00", b0, a, b)
    p1_xx0 = w("p1_xx0", b1, c, p1_x00)
    p1 = w("p1", b2, c, p1_xx0)
    p2_x10 = w("p2_x10", b0, d, a)
    p2_xx0 = w("p2_xx0", b1, p2_x10, c)
    p2 = w("p2", b2, d, p2_xx0)
    p3_xx0 = w("p3_xx0", b0_and_b1, a, d)
    p3 = w("p3", b2, e, p3_xx0)
    p4_xx1 = w("p4_xx1", b0_nor_b1, a, f)
    p4 = w("p4", b2, p4_xx1, e)
    p5_x01 = w("p5_x01", b0, a, f)
    p5_xx1 = w("p5_xx1", b1, g, p5_x01)
    p5 = w("p5", b2, p5_xx1, f)
    p6_x11 = w("p6_x11", b0, h, a)
    p6_xx1 = w("p6_xx1", b1, p6_x11, g)
    p6 = w("p6", b2, p6_xx1, g)
    p7_xx1 = w("p7_xx1", b0_and_b1, a, h)
    p7 = w("p7", b2, p7_xx1, h)
    return [p0, p1, p2, p3, p4, p5, p6, p7]
