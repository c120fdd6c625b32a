"""Virtual sealing: upstream-shaped inputs for sectors of any size (32 GiB included) without
writing the sector — a PoRep C1 output, WindowPoSt/WinningPoSt vanilla proofs and SnapDeals
partition proofs that every check of the readers and the circuits accepts.

What the circuits check, and so what must be real:

* **PoRep**: per challenge the TreeD path of its data leaf; the columns (one label per layer)
  of the challenged node and its 6 DRG + 8 expander parents against comm_c; each layer's label
  of the challenged node = SHA-256 of replica_id, layer, node and the parents' labels; the
  encoding (last label + data) against comm_r_last; comm_r = Poseidon2(comm_c, comm_r_last).
  Nothing checks how the label of a node that is only a parent was made. So the parents and
  challenges are the real ones (graph from the porep_id, :func:`~.graph.parents_of`; challenges
  from replica_id and the interactive seed), every node that is only a parent gets random
  labels, the challenged nodes' labels are derived from their parents layer by layer, and
  the trees are :class:`~.sparse_tree.SparseTree` s: the opened columns and replica nodes are
  touched leaves over one random leaf shared by every other node.
* **PoSt** opens TreeR only: random leaves at the challenged positions, one random leaf
  elsewhere, a random comm_c.
* **SnapDeals** opens TreeR_old, TreeD_new and TreeR_new, with challenges derived from
  comm_r_new, so no leaf can be chosen after the challenges are known: the old replica and
  the new data are random blocks repeated over the sector, and TreeR_new's leaves (old + data ·
  rho of the node's region) are a background keyed by block offset and region.

Sector data is a random block of fr32 nodes repeated (:data:`DATA_BLOCK_NODES`,
:data:`SNAP_BLOCK_NODES`; the whole sector at 2 KiB), so comm_d is fixed before replica_id
(PoRep) or comm_r_new (SnapDeals) and the challenges that depend on them.
Interactive PoRep only: synthetic and non-interactive PoRep derive challenges from comm_r,
which would have to commit to labels chosen for those challenges.

Every random value comes from :class:`Draws`: a hash of (seed, tag, indices), so the same
seed gives the same files whatever order values are drawn in. Costs at 32 GiB: a C1 opens
~2,700 of 2^30 nodes (~30k Poseidon and ~7k SHA-256 hashes); nothing is proportional to the
sector.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cuzk.circuits.filecoin.porep import ChallengeProof, ColumnOpening, PoRepWitness
from cuzk.circuits.filecoin.porep_c1 import SIZE_LABELS, RegisteredPoRep, c1_json, registered_porep
from cuzk.circuits.filecoin.porep_challenges import (
    expected_label_parents,
    interactive_challenges,
    label,
)
from cuzk.circuits.filecoin.post_params import PoStParams
from cuzk.circuits.filecoin.seal.graph import parents_of
from cuzk.circuits.filecoin.seal.proof_types import API_V1_0, API_V1_1
from cuzk.circuits.filecoin.seal.sdr import replica_id
from cuzk.circuits.filecoin.seal.sparse_tree import (
    Background,
    SparseTree,
    constant,
    periodic,
    poseidon_groups,
    sha256_pairs,
)
from cuzk.circuits.filecoin.snap import SnapParams, snap_params_for_size
from cuzk.circuits.filecoin.snap_vanilla import (
    challenges as snap_challenges,
)
from cuzk.circuits.filecoin.snap_vanilla import (
    partition_json,
    phi,
    request_document,
    rho_table,
)
from cuzk.circuits.filecoin.vanilla import PublicSector
from cuzk.circuits.filecoin.vanilla_json import SectorVanilla, challenged_leaves, generate
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.gadgets.merkle import MerklePath, TreeShape

#: Nodes in the random data block repeated over a virtual PoRep sector (32 KiB of data).
DATA_BLOCK_NODES = 1 << 10
#: The same for SnapDeals (2 KiB): TreeR_new's background costs about block / 8 hashes per
#: rho region (1,024 regions at 32 GiB).
SNAP_BLOCK_NODES = 1 << 6

_FE_MASK = (1 << 254) - 1


class Draws:
    """Deterministic randomness: ``fe(tag, *ints)`` = SHA-256(domain ‖ seed ‖ tag ‖ ints) with
    the top two bits cleared (a field element, and a valid fr32 data node or label)."""

    def __init__(self, seed: int) -> None:
        if not 0 <= seed < 1 << 64:
            raise BadInput(f"seed must be a u64, got {seed}")
        self._prefix = b"cuzk virtual sector\x00" + seed.to_bytes(8, "little")

    def fe(self, tag: str, *ints: int) -> int:
        h = hashlib.sha256(self._prefix + tag.encode() + b"\x00")
        for i in ints:
            h.update(int(i).to_bytes(8, "little"))
        return int.from_bytes(h.digest(), "little") & _FE_MASK

    def bytes32(self, tag: str, *ints: int) -> bytes:
        return self.fe(tag, *ints).to_bytes(32, "little")

    def block(self, tag: str, n: int) -> list[int]:
        return [self.fe(tag, i) for i in range(n)]


def _block_nodes(nodes: int, block: int) -> int:
    if block < 1 or block & (block - 1):
        raise BadInput(f"the data block must be a power of two of nodes, got {block}")
    return min(nodes, block)


# -- PoRep ------------------------------------------------------------------------------------


def seal_proof_name(sector_size: int, api: str = API_V1_1) -> str:
    """The interactive registered seal proof of a size and api version (StackedDrg32GiBV1_1)."""
    if sector_size not in SIZE_LABELS:
        raise BadInput(f"no registered seal proof for {sector_size}-byte sectors")
    if api not in (API_V1_0, API_V1_1):
        raise BadInput(f"api version {api!r}: virtual sealing takes {API_V1_0} or {API_V1_1}")
    return f"StackedDrg{SIZE_LABELS[sector_size]}{'V1' if api == API_V1_0 else 'V1_1'}"


@dataclass
class VirtualLabels:
    """Step one of virtual sealing: data, replica_id, challenges, parents and the columns
    (labels, layer 1 first) of every node a C1 opens. Tests may change a label here before
    :meth:`commit` to get trees that commit to a wrong label."""

    proof: RegisteredPoRep
    prover_id: bytes
    sector_id: int
    ticket: bytes
    seed: bytes  # interactive randomness
    data_block: list[int]  # sector data: node v holds data_block[v mod len]
    tree_d: SparseTree
    replica_id: int
    challenges: list[list[int]]  # per partition
    parents: dict[int, tuple[int, ...]]  # derived node → 6 DRG then 8 expander parents
    columns: dict[int, list[int]]  # opened node → its label in every layer
    draws: Draws

    def data(self, node: int) -> int:
        return self.data_block[node % len(self.data_block)]

    def commit(self) -> VirtualSeal:
        """TreeC over the column hashes and TreeR over the replica nodes of the opened
        columns, each over one random leaf for every other node; comm_r from their roots."""
        params = self.proof.params
        nodes = sorted(self.columns)
        flat = [x for v in nodes for x in self.columns[v]]
        col_hashes = poseidon_groups(flat, params.layers)
        shape, n = params.tree.arities, params.nodes
        tree_c = SparseTree(n, shape, poseidon_groups, constant(self.draws.fe("tree c")),
                            dict(zip(nodes, col_hashes, strict=True)))  # fmt: skip
        replica = {v: (self.data(v) + self.columns[v][-1]) % R for v in nodes}
        tree_r = SparseTree(n, shape, poseidon_groups, constant(self.draws.fe("tree r")),
                            replica)  # fmt: skip
        comm_c, comm_r_last = tree_c.root, tree_r.root
        (comm_r,) = poseidon_groups([comm_c, comm_r_last], 2)
        return VirtualSeal(self, tree_c, tree_r, comm_c, comm_r_last, comm_r)


@dataclass(frozen=True)
class VirtualSeal:
    """A virtually sealed sector: its commitments and the openings a C1 output carries."""

    labels: VirtualLabels
    tree_c: SparseTree
    tree_r: SparseTree
    comm_c: int
    comm_r_last: int
    comm_r: int

    @property
    def comm_d(self) -> int:
        return self.labels.tree_d.root

    def witnesses(self) -> tuple[PoRepWitness, ...]:
        """One partition witness per partition, in the circuit's terms."""
        lab = self.labels
        chal = sorted({c for part in lab.challenges for c in part})
        opened = sorted({q for c in chal for q in (c, *lab.parents[c])})
        cpath = dict(zip(opened, self.tree_c.paths(opened), strict=True))
        rpath = dict(zip(chal, self.tree_r.paths(chal), strict=True))
        dpath = dict(zip(chal, lab.tree_d.paths(chal), strict=True))

        def opening(q: int) -> ColumnOpening:
            return ColumnOpening(tuple(lab.columns[q]), cpath[q])

        out = []
        for part in lab.challenges:
            proofs = tuple(
                ChallengeProof(c, dpath[c], rpath[c], cpath[c],
                               tuple(opening(q) for q in lab.parents[c][:6]),
                               tuple(opening(q) for q in lab.parents[c][6:]))
                for c in part
            )  # fmt: skip
            out.append(PoRepWitness(lab.replica_id, self.comm_d, self.comm_r, self.comm_r_last,
                                    self.comm_c, proofs))  # fmt: skip
        return tuple(out)

    def c1_document(self) -> dict[str, Any]:
        """The ``SealCommitPhase1Output`` JSON tree (:func:`~..porep_c1.c1_json`)."""
        lab = self.labels
        rows = [[lab.columns[c] for c in part] for part in lab.challenges]
        return c1_json(lab.proof.name, self.witnesses(), rows, lab.seed, lab.ticket)


