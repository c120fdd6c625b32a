"""SnapDeals sector updates from random small sectors, their vanilla proofs in upstream's JSON
layout, and the strict reader that turns a request into checked partition witnesses.

*A random old sector* is random replica field elements with their TreeR (Poseidon, the size's
shape) and a random comm_c: the update circuit never looks at sealing labels, so that is a valid
old sector. The update follows storage-proofs-update ``encode_into``: TreeD_new is the binary
SHA-256 tree over the new data (32-byte nodes with the top two bits of byte 31 clear), ``phi =
Poseidon_c(comm_d_new, comm_r_old)``, node i of the new replica is ``old_i + data_i ·
Poseidon_c(phi, i >> (log2(nodes) − h))``, TreeR_new is built over it and ``comm_r_new =
Poseidon2(comm_c, root_r_new)``.

A *request document* (what :func:`generate_update` writes and :func:`read_update` reads) is our
small envelope around upstream's serde of ``Vec<PartitionProof>``::

    {"circuit": "snap-8m", "registered_update_proof": "StackedDrg8MiBV1",
     "comm_r_old": [32 bytes], "comm_d_new": [32 bytes], "comm_r_new": [32 bytes], "h": 10,
     "partition_proofs": [{"comm_c": [32 bytes], "apex_leafs": [[32 bytes]…],
                           "challenge_proofs": [{"proof_r_old": MerkleProof,
                                                 "proof_d_new": MerkleProof,
                                                 "proof_r_new": MerkleProof}…]}…]}

with one PartitionProof per partition in partition order, 32-byte values as field elements'
little-endian bytes, and MerkleProofs as in :mod:`.vanilla_json` (TreeD's are ``Single`` binary
proofs). Reading checks everything upstream's vanilla verifier checks plus what the circuit
assumes (a shared partition path, the apex tree's root); a bad document raises BadInput naming
the partition, challenge and reason, never a witness.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuzk import safejson
from cuzk.circuits.filecoin.merkle_json import (
    array,
    fe,
    fe_json,
    fe_list,
    field,
    leaf_index,
    merkle_proof_json,
    poseidon_roots,
    read_merkle_proof,
    read_path,
)
from cuzk.circuits.filecoin.snap import (
    GEN_RANDOMNESS_TAG,
    ChallengeWitness,
    PartitionWitness,
    SnapCircuit,
    SnapParams,
    snap_params,
    snap_params_for_size,
)
from cuzk.circuits.filecoin.vanilla_json import SIZE_LABELS
from cuzk.circuits.statement import Statement, payload_digest
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.gadgets.merkle import MerklePath, TreeShape, build_tree, prove
from cuzk.gadgets.poseidon.native import hash_many, hash_one
from cuzk.gadgets.sha256.node import node_hash, trim_to_fr32
from cuzk.r1cs import ConstraintSystem

MAX_RANDOM_NODES = 1 << 18  # 8 MiB: the largest update built here (a few seconds)


# -- native randomness ----------------------------------------------------------------------


def phi(comm_d_new: int, comm_r_old: int) -> int:
    """``phi = Poseidon_c(comm_d_new, comm_r_old)``."""
    return hash_one([comm_d_new, comm_r_old], tag=GEN_RANDOMNESS_TAG)


def rho(phi_value: int, high: int) -> int:
    """``rho = Poseidon_c(phi, high)`` for the top-``h``-bits value ``high`` of a node index."""
    return hash_one([phi_value, high], tag=GEN_RANDOMNESS_TAG)


def rho_table(phi_value: int, h: int) -> fr.FrVec:
    """``rho`` of every value of the top ``h`` bits (node i uses entry ``i >> (log2 n − h)``),
    hashed in one bulk call."""
    return rho_many(phi_value, range(1 << h))


def rho_many(phi_value: int, highs: Sequence[int]) -> fr.FrVec:
    """``rho(phi, high)`` for each of ``highs``, hashed in one bulk call."""
    pairs = fr.from_ints([v for hi in highs for v in (phi_value, hi)])
    return hash_many(pairs, 2, tag=GEN_RANDOMNESS_TAG)


def challenges(params: SnapParams, comm_r_new: int, k: int) -> list[int]:
    """Upstream ``Challenges::new(nodes, comm_r_new, k)``: partition k's challenged nodes."""
    if not 0 <= k < params.partition_count:
        raise BadInput(f"partition {k} of {params.partition_count}")
    rb, per = params.random_bits_per_challenge, params.challenges_per_digest
    first_digest = k * params.digests_per_partition
    out: list[int] = []
    for j in range(params.digests_per_partition):
        digest = hash_one([comm_r_new, first_digest + j], tag=GEN_RANDOMNESS_TAG)
        for i in range(min(per, params.challenge_count - len(out))):
            out.append(((digest >> (i * rb)) & ((1 << rb) - 1)) | (k << rb))
    return out


