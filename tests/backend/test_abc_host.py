"""The host side of the CUDA a/b/c evaluation, without a GPU: upload checks, the kernel
chosen for each (row pointer, id) width, and the argument order, through a stand-in device
that runs each launch as the CPU spmv would read the same arguments. The kernels themselves
are compared with the CPU in ``test_cuda_abc.py`` (marked gpu)."""

from __future__ import annotations

import gc
import re
from pathlib import Path

import numpy as np
import pytest

from cuzk.backend.cuda import abc
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.r1cs import synthesize_shape
from cuzk.r1cs.shape import CsrMatrix, R1CSShape
from tests.r1cs.circuits import RandomCircuit

_WIDTH = {"u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64}


def _kernels() -> set[str]:
    src = (Path(abc.__file__).parent / abc.SRC).read_text()
    made = re.findall(r"^SPMV_KERNELS\((\w+), [\w ]+, (\w+), [\w ]+\)$", src, re.M)
    return {f"{kind}_{ip}_{i}" for ip, i in made for kind in ("spmv", "spmv_abc")}


class FakeGpu:
    """Uploads are copies; a launch checks the argument dtypes against the kernel's name and
    evaluates with :func:`fr.spmv`."""

    sm_count = 4

    def __init__(self) -> None:
        self.launches: list[str] = []
        self.kernels = _kernels()

    def upload(self, a: np.ndarray) -> np.ndarray:
        return np.array(a, copy=True)

    def empty(self, n: int) -> np.ndarray:
        return np.full((n, 4), 7, dtype=np.uint64)

    def launch(self, src, name, grid, block, args) -> None:
        assert src == abc.SRC and name in self.kernels, name
        self.launches.append(name)
        ip, idw = (_WIDTH[w] for w in name.split("_")[-2:])
        both = name.startswith("spmv_abc")
        n_out, n_tail = (3, 2) if both else (1, 3)  # spmv_ also takes the entries' base
        outs, mats, tail = args[:n_out], args[n_out:-n_tail], args[-n_tail:]
        z, rows, base = tail[0], tail[1], (np.int64(0) if both else tail[2])
        assert len(mats) == 4 * len(outs) and isinstance(rows, np.int64)
        assert isinstance(base, np.int64)
        for k, out in enumerate(outs):
            indptr, indices, ids, table = mats[4 * k : 4 * k + 4]
            assert (indptr.dtype, indices.dtype, ids.dtype) == (ip, np.uint32, idw)
            rebased = (indptr - indptr.dtype.type(base)).astype(indptr.dtype)
            out[:] = fr.spmv(rebased, indices, ids, table, z, int(rows))


def _shape(rng, widths) -> R1CSShape:
    rows, cols = 400, 150
    mats = []
    for ptr, ids in widths:
        counts = rng.integers(0, 6, rows)
        indptr = np.zeros(rows + 1, dtype=ptr)
        indptr[1:] = np.cumsum(counts)
        nnz = int(indptr[-1])
        mats.append(
            CsrMatrix(
                indptr,
                rng.integers(0, cols, nnz).astype(np.uint32),
                rng.integers(0, 50, nnz).astype(ids),
                fr.random(50, rng),
                cols,
            )
        )
    return R1CSShape("test:widths", 1, cols - 1, *mats, names=None)


@pytest.mark.parametrize("ptr", [np.uint32, np.uint64])
@pytest.mark.parametrize("ids", [np.uint8, np.uint16, np.uint32])
def test_one_launch_per_width(rng, ptr, ids):
    gpu = FakeGpu()
    shape = _shape(rng, [(ptr, ids)] * 3)
    z = fr.random(shape.num_variables, rng)
    got = abc.GpuAbc(gpu).evaluate(shape, z)
    assert gpu.launches == [f"spmv_abc_{_name(ptr)}_{_name(ids)}"]
    for g, w in zip(got, shape.evaluate(z), strict=True):
        assert np.array_equal(g, w)


def _name(dt: type) -> str:
    return {v: k for k, v in _WIDTH.items()}[dt]


def test_mixed_widths_and_uploads_once(rng):
    gpu = FakeGpu()
    shape = _shape(rng, [(np.uint32, np.uint8), (np.uint64, np.uint16), (np.uint32, np.uint8)])
    gabc = abc.GpuAbc(gpu)
    z = fr.random(shape.num_variables, rng)
    for _ in range(2):
        for g, w in zip(gabc.evaluate(shape, z), shape.evaluate(z), strict=True):
            assert np.array_equal(g, w)
    assert gpu.launches == ["spmv_u32_u8", "spmv_u64_u16", "spmv_u32_u8"] * 2
    assert gabc.matrices(shape) is gabc.matrices(shape)
    with pytest.raises(BadInput):
        gabc.evaluate(shape, z[:-1])


def test_a_collected_shape_leaves_the_device_at_once(rng):
    """The engine evicts a circuit by dropping its shape: the cached device matrices go with
    it, not when two newer shapes would have pushed them out."""
    gpu = FakeGpu()
    gabc = abc.GpuAbc(gpu)
    kept = _shape(rng, [(np.uint32, np.uint8)] * 3)
    dropped = _shape(rng, [(np.uint32, np.uint16)] * 3)
    gabc.matrices(kept)
    gabc.matrices(dropped)
    assert len(gabc._shapes) == 2
    del dropped
    gc.collect()
    assert [ref() for ref, _ in gabc._shapes.values()] == [kept]


def test_a_shape_forgotten_on_one_device_leaves_it_at_once(rng):
    """The engine takes a key off one device while its shape lives on for the others
    (``CudaBackend.forget_shape``): that device's matrices go, the other shape's stay, and the
    next use uploads them again."""
    gabc = abc.GpuAbc(FakeGpu())
    kept = _shape(rng, [(np.uint32, np.uint8)] * 3)
    gone = _shape(rng, [(np.uint32, np.uint16)] * 3)
    first = gabc.matrices(gone)
    gabc.matrices(kept)
    gabc.forget(gone)
    assert [ref() for ref, _ in gabc._shapes.values()] == [kept]
    again = gabc.matrices(gone)
    assert all(a is not b for a, b in zip(again, first, strict=True))


def test_synthesized_shape_and_checks(rng, seed):
    gpu = FakeGpu()
    shape = synthesize_shape(RandomCircuit(seed), "test:random")
    z = fr.random(shape.num_variables, rng)
    for g, w in zip(abc.GpuAbc(gpu).evaluate(shape, z), shape.evaluate(z), strict=True):
        assert np.array_equal(g, w)
    assert gpu.launches == [f"spmv_abc_u32_{_name(shape.a.coeff_ids.dtype.type)}"]
    m = shape.a
    bad = [
        CsrMatrix(
            m.indptr, m.indices, np.full_like(m.coeff_ids, len(m.table)), m.table, m.num_cols
        ),
        CsrMatrix(m.indptr, np.full_like(m.indices, m.num_cols), m.coeff_ids, m.table, m.num_cols),
        CsrMatrix(m.indptr[::-1].copy(), m.indices, m.coeff_ids, m.table, m.num_cols),
    ]
    for b in bad:
        with pytest.raises(BadInput):
            abc.host_arrays(b)
    assert abc.GpuAbc(gpu).upload_csr(CsrMatrix.empty(3, 2)).table.shape == (1, 4)


@pytest.mark.parametrize("ptr", [np.uint32, np.uint64])
def test_row_blocks_cut_within_the_slot_size(rng, ptr):
    """A streamed matrix's blocks cover every row once, in order, each within the slot size
    (or one row alone, when that row is larger)."""
    counts = rng.integers(0, 9, 4000)
    counts[123] = 3000  # one row larger than a slot
    indptr = np.zeros(len(counts) + 1, dtype=ptr)
    indptr[1:] = np.cumsum(counts)
    for block in (1 << 10, 1 << 14, 1 << 30):
        edges = abc.row_blocks(indptr, 2, block)
        assert edges[0] == 0 and edges[-1] == len(counts)
        assert all(lo < hi for lo, hi in zip(edges, edges[1:], strict=False))
        for lo, hi in zip(edges, edges[1:], strict=False):
            size = abc.block_nbytes(indptr, 2, lo, hi)
            assert size <= block or hi == lo + 1, (block, lo, hi, size)
            if hi < len(counts):  # greedy: one row more would not fit
                assert abc.block_nbytes(indptr, 2, lo, hi + 1) > block
    assert abc.row_blocks(indptr, 2, 1 << 30) == (0, len(counts))


def test_a_streamed_shape_is_never_pushed_out_by_newer_ones(rng):
    """Newer shapes push out the oldest matrices on the device, never a streamed shape's
    (its next product would upload all of it to a device that has no room for it)."""
    gabc = abc.GpuAbc(FakeGpu())
    streamed = _shape(rng, [(np.uint32, np.uint8)] * 3)
    m = streamed.a
    host = abc.HostCsr(m.indptr, m.indices, m.coeff_ids, m.table, len(m.indptr) - 1,
                       m.num_cols, "u32_u8", (0, len(m.indptr) - 1), None)  # fmt: skip
    gabc._remember(streamed, (host, host, host))
    others = [_shape(rng, [(np.uint32, np.uint16)] * 3) for _ in range(abc.KEEP_SHAPES + 2)]
    for s in others:
        gabc.matrices(s)
    kept = [ref() for ref, _ in gabc._shapes.values()]
    assert kept == [streamed, *others[-abc.KEEP_SHAPES :]]
    assert gabc.streams(streamed) and gabc.matrices(streamed)[0] is host
