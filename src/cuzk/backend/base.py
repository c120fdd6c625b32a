"""The narrow interface the Groth16 prover is written against.

A backend owns compute: Fr polynomial kernels, a/b/c evaluation from the pre-compiled constraint
system and multi-scalar multiplications over point vectors it keeps resident. The prover never
touches a curve library or a device directly, so the CPU and CUDA backends differ only in kernels
(the structure gnark's GPU prover lacked).

MSMs return futures: a backend may run them concurrently with each other and with the caller,
which is how the prover overlaps the H pipeline with the L/A/B multiplications.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from cuzk.field import fr
from cuzk.poly import Domain
from cuzk.r1cs import R1CSShape

Group = Literal["g1", "g2"]


@dataclass(frozen=True)
class PointSet:
    """A vector of zcash-uncompressed points stored contiguously in a file.

    Parameter files are tens of gigabytes, so backends load (and keep) bases from the file
    themselves instead of receiving point objects.
    """

    group: Group  # "g1" (96 bytes per point) or "g2" (192)
    path: str  # file holding the points
    offset: int  # byte offset of the first point
    count: int  # number of points

    @property
    def point_size(self) -> int:
        return 96 if self.group == "g1" else 192

    @property
    def key(self) -> str:
        """Stable identity for residency caches."""
        return f"{self.group}:{self.path}:{self.offset}:{self.count}"


#: Below this share of scalar-one entries a split MSM runs one MSM over the non-zero scalars:
#: batch addition of the ones would save less than its second pass over the points costs.
MIN_ONES_SHARE_FOR_SPLIT = 0.05


@dataclass(frozen=True)
class MsmPlan:
    """How an MSM's scalars split: ones summed by batch addition, the rest by a tail MSM."""

    ones: np.ndarray  # int64 indices whose scalar is 1
    tail: np.ndarray  # int64 indices whose scalar is neither 0 nor 1

    @classmethod
    def of(cls, scalars: fr.FrVec) -> MsmPlan:
        kinds = fr.classify(scalars)
        return cls(np.flatnonzero(kinds == 1), np.flatnonzero(kinds == 2))

    def nonzero(self) -> np.ndarray:
        """Sorted indices of every non-zero scalar (for one MSM when ones are rare): the two
        disjoint sorted sets merged by a stable sort (timsort merges the two runs in O(n);
        np.union1d's unique pass takes ~100× longer at millions of indices)."""
        return np.sort(np.concatenate((self.ones, self.tail)), kind="stable")


@runtime_checkable
class Backend(Protocol):
    """Kernels for one Groth16 proof; see :mod:`cuzk.backend.cpu` for the reference."""

    name: str

    # -- polynomials ---------------------------------------------------------------------------
    def ntt(self, v: fr.FrVec, domain: Domain) -> fr.FrVec: ...
    def intt(self, v: fr.FrVec, domain: Domain) -> fr.FrVec: ...
    def coset_ntt(self, v: fr.FrVec, domain: Domain) -> fr.FrVec: ...
    def coset_intt(self, v: fr.FrVec, domain: Domain) -> fr.FrVec: ...
    def h_quotient(self, a: fr.FrVec, b: fr.FrVec, c: fr.FrVec, domain: Domain) -> fr.FrVec: ...

    # -- constraint system ---------------------------------------------------------------------
    def evaluate_abc(
        self, shape: R1CSShape, z: fr.FrVec
    ) -> tuple[fr.FrVec, fr.FrVec, fr.FrVec]: ...

    # -- multi-scalar multiplication -----------------------------------------------------------
    def preload(self, bases: PointSet) -> None:
        """Make ``bases`` resident so later MSMs over them pay no loading cost."""

    def evict(self, bases: PointSet) -> None: ...

    def msm(self, bases: PointSet, scalars: fr.FrVec) -> Future:
        """Σ scalars[i]·bases[i] (len(scalars) == bases.count); a point of the bases' group."""

    def split_msm(self, bases: PointSet, scalars: fr.FrVec) -> Future:
        """The same sum, computed as batch addition over scalars equal to 1 plus a tail MSM
        over the others (zeros skipped) — far cheaper for bit-heavy witnesses."""

    # -- key generation ------------------------------------------------------------------------
    def fixed_base(self, group: Group, scalars: fr.FrVec) -> np.ndarray:
        """scalars[i]·G for the generator G of ``group``: an (n, 96|192) uint8 array of
        zcash-uncompressed points (what a ``.params`` file holds); scalar 0 gives the point at
        infinity. Setup's bulk work (:func:`cuzk.groth16.setup.generate_parameters`)."""

    def close(self) -> None: ...
