"""The StackedDRG PoRep partition circuit (storage-proofs-porep ``StackedCircuit``, what C2
proves), its per-size parameters, official parameter names and counts without full synthesis.

Allocation and constraint order (upstream ``StackedCircuit::synthesize`` and
``circuit::params::Proof::synthesize``):

1. replica_id (alloc, inputize, 255 bits + 1 pad bit, bytes bit-reversed), comm_d (alloc,
   inputize), comm_r (alloc, inputize), comm_r_last, comm_c (private), Poseidon2(comm_c,
   comm_r_last) and ``comm_r · 1 = hash``.
2. per challenge (``challenge_i``): the data leaf and its binary SHA-256 inclusion in TreeD
   (root comm_d); the 6 DRG then 8 expander parent columns, each allocated, hashed (Poseidon of
   arity = layers) and included in TreeC (root comm_c); the challenge as 64 allocated bits packed
   into one input; per layer the label: SHA-256 over replica_id ‖ layer (u32 BE, constant) ‖
   node (u64 BE) ‖ padding ‖ 37 parents (each parent row 255 bits + pad, bytes bit-reversed;
   layer 1 repeats its 6 DRG parents, later layers their 14 parents, drawn from the previous
   layer for expander parents), the first 254 bits of the bit-reversed digest packed; the
   encoding ``key + data leaf`` (key = last label) included in TreeR (root comm_r_last); the
   column of labels hashed and included in TreeC.

Public inputs: replica_id, comm_d, comm_r, then per challenge the packed path bits of the TreeD
inclusion (the challenge), of the 14 parent inclusions (the parent indices), the challenge, and
of the TreeR and TreeC inclusions (the challenge twice more): 3 + 18 per challenge.

All challenges have the same structure and share only replica_id's bits, the three roots and
ONE, and label layers after the second repeat the second's structure, so the counts follow from
one challenge with two synthesized layers: :func:`structural_counts` does that with a
matrix-free counter (:class:`CountingCS`), which gives the 130M-constraint 32/64 GiB circuits
in about a minute and bounded memory (two bytes per variable).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TypeVar

from cuzk.circuits.filecoin.merkle_json import leaf_index
from cuzk.circuits.filecoin.post import CircuitCounts, counts_of
from cuzk.circuits.filecoin.post_params import GIB, KIB, MIB, NODE_SIZE, SIZE_NAMES
from cuzk.errors import BadInput
from cuzk.field.constants import R
from cuzk.gadgets.boolean import FALSE, AllocatedBit, Boolean
from cuzk.gadgets.merkle import MerklePath, TreeShape
from cuzk.gadgets.multipack import pack_bits, pack_into_inputs
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.por import PathLevel, por
from cuzk.gadgets.poseidon.circuit import poseidon_hash
from cuzk.gadgets.sha256 import sha256
from cuzk.gadgets.sha256.message import Message, fast_path, field_bits, sha256_packed
from cuzk.gadgets.sha256.node import sha256_node
from cuzk.gadgets.uint32 import UInt32
from cuzk.r1cs import ONE, ConstraintSystem, Variable, repeat
from cuzk.r1cs.lc import LcSpec, resolve
from cuzk.r1cs.system import NO_NAMESPACE, NameSpec

BASE_DEGREE = 6  # DRG parents per node (storage-proofs-core drgraph BASE_DEGREE)
EXP_DEGREE = 8  # expander parents per node (stacked EXP_DEGREE)
TOTAL_PARENTS = 37  # parent labels hashed into a label (stacked TOTAL_PARENTS)
_P = TypeVar("_P")  # a parent's bits: Booleans, or witness mode's bulk FieldBits
PARAMS_VERSION = 28  # parameter file generation (``v28-…``)

# sector size -> (TreeR/TreeC base-sub-top arities, layers, challenges per partition,
# partitions): filecoin-proofs constants.rs (LAYERS, POREP_PARTITIONS, 2 or ⌈176 / 10⌉
# challenges per partition) and its tree types.
SECTOR_SHAPES: dict[int, tuple[tuple[int, int, int], int, int, int]] = {
    2 * KIB: ((8, 0, 0), 2, 2, 1),
    8 * MIB: ((8, 0, 0), 2, 2, 1),
    512 * MIB: ((8, 0, 0), 2, 2, 1),
    32 * GIB: ((8, 8, 0), 11, 18, 10),
    64 * GIB: ((8, 8, 2), 11, 18, 10),
}

# Non-interactive PoRep (RegisteredSealProof ``…V1_2_Feat_NonInteractivePoRep``) proves the
# same partition circuit, only with more partitions (filecoin-proofs constants.rs).
NI_PARTITIONS = {2 * KIB: 13, 8 * MIB: 13, 512 * MIB: 13, 32 * GIB: 126, 64 * GIB: 126}


@dataclass(frozen=True)
class PoRepParams:
    """One PoRep partition circuit's parameters (upstream ``stacked::PublicParams``)."""

    sector_size: int  # bytes (nodes · 32)
    tree: TreeShape  # TreeR / TreeC shape over the sector's nodes
    layers: int  # labelling layers (column height)
    challenge_count: int  # challenges per partition circuit
    partitions: int  # partitions of an interactive PoRep of this size

    @property
    def nodes(self) -> int:
        return self.sector_size // NODE_SIZE

    @property
    def tree_d(self) -> TreeShape:
        """TreeD (comm_d): always a binary SHA-256 tree over the nodes."""
        return TreeShape(self.nodes, 2, 0, 0)

    @property
    def circuit_id(self) -> str:
        return f"porep-{SIZE_NAMES.get(self.sector_size, f'{self.sector_size}b')}"

    @property
    def num_inputs(self) -> int:
        """Public inputs without ONE."""
        return 3 + 18 * self.challenge_count

    @property
    def identifier(self) -> str:
        """Upstream's ``ParameterSetMetadata::identifier`` of ``stacked::PublicParams`` (hashed
        into parameter file names)."""
        t = self.tree
        graph = (
            f"stacked_graph::StackedGraph{{expansion_degree: {EXP_DEGREE} base_graph: "
            f"drgraph::BucketGraph{{size: {self.nodes}; degree: {BASE_DEGREE}; "
            f"hasher: poseidon_hasher}} }}"
        )
        return (
            f"layered_drgporep::PublicParams{{ graph: {graph}, challenges: LayerChallenges "
            f"{{ layers: {self.layers}, max_count: {self.challenge_count} }}, tree: "
            f"merkletree-poseidon_hasher-{t.base_arity}-{t.sub_arity}-{t.top_arity} }}"
        )


