"""Filecoin's proof circuits, constraint for constraint: WinningPoSt and WindowPoSt (both the
FallbackPoSt circuit, :mod:`.post`), their challenges, public inputs and vanilla proofs from
native data (:mod:`.vanilla`), and upstream's JSON layout of vanilla proofs with our request
envelope around it (:mod:`.vanilla_json`); the StackedDRG PoRep C2 circuit (:mod:`.porep`) with
its C1 parser (:mod:`.porep_c1`), a small-sector sealer and virtual sealing at any size
(:mod:`.seal`); SnapDeals (:mod:`.snap`, :mod:`.snap_vanilla`); vanilla proofs in bincode
(:mod:`.bincode_write`). The per-family modules are imported by name (each has its own
``param_file_stem`` and count functions).

Layer: builds on :mod:`cuzk.gadgets` and :mod:`cuzk.r1cs`.
"""

from cuzk.circuits.filecoin.post import (
    CircuitCounts,
    FallbackPoStCircuit,
    SectorProof,
    pad_sectors,
    post_circuit_ids,
    post_params,
    shape_counts,
    structural_counts,
)
from cuzk.circuits.filecoin.post_params import PoStParams, window_params, winning_params

__all__ = [
    "CircuitCounts",
    "FallbackPoStCircuit",
    "PoStParams",
    "SectorProof",
    "pad_sectors",
    "post_circuit_ids",
    "post_params",
    "shape_counts",
    "structural_counts",
    "window_params",
    "winning_params",
]
