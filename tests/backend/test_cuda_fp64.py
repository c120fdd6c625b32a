"""The FP64-pipe Fp product probes of fp_bench.cu (issue 19's experiment) on the device against
Python integers: chains of Montgomery products made as fp24_t (and, in the mixed probe, beside
the integer product in the same thread) end on the right values, below 2p."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.backend.cuda.device import cuda_available
from cuzk.field.constants import P

_OK, _WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _OK, reason=_WHY)]
R_INV = pow(1 << 384, -1, P)


def _words(x: int) -> list[int]:
    return [(x >> (32 * i)) & 0xFFFFFFFF for i in range(12)]


def _value(row) -> int:
    return sum(int(w) << (32 * i) for i, w in enumerate(row))


@pytest.mark.parametrize("kernel", ["msm_fp64_bench", "msm_fp_mixed_bench"])
def test_fp64_probe_chains(rng, seed, kernel):
    from cuzk.backend.cuda.device import Gpu

    n, iters = 4096, 5
    xs = [int.from_bytes(rng.bytes(48), "little") % P for _ in range(n)]
    ys = [int.from_bytes(rng.bytes(48), "little") % P for _ in range(n)]
    xs[:3], ys[:3] = [0, 1, P - 1], [P - 1, P - 1, P - 1]
    host = np.array([_words(x) + _words(y) for x, y in zip(xs, ys, strict=True)], np.uint32)
    gpu = Gpu(0)
    d = gpu.cp.asarray(host)
    gpu.launch("fp_bench.cu", kernel, -(-n // 128), 128, (d, np.uint32(n), np.uint32(iters)))
    gpu.synchronize()
    out = gpu.cp.asnumpy(d)
    for t in range(n):
        x, y = xs[t], ys[t]
        first = x * pow(y * R_INV, iters, P) % P  # x·y·R⁻¹ … (iters times)
        second = y * pow(x * R_INV, iters, P) % P
        got1, got2 = _value(out[t, :12]), _value(out[t, 12:])
        assert got1 < 2 * P and got1 % P == first, f"{kernel} thread {t} (seed {seed})"
        assert got2 < 2 * P and got2 % P == second, f"{kernel} thread {t} (seed {seed})"
