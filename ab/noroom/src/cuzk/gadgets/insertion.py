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
from cuzk.r1cs import ConstraintSystem, Variable, WitnessCS, witness_mode


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


#: Upstream's hand-optimised insertions as pick tables: per pick (name, condition, if true,
#: if false), in allocation order. Operands name the inserted element ``a``, the other
#: elements ``b`` … ``h``, index bits ``b0`` … ``b2``, the arity-8 helper bits ``nor`` (¬b0 ∧ ¬b1)
#: and ``and`` (b0 ∧ b1), and earlier picks by their names. The preimage is the picks named in
#: :func:`_outputs`. One table drives both the gadget and its witness-only replay.
_TABLES: dict[int, tuple[tuple[str, str, str, str], ...]] = {
    2: (("binary insert 0", "b0", "b", "a"), ("binary insert 1", "b0", "a", "b")),
    4: (
        ("p0_x0", "b0", "b", "a"), ("p0", "b1", "b", "p0_x0"),
        ("p1_x0", "b0", "a", "b"), ("p1", "b1", "c", "p1_x0"),
        ("p2_x1", "b0", "d", "a"), ("p2", "b1", "p2_x1", "c"),
        ("p3_x1", "b0", "a", "d"), ("p3", "b1", "p3_x1", "d"),
    ),
    8: (
        ("p0_xx0", "nor", "a", "b"), ("p0", "b2", "b", "p0_xx0"),
        ("p1_x00", "b0", "a", "b"), ("p1_xx0", "b1", "c", "p1_x00"), ("p1", "b2", "c", "p1_xx0"),
        ("p2_x10", "b0", "d", "a"), ("p2_xx0", "b1", "p2_x10", "c"), ("p2", "b2", "d", "p2_xx0"),
        ("p3_xx0", "and", "a", "d"), ("p3", "b2", "e", "p3_xx0"),
        ("p4_xx1", "nor", "a", "f"), ("p4", "b2", "p4_xx1", "e"),
        ("p5_x01", "b0", "a", "f"), ("p5_xx1", "b1", "g", "p5_x01"), ("p5", "b2", "p5_xx1", "f"),
        ("p6_x11", "b0", "h", "a"), ("p6_xx1", "b1", "p6_x11", "g"), ("p6", "b2", "p6_xx1", "g"),
        ("p7_xx1", "and", "a", "h"), ("p7", "b2", "p7_xx1", "h"),
    ),
}  # fmt: skip


def insert(
    cs: ConstraintSystem,
    element: AllocatedNum,
    bits: Sequence[Boolean],
    elements: Sequence[AllocatedNum],
    ns: Name = None,
) -> list[AllocatedNum]:
    """``elements`` with ``element`` inserted at position index (little-endian ``bits``).

    Raises:
        BadInput: len(elements) + 1 is not 2^len(bits), or arity 8 with index bits that are
            not plain allocated bits (upstream's ``nor``/``and`` on the low two need them).
    """
    size = len(elements) + 1
    if 1 << len(bits) != size:
        raise BadInput(f"{len(bits)} index bits cannot place into {size} positions")
    table = _TABLES.get(size)
    if table is None:
        out = []
        for pos in range(size):
            # Column `pos` of "result for each index": elements shift right past the index.
            choices = [
                elements[pos] if pos < index else (element if pos == index else elements[pos - 1])
                for index in range(size)
            ]
            out.append(select(cs, choices, bits, leaf(ns, f"choice at {pos}")))
        return out
    if size == 8 and any(b.is_constant or b.is_negated for b in bits[:2]):
        raise BadInput("arity-8 insertion needs allocated, unnegated index bits")
    nums = dict(zip("abcdefgh", (element, *elements), strict=False))
    if witness_mode(cs):
        values = {k: n.value for k, n in nums.items()}
        conds = {f"b{i}": b.value for i, b in enumerate(bits)}
        if None not in values.values() and None not in conds.values():
            # why the ignore below: None was ruled out just above; the dicts' types keep the
            # Optional
            return _insert_values(cs, table, size, values, conds)  # type: ignore[arg-type]
    conds_b: dict[str, Boolean] = {f"b{i}": b for i, b in enumerate(bits)}
    if size == 8:
        b0, b1 = bits[0].bit, bits[1].bit
        # why the ignore below: an 8-entry table's index bits are allocated, never constants: .bit
        # is set
        conds_b["nor"] = Boolean(AllocatedBit.nor(cs, b0, b1, leaf(ns, "b0 nor b1")))  # type: ignore[arg-type]
        conds_b["and"] = Boolean(AllocatedBit.and_(cs, b0, b1, leaf(ns, "b0 and b1")))  # type: ignore[arg-type]
    for name, cond, x, y in table:
        nums[name] = pick(cs, conds_b[cond], nums[x], nums[y], leaf(ns, name))
    return [nums[name] for name in _outputs(size)]


def _outputs(size: int) -> list[str]:
    """The picks that are the preimage, in order."""
    return [f"binary insert {i}" for i in range(2)] if size == 2 else [f"p{i}" for i in range(size)]


def _insert_values(
    cs: WitnessCS,
    table: tuple[tuple[str, str, str, str], ...],
    size: int,
    values: dict[str, int],
    conds: dict[str, bool],
) -> list[AllocatedNum]:
    """The table's values appended as witness mode would append them, without the gadgets'
    objects and names: a WindowPoSt partition runs 23,490 insertions of 22 picks."""
    pushed: list[int] = []
    if size == 8:
        b0, b1 = conds["b0"], conds["b1"]
        conds = {**conds, "nor": not b0 and not b1, "and": b0 and b1}
        pushed += (int(conds["nor"]), int(conds["and"]))
    at: dict[str, int] = {}  # each pick's place in pushed
    for name, cond, x, y in table:
        v = values[x] if conds[cond] else values[y]
        values[name] = v
        at[name] = len(pushed)
        pushed.append(v)
    start = cs.push_all(pushed)
    return [AllocatedNum(Variable(start + at[n]), values[n]) for n in _outputs(size)]