# -- native trees ---------------------------------------------------------------------------


def sha_tree(leaves: list[bytes]) -> list[list[bytes]]:
    """TreeD's levels (leaves first): binary SHA-256 node hashes, trimmed to 254 bits."""
    levels = [leaves]
    while len(levels[-1]) > 1:
        row = levels[-1]
        sha = hashlib.sha256
        levels.append([trim_to_fr32(sha(row[i] + row[i + 1]).digest())
                       for i in range(0, len(row), 2)])  # fmt: skip
    return levels


def _int(b: bytes) -> int:
    return int.from_bytes(b, "little")


@dataclass(frozen=True)
class SectorUpdate:
    """An old sector and its update: all three trees, kept for proving."""

    params: SnapParams
    h: int
    comm_c: int
    tree_r_old: list[np.ndarray]  # TreeR_old levels (FrVecs), leaves first
    tree_d_new: list[list[bytes]]  # TreeD_new levels, leaves first
    tree_r_new: list[np.ndarray]  # TreeR_new levels

    @property
    def root_r_old(self) -> int:
        return fr.to_int(self.tree_r_old[-1][0])

    @property
    def root_r_new(self) -> int:
        return fr.to_int(self.tree_r_new[-1][0])

    @property
    def comm_r_old(self) -> int:
        return hash_one([self.comm_c, self.root_r_old])

    @property
    def comm_r_new(self) -> int:
        return hash_one([self.comm_c, self.root_r_new])

    @property
    def comm_d_new(self) -> int:
        return _int(self.tree_d_new[-1][0])


def random_update(params: SnapParams, seed: int, h: int | None = None) -> SectorUpdate:
    """A random old sector updated with random new data (see the module docstring).

    Raises:
        BadInput: a sector over 8 MiB, or an ``h`` the circuit cannot select.
    """
    n = params.sector_nodes
    if n > MAX_RANDOM_NODES:
        raise BadInput(f"{params.circuit_id}: random updates are built only up to 8 MiB")
    h = params.h_default if h is None else h
    params.h_select(h)
    rng = np.random.default_rng(seed)
    tree = params.tree
    old = fr.random(n, rng)
    tree_r_old = build_tree(old, tree)
    comm_c = fr.to_int(fr.random(1, rng)[0])
    data = rng.integers(0, 256, size=(n, 32), dtype=np.uint8)
    data[:, 31] &= 0x3F  # fr32: every node is a canonical field element
    tree_d = sha_tree([bytes(row) for row in data])
    comm_r_old = hash_one([comm_c, fr.to_int(tree_r_old[-1][0])])
    phi_value = phi(_int(tree_d[-1][0]), comm_r_old)
    rho_per_node = np.repeat(rho_table(phi_value, h), n >> h, axis=0)
    new = fr.add(old, fr.mul(fr.from_bytes_le(data), rho_per_node))
    return SectorUpdate(params, h, comm_c, tree_r_old, tree_d, build_tree(new, tree))


# -- upstream's JSON layout -----------------------------------------------------------------


def tree_d_path(levels: list[list[bytes]], c: int) -> MerklePath:
    """TreeD inclusion path of node ``c`` (SHA-256 nodes as field elements)."""
    siblings, positions, node = [], [], c
    for row in levels[:-1]:
        siblings.append([_int(row[node ^ 1])])
        positions.append(node & 1)
        node >>= 1
    return MerklePath(_int(levels[0][c]), siblings, positions, _int(levels[-1][0]))


def partition_json(
    params: SnapParams,
    comm_c: int,
    apex_leafs: Sequence[int],
    openings: Sequence[tuple[MerklePath, MerklePath, MerklePath]],
) -> dict[str, Any]:
    """Upstream ``PartitionProof`` serialised: comm_c, the partition's apex leaves, and per
    challenge its (TreeR_old, TreeD_new, TreeR_new) openings."""
    tree_d = TreeShape(params.sector_nodes, 2)
    return {
        "comm_c": fe_json(comm_c),
        "apex_leafs": [fe_json(a) for a in apex_leafs],
        "challenge_proofs": [
            {"proof_r_old": merkle_proof_json(r_old, params.tree),
             "proof_d_new": merkle_proof_json(d_new, tree_d),
             "proof_r_new": merkle_proof_json(r_new, params.tree)}
            for r_old, d_new, r_new in openings
        ],
    }  # fmt: skip