def _tree_shape(nodes: int, arities: tuple[int, int, int]) -> TreeShape:
    base, sub, top = arities
    return TreeShape(nodes, base, sub, top)


def porep_params_for_size(sector_size: int) -> PoRepParams:
    """The production parameters of a supported sector size."""
    if sector_size not in SECTOR_SHAPES:
        raise BadInput(f"unsupported PoRep sector size {sector_size}")
    arities, layers, challenges, partitions = SECTOR_SHAPES[sector_size]
    tree = _tree_shape(sector_size // NODE_SIZE, arities)
    return PoRepParams(sector_size, tree, layers, challenges, partitions)


def small_params(
    nodes: int, arities: tuple[int, int, int], layers: int = 2, challenge_count: int = 1
) -> PoRepParams:
    """Parameters of upstream's small test circuits (any node count the tree shape allows)."""
    return PoRepParams(nodes * NODE_SIZE, _tree_shape(nodes, arities), layers, challenge_count, 1)


def porep_circuit_ids() -> list[str]:
    return [f"porep-{n}" for n in SIZE_NAMES.values()]


def porep_params(circuit_id: str) -> PoRepParams:
    """``porep-2k``, ``porep-8m``, ``porep-512m``, ``porep-32g``, ``porep-64g``."""
    kind, _, size = circuit_id.partition("-")
    by_name = {v: k for k, v in SIZE_NAMES.items()}
    if kind != "porep" or size not in by_name:
        known = ", ".join(porep_circuit_ids())
        raise BadInput(f"unknown circuit {circuit_id!r}; PoRep circuits are {known}")
    return porep_params_for_size(by_name[size])


def param_file_stem(params: PoRepParams) -> str:
    """Official parameter file name without ``.params``/``.vk`` (``StackedCompound``'s cache
    prefix with TreeR's arities, then the SHA-256 of :attr:`PoRepParams.identifier`)."""
    t = params.tree
    digest = hashlib.sha256(params.identifier.encode()).hexdigest()
    return (
        f"v{PARAMS_VERSION}-stacked-proof-of-replication-merkletree-poseidon_hasher-"
        f"{t.base_arity}-{t.sub_arity}-{t.top_arity}-sha256_hasher-{digest}"
    )


# -- witness data ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ColumnOpening:
    """A TreeC opening: a node's column (one label per layer) and the inclusion path of the
    column's hash (``path.leaf``)."""

    rows: tuple[int, ...]
    path: MerklePath


@dataclass(frozen=True)
class ChallengeProof:
    """What the circuit takes for one challenge (upstream ``circuit::params::Proof``)."""

    challenge: int  # the challenged node
    comm_d_path: MerklePath  # binary SHA-256 path of the data leaf to comm_d
    comm_r_last_path: MerklePath  # TreeR path of the encoded node to comm_r_last
    comm_c_path: MerklePath  # TreeC path of the challenged column's hash to comm_c
    drg_parents: tuple[ColumnOpening, ...]  # BASE_DEGREE parent columns
    exp_parents: tuple[ColumnOpening, ...]  # EXP_DEGREE parent columns

    @property
    def data_leaf(self) -> int:
        return self.comm_d_path.leaf


@dataclass(frozen=True)
class PoRepWitness:
    """One partition's witness: the public values and the per-challenge proofs."""

    replica_id: int
    comm_d: int
    comm_r: int
    comm_r_last: int
    comm_c: int
    proofs: tuple[ChallengeProof, ...]


def public_inputs(params: PoRepParams, w: PoRepWitness) -> list[int]:
    """The public inputs (without ONE) the circuit allocates for ``w`` — upstream
    ``generate_public_inputs`` given the challenges and parent indices in ``w``."""
    out = [w.replica_id, w.comm_d, w.comm_r]
    for p in w.proofs:
        out.append(leaf_index(p.comm_d_path, params.tree_d))
        out += [leaf_index(c.path, params.tree) for c in p.drg_parents]
        out += [leaf_index(c.path, params.tree) for c in p.exp_parents]
        out.append(p.challenge)
        out.append(leaf_index(p.comm_r_last_path, params.tree))
        out.append(leaf_index(p.comm_c_path, params.tree))
    return out


# -- the circuit ----------------------------------------------------------------------------


def reverse_bit_numbering(bits: Sequence[Boolean]) -> list[Boolean]:
    """Pad to whole bytes with constant zeros, then reverse the bits inside each byte
    (storage-proofs-core ``reverse_bit_numbering``)."""
    padded = list(bits) + [FALSE] * (-len(bits) % 8)
    return [b for i in range(0, len(padded), 8) for b in reversed(padded[i : i + 8])]


def _levels(mp: MerklePath | None, shape: TreeShape) -> list[PathLevel]:
    if mp is None:
        return [PathLevel([None] * (a - 1), None) for a in shape.arities]
    if len(mp.siblings) != len(shape.arities):
        raise BadInput(f"inclusion path has {len(mp.siblings)} levels, the tree has "
                       f"{len(shape.arities)}")  # fmt: skip
    return [PathLevel(s, p) for s, p in zip(mp.siblings, mp.positions, strict=True)]


def _alloc_u64(cs: ConstraintSystem, value: int | None) -> list[Boolean]:
    """storage-proofs-core ``UInt64::alloc``: 64 allocated bits, least significant first."""
    return [
        Boolean(
            AllocatedBit.alloc(
                cs,
                None if value is None else bool((value >> i) & 1),
                lambda i=i: f"allocated bit {i}",
            )
        )  # fmt: skip
        for i in range(64)
    ]


def _sha_node(cs: ConstraintSystem, preimage: list[AllocatedNum], ns: object) -> AllocatedNum:
    # why the ignore below: ns is a Name (the circuit's namespaces are typed loosely as object here)
    return sha256_node(cs, preimage, ns)  # type: ignore[arg-type]


def create_label(
    cs: ConstraintSystem,
    replica_id_bits: Sequence[Boolean],
    parents: Sequence[Sequence[Boolean]],
    layer: int,
    node_bits_le: Sequence[Boolean],
) -> AllocatedNum:
    """``create_label_circuit``: SHA-256 of the label preimage, first 254 bits (after the
    per-byte bit reversal) packed into one number."""
    bits = _label_head(replica_id_bits, layer, node_bits_le)
    for p in parents:
        bits += p
        bits += [FALSE] * (-len(bits) % 256)
    assert len(bits) == (2 + TOTAL_PARENTS) * 256
    with cs.namespace("create_label"):
        digest = sha256(cs, bits, "hash")
        return pack_bits(cs, reverse_bit_numbering(digest)[:254], "result_num")


def _label_head(
    replica_id_bits: Sequence[Boolean], layer: int, node_bits_le: Sequence[Boolean]
) -> list[Boolean]:
    """The label preimage's first 512 bits: replica_id, the layer (u32 BE), the node (u64 BE)
    and zero padding."""
    bits = list(replica_id_bits) + [FALSE] * max(0, 256 - len(replica_id_bits))
    bits += UInt32.constant(layer).into_bits_be()
    bits += list(reversed(node_bits_le))
    bits += [FALSE] * (512 - len(bits))
    return bits


def _expand_parents(parents: list[_P], layer: int) -> list[_P]:
    """The 37 parents hashed into a label: layer 1 repeats its 6 DRG parents, later layers
    their 14 parents (upstream's explicit duplication)."""
    if layer > 1:
        return parents + parents + parents[:9]
    return parents * 6 + parents[:1]


@dataclass(frozen=True)
class StackedCircuit:
    """One PoRep partition. ``witness`` None: the blank circuit (shape mode)."""

    params: PoRepParams
    witness: PoRepWitness | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        w, p = self.witness, self.params
        if w is None:
            return
        if len(w.proofs) != p.challenge_count:
            raise BadInput(f"{p.circuit_id}: {len(w.proofs)} challenge proofs, the circuit "
                           f"takes {p.challenge_count}")  # fmt: skip
        for i, proof in enumerate(w.proofs):
            if len(proof.drg_parents) != BASE_DEGREE or len(proof.exp_parents) != EXP_DEGREE:
                raise BadInput(f"challenge {i}: expected {BASE_DEGREE} DRG and {EXP_DEGREE} "
                               "expander parent columns")  # fmt: skip
            for c in (*proof.drg_parents, *proof.exp_parents):
                if len(c.rows) != p.layers:
                    raise BadInput(f"challenge {i}: a parent column has {len(c.rows)} rows, "
                                   f"expected {p.layers}")  # fmt: skip

    @property
    def circuit_id(self) -> str:
        return self.params.circuit_id

    def block_count(self) -> int:
        """One block per challenge (:mod:`cuzk.r1cs.blocks`): challenges share only the
        header's replica_id bits, the three roots and ONE."""
        return self.params.challenge_count

    def view(self, blocks: Sequence[int]) -> StackedCircuit:
        """The header and the challenges ``blocks``, in that order."""
        params = _with_challenges(self.params, len(blocks))
        if self.witness is None:
            return StackedCircuit(params)
        proofs = tuple(self.witness.proofs[i] for i in blocks)
        return StackedCircuit(params, dataclasses.replace(self.witness, proofs=proofs))

    def synthesize(self, cs: ConstraintSystem) -> None:
        w = self.witness

        def val(name: str) -> int | None:
            return None if w is None else getattr(w, name)

        replica_id = AllocatedNum.alloc(cs, val("replica_id"), "replica_id")
        replica_id.inputize(cs, "replica_id_input")
        replica_id_bits = reverse_bit_numbering(replica_id.to_bits_le(cs, "replica_id_bits"))
        comm_d = AllocatedNum.alloc(cs, val("comm_d"), "comm_d")
        comm_d.inputize(cs, "comm_d_input")
        comm_r = AllocatedNum.alloc(cs, val("comm_r"), "comm_r")
        comm_r.inputize(cs, "comm_r_input")
        comm_r_last = AllocatedNum.alloc(cs, val("comm_r_last"), "comm_r_last")
        comm_c = AllocatedNum.alloc(cs, val("comm_c"), "comm_c")
        h = poseidon_hash(cs, [comm_c, comm_r_last], ns="H_comm_c_comm_r_last")
        cs.enforce("enforce comm_r = H(comm_c || comm_r_last)", comm_r.variable, ONE, h.variable)
        hook = getattr(cs, "on_challenge", None)  # the structural counter's boundary mark

        def challenge(i: int) -> None:
            if hook is not None:
                hook(i)
            synthesize_challenge(cs, self.params, None if w is None else w.proofs[i], comm_d,
                                 comm_c, comm_r_last, replica_id_bits)  # fmt: skip

        # Challenges differ only in their variables (shape mode replays most of them).
        repeat(cs, self.params.challenge_count, "challenge_{}".format, challenge)


def _column(
    cs: ConstraintSystem, params: PoRepParams, col: ColumnOpening | None, ns: str,
    comm_c: AllocatedNum,
) -> list[AllocatedNum]:  # fmt: skip
    """Allocate a parent column, hash it and include the hash in TreeC."""
    with cs.namespace(f"{ns}_num"), cs.namespace("column"):
        rows = [
            AllocatedNum.alloc(cs, None if col is None else col.rows[r], f"column_num_row_{r}")
            for r in range(params.layers)
        ]
    h = poseidon_hash(cs, rows, ns=f"{ns}_constraint")
    path = _levels(None if col is None else col.path, params.tree)
    por(cs, h, path, params.tree, comm_c, private=True, ns=f"{ns}_inclusion")
    return rows


def synthesize_challenge(
    cs: ConstraintSystem,
    params: PoRepParams,
    proof: ChallengeProof | None,
    comm_d: AllocatedNum,
    comm_c: AllocatedNum,
    comm_r_last: AllocatedNum,
    replica_id_bits: Sequence[Boolean],
) -> None:
    """Upstream ``circuit::params::Proof::synthesize`` (``proof`` None in shape mode)."""
    data_leaf = AllocatedNum.alloc(cs, None if proof is None else proof.data_leaf, "data_leaf")
    por(cs, data_leaf, _levels(None if proof is None else proof.comm_d_path, params.tree_d),
        params.tree_d, comm_d, private=True, hasher=_sha_node,
        ns="comm_d_inclusion")  # fmt: skip
    drg = [
        _column(
            cs, params, None if proof is None else proof.drg_parents[i], f"drg_parent_{i}", comm_c
        )  # fmt: skip
        for i in range(BASE_DEGREE)
    ]
    exp = [
        _column(
            cs, params, None if proof is None else proof.exp_parents[i], f"exp_parent_{i}", comm_c
        )  # fmt: skip
        for i in range(EXP_DEGREE)
    ]
    with cs.namespace("challenge"):
        node_bits = _alloc_u64(cs, None if proof is None else proof.challenge)
    pack_into_inputs(cs, node_bits, "challenge input")
    labels: list[AllocatedNum] = []
    replay = getattr(cs, "replay", None)  # the structural counter's shortcut
    for layer in range(1, params.layers + 1):

        def one(layer: int = layer) -> AllocatedNum:
            return _label_layer(cs, layer, drg, exp, replica_id_bits, node_bits)

        labels.append(replay("label layer > 1", one) if replay and layer > 1 else one())
    key = labels[-1]
    with cs.namespace("encode_node"), cs.namespace("encode_add"):
        value = None if key.value is None or data_leaf.value is None else (
            (key.value + data_leaf.value) % R)  # fmt: skip
        encoded = AllocatedNum.alloc(cs, value, "add_num")
        kv, dv = key.variable, data_leaf.variable
        cs.enforce("sum constraint", lambda lc: lc.add_term(kv).add_term(dv), ONE,
                   encoded.variable)  # fmt: skip
    por(cs, encoded, _levels(None if proof is None else proof.comm_r_last_path, params.tree),
        params.tree, comm_r_last, private=True, ns="comm_r_last_data_inclusion")  # fmt: skip
    column_hash = poseidon_hash(cs, labels, ns="c_x_column_hash")
    por(cs, column_hash, _levels(None if proof is None else proof.comm_c_path, params.tree),
        params.tree, comm_c, private=True, ns="c_x_inclusion")  # fmt: skip


def _label_layer(
    cs: ConstraintSystem,
    layer: int,
    drg: Sequence[Sequence[AllocatedNum]],
    exp: Sequence[Sequence[AllocatedNum]],
    replica_id_bits: Sequence[Boolean],
    node_bits: Sequence[Boolean],
) -> AllocatedNum:
    """One layer's label of the challenged node: the parents' bits, then ``create_label``.

    In witness mode the same values in the same order, the parents' bits handed to SHA-256 in
    bulk (:mod:`cuzk.gadgets.sha256.message`), never made as objects."""
    if fast_path(cs):
        fields = [field_bits(cs, col[layer - 1]) for col in drg]
        if layer > 1:
            fields += [field_bits(cs, col[layer - 2]) for col in exp]
        msg = Message()
        msg.add_bits(_label_head(replica_id_bits, layer, node_bits))
        for f in _expand_parents(fields, layer):
            msg.add_field(f)
        return sha256_packed(cs, msg)
    with cs.namespace(f"labeling_{layer}"):
        parents: list[list[Boolean]] = []
        for col in drg:
            bits = col[layer - 1].to_bits_le(cs, f"drg_parent_{len(parents)}_bits")
            parents.append(reverse_bit_numbering(bits))
        if layer > 1:
            for col in exp:
                bits = col[layer - 2].to_bits_le(cs, f"exp_parent_{len(parents)}_bits")
                parents.append(reverse_bit_numbering(bits))
        expanded = _expand_parents(parents, layer)
        return create_label(cs, replica_id_bits, expanded, layer, node_bits)


def blank_circuit(circuit_id: str) -> StackedCircuit:
    """The circuit without a witness (valid in shape mode: setup and shape extraction)."""
    return StackedCircuit(porep_params(circuit_id))


# -- counts ---------------------------------------------------------------------------------


class CountingCS(ConstraintSystem):
    """Counts what a ``.params`` header fixes without storing matrices: constraints, inputs,
    aux variables and the A/B density bits (one byte per variable).

    With ``shortcuts``, it also offers the circuit two hooks that :func:`structural_counts`
    relies on: ``on_challenge`` (marks where challenge 0 starts) and ``replay`` (counts a
    repeated sub-circuit from its first synthesis; see :meth:`_replay`).
    """

    needs_values = False

    def __init__(self, shortcuts: bool = False) -> None:
        super().__init__()
        self.num_inputs = 1
        self.num_aux = 0
        self.num_constraints = 0
        self.a_aux = bytearray()
        self.b_aux = bytearray()
        self.b_inputs = bytearray(1)
        self.challenge_start: tuple[int, int, int, int, int, int] | None = None
        self._records: dict[str, tuple[int, bytes, bytes, int] | None] = {}
        if shortcuts:
            self.replay = self._replay
            self.on_challenge = self._on_challenge

    def alloc(self, name: object, value: object) -> Variable:
        self.num_aux += 1
        self.a_aux.append(0)
        self.b_aux.append(0)
        return Variable(self.num_aux - 1)

    def alloc_input(self, name: object, value: object) -> Variable:
        self.num_inputs += 1
        self.b_inputs.append(0)
        return Variable(~(self.num_inputs - 1))

    def enforce(self, name: object, a: LcSpec, b: LcSpec, c: LcSpec) -> None:
        self.num_constraints += 1
        a_aux = self.a_aux
        for k in resolve(a).terms:
            if k >= 0:
                a_aux[k] = 1
        b_aux, b_in = self.b_aux, self.b_inputs
        for k in resolve(b).terms:
            if k >= 0:
                b_aux[k] = 1
            else:
                b_in[~k] = 1

    def namespace(self, name: NameSpec) -> AbstractContextManager[None]:
        return NO_NAMESPACE

    def _marks_below(self, aux: int) -> tuple[int, int, int]:
        """Density bits set on the first ``aux`` aux variables and on all inputs."""
        return sum(self.a_aux[:aux]), sum(self.b_aux[:aux]), sum(self.b_inputs)

    def _on_challenge(self, index: int) -> None:
        if index == 0:
            aux = self.num_aux
            self.challenge_start = (self.num_constraints, self.num_inputs, aux,
                                    *self._marks_below(aux))  # fmt: skip

    def _replay(self, key: str, fn: Callable[[], AllocatedNum]) -> AllocatedNum:
        """Synthesize ``fn`` the first time ``key`` is seen and remember its footprint; later
        calls with the key append that footprint (constraints, aux variables and their
        density bits) instead of synthesizing, and return the number at the recorded place.

        Exact when every call allocates the same variables and constraints and touches
        earlier variables only where the first call found their density bits already set — a
        footprint that set any earlier bit, allocated an input or returned an earlier variable
        is not reused (every call then synthesizes).
        """
        if key not in self._records:
            aux, cons, inputs = self.num_aux, self.num_constraints, self.num_inputs
            before = self._marks_below(aux)
            out = fn()
            index = out.variable.key
            clean = (self.num_inputs == inputs and index >= aux
                     and self._marks_below(aux) == before)  # fmt: skip
            self._records[key] = (
                (self.num_constraints - cons, bytes(self.a_aux[aux:]), bytes(self.b_aux[aux:]),
                 index - aux) if clean else None
            )  # fmt: skip
            return out
        rec = self._records[key]
        if rec is None:
            return fn()
        cons, a, b, offset = rec
        base = self.num_aux
        self.num_constraints += cons
        self.num_aux += len(a)
        self.a_aux += a
        self.b_aux += b
        return AllocatedNum(Variable(base + offset), None)

    def counts(self, method: str) -> CircuitCounts:
        return CircuitCounts(
            num_constraints=self.num_constraints,
            num_inputs=self.num_inputs - 1,
            num_aux=self.num_aux,
            a_aux_density=sum(self.a_aux),
            b_input_density=sum(self.b_inputs),
            b_aux_density=sum(self.b_aux),
            method=method,
        )


def _with_challenges(params: PoRepParams, n: int) -> PoRepParams:
    return PoRepParams(params.sector_size, params.tree, params.layers, n, params.partitions)


def shape_counts(params: PoRepParams) -> CircuitCounts:
    """Counts from a real shape-mode synthesis of the whole (blank) circuit (every matrix in
    memory: small circuits only)."""
    return counts_of(StackedCircuit(params), params.circuit_id)[1]


def counted(params: PoRepParams) -> CircuitCounts:
    """Counts of the whole circuit with the matrix-free counter, every constraint synthesized
    (time ∝ constraints, memory ∝ variables)."""
    cs = CountingCS()
    StackedCircuit(params).synthesize(cs)
    return cs.counts("counted")


def structural_counts(params: PoRepParams) -> CircuitCounts:
    """Counts of the whole circuit from one synthesized challenge with one synthesized label
    layer after the first.

    Challenges: each allocates its own variables and inputs and enforces the same constraints;
    the variables they share (replica_id's bits, comm_d, comm_c, comm_r_last, ONE) are used the
    same way by each. So a further challenge adds what challenge 0 added, less the density bits
    challenge 0 set on those shared variables: total = c₁ + (n − 1)·d.

    Label layers 3 … L repeat layer 2's structure exactly (the layer number only changes
    constant bits that are added, never bit-combined, in SHA-256) and touch earlier variables
    only where layer 1 or 2 already set their density bits (replica_id and node bits in the
    same SHA-256 positions; parent rows only in C), so they are counted by replaying layer 2.
    """
    cs = CountingCS(shortcuts=True)
    StackedCircuit(_with_challenges(params, 1)).synthesize(cs)
    assert cs.challenge_start is not None
    c1 = cs.counts("structural")
    cons0, inputs0, aux0, a0, b0, bin0 = cs.challenge_start
    a_after, b_after, bin_after = cs._marks_below(aux0)
    n = params.challenge_count - 1
    total_a, total_b, total_in = c1.a_aux_density, c1.b_aux_density, c1.b_input_density
    return CircuitCounts(
        num_constraints=c1.num_constraints + n * (c1.num_constraints - cons0),
        num_inputs=c1.num_inputs + n * (cs.num_inputs - inputs0),
        num_aux=c1.num_aux + n * (c1.num_aux - aux0),
        a_aux_density=total_a + n * (total_a - a_after),
        b_input_density=total_in + n * (total_in - bin_after),
        b_aux_density=total_b + n * (total_b - b_after),
        method="structural",
    )
