"""The narrow interface the Groth16 prover is written against.

A backend owns compute: Fr polynomial kernels, a/b/c evaluation from the pre-compiled constraint
system and multi-scalar multiplications over point vectors it keeps resident. The prover never
touches a curve library or a device directly, so the CPU and CUDA backends differ only in kernels
(the structure gnark's GPU prover lacked).

MSMs return futures: a backend may run them concurrently with each other and with the caller,
which is how the prover overlaps the H pipeline with the L/A/B multiplications.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

import numpy as np

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.poly import Domain
from cuzk.r1cs import R1CSShape
from cuzk.r1cs.deferred import DeferredAux

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


#: A backend's handle to an (n, 4) uint64 Fr vector in Montgomery form: a host NumPy array on
#: the CPU backend; on CUDA a CuPy array on the backend's device (and, for the c that
#: :meth:`Backend.evaluate_abc` returns under a memory cap, a product not made yet, which only
#: that backend's H quotient and a·b = c check read). Only the backend that made a handle reads
#: it; the caller moves data across with :meth:`Backend.upload` and :meth:`Backend.download`,
#: and otherwise only slices rows off one (z's aux tail).
#:
#: For mypy the ndarray stands for host handles and ``Any`` for device ones: CuPy has no type
#: information (and type-checking must not need it installed). So every *use* of a handle is
#: checked as a host array's (an attribute it lacks, or a handle passed where an int or a
#: PointSet belongs, is an error), while what a backend returns as one is not. A Protocol of the
#: members the prover uses (shape, slicing) would check that too, but the CPU backend hands its
#: handles to the NumPy kernels (a cast at each of them) and the capped c cannot be sliced.
Vec: TypeAlias = np.ndarray | Any


@dataclass(frozen=True)
class MemoryInfo:
    """A device's memory at the moment it was asked (bytes). ``limit``: the cap the backend
    keeps its own use under (None: the whole device); ``peak``: the most in use on the device
    since the backend started (or since :meth:`Backend.reset_peak`), measured; None where the
    backend cannot measure it. ``give_backs``: how often, since the process started, cached
    blocks went back to the device to keep a request under the cap (each a device-wide wait:
    many a partition is a sign the cap is tight for the work); ``uploaded``: bytes copied from
    the host to the device since the backend started (None: not counted)."""

    free: int
    total: int
    limit: int | None = None
    peak: int | None = None
    #: What the device needs outside anything the engine plans (a CUDA context, its modules
    #: and pool rounding, with room to spare); 0 for a virtual device made of accounting.
    margin: int = 2 << 30
    give_backs: int | None = None
    uploaded: int | None = None

    @property
    def usable(self) -> int:
        """What the engine may plan with: the device, or its cap when lower."""
        return self.total if self.limit is None else min(self.total, self.limit)


@runtime_checkable
class Backend(Protocol):
    """Kernels for Groth16 proofs; see :mod:`cuzk.backend.cpu` for the reference.

    Every vector crosses the seam as a :data:`Vec` handle: the prover uploads the assignment
    once and a/b/c, h and the MSM scalars stay wherever the backend keeps them. A backend
    orders its own work (streams, events, processes): a handle returned by one method may be
    passed to the next at once. Errors: BadInput for a wrong length or shape, ResourceExhausted
    when memory runs out, DeviceFault when the device fails — the same on every backend.
    """

    name: str

    # -- transfers and memory ----------------------------------------------------------------
    def upload(self, v: fr.FrVec) -> Vec:
        """A host FrVec as a handle of this backend (it may keep a reference to ``v`` until
        the work that reads it is done: do not reuse ``v`` before then)."""

    def download(self, v: Vec) -> fr.FrVec:
        """A handle's values on the host (waits for the work that makes them)."""

    def host_vector(self, n: int) -> fr.FrVec:
        """An uninitialised host FrVec that uploads fastest (page-locked on CUDA)."""

    def memory(self) -> MemoryInfo | None:
        """Device memory, its cap and its measured peak (None for host-only backends); cheap,
        no synchronisation."""

    def reset_peak(self) -> None:
        """Start the measured peak of :meth:`memory` again from the use now."""

    def upload_witness(self, inputs: fr.FrVec, aux: DeferredAux) -> Vec:
        """z = inputs ‖ aux as a handle, the deferred runs made where the kernels read z (on a
        GPU their values never exist on the host)."""

    def take(self, v: Vec, rows: np.ndarray) -> Vec:
        """``v[rows]`` as a new handle; ``rows`` sorted unsigned indices (a shape's, made once,
        so a backend may keep its copy of them)."""

    # -- polynomials -------------------------------------------------------------------------
    def ntt(self, v: Vec, domain: Domain) -> Vec: ...
    def intt(self, v: Vec, domain: Domain) -> Vec: ...
    def coset_ntt(self, v: Vec, domain: Domain) -> Vec: ...
    def coset_intt(self, v: Vec, domain: Domain) -> Vec: ...

    def h_quotient(self, a: Vec, b: Vec, c: Vec, domain: Domain) -> Vec:
        """bellperson's H: coefficients of (a·b − c)/Z over the coset g·⟨ω⟩ (m − 1 of them).
        a, b and c are consumed: a backend may make h in their memory (the CUDA backend does,
        when they came from its :meth:`evaluate_abc`)."""

    def odd_coset_h(self, a: Vec, b: Vec, domain: Domain) -> Vec:
        """snarkjs's H: a·b − a∘b evaluated on the odd points of the 2m-domain (m values)."""

    # -- constraint system -------------------------------------------------------------------
    def evaluate_abc(self, shape: R1CSShape, z: Vec) -> tuple[Vec, Vec, Vec]:
        """(A·z, B·z, C·z); BadInput when z does not have one value per variable."""

    def unsatisfied_rows(self, a: Vec, b: Vec, c: Vec, limit: int = 16) -> np.ndarray:
        """The first ``limit`` rows where a·b ≠ c, as host int64 indices (empty: satisfied)."""

    def defer_abc_check(self, a: Vec, b: Vec, c: Vec) -> Callable[[], bool] | None:
        """A check of a·b = c that the H quotient of these a, b, c finishes, as a function
        that says (waiting if need be) whether every row holds; None where the backend has
        none, and the caller checks now with :meth:`unsatisfied_rows`. For a backend whose c
        costs a pass over C each time it is made (the CUDA backend under a cap), so the
        check need not make it once more. A False verdict names no row: the caller evaluates
        a, b, c again for :meth:`unsatisfied_rows`."""

    # -- multi-scalar multiplication ---------------------------------------------------------
    def preload(self, bases: PointSet, stream_bytes: int = 0) -> None:
        """Make ``bases`` resident so later MSMs over them pay no loading cost. With
        ``stream_bytes`` > 0 they stay in (page-locked) host memory instead and each MSM
        streams them to the device through two buffers of that many bytes: for keys larger
        than the device. A vector already loaded keeps how it was loaded."""

    def evict(self, bases: PointSet) -> None: ...

    def stream_shape(self, shape: R1CSShape, block_bytes: int) -> None:
        """Keep ``shape``'s a/b/c matrices in host memory and stream them to the device in
        row blocks of about ``block_bytes`` on every evaluation, instead of holding them on
        the device: for a key whose device plan has no room for them. A no-op where the
        matrices are in host memory anyway."""

    def forget_shape(self, shape: R1CSShape) -> None:
        """Drop what the backend keeps on its device for ``shape`` (the a/b/c matrices): its
        key left this device while the shape lives on for other devices."""

    def precompute(self, bases: PointSet, copies: int) -> int:
        """Keep up to ``copies`` shifted copies of resident ``bases`` for faster MSMs over
        them (``copies`` ≤ 1 drops them); returns the copies held, 1 where the backend makes
        none. Costs ``copies`` times the bases' memory on the device."""

    def msm(self, bases: PointSet, scalars: Vec) -> Future:
        """Σ scalars[i]·bases[i] (len(scalars) == bases.count); a point of the bases' group."""

    def split_msm(self, bases: PointSet, scalars: Vec, rows: np.ndarray | None = None) -> Future:
        """The same sum, computed as batch addition over scalars equal to 1 plus a tail MSM
        over the others (zeros skipped) — far cheaper for bit-heavy witnesses. With ``rows``
        (a shape's sorted indices, one per point) the scalars are scalars[rows]: the backend
        may gather them as it goes instead of as a whole vector (:meth:`take`)."""

    # -- key generation ----------------------------------------------------------------------
    def fixed_base(self, group: Group, scalars: fr.FrVec) -> np.ndarray:
        """scalars[i]·G for the generator G of ``group``: an (n, 96|192) uint8 array of
        zcash-uncompressed points (what a ``.params`` file holds); scalar 0 gives the point at
        infinity. Setup's bulk work (:func:`cuzk.groth16.setup.generate_parameters`)."""

    def close(self) -> None: ...


def check_fr_vec(v: Any, name: str = "vector", n: int | None = None) -> None:
    """BadInput unless ``v`` is an (n, 4) uint64 array (of ``n`` rows when given): the one
    shape check every backend applies at its edge, so all raise the same error."""
    shape = getattr(v, "shape", None)
    if shape is None or len(shape) != 2 or shape[1] != 4 or getattr(v, "dtype", None) != np.uint64:
        raise BadInput(
            f"{name} must be an (n, 4) uint64 Fr vector, got {shape} {getattr(v, 'dtype', type(v))}"
        )
    if n is not None and shape[0] != n:
        raise BadInput(f"{name} has {shape[0]} values, expected {n}")


def check_quotient_inputs(domain: Domain, **vectors: Any) -> None:
    """BadInput unless the named vectors are Fr vectors of one length that fits ``domain``."""
    lengths = set()
    for name, v in vectors.items():
        check_fr_vec(v, name)
        lengths.add(int(v.shape[0]))
    if len(lengths) > 1:
        raise BadInput(f"{', '.join(vectors)} must have the same length")
    n = lengths.pop() if lengths else 0
    if n > domain.m:
        raise BadInput(f"{n} values do not fit a domain of {domain.m}")