def partition_proof_json(update: SectorUpdate, k: int) -> dict[str, Any]:
    """Upstream ``EmptySectorUpdate::prove_inner`` for partition ``k``, serialised."""
    p = update.params
    apex_row = update.tree_d_new[p.apex_height]
    apex = [_int(a) for a in apex_row[k * p.apex_leaf_count : (k + 1) * p.apex_leaf_count]]
    openings = [
        (prove(update.tree_r_old, p.tree, c), tree_d_path(update.tree_d_new, c),
         prove(update.tree_r_new, p.tree, c))
        for c in challenges(p, update.comm_r_new, k)
    ]  # fmt: skip
    return partition_json(p, update.comm_c, apex, openings)


def registered_update_proof(params: SnapParams) -> str:
    """filecoin-proofs-api's ``RegisteredUpdateProof`` name (``StackedDrg8MiBV1``, …)."""
    return f"StackedDrg{SIZE_LABELS[params.sector_size]}V1"


def request_document(
    params: SnapParams,
    h: int,
    comms: tuple[int, int, int],
    partitions: Sequence[dict[str, Any]],
) -> dict[str, Any]:
    """The request document (see the module docstring) around serialised partition proofs;
    ``comms`` = (comm_r_old, comm_d_new, comm_r_new)."""
    comm_r_old, comm_d_new, comm_r_new = comms
    return {
        "circuit": params.circuit_id,
        "registered_update_proof": registered_update_proof(params),
        "comm_r_old": fe_json(comm_r_old),
        "comm_d_new": fe_json(comm_d_new),
        "comm_r_new": fe_json(comm_r_new),
        "h": h,
        "partition_proofs": list(partitions),
    }


def request_json(update: SectorUpdate) -> str:
    """The request document for all partitions of ``update`` (see the module docstring)."""
    p = update.params
    comms = (update.comm_r_old, update.comm_d_new, update.comm_r_new)
    parts = [partition_proof_json(update, k) for k in range(p.partition_count)]
    return json.dumps(request_document(p, update.h, comms, parts))


def generate_update(sector_size: int, seed: int) -> str:
    """A request document for a random update of a random sector of ``sector_size`` bytes
    (2 KiB or 8 MiB), chosen by ``seed``, with ``h`` = filecoin-proofs' default."""
    return request_json(random_update(snap_params_for_size(sector_size), seed))


# -- strict reading -------------------------------------------------------------------------


@dataclass(frozen=True)
class UpdateRequest:
    """A checked request: the statement and one witness per partition."""

    params: SnapParams
    h: int
    comm_r_old: int
    comm_d_new: int
    comm_r_new: int
    partitions: tuple[PartitionWitness, ...]

    def public_inputs(self, k: int) -> list[int]:
        """Partition ``k``'s public inputs (without ONE), as upstream's verifier computes them."""
        return self.params.public_inputs(k, self.h, self.comm_r_old, self.comm_d_new,
                                         self.comm_r_new)  # fmt: skip

    def circuit(self, k: int) -> SnapCircuit:
        return SnapCircuit(self.params, self.partitions[k])


def _read_tree_d_proof(obj: Any, levels: int, what: str) -> MerklePath:
    body = field(field(obj, "data", what), "Single", f"{what} (a Single TreeD proof)")
    leaf = fe(field(body, "leaf", what), f"{what} leaf")
    root = fe(field(body, "root", what), f"{what} root")
    sibs, pos = read_path(field(body, "path", what), 2, levels, what)
    return MerklePath(leaf, sibs, pos, root)


def _sha_walk(mp: MerklePath, stop: int) -> tuple[int, int]:
    """(the node a binary SHA-256 path reaches after ``stop`` levels, the root it reaches)."""
    cur, at_stop = mp.leaf, mp.leaf
    for level, (s, q) in enumerate(zip(mp.siblings, mp.positions, strict=True)):
        if level == stop:
            at_stop = cur
        cur = node_hash([cur, s[0]] if q == 0 else [s[0], cur])
    return (cur if stop >= len(mp.siblings) else at_stop), cur


@dataclass(frozen=True)
class _Opening:
    """One challenge's three proofs as read, before their hashes are checked."""

    where: str
    challenge: int
    r_old: MerklePath
    d_new: MerklePath
    r_new: MerklePath


@dataclass(frozen=True)
class _RawPartition:
    k: int
    comm_c: int
    apex: list[int]
    openings: list[_Opening]


