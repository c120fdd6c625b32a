"""The CUDA backend: every kernel of a Groth16 proof on one GPU, over device-array handles.

Handles (:data:`~cuzk.backend.base.Vec`) are CuPy (n, 4) uint64 arrays on this backend's device.
Everything runs on the device's one runtime (:class:`~cuzk.backend.cuda.device.Gpu`): the
polynomial, a/b/c and fixed-base kernels on its compute stream, the MSMs on a side stream that
waits for an event recorded on the compute stream when they are submitted — so a handle one
method returns can be passed to the next at once, and the host waits only in
:meth:`CudaBackend.download`, for an MSM's result, in :meth:`unsatisfied_rows`, or for a
deferred a·b = c check's verdict (:meth:`CudaBackend.defer_abc_check`).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from typing import Any

import numpy as np

from cuzk.backend.base import (
    Group,
    MemoryInfo,
    PointSet,
    Vec,
    check_fr_vec,
    check_quotient_inputs,
)
from cuzk.backend.cuda.abc import GpuAbc, RowProduct
from cuzk.backend.cuda.abc_check import CombinedCheck
from cuzk.backend.cuda.device import Gpu, MemoryWatch, below_highest
from cuzk.backend.cuda.msm import GpuMsm
from cuzk.backend.cuda.ntt import GpuNtt
from cuzk.backend.cuda.witness import GpuWitness
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.poly import Domain
from cuzk.poly.snarkjs_h import snarkjs_odd_shift, snarkjs_order
from cuzk.r1cs import R1CSShape
from cuzk.r1cs.deferred import DeferredAux

#: Under a memory cap, a resident MSM runs in passes of at most this many points: the scratch of
#: a 2^27-point MSM's one pass (≈ 52 B per point and window) would be 7 GB; each pass also gathers
#: and plans its own scalars (≈ 75 B a point), so 2^23 keeps a pass near 1 GB, for a few percent
#: of time (one more bucket reduction per pass).
MAX_PASS_POINTS_CAPPED = 1 << 23
#: Rows of the a·b = c check at a time (its temporaries: 0.25 GiB, not a fourth vector of n).
CHECK_ROWS = 1 << 23


#: Pool memory under a cap that no plan counts: split blocks of the pool for small requests and
#: the rounding of large ones to their size class (cuzk.backend.cuda.memory). Not measured yet.
CAPPED_POOL_SLACK = 512 << 20


class CudaBackend:
    """Backend on CUDA device ``device`` (an explicit index, never CUDA_VISIBLE_DEVICES)."""

    name = "cuda"

    def __init__(self, device: int = 0, memory_limit: int | None = None) -> None:
        """``memory_limit``: keep this backend's use of the device under that many bytes
        (:meth:`Gpu.cap_memory`), so one large GPU can stand in for a smaller card."""
        self.device = int(device)
        # Under a cap the split MSMs' lane goes first, then the compute stream (witness, a/b/c,
        # the H quotient: what H's MSM waits for), then the dense H MSM's lane
        # (cuzk.backend.cuda.msm_bases). At the lane's priority, B₁'s passes that met the H
        # quotient's NTTs took 100–120 ms against 30–50 (16 GiB, session 33), and the lane,
        # not H, ends a partition there.
        compute = None if memory_limit is None else below_highest(self.device)
        self.gpu = Gpu(self.device, priority=compute)
        self.memory_limit = memory_limit
        self._pool_limit: int | None = None
        if memory_limit is not None:
            self._pool_limit = self.gpu.cap_memory(memory_limit)
        self.watch = MemoryWatch(self.gpu)
        # Under a cap the NTT's twiddles are two tables (32 MiB), not one of half the domain.
        self.fr = GpuNtt(self.gpu, compact_twiddles=memory_limit is not None)
        self.abc = GpuAbc(self.gpu)
        # Under a cap the MSMs stream their bases: the dense H MSM runs in a second lane,
        # beside the split MSMs whose passes wait on the bus (cuzk.backend.cuda.msm).
        self.msms = GpuMsm(self.gpu, lanes=1 if memory_limit is None else 2)
        if memory_limit is not None:  # resident MSMs in passes: bounded scratch
            self.msms.max_pass_points = MAX_PASS_POINTS_CAPPED
        self.witness = GpuWitness(self.gpu)
        self._fixed_lock = threading.Lock()
        self._fixed: Any = None
        self._perms: dict[int, Any] = {}
        # The a·b = c combination's ρ: secret, drawn once (its powers' table is kept per n).
        self._rho = secrets.randbelow(R - 2) + 2

    # -- transfers and memory --------------------------------------------------------------------
    def upload(self, v: fr.FrVec) -> Vec:
        """A host FrVec on this device (queued on the compute stream; page-locked sources,
        e.g. from :meth:`host_vector`, go straight to the DMA engine)."""
        check_fr_vec(v)
        return self.gpu.upload(np.ascontiguousarray(v))

    def download(self, v: Vec) -> fr.FrVec:
        """A device FrVec on the host (waits for the compute stream up to this result)."""
        return self.gpu.download(self._handle(v))

    def host_vector(self, n: int) -> fr.FrVec:
        return self.gpu.pinned_empty((n, 4))

    def memory(self) -> MemoryInfo | None:
        """Under a cap the margin is what the cap set aside beside CuPy's pools (the context
        and every process's use when it was set, the kernel modules' headroom) and
        :data:`CAPPED_POOL_SLACK`: the pools' limit is then exactly what the engine plans."""
        free, total = self.gpu.memory()
        if self.memory_limit is None or self._pool_limit is None:
            return MemoryInfo(free, total, None, self.watch.peak, uploaded=self.gpu.uploaded)
        margin = self.memory_limit - self._pool_limit + CAPPED_POOL_SLACK
        return MemoryInfo(
            free,
            total,
            self.memory_limit,
            self.watch.peak,
            margin,
            self.gpu.give_backs(),
            self.gpu.uploaded,
        )

    def reset_peak(self) -> None:
        self.watch.reset()

    def upload_witness(self, inputs: fr.FrVec, aux: DeferredAux) -> Vec:
        """z on this device: the host's values placed, every bit-program run made here."""
        check_fr_vec(inputs, "inputs")
        return self.witness.assemble(inputs, aux)

    def take(self, v: Vec, rows: np.ndarray) -> Vec:
        return self.witness.take(self._handle(v), rows)

    def _handle(self, v: Any, name: str = "vector") -> Any:
        """``v`` if it is a device Fr vector (BadInput naming it otherwise)."""
        if isinstance(v, np.ndarray):
            raise BadInput(f"{name} is a host array: upload it to the cuda backend first")
        check_fr_vec(v, name)
        return v

    # -- polynomials -----------------------------------------------------------------------------
    def ntt(self, v: Vec, domain: Domain) -> Vec:
        check_quotient_inputs(domain, v=self._handle(v))
        return self.fr.ntt(v, domain)

    def intt(self, v: Vec, domain: Domain) -> Vec:
        check_quotient_inputs(domain, v=self._handle(v))
        return self.fr.intt(v, domain)

    def coset_ntt(self, v: Vec, domain: Domain) -> Vec:
        check_quotient_inputs(domain, v=self._handle(v))
        return self.fr.ntt(v, domain, coset=True)

    def coset_intt(self, v: Vec, domain: Domain) -> Vec:
        check_quotient_inputs(domain, v=self._handle(v))
        return self.fr.intt(v, domain, coset=True)

    def h_quotient(self, a: Vec, b: Vec, c: Vec, domain: Domain) -> Vec:
        """h (length m − 1); a, b, c device FrVecs of one length n ≤ m (c may be the
        :class:`RowProduct` evaluate_abc returns under a cap)."""
        a, b = self._handle(a, "a"), self._handle(b, "b")
        if isinstance(c, RowProduct):
            check_quotient_inputs(domain, a=a, b=b)
            if c.shape[0] != a.shape[0]:
                raise BadInput(f"c has {c.shape[0]} rows, a {a.shape[0]}")
            fill = partial(self._fill_c, c)
            with self.gpu.guard("H quotient"):
                return self.fr.h_quotient_two(a, b, fill, domain)
        c = self._handle(c, "c")
        check_quotient_inputs(domain, a=a, b=b, c=c)
        return self.fr.h_quotient(a, b, c, domain)

    def _fill_c(self, c: RowProduct, out: Any) -> None:
        self.abc.spmv(c.matrix, c.z, out=out)
        if c.check is not None:
            c.check.count_c(out)

    def odd_coset_h(self, a: Vec, b: Vec, domain: Domain) -> Vec:
        """snarkjs's H from device a, b (see :mod:`cuzk.poly.snarkjs_h`): per input an iNTT in
        snarkjs's index order, a shift to the odd coset and an NTT, all on the device."""
        a, b = self._handle(a, "a"), self._handle(b, "b")
        check_quotient_inputs(domain, a=a, b=b)
        shift = snarkjs_odd_shift(domain.log_m)
        with self.gpu.context(), self.gpu.guard("snarkjs H"):
            cp = self.gpu.cp
            perm = self._perms.get(domain.m)
            if perm is None:
                perm = cp.asarray(snarkjs_order(domain.m).astype(np.int64))
                self._perms = {domain.m: perm}  # one domain at a time: bounded memory
            values = []
            for v in (a, b, self.fr.mul(a, b)):
                buf = cp.zeros((domain.m, 4), dtype=cp.uint64)
                buf[perm[: v.shape[0]]] = v
                coeffs = self.fr.intt(buf, domain)
                values.append(self.fr.ntt(self.fr.scale_by_powers(coeffs, shift), domain))
            out = self.fr.sub(self.fr.mul(values[0], values[1]), values[2])
            return out[perm]

    # -- constraint system -----------------------------------------------------------------------
    def evaluate_abc(self, shape: R1CSShape, z: Vec) -> tuple[Vec, Vec, Vec]:
        """(A·z, B·z, C·z) on the device."""
        z = self._handle(z, "the assignment z")
        if z.shape[0] != shape.num_variables:
            raise BadInput(
                f"assignment has {z.shape[0]} values, circuit {shape.circuit_id!r} "
                f"has {shape.num_variables} variables"
            )
        # Each result heads a buffer of the whole domain, zero-padded: h is then made in place
        # in those buffers (GpuNtt.h_quotient), not in three more of the domain's size. Under a
        # cap c is made only where it is read: two such buffers, not three.
        m = Domain.for_size(shape.num_constraints).m
        if self.memory_limit is None and not self.abc.streams(shape):
            return self.abc.evaluate(shape, z, m)
        ma, mb, mc = self.abc.matrices(shape)
        return self.abc.padded(ma, z, m), self.abc.padded(mb, z, m), RowProduct(mc, z)

    def unsatisfied_rows(self, a: Vec, b: Vec, c: Vec, limit: int = 16) -> np.ndarray:
        """Rows where a·b ≠ c without downloading a, b and c. In slices: a whole a·b − c would
        be one more vector of n rows (4 GiB at PoRep 32 GiB) beside a, b and c, at the
        kernels' peak. Each slice's count of bad rows stays on the device; the host waits
        once, for all the counts, and looks at the rows of a slice only when it has some
        (so the slices of a streamed C upload back to back, not one per host round trip)."""
        cp = self.gpu.cp
        n = int(a.shape[0])
        slices = [(lo, min(n, lo + CHECK_ROWS)) for lo in range(0, n, CHECK_ROWS)]
        with self.gpu.context(), self.gpu.guard("a·b = c check"):
            counts = cp.zeros(len(slices), dtype=cp.int64)
            for k, (lo, hi) in enumerate(slices):
                counts[k] = cp.count_nonzero(self._bad_rows(a, b, c, lo, hi))
            found: list[Any] = []
            for k in np.flatnonzero(cp.asnumpy(counts, stream=self.gpu.stream)).tolist():
                lo, hi = slices[k]
                found.append(cp.flatnonzero(self._bad_rows(a, b, c, lo, hi))[:limit] + lo)
                if sum(len(f) for f in found) >= limit:
                    break
            if not found:
                return np.zeros(0, dtype=np.int64)
            return cp.asnumpy(cp.concatenate(found)[:limit], stream=self.gpu.stream)

    def defer_abc_check(self, a: Vec, b: Vec, c: Vec) -> Callable[[], bool] | None:
        """Under a cap (c a :class:`RowProduct`), the check by random linear combination of
        :mod:`~cuzk.backend.cuda.abc_check`: it reads C only where the H quotient makes c.
        Held whole, c costs nothing more to check, so the exact check stays (None)."""
        if not isinstance(c, RowProduct) or c.check is not None:
            return None
        a, b = self._handle(a, "a"), self._handle(b, "b")
        n = int(a.shape[0])
        if n < 2 or tuple(b.shape) != (n, 4) or c.shape[0] != n:
            return None  # (no H pipeline to finish it: a one-point domain, or a bad input)
        check = CombinedCheck(self.fr, self.fr.pow_table(self._rho, 1, n), a, b)
        c.check = check
        return check.satisfied

    def _bad_rows(self, a: Any, b: Any, c: Any, lo: int, hi: int) -> Any:
        """Rows lo…hi−1: whether a·b ≠ c (c evaluated there when it is a RowProduct)."""
        cp = self.gpu.cp
        cs = self.abc.spmv(c.matrix, c.z, (lo, hi)) if isinstance(c, RowProduct) else c[lo:hi]
        return cp.any(self.fr.mul_sub(a[lo:hi], b[lo:hi], cs) != 0, axis=1)

    # -- MSM -------------------------------------------------------------------------------------
    def preload(self, bases: PointSet, stream_bytes: int = 0) -> None:
        self.msms.preload(bases, stream_bytes)

    def precompute(self, bases: PointSet, copies: int) -> int:
        return self.msms.precompute(bases, copies)

    def evict(self, bases: PointSet) -> None:
        self.msms.evict(bases)

    def stream_shape(self, shape: R1CSShape, block_bytes: int) -> None:
        with self.gpu.guard("page-locking a shape's matrices"):
            self.abc.stream(shape, block_bytes)

    def forget_shape(self, shape: R1CSShape) -> None:
        self.abc.forget(shape)

    def msm(self, bases: PointSet, scalars: Vec) -> Future:
        """Σ scalars[i]·bases[i]; runs once the compute stream's work queued so far is done."""
        scalars = self._handle(scalars, "scalars")
        return self.msms.msm(bases, scalars, after=self.gpu.record())

    def split_msm(self, bases: PointSet, scalars: Vec, rows: np.ndarray | None = None) -> Future:
        """Uncapped, the scalars are gathered and planned whole on the compute stream and the
        MSM waits for them there. Under a cap each pass gathers and plans its own scalars on
        the MSM stream (:meth:`GpuMsm.split_msm_planned`), through the rows of a page-locked
        copy a pass at a time: no vector, plan or row index of the whole MSM is held beside
        the H quotient's buffers (bases with precomputed copies run whole)."""
        scalars = self._handle(scalars, "scalars")
        self.msms.preload(bases)  # (as the MSM would: a key's bases are loaded already)
        if self.memory_limit is not None and self.msms.precomputed(bases)[0] == 1:
            pinned = None if rows is None else self.witness.pinned_rows(rows, scalars.shape[0])
            return self.msms.split_msm_planned(bases, scalars, pinned, after=self.gpu.record())
        if rows is not None:
            scalars = self.take(scalars, rows)
        check_fr_vec(scalars, "scalars", bases.count)
        plan = self.fr.split_plan(scalars)
        return self.msms.split_msm(bases, scalars, plan=plan, after=self.gpu.record())

    # -- key generation -------------------------------------------------------------------------
    def fixed_base(self, group: Group, scalars: fr.FrVec) -> np.ndarray:
        """k_i·G of the group's generator, (n, 96|192) uint8 zcash-uncompressed rows."""
        from cuzk.backend.cuda.fixed_base import GpuFixedBase

        check_fr_vec(scalars, "scalars")
        with self._fixed_lock:
            if self._fixed is None:
                self._fixed = GpuFixedBase(self.gpu)
            fixed = self._fixed
        return fixed.multiply(group, np.ascontiguousarray(scalars))

    def close(self) -> None:
        with self._fixed_lock:
            fixed, self._fixed = self._fixed, None
        if fixed is not None:
            fixed.forget()
        self.msms.close()
        self.abc.forget()
        self.watch.close()
        if self.memory_limit is not None:
            self.gpu.uncap_memory()

    def __enter__(self) -> CudaBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
