"""The SDR parent graph (storage-proofs-porep ``StackedBucketGraph``): 6 DRG parents from
bucket sampling plus 8 expander parents from a Feistel permutation, 14 per node.

Both are keyed by the porep_id: the DRG by the first 28 bytes of SHA-256("Filecoin_DRSample" ‖
porep_id) (with the node index appended as a ChaCha8 key), the expander by the four u64 LE
words of SHA-256("Filecoin_Feistel" ‖ porep_id) (three Feistel rounds use the first three).
The whole table is computed at once (numba); upstream's parent-cache file is this table as
u32 LE, and its SHA-256 digest is published per size and version — the tests check it.

Api 1.0.0 differs in two places: the DRG's immediate predecessor is the last base parent
(first from 1.1.0), and the expander truncated the permuted index to u32 before dividing by 8,
which changes nothing below 2^29 nodes (it does at 32 GiB and 64 GiB).

:func:`parents_of` computes chosen rows only, for sectors whose table would not fit in memory
(virtual sealing of 32 GiB sectors opens a few thousand nodes of 2^30).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuzk.circuits.filecoin.seal import _kernels
from cuzk.circuits.filecoin.seal.proof_types import (
    API_V1_0,
    BASE_DEGREE,
    EXP_DEGREE,
    SealProof,
)
from cuzk.errors import BadInput

#: The numba kernels, untyped for mypy (numba's stubs reject star-argument calls of dispatchers).
K: Any = _kernels


def domain_seed(tag: str, porep_id: bytes) -> bytes:
    """Upstream ``derive_porep_domain_seed``: SHA-256(tag ‖ porep_id)."""
    return hashlib.sha256(tag.encode() + porep_id).digest()


def drg_seed(porep_id: bytes) -> bytes:
    """The 28-byte bucket-graph seed."""
    return domain_seed("Filecoin_DRSample", porep_id)[:28]


def feistel_keys(porep_id: bytes) -> list[int]:
    """The four expander Feistel keys."""
    s = domain_seed("Filecoin_Feistel", porep_id)
    return [int.from_bytes(s[8 * i : 8 * i + 8], "little") for i in range(4)]


def feistel_precompute(num_elements: int) -> tuple[int, int, int]:
    """(left mask, right mask, half bits): the smallest even bit width ≥ 4 covering the range."""
    pow4, log4 = 4, 1
    while pow4 < num_elements:
        pow4 *= 4
        log4 += 1
    return ((1 << log4) - 1) << log4, (1 << log4) - 1, log4


@dataclass(frozen=True, eq=False)
class Graph:
    """A sector's parent table: ``parents[v]`` = 6 DRG parents then 8 expander parents."""

    nodes: int
    porep_id: bytes
    api_version: str
    parents: np.ndarray  # (nodes, 14) uint32

    def base(self, v: int) -> list[int]:
        return [int(p) for p in self.parents[v, :BASE_DEGREE]]

    def expander(self, v: int) -> list[int]:
        return [int(p) for p in self.parents[v, BASE_DEGREE:]]

    def cache_digest(self) -> str:
        """SHA-256 (hex) of the table as upstream's parent-cache file stores it (u32 LE)."""
        return hashlib.sha256(self.parents.astype("<u4").tobytes()).hexdigest()

    def cache_id(self) -> str:
        """Upstream's parent-cache file stem (``cache_path``): it commits to the graph's
        identifier string, the Feistel keys and the node count."""
        ident = (
            "stacked_graph::StackedGraph{expansion_degree: 8 base_graph: "
            f"drgraph::BucketGraph{{size: {self.nodes}; degree: {BASE_DEGREE}; "
            "hasher: poseidon_hasher} }"
        )
        h = hashlib.sha256(b"poseidon_hasher" + ident.encode())
        for k in feistel_keys(self.porep_id):
            h.update(k.to_bytes(8, "little"))
        h.update(self.nodes.to_bytes(4, "little"))
        return f"v28-sdr-parent-{h.hexdigest()}"


def _check(nodes: int, porep_id: bytes) -> None:
    if nodes < 2 or nodes & (nodes - 1) or nodes > 1 << 31:
        raise BadInput(f"graph node count must be a power of two in [2, 2^31], got {nodes}")
    if len(porep_id) != 32:
        raise BadInput(f"porep_id must be 32 bytes, got {len(porep_id)}")