def _parse_partition(doc: Any, p: SnapParams, k: int, comm_r_new: int) -> _RawPartition:
    """Partition ``k``'s proofs read and their format checked (hashes: :func:`_check_partition`)."""
    what = f"partition {k}"
    comm_c = fe(field(doc, "comm_c", what), f"{what} comm_c")
    apex = fe_list(array(field(doc, "apex_leafs", what), p.apex_leaf_count,
                         f"{what} apex_leafs"), f"{what} apex leaf")  # fmt: skip
    raw = array(field(doc, "challenge_proofs", what), p.challenge_count,
                f"{what} challenge_proofs")  # fmt: skip
    openings = []
    for j, (c, item) in enumerate(zip(challenges(p, comm_r_new, k), raw, strict=True)):
        w = f"{what} challenge {j}"
        r_old = read_merkle_proof(field(item, "proof_r_old", w), p.tree, f"{w} proof_r_old")
        d_new = _read_tree_d_proof(field(item, "proof_d_new", w), p.challenge_bit_len,
                                   f"{w} proof_d_new")  # fmt: skip
        r_new = read_merkle_proof(field(item, "proof_r_new", w), p.tree, f"{w} proof_r_new")
        openings.append(_Opening(w, c, r_old, d_new, r_new))
    return _RawPartition(k, comm_c, apex, openings)


def _check_partition(
    part: _RawPartition,
    p: SnapParams,
    h: int,
    comms: tuple[int, int, int],
    hashed: tuple[Sequence[int], Sequence[int], Sequence[int]],
) -> PartitionWitness:
    """Every check of partition ``part`` given its challenges' TreeR_old and TreeR_new path
    roots and rho values (``hashed``, hashed in bulk for the whole request)."""
    comm_r_old, comm_d_new, comm_r_new = comms
    k, comm_c, apex = part.k, part.comm_c, part.apex
    what = f"partition {k}"
    tree_d = TreeShape(1 << p.challenge_bit_len, 2)
    out: list[ChallengeWitness] = []
    roots: tuple[int, int] | None = None
    top = p.challenge_bit_len - p.partition_bit_len
    partition_path: list[list[int]] | None = None
    for o, root_old, root_new, rho_c in zip(part.openings, *hashed, strict=True):
        w, c, r_old, d_new, r_new = o.where, o.challenge, o.r_old, o.d_new, o.r_new
        if root_old != r_old.root:
            raise BadInput(f"{w} proof_r_old: inclusion path does not hash to its root")
        # The path's node at the apex row must be this partition's apex leaf it selects.
        apex_node, root_d = _sha_walk(d_new, p.apex_height)
        if root_d != d_new.root:
            raise BadInput(f"{w} proof_d_new: inclusion path does not hash to its root")
        if root_new != r_new.root:
            raise BadInput(f"{w} proof_r_new: inclusion path does not hash to its root")
        for name, proof, tree in (("proof_r_old", r_old, p.tree), ("proof_d_new", d_new, tree_d),
                                  ("proof_r_new", r_new, p.tree)):  # fmt: skip
            if leaf_index(proof, tree) != c:
                raise BadInput(f"{w} {name}: proves node {leaf_index(proof, tree)}, "
                               f"the challenge is node {c}")  # fmt: skip
        if roots is None:
            roots = (r_old.root, r_new.root)
            if hash_one([comm_c, r_old.root]) != comm_r_old:
                raise BadInput(f"{what}: comm_r_old is not Poseidon(comm_c, TreeR_old root)")
            if hash_one([comm_c, r_new.root]) != comm_r_new:
                raise BadInput(f"{what}: comm_r_new is not Poseidon(comm_c, TreeR_new root)")
            partition_path = d_new.siblings[top:]
        elif (r_old.root, r_new.root) != roots:
            raise BadInput(f"{w}: TreeR root differs from challenge 0's")
        if d_new.root != comm_d_new:
            raise BadInput(f"{w} proof_d_new: root differs from comm_d_new")
        if d_new.siblings[top:] != partition_path:
            raise BadInput(f"{w} proof_d_new: partition path differs from challenge 0's")
        if (r_old.leaf + d_new.leaf * rho_c) % R != r_new.leaf:
            raise BadInput(f"{w}: new replica node is not old + data · rho")
        if apex_node != apex[(c >> p.apex_height) % p.apex_leaf_count]:
            raise BadInput(f"{w} proof_d_new: path does not pass through its apex leaf")
        out.append(ChallengeWitness(
            r_old.leaf, tuple(tuple(s) for s in r_old.siblings), d_new.leaf,
            tuple(s[0] for s in d_new.siblings), r_new.leaf,
            tuple(tuple(s) for s in r_new.siblings)))  # fmt: skip
    assert roots is not None and partition_path is not None
    row = apex
    while len(row) > 1:
        row = [node_hash(row[i : i + 2]) for i in range(0, len(row), 2)]
    node = row[0]
    for b, s in enumerate(partition_path):
        node = node_hash([node, s[0]] if not (k >> b) & 1 else [s[0], node])
    if node != comm_d_new:
        raise BadInput(f"{what}: apex leaves do not hash to comm_d_new along the partition path")
    return PartitionWitness(k, h, comm_r_old, comm_d_new, comm_r_new, comm_c, roots[0],
                            roots[1], tuple(apex), tuple(out))  # fmt: skip


