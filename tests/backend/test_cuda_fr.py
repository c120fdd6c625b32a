"""CUDA Fr kernels (elementwise, classification, spmv, transfers, faults) against the CPU.

Skipped without CuPy or a CUDA device. Inputs are fresh random vectors (the seed is printed
and in every assertion message) plus the edge values 0, 1 and r − 1.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cuzk.backend.base import MsmPlan
from cuzk.backend.cuda.device import cuda_available
from cuzk.errors import BadInput, DeviceFault
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.r1cs.shape import CsrMatrix, R1CSShape
from tests.backend.hostcall import on_host

_OK, _WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _OK, reason=_WHY)]

SIZES = [1, 2, 4, 7, 1000, 4097]
EDGE = [0, 1, R - 1]
#: bench/gpu.py's Fr product-rate kernels, outside the package (the loader takes their path).
FR_BENCH = str(Path(__file__).resolve().parents[2] / "bench" / "kernels" / "fr_bench.cu")


@pytest.fixture(scope="module")
def backend():
    from cuzk.backend.cuda.backend import CudaBackend

    with CudaBackend(0) as b:
        yield b


def _vec(n: int, rng: np.random.Generator, edges: bool = True) -> fr.FrVec:
    v = fr.random(n, rng)
    if edges:
        k = min(n, len(EDGE))
        v[:k] = fr.from_ints(EDGE[:k])
    return v


def _host(backend, d) -> np.ndarray:
    """Any device array back on the host (the backend's download takes Fr vectors only)."""
    return backend.gpu.download(d)


@pytest.mark.parametrize("n", SIZES)
def test_elementwise_matches_cpu(backend, rng, seed, n):
    a = _vec(n, rng)
    b = _vec(n, rng)[::-1].copy()  # edges meet each other and random values
    c = _vec(n, rng, edges=False)
    F, up = backend.fr, backend.upload
    da, db, dc = up(a), up(b), up(c)
    cases = {
        "add": (F.add(da, db), fr.add(a, b)),
        "sub": (F.sub(da, db), fr.sub(a, b)),
        "mul": (F.mul(da, db), fr.mul(a, b)),
        "mul_sub": (F.mul_sub(da, db, dc), fr.sub(fr.mul(a, b), c)),
        "scale": (F.scale(da, R - 5), fr.scale(a, R - 5)),
        "scale_by_powers": (F.scale_by_powers(da, 7, 3), fr.scale_by_powers(a, 7, 3)),
        "powers": (F.powers(5, n, 2), fr.powers(5, n, 2)),
    }
    for name, (got, want) in cases.items():
        assert np.array_equal(_host(backend, got), want), f"{name} n={n} seed={seed}"


def test_edge_products(backend, seed):
    vals = fr.from_ints([x for x in EDGE for _ in EDGE])
    other = fr.from_ints([y for _ in EDGE for y in EDGE])
    got = _host(backend, backend.fr.mul(backend.upload(vals), backend.upload(other)))
    assert fr.to_ints(got) == [x * y % R for x in EDGE for y in EDGE]
    got = _host(backend, backend.fr.add(backend.upload(vals), backend.upload(other)))
    assert fr.to_ints(got) == [(x + y) % R for x in EDGE for y in EDGE]
    got = _host(backend, backend.fr.sub(backend.upload(vals), backend.upload(other)))
    assert fr.to_ints(got) == [(x - y) % R for x in EDGE for y in EDGE]


@pytest.mark.parametrize("n", [1, 5, 1000])
def test_classify_and_split_plan(backend, rng, seed, n):
    v = fr.random(n, rng)
    v[rng.random(n) < 0.3] = fr.from_int(1)
    v[rng.random(n) < 0.3] = 0
    d = backend.upload(v)
    assert np.array_equal(_host(backend, backend.fr.classify(d)), fr.classify(v)), seed
    ones, tail = backend.fr.split_plan(d)
    assert ones.dtype == tail.dtype == np.int32  # (fewer than 2^31 scalars)
    plan = MsmPlan.of(v)
    assert np.array_equal(_host(backend, ones), plan.ones), seed
    assert np.array_equal(_host(backend, tail), plan.tail), seed


@pytest.mark.parametrize(
    "kernel",
    [
        "fr_bench_mul",
        "fr_bench_mul_eo",
        "fr_bench_mul_paired",
        "fr_bench_mul64",
    ],
)
def test_microbenchmark_kernels_compute_products(backend, rng, seed, kernel):
    n, iters = 37, 3
    a = fr.random(n, rng)
    out = backend.gpu.empty(n)
    backend.gpu.launch(
        FR_BENCH, kernel, 1, 64, (out, backend.upload(a), np.int32(iters), np.int64(n))
    )
    ints = fr.to_ints(a)
    want = [
        sum(ints[(i + c + 1) % n] * pow(ints[i], iters, R) for c in range(4)) % R for i in range(n)
    ]
    assert fr.to_ints(_host(backend, out)) == want, f"{kernel} seed={seed}"


def _random_csr(rows: int, cols: int, rng: np.random.Generator) -> CsrMatrix:
    counts = rng.integers(0, 5, rows)
    counts[::5] = 0  # empty rows
    indptr = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    nnz = int(indptr[-1])
    indices = rng.integers(0, cols, nnz).astype(np.int64)
    coeffs = fr.random(nnz, rng)
    kind = rng.integers(0, 3, nnz)
    coeffs[kind == 0] = fr.from_int(1)
    coeffs[kind == 1] = fr.from_int(R - 1)
    return CsrMatrix.from_coeffs(indptr, indices, coeffs, cols)


@pytest.mark.parametrize(("rows", "cols"), [(1, 1), (2, 3), (37, 20), (3001, 1500)])
def test_spmv_and_evaluate_abc(backend, rng, seed, rows, cols):
    mats = [_random_csr(rows, cols, rng) for _ in range(3)]
    shape = R1CSShape("test:random", 1, cols - 1, *mats, names=None)
    z = fr.random(cols, rng)
    z[0] = fr.from_int(1)
    want = shape.evaluate(z)
    got = on_host(backend, "evaluate_abc", shape, z)
    for label, g, w in zip("abc", got, want, strict=True):
        assert np.array_equal(g, w), f"{label} rows={rows} seed={seed}"
    dm = backend.abc.upload_csr(mats[0])
    assert np.array_equal(_host(backend, backend.abc.spmv(dm, backend.upload(z))), want[0]), seed
    with pytest.raises(BadInput):
        backend.evaluate_abc(shape, backend.upload(z[:-1]))


def test_upload_download_pinned_and_staged(backend, rng, seed, monkeypatch):
    from cuzk.backend.cuda import device as dev

    v = fr.random(3000, rng)
    pinned = backend.host_vector(3000)
    pinned[:] = v
    assert backend.gpu.is_pinned(pinned) and not backend.gpu.is_pinned(v)
    assert np.array_equal(backend.download(backend.upload(pinned)), v), seed
    # Filled first, page-locked after (streamed keys and matrices): uploaded as DMA from
    # any offset, and a view of it counts as page-locked too.
    locked = backend.gpu.pinned_copy(v)
    assert backend.gpu.is_pinned(locked) and backend.gpu.is_pinned(locked[1234:])
    assert np.array_equal(backend.download(backend.upload(locked[1234:])), v[1234:]), seed
    with pytest.raises(TypeError):
        backend.gpu.page_lock(v)
    monkeypatch.setattr(dev, "STAGING_CHUNK", 4096)  # many chunks through both staging slots
    gpu = dev.Gpu(0)
    assert np.array_equal(gpu.download(gpu.upload(v)), v), seed


def test_bad_launch_is_a_device_fault_and_the_device_survives(backend, rng, seed):
    a = backend.upload(fr.random(8, rng))
    out = backend.gpu.empty(8)
    with pytest.raises(DeviceFault) as err:  # 4096 threads per block: rejected at launch
        backend.gpu.launch("fr_vec.cu", "fr_vec_add", 1, 4096, (out, a, a, np.int64(8)))
    msg = str(err.value)
    assert "device 0" in msg and "fr_vec_add" in msg, msg
    with pytest.raises(DeviceFault):  # more shared memory than any block may have
        backend.gpu.launch("fr_vec.cu", "fr_vec_add", 1, 32, (out, a, a, np.int64(8)), smem=1 << 30)
    v = fr.random(100, rng)
    assert np.array_equal(
        _host(backend, backend.fr.add(backend.upload(v), backend.upload(v))), fr.add(v, v)
    ), seed


def test_explicit_device_index(seed):
    import cupy

    from cuzk.backend.cuda.backend import CudaBackend

    last = cupy.cuda.runtime.getDeviceCount() - 1
    with CudaBackend(last) as b:
        v = fr.from_ints([1, 2, 3])
        got = b.download(b.fr.mul(b.upload(v), b.upload(v)))
        assert fr.to_ints(got) == [1, 4, 9]
        assert b.gpu.device == last
