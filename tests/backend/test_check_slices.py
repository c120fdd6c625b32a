"""The CUDA backend's a·b = c check in slices (CPU): its control flow run over host arrays (a
stand-in for CuPy that is NumPy), against the rows found directly. The host waits once for
every slice's count, then only for the slices that have bad rows, not once a slice. The
kernels themselves are tested on a GPU (tests/backend/test_cuda_prove.py, test_cuda_abc.py)."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import numpy as np
import pytest

from cuzk.backend.cuda import backend as cuda_backend
from cuzk.backend.cuda.backend import CudaBackend
from cuzk.field import fr


class HostGpu:
    """What ``unsatisfied_rows`` asks of its device, on the host; counts the host waits."""

    def __init__(self) -> None:
        self.waits = 0
        self.stream = None
        self.cp = SimpleNamespace(
            zeros=np.zeros,
            count_nonzero=np.count_nonzero,
            flatnonzero=self._flatnonzero,
            concatenate=np.concatenate,
            any=np.any,
            int64=np.int64,
            asnumpy=self._asnumpy,
        )

    def _asnumpy(self, a, stream=None):
        self.waits += 1
        return np.asarray(a)

    def _flatnonzero(self, a):
        self.waits += 1  # CuPy waits to learn the result's size
        return np.flatnonzero(a)

    def context(self):
        return contextlib.nullcontext()

    def guard(self, what):
        return contextlib.nullcontext()


def host_backend() -> CudaBackend:
    backend = CudaBackend.__new__(CudaBackend)  # no device: only the check's logic runs
    backend.gpu = HostGpu()
    backend.fr = SimpleNamespace(mul_sub=lambda a, b, c: fr.sub(fr.mul(a, b), c))
    return backend


@pytest.mark.parametrize("bad_count", [0, 1, 5, 40])
def test_the_check_finds_the_first_bad_rows_in_order(rng, seed, monkeypatch, bad_count):
    monkeypatch.setattr(cuda_backend, "CHECK_ROWS", 97)  # many slices, the last one short
    n = 1000
    a, b = fr.random(n, rng), fr.random(n, rng)
    c = fr.mul(a, b)
    bad = np.sort(rng.choice(n, size=bad_count, replace=False))
    for row in bad:
        c[row, 0] ^= np.uint64(1)
    backend = host_backend()
    got = backend.unsatisfied_rows(a, b, c, limit=16)
    assert list(got) == list(bad[:16]), f"seed {seed}"
    slices_with_bad = len(set((bad[:16] // 97).tolist()))
    assert backend.gpu.waits == 1 + slices_with_bad + (1 if bad_count else 0)  # not one a slice
