"""Merkle inclusion (proof of retrievability): storage-proofs-core's ``PoRCircuit`` and
``por_no_challenge_input``.

Per path level (base levels, then the sub level, then the top level, each under its own
namespace): allocate the position's index bits (booleanity: log2(arity) constraints), allocate
the arity − 1 siblings (free), :func:`~cuzk.gadgets.insertion.insert` the current node, hash the
preimage (Poseidon with the Merkle tag of that arity). Then the index bits are packed into public
inputs (one per 254 bits), the root is allocated (unless the caller passes an allocated one),
``computed · 1 = root`` is enforced, and a public root is inputized.

For a 2 KiB TreeR (64 leaves, 8-0-0) that is 2 · (3 + 22 + 505) + 1 + 1 = 1,062 constraints, the
per-challenge cost behind WindowPoSt's 21,866.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cuzk.errors import BadInput
from cuzk.gadgets._names import Name, leaf
from cuzk.gadgets.boolean import AllocatedBit, Boolean
from cuzk.gadgets.insertion import insert
from cuzk.gadgets.merkle import TreeShape
from cuzk.gadgets.multipack import pack_into_inputs
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.poseidon.circuit import poseidon_hash
from cuzk.r1cs import ONE, ConstraintSystem

NodeHasher = Callable[[ConstraintSystem, list[AllocatedNum], Name], AllocatedNum]
"""Hashes one preimage of ``arity`` allocated nodes (the arity is the list's length)."""


def poseidon_node(cs: ConstraintSystem, preimage: list[AllocatedNum], ns: Name) -> AllocatedNum:
    """Filecoin's Poseidon node hash: neptune's legacy circuit with the Merkle-tree tag."""
    return poseidon_hash(cs, preimage, ns=ns)


@dataclass(frozen=True)
class PathLevel:
    """One step of an authentication path as the circuit takes it (``None``s in shape mode)."""

    siblings: Sequence[int | None]  # arity − 1 sibling hashes, in order
    position: int | None  # the node's place among the arity children


Root = AllocatedNum | int | None
"""A value to allocate (or ``None`` in shape mode), or an already allocated number to reuse —
upstream's ``Root::Val`` / ``Root::Var``."""


def _allocated(cs: ConstraintSystem, root: Root, ns: Name) -> AllocatedNum:
    if isinstance(root, AllocatedNum):
        return root
    return AllocatedNum.alloc(cs, root, ns)


def _sub_path(
    cs: ConstraintSystem,
    cur: AllocatedNum,
    levels: Sequence[PathLevel],
    arity: int,
    hasher: NodeHasher,
    ns: Name,
) -> tuple[AllocatedNum, list[Boolean]]:
    nbits = arity.bit_length() - 1
    bits: list[Boolean] = []
    for i, level in enumerate(levels):
        if len(level.siblings) != arity - 1:
            raise BadInput(
                f"path level has {len(level.siblings)} siblings, arity {arity} needs {arity - 1}"
            )
        p = leaf(ns, f"merkle tree hash {i}")
        pos = level.position
        index_bits = [
            Boolean(
                AllocatedBit.alloc(
                    cs, None if pos is None else bool((pos >> j) & 1), leaf(p, f"index bit {j}")
                )
            )
            for j in range(nbits)
        ]
        bits.extend(index_bits)
        siblings = [
            AllocatedNum.alloc(cs, h, leaf(p, f"path element {j}"))
            for j, h in enumerate(level.siblings)
        ]
        preimage = insert(cs, cur, index_bits, siblings, p)
        cur = hasher(cs, preimage, leaf(p, "computation of commitment hash"))
    return cur, bits


def por(
    cs: ConstraintSystem,
    value: Root,
    path: Sequence[PathLevel],
    shape: TreeShape,
    root: Root,
    private: bool,
    hasher: NodeHasher = poseidon_node,
    ns: Name = None,
) -> AllocatedNum:
    """``PoRCircuit::synthesize``: prove ``value`` sits in the tree at the path's index.

    Returns the computed root (already constrained equal to ``root``).

    Raises:
        BadInput: the path does not have one level per tree level.
    """
    arities = shape.arities
    if len(path) != len(arities):
        raise BadInput(f"path has {len(path)} levels, the tree has {len(arities)}")
    nb = shape.base_levels
    cur = _allocated(cs, value, leaf(ns, "value"))
    cur, bits = _sub_path(cs, cur, path[:nb], shape.base_arity, hasher, leaf(ns, "base"))
    rest = list(path[nb:])
    if shape.sub_arity:
        cur, b = _sub_path(cs, cur, rest[:1], shape.sub_arity, hasher, leaf(ns, "sub"))
        bits += b
    if shape.top_arity:
        cur, b = _sub_path(cs, cur, rest[1:2], shape.top_arity, hasher, leaf(ns, "top"))
        bits += b
    pack_into_inputs(cs, bits, leaf(ns, "path"))
    rt = _allocated(cs, root, leaf(ns, "root_value"))
    computed = cur
    cs.enforce(leaf(ns, "enforce root is correct"), computed.variable, ONE, rt.variable)
    if not private:
        rt.inputize(cs, leaf(ns, "root"))
    return computed


def por_no_challenge_input(
    cs: ConstraintSystem,
    challenge_bits: Sequence[AllocatedBit],
    leaf_num: AllocatedNum,
    path_values: Sequence[Sequence[AllocatedNum]],
    root: AllocatedNum,
    shape: TreeShape,
    hasher: NodeHasher = poseidon_node,
    ns: Name = None,
) -> None:
    """The PoR variant whose caller allocates the challenge bits, leaf, siblings and root
    (SnapDeals/PoRep style): inserts and hashes per level, then ``computed · 1 = root``.

    Raises:
        BadInput: bit or path counts that disagree with the tree's arities.
    """
    arities = shape.arities
    if len(path_values) != len(arities):
        raise BadInput(f"path has {len(path_values)} levels, the tree has {len(arities)}")
    if len(challenge_bits) != sum(a.bit_length() - 1 for a in arities):
        raise BadInput("challenge bit-length and tree arity do not agree")
    bits = [Boolean(b) for b in challenge_bits]
    cur = leaf_num
    used = 0
    for height, (arity, siblings) in enumerate(zip(arities, path_values, strict=True)):
        if len(siblings) != arity - 1:
            raise BadInput("path element has incorrect number of siblings")
        nbits = arity.bit_length() - 1
        preimage = insert(
            cs, cur, bits[used : used + nbits], list(siblings),
            leaf(ns, f"merkle proof insert (height={height})"),
        )  # fmt: skip
        used += nbits
        cur = hasher(cs, preimage, leaf(ns, f"merkle proof hash (height={height})"))
    cs.enforce(leaf(ns, "calculated root == provided root"), cur.variable, ONE, root.variable)