def _read_partitions(
    docs: Sequence[Any], p: SnapParams, h: int, comms: tuple[int, int, int]
) -> tuple[PartitionWitness, ...]:
    """Read every partition, hash all TreeR paths and rho values of the request in bulk
    (Poseidon is most of the cost), then check each partition in order."""
    comm_r_old, comm_d_new, comm_r_new = comms
    parts = [_parse_partition(d, p, k, comm_r_new) for k, d in enumerate(docs)]
    opened = [o for part in parts for o in part.openings]
    roots = poseidon_roots([o.r_old for o in opened] + [o.r_new for o in opened], p.tree)
    shift = p.challenge_bit_len - h
    highs = sorted({o.challenge >> shift for o in opened})
    rho_of = dict(zip(highs, fr.to_ints(rho_many(phi(comm_d_new, comm_r_old), highs)),
                      strict=True))  # fmt: skip
    n, at = len(opened), 0
    out = []
    for part in parts:
        m = len(part.openings)
        hashed = (roots[at : at + m], roots[n + at : n + at + m],
                  [rho_of[o.challenge >> shift] for o in part.openings])  # fmt: skip
        out.append(_check_partition(part, p, h, comms, hashed))
        at += m
    return tuple(out)


def read_update(text: str | bytes, circuit_id: str | None = None) -> UpdateRequest:
    """Parse and check a request document (every partition, every challenge).

    Raises:
        BadInput: malformed JSON, a different circuit than ``circuit_id``, wrong counts, or any
            proof that upstream's verifier or the circuit would reject — naming where and why.
    """
    doc = safejson.loads(text, "SnapDeals request", bytes32=True)
    what = "SnapDeals request"
    cid = field(doc, "circuit", what)
    if not isinstance(cid, str):
        raise BadInput(f"{what}: circuit must be a string")
    if circuit_id is not None and cid != circuit_id:
        raise BadInput(f"the SnapDeals request is for {cid}, not {circuit_id}")
    p = snap_params(cid)
    reg = field(doc, "registered_update_proof", what)
    if reg != registered_update_proof(p):
        raise BadInput(f"{what}: registered_update_proof {reg!r} does not match {cid} "
                       f"({registered_update_proof(p)})")  # fmt: skip
    h = field(doc, "h", what)
    if type(h) is not int:
        raise BadInput(f"{what}: h must be an integer")
    p.h_select(h)
    old, d_new, new = (fe(field(doc, n, what), f"{what} {n}")
                       for n in ("comm_r_old", "comm_d_new", "comm_r_new"))  # fmt: skip
    comms = (old, d_new, new)
    parts = array(field(doc, "partition_proofs", what), p.partition_count,
                  f"{what} partition_proofs")  # fmt: skip
    return UpdateRequest(p, h, old, d_new, new, _read_partitions(parts, p, h, comms))


def open_statement(circuit_id: str, payload: bytes) -> Statement:
    """The engine's entry point: check the whole request now, build partitions on demand."""
    req = read_update(payload, circuit_id)
    inputs = tuple(tuple(req.public_inputs(k)) for k in range(req.params.partition_count))
    return Statement(circuit_id, req.params.partition_count, req.circuit,
                     payload_digest(circuit_id, (), payload), inputs)  # fmt: skip


@dataclass(frozen=True)
class SeededSnapCircuit:
    """A registry circuit: blank in shape mode; in witness/check mode partition ``partition``
    of the random update chosen by ``seed`` (2 KiB and 8 MiB), built on first use."""

    params: SnapParams
    seed: int = 0
    partition: int = 0

    @property
    def circuit_id(self) -> str:
        return self.params.circuit_id

    def with_witness(self) -> tuple[SnapCircuit, list[int]]:
        """The circuit holding this seed's partition, and its public inputs (no ONE)."""
        req = read_update(request_json(random_update(self.params, self.seed)))
        return req.circuit(self.partition), req.public_inputs(self.partition)

    def synthesize(self, cs: ConstraintSystem) -> None:
        if not cs.needs_values:
            SnapCircuit(self.params).synthesize(cs)
            return
        self.with_witness()[0].synthesize(cs)
