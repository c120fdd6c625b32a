"""BLS12-381 groups: point types, zcash encodings, MSM, pairings and the MSM worker pool.

This package is the only place that imports the native curve library (py-arkworks-bls12381);
everything above it sees ``G1``/``G2`` objects, zcash bytes and canonical little-endian scalars.
Submodules: :mod:`.encoding` (zcash bytes), :mod:`.msm` (single process), :mod:`.pool`
(multi-process), :mod:`.pairing`.
"""

from cuzk.curve.points import (
    G1,
    G2,
    P,
    R,
    g1_generator,
    g1_identity,
    g1_mul,
    g2_generator,
    g2_identity,
    g2_mul,
)

__all__ = [
    "G1",
    "G2",
    "P",
    "R",
    "g1_generator",
    "g1_identity",
    "g1_mul",
    "g2_generator",
    "g2_identity",
    "g2_mul",
]