def label_sector(
    proof_name: str,
    *,
    prover_id: bytes,
    sector_id: int,
    ticket: bytes,
    seed: bytes,
    data_block: Sequence[int],
    draws: Draws,
    derive: Iterable[int] | None = None,
) -> VirtualLabels:
    """Step one of virtual sealing (see the module docstring).

    Args:
        proof_name: an interactive registered seal proof (``StackedDrg32GiBV1_1``, …).
        data_block: fr32 data nodes repeated over the sector (length a power of two).
        draws: randomness for the labels of nodes that are only parents (and, in
            :meth:`VirtualLabels.commit`, the untouched tree leaves).
        derive: nodes whose labels are derived (default: the challenges); every node of the
            sector makes the result the real sealed sector's (a test at 2 KiB).
    Raises:
        BadInput: a non-interactive proof, a bad data block, a derive set missing challenges.
    """
    proof = registered_porep(proof_name)
    if proof.challenge_kind != "interactive":
        raise BadInput(f"{proof_name}: virtual sealing needs interactive challenges (synthetic "
                       "and non-interactive PoRep challenge from comm_r)")  # fmt: skip
    p = proof.params
    n = p.nodes
    block = [int(x) for x in data_block]
    if not block or len(block) & (len(block) - 1) or len(block) > n:
        raise BadInput(f"the data block must be a power of two of nodes, at most {n}")
    if any(not 0 <= x < 1 << 254 for x in block):
        raise BadInput("data nodes must be fr32 (below 2^254)")
    tree_d = SparseTree(n, TreeShape(n, 2).arities, sha256_pairs, periodic(block))
    rid = int.from_bytes(replica_id(prover_id, sector_id, ticket,
                                    tree_d.root.to_bytes(32, "little"), proof.porep_id),
                         "little")  # fmt: skip
    chal = [interactive_challenges(rid, seed, n, p.challenge_count, k)
            for k in range(proof.partitions)]  # fmt: skip
    derived = sorted({c for part in chal for c in part} if derive is None else set(derive))
    missing = {c for part in chal for c in part} - set(derived)
    if missing:
        raise BadInput(f"derive set misses challenged nodes {sorted(missing)[:4]}")
    rows = parents_of(derived, n, proof.porep_id, proof.api_version)
    parents = {v: tuple(int(x) for x in row) for v, row in zip(derived, rows, strict=True)}
    opened = sorted(set(derived).union(*parents.values()))
    columns: dict[int, list[int]] = {v: [] for v in opened}
    is_derived = set(derived)
    for layer in range(1, p.layers + 1):
        # Ascending order: a node's DRG parents are lower, so their labels in this layer exist.
        for v in opened:
            if v not in is_derived:
                columns[v].append(draws.fe("label", layer, v))
                continue
            ps = parents[v]
            pre = [] if v == 0 else expected_label_parents(
                [columns[q] for q in ps[:6]], [columns[q] for q in ps[6:]], layer)  # fmt: skip
            columns[v].append(label(rid, layer, v, pre))
    return VirtualLabels(proof, prover_id, sector_id, ticket, seed, block, tree_d, rid, chal,
                         parents, columns, draws)  # fmt: skip


