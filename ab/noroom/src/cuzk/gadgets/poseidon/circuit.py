"""neptune's legacy Poseidon circuit (``neptune::circuit::poseidon_hash``), the one Filecoin's
parameters were generated with.

It runs neptune's optimised schedule symbolically. The state holds either allocated numbers or
linear combinations (``Num``); linear layers only combine, and a combination is allocated —
one constraint, ``lc · 1 = v`` — when an S-box needs it as a variable. Per S-box:

* first round, element 0: the domain tag is constant, so its S-box is computed outright;
* first round, preimage elements: ``(x + k)² = l2``, ``l2² = l4``, ``(x + k) · l4 = l5 − k'``
  (3 constraints; the pre-add k and post-add k' fold into the linear combinations);
* later rounds: allocate the input (1), ``x² = l2``, ``l2² = l4``, ``x · l4 = l5 − k'`` (3).

Then the digest (state[1]) is allocated: 3a + 28(a + 1) + 4·R_P + 1 constraints for arity a
(upstream tests: 311, 377, 505, 761 for arities 2, 4, 8, 16).
"""

from __future__ import annotations

from collections.abc import Sequence

from cuzk.errors import BadInput
from cuzk.field.constants import R
from cuzk.gadgets._names import Name, leaf
from cuzk.gadgets.num import AllocatedNum, Num
from cuzk.gadgets.poseidon.constants import (
    PoseidonConstants,
    Strength,
    merkle_tree_tag,
    poseidon_constants,
)
from cuzk.gadgets.poseidon.witness import hash_witness
from cuzk.r1cs import ONE, ConstraintSystem, LinearCombination, witness_mode

Elt = AllocatedNum | Num


def _add_opt(a: int | None, b: int) -> int | None:
    return None if a is None else (a + b) % R


def ensure_allocated(cs: ConstraintSystem, e: Elt, ns: Name) -> AllocatedNum:
    """A variable for ``e``: itself if allocated, else a new one with ``lc · 1 = v``."""
    if isinstance(e, AllocatedNum):
        return e
    v = AllocatedNum.alloc(cs, e.value, leaf(ns, "allocate for Elt::Num"))
    cs.enforce(leaf(ns, "enforce num allocation preserves lc"), lambda lc: e.lc(), ONE, v.variable)
    return v


def _square_sum(cs: ConstraintSystem, to_add: int, x: AllocatedNum, ns: Name) -> AllocatedNum:
    """(x + k)² with ``(x + k) · (x + k) = res``."""
    s = _add_opt(x.value, to_add)
    res = AllocatedNum.alloc(cs, None if s is None else s * s % R, leaf(ns, "squared sum"))
    xv = x.variable

    def lc_sum(lc: LinearCombination) -> LinearCombination:
        return lc.add_term(xv).add_term(ONE, to_add)

    cs.enforce(leaf(ns, "squared sum constraint"), lc_sum, lc_sum, res.variable)
    return res


def _mul_sum(
    cs: ConstraintSystem,
    a: AllocatedNum,
    b: AllocatedNum,
    pre_add: int | None,
    post_add: int | None,
    ns: Name,
) -> AllocatedNum:
    """a · (b + pre) + post with ``(b + pre) · a = res − post`` (b in A, a in B)."""
    value = None
    if a.value is not None and b.value is not None:
        value = (b.value + (pre_add or 0)) * a.value % R
        value = (value + (post_add or 0)) % R
    res = AllocatedNum.alloc(cs, value, leaf(ns, "mul_sum"))
    av, bv, rv = a.variable, b.variable, res.variable
    kind = {(True, True): " pre-post-add", (False, True): " post-add", (True, False): " pre-add"}
    name = "mul sum constraint" + kind.get((pre_add is not None, post_add is not None), "")

    def lhs(lc: LinearCombination) -> LinearCombination:
        lc.add_term(bv)
        return lc if pre_add is None else lc.add_term(ONE, pre_add)

    def out(lc: LinearCombination) -> LinearCombination:
        lc.add_term(rv)
        return lc if post_add is None else lc.add_term(ONE, R - post_add)

    cs.enforce(leaf(ns, name), lhs, av, out)
    return res


def _quintic_s_box(
    cs: ConstraintSystem, e: Elt, post_round_key: int | None, ns: Name
) -> AllocatedNum:
    x = ensure_allocated(cs, e, leaf(ns, "S-box input"))
    l2 = x.square(cs, leaf(ns, "l^2"))
    l4 = l2.square(cs, leaf(ns, "l^4"))
    return _mul_sum(cs, l4, x, None, post_round_key, leaf(ns, "(l4 * l) + rk)"))


def _quintic_s_box_pre_add(
    cs: ConstraintSystem, e: Elt, pre: int, post: int, ns: Name
) -> AllocatedNum:
    x = ensure_allocated(cs, e, leaf(ns, "S-box input"))
    l2 = _square_sum(cs, pre, x, leaf(ns, "(l+rk)^2"))
    l4 = l2.square(cs, leaf(ns, "l^4"))
    return _mul_sum(cs, l4, x, pre, post, leaf(ns, "l4 * (l + rk)"))


