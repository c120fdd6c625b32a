"""A small-sector StackedDRG sealer (2 KiB, 8 MiB, 512 MiB) and the C1 output it produces, so
the PoRep C2 path runs on real data: registered proofs (:mod:`.proof_types`), the parent graph
(:mod:`.graph`), labeling/encoding/TreeD (:mod:`.sdr`), sealing (:mod:`.sealer`) and commit
phase 1 (:mod:`.commit`). Virtual sealing (:mod:`.virtual`, over :mod:`.sparse_tree`) makes
the same inputs for sectors of any size, 32 GiB included, without the sector."""

from cuzk.circuits.filecoin.seal.commit import (
    c1_json,
    challenge_proof,
    challenges,
    commit_phase1,
    generate_c1,
)
from cuzk.circuits.filecoin.seal.graph import Graph, build_graph, proof_graph
from cuzk.circuits.filecoin.seal.proof_types import SealProof, by_name, seal_proof
from cuzk.circuits.filecoin.seal.sealer import SealedSector, seal_sector

__all__ = [
    "Graph",
    "SealProof",
    "SealedSector",
    "build_graph",
    "by_name",
    "c1_json",
    "challenge_proof",
    "challenges",
    "commit_phase1",
    "generate_c1",
    "proof_graph",
    "seal_proof",
    "seal_sector",
]
