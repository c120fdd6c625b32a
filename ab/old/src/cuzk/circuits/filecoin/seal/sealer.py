"""Sealing a small sector end to end (what filecoin-proofs' pre-commit phases 1 and 2 compute):
TreeD and comm_d over the data, replica_id, the SDR labels, the replica, TreeC over the label
columns, TreeR over the replica, and comm_r = Poseidon2(comm_c, comm_r_last).

Everything stays in memory and the result is what :mod:`~cuzk.circuits.filecoin.seal.commit`
opens into vanilla proofs. 2 KiB seals in about a second and 8 MiB in tens of seconds on two
cores; 512 MiB is accepted but takes tens of minutes and several GB (not exercised in tests).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from cuzk.circuits.filecoin.seal.graph import Graph, build_graph
from cuzk.circuits.filecoin.seal.proof_types import API_V1_1, SealProof, seal_proof
from cuzk.circuits.filecoin.seal.sdr import (
    data_nodes,
    encode,
    label_layers,
    random_data,
    replica_id,
    tree_d,
)
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.gadgets.merkle import build_tree
from cuzk.gadgets.poseidon.native import hash_many, hash_one


@dataclass(frozen=True, eq=False)
class SealedSector:
    """A sealed sector with every intermediate the vanilla proofs open."""

    proof: SealProof  # registered proof (size, api version, porep_id)
    prover_id: bytes  # 32 bytes
    sector_id: int  # u64
    ticket: bytes  # 32 bytes
    graph: Graph  # parent table
    data: np.ndarray  # (nodes, 32) uint8: the unsealed data, fr32-valid nodes
    tree_d: list[np.ndarray]  # TreeD levels, leaves (= data) first, (m, 32) uint8
    replica_id: bytes  # 32 bytes, a field element's LE encoding
    labels: np.ndarray  # (layers, nodes, 32) uint8, layer 1 first
    tree_c: list[fr.FrVec]  # TreeC levels over the column hashes, leaves first
    tree_r: list[fr.FrVec]  # TreeR levels over the replica, leaves first
    comm_d: int  # TreeD root
    comm_c: int  # TreeC root
    comm_r_last: int  # TreeR root
    comm_r: int  # Poseidon2(comm_c, comm_r_last)

    @property
    def nodes(self) -> int:
        return self.graph.nodes

    def column(self, node: int) -> list[bytes]:
        """Node's labels in every layer (upstream ``Column::rows``)."""
        return [self.labels[layer, node].tobytes() for layer in range(self.labels.shape[0])]


@lru_cache(maxsize=4)
def _graph(nodes: int, porep_id: bytes, api_version: str) -> Graph:
    # The table depends only on the registered proof; the 8 MiB one takes seconds to build.
    return build_graph(nodes, porep_id, api_version)


def _bytes32(v: int | bytes, what: str) -> bytes:
    if isinstance(v, bytes):
        if len(v) != 32:
            raise BadInput(f"{what} must be 32 bytes, got {len(v)}")
        return v
    if not 0 <= v < 1 << 256:
        raise BadInput(f"{what} must fit in 32 bytes")
    return int(v).to_bytes(32, "little")


def seal_sector(
    sector_size: int,
    *,
    data: bytes | np.ndarray | None = None,
    prover_id: int | bytes,
    sector_id: int,
    ticket: bytes,
    api: str = API_V1_1,
    rng: np.random.Generator | None = None,
) -> SealedSector:
    """Seal one sector.

    Args:
        sector_size: 2048, 8 MiB or 512 MiB.
        data: the sector's bytes (every 32-byte node < r, as fr32 padding guarantees); None for
            random data from ``rng``.
        prover_id: 32 bytes, or an int written as 32 little-endian bytes.
        sector_id: u64.
        ticket: 32 bytes of randomness.
        api: "1.1.0" (StackedDrg…V1_1, the current proofs) or "1.0.0" (…V1).
        rng: generator for random data (needed when ``data`` is None).
    Raises:
        BadInput: unsupported size/version, wrong lengths, data nodes ≥ r, no data and no rng.
    """
    proof = seal_proof(sector_size, api)
    prover = _bytes32(prover_id, "prover_id")
    ticket = _bytes32(ticket, "ticket")
    if data is None:
        if rng is None:
            raise BadInput("seal_sector needs data or an rng for random data")
        nodes = random_data(sector_size, rng)
    else:
        nodes = data_nodes(data, sector_size)
    graph = _graph(proof.nodes, proof.porep_id, proof.api_version)
    td = tree_d(nodes)
    comm_d = td[-1][0].tobytes()
    rid = replica_id(prover, sector_id, ticket, comm_d, proof.porep_id)
    labels = label_layers(graph, rid, proof.layers)
    # Column hashes: Poseidon (Merkle tag, arity = layers) of each node's labels, layer 1 first.
    cols = fr.from_bytes_le(np.ascontiguousarray(labels.transpose(1, 0, 2)).reshape(-1, 32))
    tree_c = build_tree(hash_many(cols, proof.layers), proof.tree)
    tree_r = build_tree(encode(nodes, labels[-1]), proof.tree)
    comm_c, comm_r_last = fr.to_int(tree_c[-1][0]), fr.to_int(tree_r[-1][0])
    return SealedSector(
        proof=proof, prover_id=prover, sector_id=sector_id, ticket=ticket, graph=graph,
        data=nodes, tree_d=td, replica_id=rid, labels=labels, tree_c=tree_c, tree_r=tree_r,
        comm_d=int.from_bytes(comm_d, "little"), comm_c=comm_c, comm_r_last=comm_r_last,
        comm_r=hash_one([comm_c, comm_r_last]),
    )  # fmt: skip