def _terms(e: Elt) -> dict[int, int]:
    if isinstance(e, AllocatedNum):
        return {e.variable.key: 1}
    assert e.terms is not None
    return e.terms


def _scalar_product(elts: Sequence[Elt], scalars: Sequence[int], track: bool) -> Num:
    """Σ scalar_i · elt_i as a Num (no constraint)."""
    value: int | None = 0
    for e, s in zip(elts, scalars, strict=True):
        if e.value is None:
            value = None
            break
        # why the ignore below: value and e.value are set here: a missing one broke out of the loop
        # above
        value += s * e.value  # type: ignore[operator]
    value = None if value is None else value % R
    if not track:
        return Num(value, None)
    terms: dict[int, int] = {}
    for e, s in zip(elts, scalars, strict=True):
        for k, c in _terms(e).items():
            terms[k] = (terms.get(k, 0) + c * s) % R
    return Num(value, {k: c for k, c in terms.items() if c})


class _Hasher:
    """neptune's ``PoseidonCircuit``: the state plus the constants/round cursors."""

    def __init__(self, cs: ConstraintSystem, c: PoseidonConstants, elements: list[Elt]) -> None:
        self.cs = cs
        self.c = c
        self.track = cs.needs_constraints
        self.elements = elements
        self.offset = 0
        self.round = 0

    def full_round(self, ns: Name, first: bool, last: bool) -> None:
        c, cs, t = self.c, self.cs, self.c.width
        crc = c.compressed_round_constants
        off = self.offset
        pre = crc[off : off + t] if first else ()
        off += len(pre)
        post = crc[off : off + t] if first or not last else ()
        off += len(post)
        els = self.elements
        for i in range(t):
            post_key = post[i] if post else None
            s_ns = leaf(ns, f"quintic s-box {i}")
            if first and i == 0:
                tag = els[0].value
                assert tag is not None, "the domain tag is a constant"
                x = (tag + pre[0]) % R
                x2 = x * x % R
                els[0] = Num.constant((x2 * x2 % R * x + post[0]) % R, self.track)
            elif first:
                els[i] = _quintic_s_box_pre_add(cs, els[i], pre[i], post[i], s_ns)
            else:
                els[i] = _quintic_s_box(cs, els[i], post_key, s_ns)
        self.offset = off
        self.product_mds()

    def partial_round(self, ns: Name) -> None:
        key = self.c.compressed_round_constants[self.offset]
        self.offset += 1
        self.elements[0] = _quintic_s_box(
            self.cs, self.elements[0], key, leaf(ns, "solitary quintic s-box")
        )
        self.product_mds()

    def product_mds(self) -> None:
        c, t, els, track = self.c, self.c.width, self.elements, self.track
        half = c.half_full_rounds
        if self.round == half - 1:
            m = c.pre_sparse
            self.elements = [
                _scalar_product(els, [m[i][j] for i in range(t)], track) for j in range(t)
            ]
        elif half - 1 < self.round < half + c.partial_rounds:
            w_hat, v_rest = c.sparse[self.round - half]
            first = _scalar_product(els, w_hat, track)
            e0 = els[0]
            e0n = e0 if isinstance(e0, Num) else Num.of(e0, track)
            rest = []
            for j in range(1, t):
                ej = els[j]
                assert isinstance(ej, Num), "only combinations are added in sparse rounds"
                rest.append(ej.add(e0n.scale(v_rest[j - 1])))
            self.elements = [first, *rest]
        else:
            m = c.mds
            self.elements = [
                _scalar_product(els, [m[i][j] for i in range(t)], track) for j in range(t)
            ]
        self.round += 1


def poseidon_hash(
    cs: ConstraintSystem,
    preimage: Sequence[AllocatedNum],
    tag: int | None = None,
    strength: Strength = Strength.STANDARD,
    ns: Name = None,
) -> AllocatedNum:
    """Poseidon(tag, preimage) as neptune's legacy circuit; ``tag`` defaults to the Merkle-tree
    tag of ``len(preimage)``. Returns the allocated digest.

    Raises:
        BadInput: an empty preimage.
    """
    if not preimage:
        raise BadInput("Poseidon needs at least one preimage element")
    c = poseidon_constants(len(preimage), strength)
    tag = merkle_tree_tag(c.arity) if tag is None else tag

    def gadget() -> AllocatedNum:
        track = cs.needs_constraints
        h = _Hasher(cs, c, [Num.constant(tag, track), *preimage])
        half = c.half_full_rounds
        h.full_round(leaf(ns, "first round"), True, False)
        for i in range(1, half):
            h.full_round(leaf(ns, f"initial full round {i}"), False, False)
        for i in range(c.partial_rounds):
            h.partial_round(leaf(ns, f"partial round {i}"))
        for i in range(half - 1):
            h.full_round(leaf(ns, f"final full round {i}"), False, False)
        h.full_round(leaf(ns, "terminal full round"), False, True)
        return ensure_allocated(cs, h.elements[1], leaf(ns, "hash result"))

    if witness_mode(cs):  # values only: the kernel can write them (witness.py)
        return hash_witness(cs, preimage, tag, strength, gadget)
    return gadget()
