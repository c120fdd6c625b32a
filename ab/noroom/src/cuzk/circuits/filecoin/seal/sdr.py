"""Stacked DRG labeling, encoding and TreeD: the native computations of pre-commit.

* replica_id = trim(SHA-256(prover_id ‖ sector_id u64 BE ‖ ticket ‖ comm_d ‖ porep_id)).
* Layer ℓ's label of node v = trim(SHA-256(replica_id ‖ ℓ u32 BE ‖ v u64 BE ‖ 20 zero bytes ‖
  37 parent labels)) — see :func:`~cuzk.circuits.filecoin.seal._kernels.k_label_layer` for
  which labels the 37 are; node 0 hashes only the 64-byte header.
* The replica is data + key in Fr, the key being the last layer's label.
* TreeD is the binary SHA-256 tree over the data nodes (children's bytes concatenated, digest
  trimmed), comm_d its root.

"trim" clears the top two bits of byte 31 so the digest read little-endian is a field element.
"""

from __future__ import annotations

import hashlib

import numpy as np

from cuzk.circuits.filecoin.seal import _kernels as K
from cuzk.circuits.filecoin.seal.graph import Graph
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.gadgets.sha256.node import trim_to_fr32


def replica_id(prover_id: bytes, sector_id: int, ticket: bytes, comm_d: bytes,
               porep_id: bytes) -> bytes:  # fmt: skip
    """Upstream ``generate_replica_id`` (all byte strings 32 bytes)."""
    for name, v in (("prover_id", prover_id), ("ticket", ticket), ("comm_d", comm_d),
                    ("porep_id", porep_id)):  # fmt: skip
        if len(v) != 32:
            raise BadInput(f"{name} must be 32 bytes, got {len(v)}")
    if not 0 <= sector_id < 1 << 64:
        raise BadInput(f"sector_id must be a u64, got {sector_id}")
    h = hashlib.sha256(prover_id + sector_id.to_bytes(8, "big") + ticket + comm_d + porep_id)
    return trim_to_fr32(h.digest())


def label_layers(graph: Graph, rid: bytes, layers: int) -> np.ndarray:
    """Every layer's labels: a (layers, nodes, 32) uint8 array, layer 1 first."""
    if len(rid) != 32:
        raise BadInput(f"replica_id must be 32 bytes, got {len(rid)}")
    n = graph.nodes
    out = np.zeros((layers, n, 32), dtype=np.uint8)
    rid_a = np.frombuffer(rid, dtype=np.uint8)
    for layer in range(1, layers + 1):
        prev = out[layer - 2] if layer > 1 else out[0]
        K.k_label_layer(rid_a, layer, graph.parents, out[layer - 1], prev, layer > 1)
    return out


def label_parents(graph: Graph, labels: np.ndarray, layer: int, node: int) -> list[bytes]:
    """The 37 parent labels hashed into ``node``'s label at ``layer`` (upstream's labeling
    proof ``parents``): the base parents (this layer) cycled for layer 1; base parents (this
    layer) then expander parents (previous layer), cycled, above."""
    base = [labels[layer - 1, p].tobytes() for p in graph.base(node)]
    if layer == 1:
        row = base
    else:
        row = base + [labels[layer - 2, p].tobytes() for p in graph.expander(node)]
    return [row[i % len(row)] for i in range(37)]


def data_nodes(data: bytes | np.ndarray, sector_size: int) -> np.ndarray:
    """A sector's data as (nodes, 32) uint8, each node a canonical field element.

    Raises:
        BadInput: wrong length, or a node ≥ r (unpadded data: Filecoin pads pieces with fr32).
    """
    buf = np.frombuffer(bytes(data), dtype=np.uint8) if not isinstance(data, np.ndarray) else (
        np.ascontiguousarray(data, dtype=np.uint8).reshape(-1))  # fmt: skip
    if buf.size != sector_size:
        raise BadInput(f"sector data must be {sector_size} bytes, got {buf.size}")
    nodes = buf.reshape(-1, 32).copy()
    try:
        fr.from_bytes_le(nodes)
    except BadInput as e:
        bad = next(i for i in range(nodes.shape[0])
                   if int.from_bytes(nodes[i].tobytes(), "little") >= R)  # fmt: skip
        raise BadInput(f"sector data: node {bad} (bytes {32 * bad}…{32 * bad + 31}) is not a "
                       "field element; data must be fr32-padded") from e  # fmt: skip
    return nodes


def random_data(sector_size: int, rng: np.random.Generator) -> np.ndarray:
    """Random sector data whose every node has its top two bits clear (so is < r)."""
    nodes = rng.integers(0, 256, size=(sector_size // 32, 32), dtype=np.uint8)
    nodes[:, 31] &= 0x3F
    return nodes


def tree_d(nodes: np.ndarray) -> list[np.ndarray]:
    """TreeD's levels, leaves first, each (m, 32) uint8; the last holds comm_d."""
    levels = [np.ascontiguousarray(nodes, dtype=np.uint8)]
    while levels[-1].shape[0] > 1:
        cur = levels[-1]
        if cur.shape[0] % 2:
            raise BadInput("TreeD needs a power-of-two number of leaves")
        out = np.empty((cur.shape[0] // 2, 32), dtype=np.uint8)
        K.k_sha256_pairs(cur, out)
        levels.append(out)
    return levels


def encode(nodes: np.ndarray, key_labels: np.ndarray) -> fr.FrVec:
    """The replica: data + key per node in Fr (as an FrVec)."""
    return fr.add(fr.from_bytes_le(nodes), fr.from_bytes_le(key_labels))
