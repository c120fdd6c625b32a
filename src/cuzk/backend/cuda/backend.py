"""The CUDA backend: Fr polynomial work and a/b/c evaluation on one GPU, MSMs on the GPU when
the MSM module is present (else on the CPU backend's worker pool).

Polynomial methods take and return host FrVecs like every backend (the prover is host-side
today); the ``*_device`` variants take and return CuPy arrays on this backend's device for the
fused path (a, b, c never leave the device between evaluation and the H quotient). Device work
is queued on one stream; host-returning methods wait for their own result only.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future
from typing import Any

import numpy as np

from cuzk.backend.base import Group, PointSet
from cuzk.backend.cuda.abc import GpuAbc
from cuzk.backend.cuda.device import Gpu
from cuzk.backend.cuda.ntt import GpuNtt
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.poly import Domain
from cuzk.r1cs import R1CSShape

log = logging.getLogger(__name__)

_policy_logged = threading.Event()


def _host_vec(v: Any, name: str = "v") -> np.ndarray:
    if not isinstance(v, np.ndarray) or v.dtype != np.uint64 or v.ndim != 2 or v.shape[1] != 4:
        raise BadInput(
            f"{name} must be an (n, 4) uint64 FrVec, got {getattr(v, 'shape', type(v))} "
            f"{getattr(v, 'dtype', '')}"
        )
    return np.ascontiguousarray(v)


class CudaBackend:
    """Backend on CUDA device ``device`` (an explicit index, never CUDA_VISIBLE_DEVICES)."""

    name = "cuda"

    def __init__(self, device: int = 0, *, workers: int | None = None) -> None:
        self.device = int(device)
        self.gpu = Gpu(self.device)
        self.fr = GpuNtt(self.gpu)
        self.abc = GpuAbc(self.gpu)
        self._workers = workers
        self._msm_lock = threading.Lock()
        self._msm: Any = None
        self._fixed: Any = None

    # -- transfers -------------------------------------------------------------------------------
    def upload(self, v: fr.FrVec) -> Any:
        """A host FrVec on this device (queued on the backend's stream)."""
        return self.gpu.upload(_host_vec(v))

    def download(self, d: Any) -> fr.FrVec:
        """A device FrVec back on the host (waits for the stream up to this result)."""
        return self.gpu.download(d)

    def pinned_empty(self, n: int) -> fr.FrVec:
        """An uninitialised host FrVec in page-locked memory: fill it and pass it to any method
        here, and its upload runs at full bus speed without a staging copy."""
        return self.gpu.pinned_empty((n, 4))

    def synchronize(self) -> None:
        self.gpu.synchronize()

    # -- polynomials (device arrays) -------------------------------------------------------------
    def ntt_device(self, v: Any, domain: Domain) -> Any:
        return self.fr.ntt(v, domain)

    def intt_device(self, v: Any, domain: Domain) -> Any:
        return self.fr.intt(v, domain)

    def coset_ntt_device(self, v: Any, domain: Domain) -> Any:
        return self.fr.ntt(v, domain, coset=True)

    def coset_intt_device(self, v: Any, domain: Domain) -> Any:
        return self.fr.intt(v, domain, coset=True)

    def h_quotient_device(self, a: Any, b: Any, c: Any, domain: Domain) -> Any:
        """h on the device (length m − 1); a, b, c are device FrVecs of one length n ≤ m."""
        return self.fr.h_quotient(a, b, c, domain)

    # -- polynomials (host arrays) ---------------------------------------------------------------
    def ntt(self, v: fr.FrVec, domain: Domain) -> fr.FrVec:
        return self.download(self.fr.ntt(self.upload(v), domain))

    def intt(self, v: fr.FrVec, domain: Domain) -> fr.FrVec:
        return self.download(self.fr.intt(self.upload(v), domain))

    def coset_ntt(self, v: fr.FrVec, domain: Domain) -> fr.FrVec:
        return self.download(self.fr.ntt(self.upload(v), domain, coset=True))

    def coset_intt(self, v: fr.FrVec, domain: Domain) -> fr.FrVec:
        return self.download(self.fr.intt(self.upload(v), domain, coset=True))

    def h_quotient(self, a: fr.FrVec, b: fr.FrVec, c: fr.FrVec, domain: Domain) -> fr.FrVec:
        a, b, c = _host_vec(a, "a"), _host_vec(b, "b"), _host_vec(c, "c")
        if not a.shape == b.shape == c.shape:
            raise BadInput("a, b and c must have the same length")
        if a.shape[0] > domain.m:
            raise BadInput(f"{a.shape[0]} values do not fit a domain of {domain.m}")
        da, db, dc = (self.upload(x) for x in (a, b, c))
        return self.download(self.fr.h_quotient(da, db, dc, domain))

    # -- scalar vectors (device arrays) ----------------------------------------------------------
    def classify_device(self, scalars: Any) -> Any:
        """int8 per scalar on the device: 0 zero, 1 one, 2 otherwise."""
        return self.fr.classify(scalars)

    def msm_plan_device(self, scalars: Any) -> tuple[Any, Any]:
        """(indices of ones, indices of the other non-zero scalars), int64 device arrays."""
        return self.fr.split_plan(scalars)

    # -- constraint system -----------------------------------------------------------------------
    def evaluate_abc_device(self, shape: R1CSShape, z: Any) -> tuple[Any, Any, Any]:
        """(A·z, B·z, C·z) on the device; z is a host FrVec or a device array."""
        if isinstance(z, np.ndarray):
            z = _host_vec(z, "z")
            if z.shape != (shape.num_variables, 4):
                raise BadInput(
                    f"assignment has {z.shape[0]} values, circuit {shape.circuit_id!r} "
                    f"has {shape.num_variables} variables"
                )
            z = self.upload(z)
        return self.abc.evaluate(shape, z)

    def unsatisfied_rows_device(self, a: Any, b: Any, c: Any) -> np.ndarray:
        """Rows where a·b ≠ c, as a host array (empty when the witness satisfies every
        constraint): the prover's check without downloading a, b and c."""
        cp = self.gpu.cp
        with self.gpu.context(), self.gpu.guard("a·b = c check"):
            bad = cp.any(self.fr.mul_sub(a, b, c) != 0, axis=1)
            return cp.asnumpy(cp.flatnonzero(bad)[:16], stream=self.gpu.stream)

    def evaluate_abc(self, shape: R1CSShape, z: fr.FrVec) -> tuple[fr.FrVec, fr.FrVec, fr.FrVec]:
        a, b, c = self.evaluate_abc_device(shape, z)
        return self.download(a), self.download(b), self.download(c)

    # -- MSM -------------------------------------------------------------------------------------
    def _engine(self) -> Any:
        """GpuMsm on this device when cuzk.backend.cuda.msm imports, else a CpuBackend."""
        with self._msm_lock:
            if self._msm is None:
                try:
                    from cuzk.backend.cuda.msm import GpuMsm
                except Exception as e:  # noqa: BLE001 - absent or broken: fall back, say so once
                    from cuzk.backend.cpu import CpuBackend

                    if not _policy_logged.is_set():
                        _policy_logged.set()
                        log.warning(
                            "cuda backend: GPU MSM unavailable (%s: %s); MSMs run on the CPU "
                            "backend's worker pool",
                            type(e).__name__,
                            e,
                        )
                    self._msm = CpuBackend(self._workers)
                else:
                    self._msm = GpuMsm(self.device)
                    if not _policy_logged.is_set():
                        _policy_logged.set()
                        log.info(
                            "cuda backend: MSMs on GPU %d (cuzk.backend.cuda.msm)", self.device
                        )
            return self._msm

    def preload(self, bases: PointSet) -> None:
        self._engine().preload(bases)

    def evict(self, bases: PointSet) -> None:
        eng = self._engine()
        if hasattr(eng, "evict"):
            eng.evict(bases)

    def split_msm(self, bases: PointSet, scalars: Any) -> Future:
        """``scalars``: a host FrVec, or a device array of this backend (its queued work
        complete, as for :meth:`msm`), whose ones/tail plan is then made on the device."""
        eng = self._engine()
        if isinstance(scalars, np.ndarray):
            return eng.split_msm(bases, scalars)
        if not hasattr(eng, "enqueue_windows"):
            return eng.split_msm(bases, self.download(scalars))  # CPU fallback: host memory
        return eng.split_msm(bases, scalars, plan=self.msm_plan_device(scalars))

    def msm(self, bases: PointSet, scalars: Any) -> Future:
        """``scalars``: a host FrVec or a device array of this backend (the device's work
        queued before this call must be complete: see :meth:`synchronize`)."""
        eng = self._engine()
        if not isinstance(scalars, np.ndarray) and not hasattr(eng, "enqueue_windows"):
            scalars = self.download(scalars)  # the CPU fallback reads host memory
        return eng.msm(bases, scalars)

    # -- key generation -------------------------------------------------------------------------
    def fixed_base(self, group: Group, scalars: fr.FrVec) -> np.ndarray:
        """k_i·G of the group's generator, (n, 96|192) uint8 zcash-uncompressed rows."""
        from cuzk.backend.cuda.fixed_base import GpuFixedBase

        with self._msm_lock:
            if self._fixed is None:
                self._fixed = GpuFixedBase(self.gpu)
            fixed = self._fixed
        return fixed.multiply(group, _host_vec(scalars, "scalars"))

    def close(self) -> None:
        with self._msm_lock:
            eng, self._msm = self._msm, None
            fixed, self._fixed = self._fixed, None
        if fixed is not None:
            fixed.forget()
        if eng is not None and hasattr(eng, "close"):
            eng.close()
        self.abc.forget()

    def __enter__(self) -> CudaBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