def virtual_seal(sector_size: int, seed: int, api: str = API_V1_1,
                 block_nodes: int = DATA_BLOCK_NODES,
                 ids: tuple[bytes, int] | None = None) -> VirtualSeal:  # fmt: skip
    """A virtually sealed sector chosen by ``seed``: prover id, sector id, ticket, the
    interactive seed and the data block all drawn from it (``ids`` = (prover id, sector id)
    replaces the first two)."""
    name = seal_proof_name(sector_size, api)
    draws = Draws(seed)
    n = sector_size // 32
    prover, sector = draws.bytes32("prover id"), draws.fe("sector id") >> 190
    if ids is not None:
        prover, sector = ids
    return label_sector(
        name,
        prover_id=prover,
        sector_id=sector,
        ticket=draws.bytes32("ticket"),
        seed=draws.bytes32("interactive seed"),
        data_block=draws.block("data", _block_nodes(n, block_nodes)),
        draws=draws,
    ).commit()


# -- PoSt -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VirtualPoStSector:
    """One sector of a virtual PoSt forest; answers ``open`` as
    :class:`~..vanilla.RandomSector` does, so :func:`~..vanilla_json.generate` takes it."""

    sector_id: int
    comm_c: int
    comm_r_last: int
    comm_r: int
    forest: SparseTree
    slot: int
    opened: dict[int, MerklePath]  # the challenged leaves' paths, computed in bulk

    @property
    def public(self) -> PublicSector:
        return PublicSector(self.sector_id, self.comm_r)

    def open(self, tree: TreeShape, leaf: int) -> MerklePath:
        mp = self.opened.get(leaf)
        return self.forest.path(self.slot * tree.leaves + leaf) if mp is None else mp


