"""Commit phase 1: interactive challenges from the seed and the vanilla proofs that open them,
serialised as filecoin-proofs-api's ``SealCommitPhase1Output`` JSON (what a C2 request
carries).

Layout (serde of the upstream structs, in field order)::

    {"registered_proof": "StackedDrg2KiBV1_1",
     "vanilla_proofs": {"StackedDrg2KiBV1": [[Proof, …] per partition]},
     "comm_r": B32, "comm_d": B32, "replica_id": B32, "seed": B32, "ticket": B32}

    Proof = {"comm_d_proofs": MerkleProof (TreeD, SHA-256, binary),
             "comm_r_last_proof": MerkleProof (TreeR),
             "replica_column_proofs": {"c_x": ColumnProof, "drg_parents": [ColumnProof ×6],
                                       "exp_parents": [ColumnProof ×8]},
             "labeling_proofs": [{"parents": [B32 ×37], "layer_index": ℓ, "node": c} per layer],
             "encoding_proof": {"parents": [B32 ×37], "layer_index": layers, "node": c}}
    ColumnProof = {"column": {"index": node, "rows": [label per layer], "_h": null},
                   "inclusion_proof": MerkleProof (TreeC)}

B32 is 32 bytes as a list of integers (field elements little-endian); MerkleProof is the
``{"data": {"Single": {root, leaf, path}}}`` layout of :mod:`~cuzk.circuits.filecoin.vanilla_json`
(``Column``'s ``_h`` is a PhantomData that serde writes as null).

Challenges (storage-proofs-porep ``InteractiveChallenges::derive``): challenge i of partition
k is 1 + (SHA-256(replica_id ‖ seed ‖ (k·n + i) as u32 LE) read little-endian mod (nodes − 1)),
so node 0 is never challenged.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np

from cuzk.circuits.filecoin.merkle_json import merkle_proof_json
from cuzk.circuits.filecoin.seal.proof_types import API_V1_1, seal_proof
from cuzk.circuits.filecoin.seal.sdr import label_parents
from cuzk.circuits.filecoin.seal.sealer import SealedSector, seal_sector
from cuzk.errors import BadInput
from cuzk.gadgets.merkle import MerklePath, TreeShape, prove


def challenges(nodes: int, rid: bytes, seed: bytes, count: int, partition: int = 0) -> list[int]:
    """The interactive PoRep challenges of one partition."""
    if len(seed) != 32:
        raise BadInput(f"seed must be 32 bytes, got {len(seed)}")
    out = []
    for i in range(count):
        j = count * partition + i
        h = hashlib.sha256(rid + seed + j.to_bytes(4, "little")).digest()
        out.append(int.from_bytes(h, "little") % (nodes - 1) + 1)
    return out


def _b32(v: int | bytes) -> list[int]:
    return list(v if isinstance(v, bytes) else int(v).to_bytes(32, "little"))


def tree_d_path(sealed: SealedSector, index: int) -> MerklePath:
    """TreeD inclusion path of data node ``index`` (SHA-256 nodes as ints)."""
    siblings, positions = [], []
    node = index
    for level in sealed.tree_d[:-1]:
        sib = level[node ^ 1].tobytes()
        siblings.append([int.from_bytes(sib, "little")])
        positions.append(node & 1)
        node >>= 1
    return MerklePath(
        leaf=int.from_bytes(sealed.tree_d[0][index].tobytes(), "little"),
        siblings=siblings,
        positions=positions,
        root=sealed.comm_d,
    )


def _column_proof(sealed: SealedSector, node: int, tree: TreeShape) -> dict[str, Any]:
    return {
        "column": {"index": node, "rows": [_b32(r) for r in sealed.column(node)], "_h": None},
        "inclusion_proof": merkle_proof_json(prove(sealed.tree_c, tree, node), tree),
    }


def challenge_proof(sealed: SealedSector, c: int) -> dict[str, Any]:
    """Upstream ``Proof`` for challenge ``c`` (see the module docstring)."""
    p = sealed.proof
    tree = p.tree
    tree_d = TreeShape(p.nodes, 2)
    layers = p.layers
    labeling = [
        {"parents": [_b32(x) for x in label_parents(sealed.graph, sealed.labels, layer, c)],
         "layer_index": layer, "node": c}
        for layer in range(1, layers + 1)
    ]  # fmt: skip
    return {
        "comm_d_proofs": merkle_proof_json(tree_d_path(sealed, c), tree_d),
        "comm_r_last_proof": merkle_proof_json(prove(sealed.tree_r, p.tree, c), tree),
        "replica_column_proofs": {
            "c_x": _column_proof(sealed, c, tree),
            "drg_parents": [_column_proof(sealed, q, tree) for q in sealed.graph.base(c)],
            "exp_parents": [_column_proof(sealed, q, tree) for q in sealed.graph.expander(c)],
        },
        "labeling_proofs": labeling,
        "encoding_proof": dict(labeling[-1]),
    }


def commit_phase1(sealed: SealedSector, seed: bytes) -> dict[str, Any]:
    """The C1 output (``SealCommitPhase1Output``) as a JSON-ready dict.

    Raises:
        BadInput: a seed that is not 32 bytes.
    """
    p = sealed.proof
    partitions = [
        [challenge_proof(sealed, c)
         for c in challenges(p.nodes, sealed.replica_id, seed, p.challenges, k)]
        for k in range(p.partitions)
    ]  # fmt: skip
    return {
        "registered_proof": p.name,
        "vanilla_proofs": {p.vanilla_key: partitions},
        "comm_r": _b32(sealed.comm_r),
        "comm_d": _b32(sealed.comm_d),
        "replica_id": _b32(sealed.replica_id),
        "seed": _b32(seed),
        "ticket": _b32(sealed.ticket),
    }


def c1_json(sealed: SealedSector, seed: bytes) -> str:
    """:func:`commit_phase1` as compact JSON text."""
    return json.dumps(commit_phase1(sealed, seed), separators=(",", ":"))


def generate_c1(
    sector_size: int, seed: int, api: str = API_V1_1, ids: tuple[int, int] | None = None
) -> str:
    """Seal a sector of random data chosen by ``seed`` and return its C1 JSON: prover_id,
    sector_id, ticket and the interactive seed are drawn from the same generator (ticket and
    seed with their top two bits clear, as chain randomness is). ``ids`` = (prover id, sector
    id) replaces the drawn pair (a client's request names the miner and sector it seals)."""
    seal_proof(sector_size, api)  # validate before drawing anything
    rng = np.random.default_rng(seed)

    def rand32() -> bytes:
        b = bytearray(rng.integers(0, 256, size=32, dtype=np.uint8).tobytes())
        b[31] &= 0x3F
        return bytes(b)

    prover_id = int(rng.integers(1, 1 << 20))
    sector_id = int(rng.integers(0, 1 << 32))
    ticket, interactive_seed = rand32(), rand32()
    if ids is not None:
        prover_id, sector_id = ids
    sealed = seal_sector(sector_size, prover_id=prover_id, sector_id=sector_id, ticket=ticket,
                         api=api, rng=rng)  # fmt: skip
    return c1_json(sealed, interactive_seed)
