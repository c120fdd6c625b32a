"""The SnapDeals circuit (storage-proofs-update ``EmptySectorUpdateCircuit``), its per-size
parameters, and its counts without synthesising the huge sizes.

A sector update re-encodes a sealed sector's replica with new data: ``label_r_new = label_r_old +
data · rho`` where ``rho = Poseidon_c(phi, high)``, ``phi = Poseidon_c(comm_d_new, comm_r_old)``
and ``high`` is the top ``h`` bits of the node index (Poseidon_c: arity 2 with the Custom(1)
domain tag). One partition circuit proves ``challenge_count`` nodes of its ``1/partition_count``
slice of the sector, in this order (upstream's, variable for variable):

1. public ``k_and_h_select`` (k | h_select << partition_bit_len), split into bits; public
   comm_r_old, comm_d_new, comm_r_new; ``phi``;
2. private comm_c, root_r_old, root_r_new, the partition's TreeD apex leaves and the TreeD path
   from the apex root to comm_d_new; ``comm_r = Poseidon2(comm_c, root_r)`` for old and new;
3. the apex tree (SHA-256 node hashes) and its inclusion in comm_d_new;
4. challenge bits from ``Poseidon_c(comm_r_new, digest_index)`` digests, partition bits on top;
5. per challenge: rho, label_r_new, TreeR_old and TreeR_new inclusion, TreeD inclusion of the new
   data leaf up to the selected apex leaf.

Challenge blocks allocate their own variables and reuse only header variables that the header
has already made dense (bits) or that the first block makes dense (phi, apex leaves), so
:func:`structural_counts` synthesises the header and two blocks in a counting constraint system
and extrapolates; :func:`shape_counts` is the full shape, used to cross-check on small sizes.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import NamedTuple, TypeVar

from cuzk.circuits.filecoin.post import PARAMS_VERSION, CircuitCounts, counts_of
from cuzk.circuits.filecoin.post_params import GIB, KIB, MIB, NODE_SIZE, SIZE_NAMES, tree_shape
from cuzk.errors import BadInput
from cuzk.field.constants import R
from cuzk.gadgets.boolean import AllocatedBit, Boolean, field_into_allocated_bits_le
from cuzk.gadgets.insertion import select
from cuzk.gadgets.merkle import TreeShape
from cuzk.gadgets.multipack import pack_bits
from cuzk.gadgets.num import POW2, AllocatedNum
from cuzk.gadgets.por import por_no_challenge_input
from cuzk.gadgets.poseidon.circuit import poseidon_hash
from cuzk.gadgets.poseidon.constants import custom_tag
from cuzk.gadgets.sha256.node import sha256_hash2, sha256_node
from cuzk.r1cs import ONE, ConstraintSystem, LinearCombination, Variable, witness_mode
from cuzk.r1cs.lc import LcSpec, resolve
from cuzk.r1cs.system import NameSpec, ValueSpec, WitnessPrefix

#: Poseidon domain tag of phi, rho and the challenge digests (``HashType::Custom(1)``).
GEN_RANDOMNESS_TAG = custom_tag(1)

FR_NUM_BITS = 255  # bits of an allocated field element (``Fr::NUM_BITS``)
FR_CAPACITY = 254  # bits that always fit (``Fr::CAPACITY``)

SNAP_SIZES = (2 * KIB, 8 * MIB, 512 * MIB, 32 * GIB, 64 * GIB)


@dataclass(frozen=True)
class SnapParams:
    """One partition circuit's parameters (upstream ``update::PublicParams``)."""

    sector_size: int  # bytes
    tree: TreeShape  # TreeR (old and new) over sector_size / 32 leaves

    @property
    def sector_nodes(self) -> int:
        return self.sector_size // NODE_SIZE

    @property
    def challenge_bit_len(self) -> int:
        """log2(nodes): a challenge's bits, also TreeD's height."""
        return self.sector_nodes.bit_length() - 1

    @property
    def partition_count(self) -> int:
        n = self.sector_nodes
        return 1 if n <= 1 << 8 else 2 if n <= 1 << 10 else 4 if n <= 1 << 19 else 16

    @property
    def partition_bit_len(self) -> int:
        return self.partition_count.bit_length() - 1

    @property
    def challenge_count(self) -> int:
        """Challenges per partition."""
        return 10 if self.sector_nodes <= 1 << 19 else 86

    @property
    def apex_leaf_count(self) -> int:
        """TreeD nodes per partition at the apex-leaf row."""
        return 8 if self.sector_nodes <= 1 << 8 else 128

    @property
    def apex_leaf_bit_len(self) -> int:
        return self.apex_leaf_count.bit_length() - 1

    @property
    def hs(self) -> tuple[int, ...]:
        """The six ``h`` values the circuit can select (``constants::hs``)."""
        return (1,) * 6 if self.sector_nodes <= 1 << 10 else (7, 8, 9, 10, 11, 12)

    @property
    def h_default(self) -> int:
        """The ``h`` filecoin-proofs uses (``hs[3]``)."""
        return self.hs[3]

    @property
    def random_bits_per_challenge(self) -> int:
        return self.challenge_bit_len - self.partition_bit_len

    @property
    def challenges_per_digest(self) -> int:
        return FR_CAPACITY // self.random_bits_per_challenge

    @property
    def digests_per_partition(self) -> int:
        return -(-self.challenge_count // self.challenges_per_digest)

    @property
    def apex_height(self) -> int:
        """TreeD row of the apex leaves (leaves are row 0)."""
        return self.challenge_bit_len - self.partition_bit_len - self.apex_leaf_bit_len

    @property
    def circuit_id(self) -> str:
        return f"snap-{SIZE_NAMES[self.sector_size]}"

    @property
    def identifier(self) -> str:
        """Upstream ``ParameterSetMetadata::identifier`` (hashed into parameter file names)."""
        return f"empty_sector_update::PublicParams{{ sector_nodes: {self.sector_nodes} }}"

    def h_select(self, h: int) -> int:
        """``1 << index of h in hs`` (the first match, as upstream's ``position``)."""
        if h not in self.hs:
            raise BadInput(f"{self.circuit_id}: h = {h} is not one of {list(self.hs)}")
        return 1 << self.hs.index(h)

    def k_and_h_select(self, k: int, h: int) -> int:
        """The first public input: partition index and h_select packed together."""
        if not 0 <= k < self.partition_count:
            raise BadInput(f"{self.circuit_id}: partition {k} of {self.partition_count}")
        return k | (self.h_select(h) << self.partition_bit_len)

    def public_inputs(
        self, k: int, h: int, comm_r_old: int, comm_d_new: int, comm_r_new: int
    ) -> list[int]:
        """Upstream ``generate_public_inputs`` (without ONE)."""
        return [self.k_and_h_select(k, h), comm_r_old, comm_d_new, comm_r_new]


def snap_params(circuit_id: str) -> SnapParams:
    """``snap-2k``, ``snap-8m``, ``snap-512m``, ``snap-32g``, ``snap-64g``."""
    by_name = {v: k for k, v in SIZE_NAMES.items()}
    kind, _, size = circuit_id.partition("-")
    if kind != "snap" or size not in by_name:
        raise BadInput(f"unknown circuit {circuit_id!r}; SnapDeals circuits are "
                       f"{', '.join(snap_circuit_ids())}")  # fmt: skip
    return snap_params_for_size(by_name[size])


def snap_params_for_size(sector_size: int) -> SnapParams:
    if sector_size not in SNAP_SIZES:
        raise BadInput(f"unsupported SnapDeals sector size {sector_size}")
    return SnapParams(sector_size, tree_shape(sector_size))


def snap_circuit_ids() -> list[str]:
    return [f"snap-{SIZE_NAMES[s]}" for s in SNAP_SIZES]


def param_file_stem(params: SnapParams) -> str:
    """Official v28 parameter file name without ``.params``/``.vk``: upstream's cache prefix
    ``empty-sector-update-<TreeR display>`` and the SHA-256 of :attr:`SnapParams.identifier`."""
    t = params.tree
    digest = hashlib.sha256(params.identifier.encode()).hexdigest()
    return (
        f"v{PARAMS_VERSION}-empty-sector-update-merkletree-poseidon_hasher-"
        f"{t.base_arity}-{t.sub_arity}-{t.top_arity}-{digest}"
    )


def tree_d_shape(levels: int) -> TreeShape:
    """A binary TreeD (sub)path of ``levels`` levels, as a shape the PoR gadget takes."""
    return TreeShape(1 << levels, 2, 0, 0)


# -- witness --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChallengeWitness:
    """One challenge's three Merkle paths as the circuit takes them (siblings per level,
    bottom-up; positions follow from the challenge)."""

    leaf_r_old: int
    path_r_old: tuple[tuple[int, ...], ...]
    leaf_d_new: int
    path_d_new: tuple[int, ...]  # binary TreeD: one sibling per level, challenge_bit_len levels
    leaf_r_new: int
    path_r_new: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class PartitionWitness:
    """Everything one partition circuit needs (public inputs included), already checked."""

    k: int  # partition index
    h: int  # high bits taken from each challenge (one of params.hs)
    comm_r_old: int
    comm_d_new: int
    comm_r_new: int
    comm_c: int
    root_r_old: int
    root_r_new: int
    apex_leafs: tuple[int, ...]
    challenges: tuple[ChallengeWitness, ...] = field(repr=False)


T = TypeVar("T")
U = TypeVar("U")


def _v(w: T | None, get: Callable[[T], U]) -> U | None:
    """A witness value, or None in shape mode."""
    return None if w is None else get(w)


@dataclass(frozen=True)
class SnapCircuit:
    """One SnapDeals partition; ``witness`` None is the blank circuit (shape mode).

    ``challenge_limit`` (counting only) synthesises just the first blocks of challenges;
    ``blocks`` (a view, :mod:`cuzk.r1cs.blocks`) just the challenges it names, in its order.
    The challenge blocks read only the header's variables (phi, the roots, the apex leaves and
    the generated challenge bits), so a partition's witness is built view by view in parallel.
    """

    params: SnapParams
    witness: PartitionWitness | None = None
    challenge_limit: int | None = None
    blocks: tuple[int, ...] | None = None

    @property
    def circuit_id(self) -> str:
        return self.params.circuit_id

    def __post_init__(self) -> None:
        p, w = self.params, self.witness
        if w is None:
            return
        if len(w.apex_leafs) != p.apex_leaf_count:
            raise BadInput(f"{len(w.apex_leafs)} apex leaves, expected {p.apex_leaf_count}")
        if len(w.challenges) != p.challenge_count:
            raise BadInput(f"{len(w.challenges)} challenge proofs, expected {p.challenge_count}")
        tail = w.challenges[0].path_d_new[p.challenge_bit_len - p.partition_bit_len :]
        for i, c in enumerate(w.challenges):
            if len(c.path_d_new) != p.challenge_bit_len:
                raise BadInput(f"challenge {i}: TreeD path has {len(c.path_d_new)} levels")
            if c.path_d_new[p.challenge_bit_len - p.partition_bit_len :] != tail:
                raise BadInput(f"challenge {i}: partition path differs from challenge 0's")

    def synthesize(self, cs: ConstraintSystem) -> None:
        synthesize_snap(cs, self.params, self.witness, self.challenge_limit, blocks=self.blocks)

    def block_count(self) -> int:
        """One block per challenge after the header."""
        return self.params.challenge_count

    def view(self, blocks: Sequence[int]) -> SnapCircuit:
        """The header and the challenges ``blocks`` alone, in that order."""
        return dataclasses.replace(self, blocks=tuple(blocks))


def blank_circuit(circuit_id: str) -> SnapCircuit:
    """The witness-less circuit of ``circuit_id`` (for shapes and parameter generation)."""
    return SnapCircuit(snap_params(circuit_id))


class _Header(NamedTuple):
    """What the challenge blocks reuse from the header."""

    phi: AllocatedNum
    root_r_old: AllocatedNum
    root_r_new: AllocatedNum
    apex_leafs: list[AllocatedNum]
    partition_bits: list[AllocatedBit]
    h_select_bits: list[AllocatedBit]
    generated: list[list[AllocatedBit]]  # each challenge's random bits


def _alloc(cs: ConstraintSystem, value: int | None, name: str) -> AllocatedNum:
    with cs.namespace(name):
        return AllocatedNum.alloc(cs, value)


def _sum_lc(
    vars_: Sequence[Variable], coeffs: Sequence[int] | None = None
) -> Callable[[LinearCombination], LinearCombination]:
    def build(lc: LinearCombination) -> LinearCombination:
        for i, v in enumerate(vars_):
            lc.add_term(v, 1 if coeffs is None else coeffs[i])
        return lc

    return build


def _bits_of(value: int | None, n: int) -> list[bool | None]:
    return [None if value is None else bool((value >> i) & 1) for i in range(n)]


def num_to_bits(cs: ConstraintSystem, num: AllocatedNum, ns: str) -> list[AllocatedBit]:
    """``allocated_num_to_allocated_bits``: 255 bits and ``Σ 2^i b_i · 1 = num`` (256)."""
    with cs.namespace(ns):
        bits = field_into_allocated_bits_le(cs, num.value)
        cs.enforce(
            "binary decomp",
            _sum_lc([b.variable for b in bits], POW2),
            ONE,
            num.variable,
        )
    return bits


def _header(cs: ConstraintSystem, p: SnapParams, w: PartitionWitness | None) -> _Header:
    """Public inputs, phi, private roots, apex tree and challenge bits (steps 1–4)."""
    pbl, hbl = p.partition_bit_len, len(p.hs)
    kh = None if w is None else p.k_and_h_select(w.k, w.h)
    k_and_h = _alloc(cs, kh, "k_and_h_select")
    with cs.namespace("k_and_h_select (public input)"):
        k_and_h.inputize(cs)
    kh_bits = [
        AllocatedBit.alloc(cs, b, f"k_and_h_select_bit_{i}")
        for i, b in enumerate(_bits_of(kh, pbl + hbl))
    ]
    cs.enforce("k_and_h_select binary decomp",
               _sum_lc([b.variable for b in kh_bits], POW2), ONE, k_and_h.variable)  # fmt: skip
    partition_bits, h_select_bits = kh_bits[:pbl], kh_bits[pbl:]
    with cs.namespace("pack partition bits"):
        partition = pack_bits(cs, [Boolean(b) for b in partition_bits])

    publics = []
    for name in ("comm_r_old", "comm_d_new", "comm_r_new"):
        num = _alloc(cs, _v(w, attrgetter(name)), name)
        with cs.namespace(f"{name}_input"):
            num.inputize(cs)
        publics.append(num)
    comm_r_old, comm_d_new, comm_r_new = publics
    with cs.namespace("phi"):
        phi = poseidon_hash(cs, [comm_d_new, comm_r_old], tag=GEN_RANDOMNESS_TAG)

    comm_c = _alloc(cs, _v(w, lambda w: w.comm_c), "comm_c")
    root_r_old = _alloc(cs, _v(w, lambda w: w.root_r_old), "root_r_old")
    root_r_new = _alloc(cs, _v(w, lambda w: w.root_r_new), "root_r_new")
    apex_leafs = [
        _alloc(cs, None if w is None else w.apex_leafs[i], f"apex_leaf_{i}")
        for i in range(p.apex_leaf_count)
    ]
    top = p.challenge_bit_len - pbl
    partition_path = [
        [_alloc(cs, None if w is None else w.challenges[0].path_d_new[top + i],
                f"partition_path_sibling_{i}")]
        for i in range(pbl)
    ]  # fmt: skip

    for name, root, public in (("old", root_r_old, comm_r_old), ("new", root_r_new, comm_r_new)):
        with cs.namespace(f"comm_r_{name}_calc"):
            calc = poseidon_hash(cs, [comm_c, root])
        cs.enforce(f"enforce comm_r_{name}_calc == comm_r_{name}",
                   calc.variable, ONE, public.variable)  # fmt: skip

    with cs.namespace("apex_gadget"):
        row = apex_leafs
        if isinstance(cs, CountingCS) and p.apex_leaf_count > 2:
            # Counting only: every apex hash is alike and touches its inputs only in C (the
            # unpacking constraint), so count one and add the rest.
            before = cs.snapshot()
            row = [sha256_hash2(cs, row[0], row[1], "apex_tree generation hash (counted)")]
            cs.skip(before, p.apex_leaf_count - 2)
        for r in range(p.apex_leaf_bit_len if len(row) > 1 else 0):
            row = [
                sha256_hash2(cs, row[2 * i], row[2 * i + 1],
                             f"apex_tree generation hash (tree_row={r}, siblings={i})")
                for i in range(len(row) // 2)
            ]  # fmt: skip
        por_no_challenge_input(cs, partition_bits, row[0], partition_path, comm_d_new,
                               tree_d_shape(pbl), sha256_node, "partition-tree por")  # fmt: skip

    with cs.namespace("gen_challenge_bits"):
        generated = gen_challenge_bits(cs, p, comm_r_new, partition)
    return _Header(phi, root_r_old, root_r_new, apex_leafs, partition_bits, h_select_bits,
                   generated)  # fmt: skip


@dataclass
class LastHeader:
    """The last header synthesized in witness mode with a
    :class:`~cuzk.r1cs.memo.SynthesisCache`: (key, prefix, header). A synthesis process gets
    several views of one partition (:mod:`cuzk.engine.synth_pool`), and each view starts with
    the header — at 32 GiB its 127-hash apex tree and challenge digests, 5.9M values, twice the
    cost of the view's own challenges."""

    last: tuple[tuple, WitnessPrefix, _Header] | None = None


def _witness_header(cs: ConstraintSystem, p: SnapParams, w: PartitionWitness | None) -> _Header:
    """:func:`_header`, replayed from the last one when a fresh witness system asks for the
    same partition's header again (same parameters, header values and options)."""
    if not witness_mode(cs) or w is None or cs.num_aux or len(cs.inputs) != 1:
        return _header(cs, p, w)
    top = p.challenge_bit_len - p.partition_bit_len
    path = tuple(w.challenges[0].path_d_new[top:])
    key = (p, w.k, w.h, w.comm_r_old, w.comm_d_new, w.comm_r_new, w.comm_c, w.root_r_old,
           w.root_r_new, w.apex_leafs, path, cs.options)  # fmt: skip
    memo = cs.cache.memo(LastHeader)
    if memo.last is not None and memo.last[0] == key:
        _, prefix, header = memo.last
        cs.replay_prefix(prefix)
        return header
    header = _header(cs, p, w)
    memo.last = (key, cs.prefix(), header)
    return header


def gen_challenge_bits(
    cs: ConstraintSystem, p: SnapParams, comm_r_new: AllocatedNum, partition: AllocatedNum
) -> list[list[AllocatedBit]]:
    """Each challenge's random bits: ``Poseidon_c(comm_r_new, k·digests + j)`` per digest,
    allocated as 255 bits, cut into ``random_bits_per_challenge`` chunks."""
    dpp, per, rb = p.digests_per_partition, p.challenges_per_digest, p.random_bits_per_challenge
    out: list[list[AllocatedBit]] = []
    pv = partition.variable
    for j in range(dpp):
        value = None if partition.value is None else (partition.value * dpp + j) % R
        index = _alloc(cs, value, f"digest_index_{j}")

        def lhs(lc: LinearCombination, j: int = j) -> LinearCombination:
            lc.add_term(pv, dpp)
            return lc.add_term(ONE, j) if j else lc

        cs.enforce(f"digest_index_{j} == k * digests_per_partition + {j}", lhs, ONE,
                   index.variable)  # fmt: skip
        with cs.namespace(f"digest_{j}"):
            digest = poseidon_hash(cs, [comm_r_new, index], tag=GEN_RANDOMNESS_TAG)
        bits = num_to_bits(cs, digest, f"digest_{j}_bits")
        take = p.challenge_count - len(out) if j == dpp - 1 else per
        out += [bits[i * rb : (i + 1) * rb] for i in range(take)]
    return out


def challenge_high_bits(
    cs: ConstraintSystem,
    c_bits: Sequence[AllocatedBit],
    h_select_bits: Sequence[AllocatedBit],
    hs: Sequence[int],
) -> AllocatedNum:
    """``get_challenge_high_bits``: the top ``h`` bits of the challenge, h chosen by the one
    set bit of h_select (6 packings, 6 products, one sum)."""
    n = len(c_bits)
    scaled = []
    for k, (h, sel) in enumerate(zip(hs, h_select_bits, strict=True)):
        with cs.namespace(f"c_high (h={h}, k={k})"):
            high = pack_bits(cs, [Boolean(b) for b in c_bits[n - h :]])
        value = None
        if sel.value is not None and high.value is not None:
            value = high.value if sel.value else 0
        out = _alloc(cs, value, f"c_high_or_zero (h={h}, k={k})")
        cs.enforce(f"c_high_or_zero == c_high * h_select_bit (h={h}, k={k})",
                   high.variable, sel.variable, out.variable)  # fmt: skip
        scaled.append(out)
    total = None
    if all(s.value is not None for s in scaled):
        total = sum(s.value or 0 for s in scaled) % R
    selected = _alloc(cs, total, "c_high_selected")
    cs.enforce("c_high_selected == dot(c_highs, h_select_bits)",
               _sum_lc([s.variable for s in scaled]), ONE, selected.variable)  # fmt: skip
    return selected


def label_r_new(
    cs: ConstraintSystem, old: AllocatedNum, data: AllocatedNum, rho: AllocatedNum
) -> AllocatedNum:
    """``label_r_new = label_r_old + label_d_new · rho`` (2 constraints)."""
    prod = data.mul(cs, rho, "label_d_new * rho")
    value = None if old.value is None or prod.value is None else (old.value + prod.value) % R
    new = _alloc(cs, value, "label_r_new")
    cs.enforce("label_r_new == label_r_old + label_d_new * rho",
               _sum_lc([old.variable, prod.variable]), ONE, new.variable)  # fmt: skip
    return new


def _path(
    cs: ConstraintSystem,
    values: Sequence[Sequence[int]] | None,
    arities: Sequence[int],
    name: str,
) -> list[list[AllocatedNum]]:
    """Allocate one Merkle path's siblings (``name`` formats row and sibling index)."""
    out = []
    for row, arity in enumerate(arities):
        sibs = []
        for s in range(arity - 1):
            v = None if values is None else values[row][s]
            sibs.append(_alloc(cs, v, name.format(row=row, s=s)))
        out.append(sibs)
    return out


def synthesize_snap(
    cs: ConstraintSystem,
    p: SnapParams,
    w: PartitionWitness | None,
    challenge_limit: int | None = None,
    on_challenge: Callable[[int], None] | None = None,
    blocks: Sequence[int] | None = None,
) -> None:
    """``EmptySectorUpdateCircuit::synthesize`` (``w`` None in shape mode). ``on_challenge``
    (counting) is called before each challenge block and once after the last; ``blocks``
    synthesizes only those challenge blocks (a view)."""
    phi, root_r_old, root_r_new, apex_leafs, partition_bits, h_select_bits, generated = (
        _witness_header(cs, p, w)
    )
    arities = p.tree.arities
    to_apex = p.apex_height
    count = len(generated) if challenge_limit is None else min(challenge_limit, len(generated))
    for ci in range(count) if blocks is None else blocks:
        if on_challenge is not None:
            on_challenge(ci)
        cw = None if w is None else w.challenges[ci]
        c_bits = list(generated[ci]) + list(partition_bits)
        with cs.namespace(f"get_challenge_high_bits (c_index={ci})"):
            c_high = challenge_high_bits(cs, c_bits, h_select_bits, p.hs)
        with cs.namespace(f"rho (c_index={ci})"):
            rho = poseidon_hash(cs, [phi, c_high], tag=GEN_RANDOMNESS_TAG)
        leaf_r_old = _alloc(cs, _v(cw, lambda c: c.leaf_r_old), f"leaf_r_old (c_index={ci})")
        leaf_d_new = _alloc(cs, _v(cw, lambda c: c.leaf_d_new), f"leaf_d_new (c_index={ci})")
        with cs.namespace(f"leaf_r_new (c_index={ci})"):
            leaf_r_new = label_r_new(cs, leaf_r_old, leaf_d_new, rho)
        if cw is not None and leaf_r_new.value != cw.leaf_r_new % R:
            raise BadInput(f"challenge {ci}: leaf_r_new is not label_r_old + data · rho")
        path_old = _path(cs, _v(cw, lambda c: c.path_r_old), arities,
                         f"path_r_old sibling (c_index={ci}, tree_row={{row}}, "
                         "sibling_index={s})")  # fmt: skip
        por_no_challenge_input(cs, c_bits, leaf_r_old, path_old, root_r_old, p.tree,
                               ns=f"por tree_r_old (c_index={ci})")  # fmt: skip
        path_new = _path(cs, _v(cw, lambda c: c.path_r_new), arities,
                         f"path_r_new sibling (c_index={ci}, tree_row={{row}}, "
                         "sibling_index={s})")  # fmt: skip
        por_no_challenge_input(cs, c_bits, leaf_r_new, path_new, root_r_new, p.tree,
                               ns=f"por tree_r_new (c_index={ci})")  # fmt: skip
        apex_bits = [Boolean(b) for b in c_bits[to_apex : to_apex + p.apex_leaf_bit_len]]
        with cs.namespace(f"select_apex_leaf (c_index={ci})"):
            apex_leaf = select(cs, apex_leafs, apex_bits)
        d_path = [
            [_alloc(cs, None if cw is None else cw.path_d_new[row],
                    f"path_to_apex_leaf sibling (c_index={ci}, tree_row={row})")]
            for row in range(to_apex)
        ]  # fmt: skip
        por_no_challenge_input(cs, c_bits[:to_apex], leaf_d_new, d_path, apex_leaf,
                               tree_d_shape(to_apex), sha256_node,
                               f"por to_apex_leaf (c_index={ci})")  # fmt: skip
    if on_challenge is not None:
        on_challenge(count)


# -- counts ---------------------------------------------------------------------------------


class CountingCS(ConstraintSystem):
    """Counts constraints and variables and marks which variables have a non-zero A or B
    column, never storing a row: bounded memory for circuits of any length."""

    needs_values = False

    def __init__(self) -> None:
        super().__init__()
        self.num_inputs = 1
        self.num_aux = 0
        self.num_constraints = 0
        # Per variable: bit 1 = non-zero in A, bit 2 = non-zero in B (inputs: key ~i).
        self._aux_flags = bytearray()
        self._input_flags = bytearray(1)
        self.a_aux = self.b_aux = self.b_inputs = 0

    def alloc(self, name: NameSpec, value: ValueSpec) -> Variable:
        self.num_aux += 1
        self._aux_flags.append(0)
        return Variable(self.num_aux - 1)

    def alloc_input(self, name: NameSpec, value: ValueSpec) -> Variable:
        self.num_inputs += 1
        self._input_flags.append(0)
        return Variable(~(self.num_inputs - 1))

    def enforce(self, name: NameSpec, a: LcSpec, b: LcSpec, c: LcSpec) -> None:
        self.num_constraints += 1
        aux = self._aux_flags
        for k, coeff in resolve(a).terms.items():
            if coeff and k >= 0 and not aux[k] & 1:
                aux[k] |= 1
                self.a_aux += 1
        for k, coeff in resolve(b).terms.items():
            if not coeff:
                continue
            if k >= 0:
                if not aux[k] & 2:
                    aux[k] |= 2
                    self.b_aux += 1
            elif not self._input_flags[~k] & 2:
                self._input_flags[~k] |= 2
                self.b_inputs += 1

    def skip(self, before: tuple[int, ...], times: int) -> None:
        """Count what happened since ``before`` ``times`` more times (self-contained gadgets:
        their variables are fresh and never referenced again)."""
        d = [b - a for a, b in zip(before, self.snapshot(), strict=True)]
        self.num_constraints += d[0] * times
        self.num_inputs += d[1] * times
        self._input_flags.extend(bytes(d[1] * times))
        self.num_aux += d[2] * times
        self._aux_flags.extend(bytes(d[2] * times))
        self.a_aux += d[3] * times
        self.b_inputs += d[4] * times
        self.b_aux += d[5] * times

    def snapshot(self) -> tuple[int, int, int, int, int, int]:
        return (self.num_constraints, self.num_inputs, self.num_aux, self.a_aux,
                self.b_inputs, self.b_aux)  # fmt: skip


def shape_counts(params: SnapParams) -> CircuitCounts:
    """Counts from a real shape-mode synthesis of the whole blank circuit (small sizes only:
    ShapeCS keeps every row)."""
    return counts_of(SnapCircuit(params), params.circuit_id)[1]


def structural_counts(params: SnapParams) -> CircuitCounts:
    """Counts of the whole circuit from its header and first two challenge blocks.

    The second block adds exactly what every later block adds (all variables it touches for
    the first time are its own; shared ones were made dense by the header or the first block),
    so totals are header + block 1 + (challenges − 1) × block 2.
    """
    cs = CountingCS()
    marks: list[tuple[int, ...]] = []
    synthesize_snap(cs, params, None, 2, lambda _i: marks.append(cs.snapshot()))
    _start2, end1, end2 = marks[0], marks[1], marks[2]
    per = [b - a for a, b in zip(end1, end2, strict=True)]
    total = [e + (params.challenge_count - 2) * d for e, d in zip(end2, per, strict=True)]
    n, inputs, aux, a_aux, b_in, b_aux = total
    return CircuitCounts(
        num_constraints=n, num_inputs=inputs - 1, num_aux=aux, a_aux_density=a_aux,
        b_input_density=b_in, b_aux_density=b_aux, method="structural",
    )  # fmt: skip