def post_sectors(
    params: PoStParams, sector_ids: Sequence[int], randomness: int, draws: Draws,
    partition: int = 0,
) -> list[VirtualPoStSector]:  # fmt: skip
    """Sectors whose TreeR holds random leaves where ``randomness`` challenges them and one
    random leaf elsewhere: one forest, every sector's tree hashed in the same bulk calls."""
    if len(set(sector_ids)) != len(sector_ids):
        raise BadInput("sector ids must be distinct")
    leaves = challenged_leaves(params, sector_ids, randomness, partition)
    n = params.leaves
    touched = {s * n + c: draws.fe("post leaf", sid, c)
               for s, (sid, cs) in enumerate(zip(sector_ids, leaves, strict=True))
               for c in cs}  # fmt: skip
    defaults = [draws.fe("post default", sid) for sid in sector_ids]
    forest = SparseTree(len(sector_ids) * n, params.tree.arities, poseidon_groups,
                        Background(lambda j: defaults[j // n], region=n), touched)  # fmt: skip
    roots = forest.nodes([(forest.height, s) for s in range(len(sector_ids))])
    comm_cs = [draws.fe("post comm_c", sid) for sid in sector_ids]
    comm_rs = poseidon_groups([x for pair in zip(comm_cs, roots, strict=True) for x in pair], 2)
    opened = dict(zip(touched, forest.paths(list(touched)), strict=True))
    return [VirtualPoStSector(sid, cc, rl, cr, forest, s,
                              {c: opened[s * n + c] for c in leaves[s]})
            for s, (sid, cc, rl, cr) in enumerate(zip(sector_ids, comm_cs, roots, comm_rs,
                                                      strict=True))]  # fmt: skip


def virtual_post(
    params: PoStParams, seed: int, sectors: int | None = None, partition: int = 0
) -> tuple[list[SectorVanilla], int]:
    """(vanilla proofs, randomness) of one partition of virtual sectors chosen by ``seed``:
    WinningPoSt one sector, WindowPoSt ``sectors`` of the partition (default all of it)."""
    count = 1 if params.kind == "winning" else params.sector_count if sectors is None else sectors
    if params.kind == "winning" and (count != 1 or partition):
        raise BadInput("WinningPoSt proves one sector in one partition")
    if not 0 < count <= params.sector_count:
        raise BadInput(f"a {params.circuit_id} partition holds 1 … {params.sector_count} sectors")
    if partition < 0:
        raise BadInput("partition must be non-negative")
    draws = Draws(seed)
    randomness = draws.fe("randomness") & _FE_MASK  # as Lotus: top two bits clear
    base = draws.fe("sector ids") >> 200
    ids = [base + partition * params.sector_count + i for i in range(count)]
    secs = post_sectors(params, ids, randomness, draws, partition)
    return generate(params, secs, randomness, partition), randomness


# -- SnapDeals --------------------------------------------------------------------------------


@dataclass(frozen=True)
class VirtualUpdate:
    """A virtual SnapDeals update (see the module docstring)."""

    params: SnapParams
    h: int
    comm_c: int
    tree_r_old: SparseTree
    tree_d_new: SparseTree
    tree_r_new: SparseTree

    @property
    def comm_r_old(self) -> int:
        return poseidon_groups([self.comm_c, self.tree_r_old.root], 2)[0]

    @property
    def comm_r_new(self) -> int:
        return poseidon_groups([self.comm_c, self.tree_r_new.root], 2)[0]

    @property
    def comm_d_new(self) -> int:
        return self.tree_d_new.root

    def partition(self, k: int) -> dict[str, Any]:
        """Partition ``k``'s serialised ``PartitionProof``."""
        p = self.params
        cs = snap_challenges(p, self.comm_r_new, k)
        first = k * p.apex_leaf_count
        apex = self.tree_d_new.nodes([(p.apex_height, first + i)
                                      for i in range(p.apex_leaf_count)])  # fmt: skip
        openings = zip(self.tree_r_old.paths(cs), self.tree_d_new.paths(cs),
                       self.tree_r_new.paths(cs), strict=True)  # fmt: skip
        return partition_json(p, self.comm_c, apex, list(openings))

    def document(self) -> dict[str, Any]:
        """The request document :func:`~..snap_vanilla.read_update` reads."""
        comms = (self.comm_r_old, self.comm_d_new, self.comm_r_new)
        parts = [self.partition(k) for k in range(self.params.partition_count)]
        return request_document(self.params, self.h, comms, parts)


def virtual_update(sector_size: int, seed: int, h: int | None = None,
                   block_nodes: int = SNAP_BLOCK_NODES) -> VirtualUpdate:  # fmt: skip
    """A virtual update chosen by ``seed`` (``h`` defaults to filecoin-proofs' choice).

    Raises:
        BadInput: an unsupported size, an ``h`` the circuit cannot select.
    """
    p = snap_params_for_size(sector_size)
    h = p.h_default if h is None else h
    p.h_select(h)
    n = p.sector_nodes
    draws = Draws(seed)
    size = _block_nodes(n, block_nodes)
    old, data = draws.block("snap old replica", size), draws.block("snap data", size)
    comm_c = draws.fe("snap comm_c")
    arities = p.tree.arities
    tree_r_old = SparseTree(n, arities, poseidon_groups, periodic(old))
    tree_d_new = SparseTree(n, TreeShape(n, 2).arities, sha256_pairs, periodic(data))
    (comm_r_old,) = poseidon_groups([comm_c, tree_r_old.root], 2)
    rhos = fr.to_ints(rho_table(phi(tree_d_new.root, comm_r_old), h))
    region = n >> h

    def new_leaf(j: int) -> int:
        return (old[j % size] + data[j % size] * rhos[j // region]) % R

    tree_r_new = SparseTree(n, arities, poseidon_groups,
                            Background(new_leaf, period=size, region=region))  # fmt: skip
    return VirtualUpdate(p, h, comm_c, tree_r_old, tree_d_new, tree_r_new)
