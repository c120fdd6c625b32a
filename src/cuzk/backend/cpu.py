"""The CPU backend: numba kernels for Fr work, a process pool of arkworks workers for MSMs.

py-arkworks holds the GIL, so MSMs run in worker processes that each keep a contiguous chunk of
every preloaded point vector resident (points cannot be pickled; workers read them from the
parameter file). Fr kernels release the GIL and run on numba threads in this process, so the H
pipeline overlaps with MSMs already submitted to the pool.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future

import numpy as np

from cuzk.backend.base import (
    MIN_ONES_SHARE_FOR_SPLIT,
    Group,
    MemoryInfo,
    MsmPlan,
    PointSet,
    Vec,
    check_fr_vec,
    check_quotient_inputs,
)
from cuzk.curve import g1_generator, g2_generator
from cuzk.curve.pool import MsmPool
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.poly import Domain, coset_intt, coset_ntt, h_quotient, intt, ntt
from cuzk.poly.snarkjs_h import snarkjs_h
from cuzk.r1cs import R1CSShape
from cuzk.r1cs.deferred import DeferredAux

log = logging.getLogger(__name__)


def combine(futures: Sequence[Future], reduce: Callable[[list], object]) -> Future:
    """A future resolved with ``reduce(results)`` once every input future is done.

    The first failure is propagated as is, so a worker's DeviceFault reaches the prover.
    """
    out: Future = Future()
    lock = threading.Lock()
    remaining = [len(futures)]

    def on_done(_: Future) -> None:
        with lock:
            remaining[0] -= 1
            if remaining[0]:
                return
        if out.done():
            return
        try:
            out.set_result(reduce([f.result() for f in futures]))
        except BaseException as e:  # forwarded to whoever waits
            out.set_exception(e)

    if not futures:
        out.set_result(reduce([]))
    for f in futures:
        f.add_done_callback(on_done)
    return out


def _add_all(points: list) -> object:
    total = points[0]
    for p in points[1:]:
        total = total + p
    return total


class CpuBackend:
    """Reference backend; every other backend is tested against it."""

    name = "cpu"

    def __init__(self, workers: int | None = None, memory_total: int | None = None) -> None:
        self._pool = MsmPool(workers)
        #: Report a device of this many bytes (None: none): the engine then gives this
        #: virtual device a key budget and its own keys as on a GPU, for benchmarks and tests
        #: of residency on a machine without one. The points stay in host memory all the same.
        self._memory_total = memory_total

    # -- transfers and memory: host arrays are this backend's handles --------------------------
    def upload(self, v: fr.FrVec) -> Vec:
        check_fr_vec(v)
        return np.ascontiguousarray(v)

    def download(self, v: Vec) -> fr.FrVec:
        return v

    def host_vector(self, n: int) -> fr.FrVec:
        return np.empty((n, 4), dtype=np.uint64)

    def upload_witness(self, inputs: fr.FrVec, aux: DeferredAux) -> Vec:
        check_fr_vec(inputs, "inputs")
        z = np.empty((len(inputs) + len(aux), 4), dtype=np.uint64)
        z[: len(inputs)] = inputs
        aux.expand(out=z[len(inputs) :])
        return z

    def take(self, v: Vec, rows: np.ndarray) -> Vec:
        check_fr_vec(v)
        return fr.take_into(v, rows, np.empty((len(rows), 4), dtype=np.uint64))

    def memory(self) -> MemoryInfo | None:
        total = self._memory_total
        return None if total is None else MemoryInfo(total, total, margin=0)

    def reset_peak(self) -> None:
        pass  # nothing is measured: a virtual device's memory is the engine's accounting

    # -- polynomials ---------------------------------------------------------------------------
    def ntt(self, v: Vec, domain: Domain) -> Vec:
        check_quotient_inputs(domain, v=v)
        return ntt(v, domain)

    def intt(self, v: Vec, domain: Domain) -> Vec:
        check_quotient_inputs(domain, v=v)
        return intt(v, domain)

    def coset_ntt(self, v: Vec, domain: Domain) -> Vec:
        check_quotient_inputs(domain, v=v)
        return coset_ntt(v, domain)

    def coset_intt(self, v: Vec, domain: Domain) -> Vec:
        check_quotient_inputs(domain, v=v)
        return coset_intt(v, domain)

    def h_quotient(self, a: Vec, b: Vec, c: Vec, domain: Domain) -> Vec:
        check_quotient_inputs(domain, a=a, b=b, c=c)
        return h_quotient(a, b, c, domain)

    def odd_coset_h(self, a: Vec, b: Vec, domain: Domain) -> Vec:
        check_quotient_inputs(domain, a=a, b=b)
        return snarkjs_h(a, b, domain)

    # -- constraint system ---------------------------------------------------------------------
    def evaluate_abc(self, shape: R1CSShape, z: Vec) -> tuple[Vec, Vec, Vec]:
        check_fr_vec(z, "the assignment z")
        return shape.evaluate(z)

    def unsatisfied_rows(self, a: Vec, b: Vec, c: Vec, limit: int = 16) -> np.ndarray:
        return np.flatnonzero(np.any(fr.mul(a, b) != c, axis=1))[:limit]

    def defer_abc_check(self, a: Vec, b: Vec, c: Vec) -> None:
        return None  # c is held whole here: the exact check costs no second C·z

    # -- MSM -----------------------------------------------------------------------------------
    def preload(self, bases: PointSet, stream_bytes: int = 0) -> None:
        # The points are host memory here whether they "stream" or not: the MSM workers hold
        # them, and ``stream_bytes`` changes only the engine's accounting of a virtual device.
        # Wait for the workers to hold the points, so "resident" means loaded (and a bad file
        # is reported here, not when a proof is assembled); later calls return at once.
        self._pool.register(bases.key, bases.group, bases.path, bases.offset, bases.count).result()

    def evict(self, bases: PointSet) -> None:
        self._pool.unregister(bases.key)

    def stream_shape(self, shape: R1CSShape, block_bytes: int) -> None:
        pass  # the matrices are host memory here already

    def forget_shape(self, shape: R1CSShape) -> None:
        pass  # the CPU keeps nothing per shape beyond the shape itself

    def precompute(self, bases: PointSet, copies: int) -> int:
        return 1  # the CPU's Pippenger workers gain nothing worth a copy of the points

    def msm(self, bases: PointSet, scalars: fr.FrVec) -> Future:
        self._check_length(bases, scalars)
        self.preload(bases)
        return self._pool.msm(bases.key, fr.to_bytes_le(scalars))

    def split_msm(
        self, bases: PointSet, scalars: fr.FrVec, rows: np.ndarray | None = None
    ) -> Future:
        if rows is not None:
            scalars = self.take(scalars, rows)
        self._check_length(bases, scalars)
        self.preload(bases)
        plan = MsmPlan.of(scalars)
        if len(plan.ones) < MIN_ONES_SHARE_FOR_SPLIT * max(1, len(scalars)):
            nonzero = plan.nonzero()
            return self._pool.msm(bases.key, fr.to_bytes_le(scalars[nonzero]), nonzero)
        parts = [self._pool.sum(bases.key, plan.ones)]
        if len(plan.tail):
            parts.append(self._pool.msm(bases.key, fr.to_bytes_le(scalars[plan.tail]), plan.tail))
        return combine(parts, _add_all)

    # -- key generation ------------------------------------------------------------------------
    def fixed_base(self, group: Group, scalars: fr.FrVec) -> np.ndarray:
        size = 96 if group == "g1" else 192
        n = len(scalars)
        if n == 0:
            return np.empty((0, size), dtype=np.uint8)
        base = g1_generator() if group == "g1" else g2_generator()
        # One request: the pool splits it evenly over its workers, each with its own table.
        data = self._pool.fixed_base(group, base, fr.to_bytes_le(scalars)).result()
        return np.frombuffer(data, dtype=np.uint8).reshape(n, size)

    @staticmethod
    def _check_length(bases: PointSet, scalars: fr.FrVec) -> None:
        check_fr_vec(scalars, "scalars")
        if len(scalars) != bases.count:
            raise BadInput(f"{len(scalars)} scalars for {bases.count} bases")

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> CpuBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
