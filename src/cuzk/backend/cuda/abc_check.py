"""The a·b = c check under a memory cap, settled without a C·z of its own.

Under a cap c is never held whole: it is a :class:`~cuzk.backend.cuda.abc.RowProduct`, made
where it is read. The exact check (``CudaBackend.unsatisfied_rows``) makes it in slices
and the H quotient makes it once more, so C is read twice a partition; when the matrices
stream from host memory (a 32 GiB PoRep at 16 GiB) each read is ≈ 2 GB on the bus and a
host wait stands between a/b/c and the H pipeline. This check reads C only where the H
pipeline does.

It compares two random linear combinations: s = Σ ρ^i·a_i·b_i, queued before the H
pipeline transforms a and b in place, and t = Σ ρ^i·c_i, queued where the pipeline has just
made c. For a secret ρ drawn uniformly from Fr, a·b ≠ c in any row makes s − t a nonzero
polynomial in ρ of degree < n, so s = t then with probability at most n/r < 2^-227 (2^27
rows). The verdict is copied to page-locked memory behind t and read when the witness's
MSMs are done, not before the H pipeline is queued: the host never waits for it on the
way. Only a failed combination costs anything: the caller then runs the exact check again
from z to name the row.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuzk.backend.cuda.fr_vec import GpuFr, PowTable
from cuzk.errors import InternalError

#: Blocks of the combination kernel per SM: each writes one partial sum, and one block adds
#: them up at the end.
BLOCKS_PER_SM = 8


class CombinedCheck:
    """One partition's a·b = c check by random linear combination (see the module)."""

    def __init__(self, fr: GpuFr, powers: PowTable, a: Any, b: Any) -> None:
        """Queue s over a and b (their first n rows: n = the powers' span) on the compute
        stream, before anything later on it changes them."""
        gpu = fr.gpu
        self._fr, self._powers, self._n = fr, powers, int(a.shape[0])
        blocks = gpu.sm_count * BLOCKS_PER_SM
        with gpu.context(), gpu.guard("the a·b = c combination"):
            self._s, self._t = gpu.empty(blocks), gpu.empty(blocks)
            self._equal = gpu.cp.zeros(1, dtype=np.int32)
            fr.combine(a, b, powers, self._s)
        self._verdict = gpu.pinned_empty(1, np.int32)
        self._done: Any = None  # an event after the verdict's copy to the host

    def count_c(self, c: Any) -> None:
        """c's n values are in ``c`` now (the H pipeline's fill, on the compute stream): queue
        t, the comparison and the verdict's copy to the host behind them."""
        if int(c.shape[0]) != self._n:
            raise InternalError(f"c has {c.shape[0]} rows, a and b {self._n}")
        gpu = self._fr.gpu
        with gpu.context(), gpu.guard("the a·b = c combination"):
            self._fr.combine(c, None, self._powers, self._t)
            self._fr.sums_equal(self._equal, self._s, self._t)
            gpu.cp.cuda.runtime.memcpyAsync(
                self._verdict.ctypes.data, self._equal.data.ptr, 4,
                gpu.cp.cuda.runtime.memcpyDeviceToHost, gpu.stream.ptr,
            )  # fmt: skip
        self._done = gpu.record()

    def satisfied(self) -> bool:
        """Whether s = t: a·b = c in every row but with probability < 2^-227. Waits for the
        verdict if the compute stream has not reached it yet."""
        if self._done is None:
            raise InternalError("the a·b = c combination was never given c")
        with self._fr.gpu.guard("the a·b = c combination's verdict"):
            self._done.synchronize()
        return bool(self._verdict[0])
