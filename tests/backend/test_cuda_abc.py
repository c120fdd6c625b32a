"""The CUDA a/b/c evaluation from compact shapes against the CPU one, bit for bit.

Every (row pointer, coefficient id) width the kernels are built for, shapes whose three
matrices differ in width (one launch per matrix), and a real Filecoin shape (PoRep 2 KiB, ~2.7M
constraints) from the shape cache's compact files. Skipped without CuPy or a CUDA device."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.backend.cuda.device import cuda_available
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.r1cs.shape import CsrMatrix, R1CSShape
from tests.backend.hostcall import on_host

_OK, _WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _OK, reason=_WHY)]


def _compact(
    rng: np.random.Generator, rows: int, cols: int, ptr: type, ids: type, table_size: int
) -> CsrMatrix:
    """Random rows (0–6 entries, some empty) over a table whose first rows are 1 and −1."""
    counts = rng.integers(0, 7, rows)
    counts[::7] = 0
    indptr = np.zeros(rows + 1, dtype=ptr)
    indptr[1:] = np.cumsum(counts)
    nnz = int(indptr[-1])
    table = fr.random(table_size, rng)
    table[0] = fr.from_int(1)
    if table_size > 1:
        table[1] = fr.from_int(R - 1)
    return CsrMatrix(
        indptr,
        rng.integers(0, cols, nnz).astype(np.uint32),
        rng.integers(0, table_size, nnz).astype(ids),
        table,
        cols,
    )


def _z(rng: np.random.Generator, n: int) -> fr.FrVec:
    z = fr.random(n, rng)
    z[0] = fr.from_int(1)
    return z


@pytest.mark.parametrize("ptr", [np.uint32, np.uint64])
@pytest.mark.parametrize(
    ("ids", "table_size"), [(np.uint8, 200), (np.uint16, 3000), (np.uint32, 70000)]
)
def test_every_width_matches_cpu(cuda_backend, rng, seed, ptr, ids, table_size):
    rows, cols = 5000, 2000
    mats = [_compact(rng, rows, cols, ptr, ids, table_size) for _ in range(3)]
    shape = R1CSShape("test:compact", 1, cols - 1, *mats, names=None)
    z = _z(rng, cols)
    want = shape.evaluate(z)
    got = on_host(cuda_backend, "evaluate_abc", shape, z)
    for label, g, w in zip("abc", got, want, strict=True):
        assert np.array_equal(g, w), f"{label} {ptr.__name__}/{ids.__name__} seed={seed}"


def test_mixed_widths_launch_per_matrix(cuda_backend, rng, seed):
    rows, cols = 3000, 1000
    mats = [
        _compact(rng, rows, cols, np.uint32, np.uint8, 100),
        _compact(rng, rows, cols, np.uint64, np.uint16, 1000),
        CsrMatrix.empty(rows, cols),
    ]
    shape = R1CSShape("test:mixed", 1, cols - 1, *mats, names=None)
    z = _z(rng, cols)
    for label, g, w in zip(
        "abc", on_host(cuda_backend, "evaluate_abc", shape, z), shape.evaluate(z), strict=True
    ):
        assert np.array_equal(g, w), f"{label} seed={seed}"


@pytest.mark.parametrize(("ptr", "ids"), [(np.uint32, np.uint16), (np.uint64, np.uint8)])
def test_streamed_matrices_match_cpu(cuda_backend, rng, seed, ptr, ids):
    """A shape streamed from page-locked host memory in blocks of a few KB (dozens of blocks
    through the two slots): whole products, row ranges that start and end inside blocks, and
    evaluate_abc (c then made where it is read) agree with the CPU bit for bit."""
    from cuzk.backend.cuda.abc import HostCsr, RowProduct

    rows, cols = 6000, 2500
    mats = [_compact(rng, rows, cols, ptr, ids, 150) for _ in range(3)]
    shape = R1CSShape("test:streamed", 1, cols - 1, *mats, names=None)
    z = _z(rng, cols)
    want = shape.evaluate(z)
    gabc = cuda_backend.abc
    cuda_backend.stream_shape(shape, 4096)
    try:
        held = gabc.matrices(shape)
        assert gabc.streams(shape) and all(isinstance(m, HostCsr) for m in held)
        assert min(len(m.edges) for m in held) > 20, [len(m.edges) for m in held]
        dz = cuda_backend.upload(z)
        for label, m, w in zip("abc", held, want, strict=True):
            got = cuda_backend.download(gabc.spmv(m, dz))
            assert np.array_equal(got, w), f"{label} seed={seed}"
            for _ in range(5):
                lo, hi = sorted(int(x) for x in rng.integers(0, rows + 1, 2))
                part = cuda_backend.download(gabc.spmv(m, dz, (lo, hi)))
                assert np.array_equal(part, w[lo:hi]), f"{label} rows {lo}..{hi} seed={seed}"
        a, b, c = cuda_backend.evaluate_abc(shape, dz)
        assert isinstance(c, RowProduct)
        assert np.array_equal(cuda_backend.download(a), want[0]), f"seed={seed}"
        assert np.array_equal(cuda_backend.download(b), want[1]), f"seed={seed}"
        bad = np.flatnonzero(np.any(fr.mul(want[0], want[1]) != want[2], axis=1))[:16]
        assert len(bad) and list(cuda_backend.unsatisfied_rows(a, b, c)) == list(bad)
    finally:
        cuda_backend.forget_shape(shape)
    assert not gabc.streams(shape)


def test_bad_matrices_are_refused_before_upload(cuda_backend, rng):
    good = _compact(rng, 10, 10, np.uint32, np.uint8, 5)
    bad_id = CsrMatrix(good.indptr, good.indices, np.full_like(good.coeff_ids, 5), good.table, 10)
    bad_col = CsrMatrix(good.indptr, np.full_like(good.indices, 10), good.coeff_ids, good.table, 10)
    for m in (bad_id, bad_col):
        if m.nnz:
            with pytest.raises(BadInput):
                cuda_backend.abc.upload_csr(m)


@pytest.mark.slow
def test_porep_2k_shape_matches_cpu(cuda_backend, rng, seed, tmp_path):
    """A real circuit through the shape cache (memory-mapped compact files) on both sides."""
    from cuzk.circuits import get_circuit
    from cuzk.r1cs.cache import ShapeCache

    shape = ShapeCache(tmp_path).get("porep-2k", get_circuit("porep-2k"))
    z = _z(rng, shape.num_variables)
    want = shape.evaluate(z)
    got = on_host(cuda_backend, "evaluate_abc", shape, z)
    for label, g, w in zip("abc", got, want, strict=True):
        assert np.array_equal(g, w), f"{label} seed={seed}"