def _kernel_args(nodes: int, porep_id: bytes) -> tuple[np.ndarray, np.ndarray, tuple]:
    """(DRG seed words, Feistel keys, Feistel masks as u64) for the graph kernels."""
    seed = np.frombuffer(drg_seed(porep_id), dtype="<u4").astype(np.uint64)
    keys = np.array(feistel_keys(porep_id), dtype=np.uint64)
    masks = tuple(np.uint64(m) for m in feistel_precompute(nodes * EXP_DEGREE))
    return seed, keys, masks


def build_graph(nodes: int, porep_id: bytes, api_version: str) -> Graph:
    """The parent table of a ``nodes``-node sector.

    Raises:
        BadInput: a node count that is not a power of two ≥ 2, or a porep_id not 32 bytes.
    """
    _check(nodes, porep_id)
    seed, keys, masks = _kernel_args(nodes, porep_id)
    v1_0 = api_version == API_V1_0
    base = np.zeros((nodes, BASE_DEGREE), dtype=np.uint32)
    K.k_bucket_parents(seed, nodes, BASE_DEGREE, not v1_0, base)
    exp = np.zeros((nodes, EXP_DEGREE), dtype=np.uint32)
    K.k_expander_parents(keys, nodes, EXP_DEGREE, *masks, v1_0, exp)
    return Graph(nodes, porep_id, api_version, np.concatenate([base, exp], axis=1))


def parents_of(which: Sequence[int], nodes: int, porep_id: bytes, api_version: str) -> np.ndarray:
    """The rows of :func:`build_graph`'s table for the nodes ``which`` only, as a
    (len(which), 14) uint32 array: what a sector too large to tabulate (2^30 nodes at 32 GiB)
    needs for a few hundred challenges.

    Raises:
        BadInput: as :func:`build_graph`, or a node out of range.
    """
    _check(nodes, porep_id)
    idx = np.asarray(which, dtype=np.int64).reshape(-1)
    if idx.size and (idx.min() < 0 or idx.max() >= nodes):
        raise BadInput(f"graph nodes must lie in 0…{nodes - 1}")
    seed, keys, masks = _kernel_args(nodes, porep_id)
    v1_0 = api_version == API_V1_0
    base = np.zeros((idx.size, BASE_DEGREE), dtype=np.uint32)
    K.k_bucket_parents_of(seed, idx, BASE_DEGREE, not v1_0, base)
    exp = np.zeros((idx.size, EXP_DEGREE), dtype=np.uint32)
    K.k_expander_parents_of(keys, nodes, idx, EXP_DEGREE, *masks, v1_0, exp)
    return np.concatenate([base, exp], axis=1)


class ParentRows:
    """The parent table's rows for the nodes asked about, computed on first ask
    (:func:`parents_of`): the :class:`Graph` interface a C1 check needs at sizes whose whole
    table would not fit in memory."""

    def __init__(self, nodes: int, porep_id: bytes, api_version: str) -> None:
        _check(nodes, porep_id)
        self.nodes, self.porep_id, self.api_version = nodes, porep_id, api_version
        self._rows: dict[int, list[int]] = {}

    def prefetch(self, which: Sequence[int]) -> None:
        """Compute the rows of ``which`` in one call (nodes out of range are left out)."""
        todo = sorted({int(v) for v in which if 0 <= v < self.nodes} - set(self._rows))
        if todo:
            rows = parents_of(todo, self.nodes, self.porep_id, self.api_version)
            self._rows.update(zip(todo, rows.tolist(), strict=True))

    def _row(self, v: int) -> list[int]:
        if v not in self._rows:
            self.prefetch([v])
        return self._rows[v]

    def base(self, v: int) -> list[int]:
        return self._row(v)[:BASE_DEGREE]

    def expander(self, v: int) -> list[int]:
        return self._row(v)[BASE_DEGREE:]


def proof_graph(proof: SealProof) -> Graph:
    """The parent table a registered proof's sectors use."""
    return build_graph(proof.nodes, proof.porep_id, proof.api_version)
