"""a = A·z, b = B·z, c = C·z on one CUDA device (``spmv.cu``).

The constraint matrices are uploaded once per :class:`~cuzk.r1cs.R1CSShape` object and kept
while that object lives (the few most recent shapes); each evaluation then moves only z in
and, when the caller wants host arrays, a, b, c out.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuzk.errors import BadInput
from cuzk.r1cs import R1CSShape
from cuzk.r1cs.shape import CsrMatrix

SRC = "spmv.cu"
THREADS = 256
#: Shapes whose matrices stay on the device.
KEEP_SHAPES = 2


@dataclass(frozen=True)
class DeviceCsr:
    indptr: Any  # int64 (rows + 1)
    indices: Any  # int64 (nnz)
    coeffs: Any  # (nnz, 4) uint64
    num_rows: int
    num_cols: int


def check_csr(indptr: np.ndarray, indices: np.ndarray, coeffs: np.ndarray, num_cols: int) -> None:
    """The structure checks the kernel relies on (its loads are unchecked)."""
    rows = indptr.shape[0] - 1
    nnz = indices.shape[0]
    if indptr.ndim != 1 or rows < 0:
        raise BadInput("indptr must be a 1-D array of rows + 1 offsets")
    if coeffs.shape != (nnz, 4) or coeffs.dtype != np.uint64:
        raise BadInput(f"coeffs must be ({nnz}, 4) uint64, got {coeffs.shape} {coeffs.dtype}")
    if indptr[0] != 0 or indptr[-1] != nnz or (rows and np.any(np.diff(indptr) < 0)):
        raise BadInput("indptr must be non-decreasing from 0 to nnz")
    if nnz and (int(indices.min()) < 0 or int(indices.max()) >= num_cols):
        raise BadInput(f"column index out of range for {num_cols} columns")


class GpuAbc:
    """Sparse matrix × vector over Fr on one :class:`~cuzk.backend.cuda.device.Gpu`."""

    def __init__(self, gpu: Any) -> None:
        self.gpu = gpu
        self._lock = threading.Lock()
        self._shapes: OrderedDict[int, tuple[weakref.ref, tuple[DeviceCsr, ...]]] = OrderedDict()

    def upload_csr(self, m: CsrMatrix) -> DeviceCsr:
        indptr = np.ascontiguousarray(m.indptr, dtype=np.int64)
        indices = np.ascontiguousarray(m.indices, dtype=np.int64)
        coeffs = np.ascontiguousarray(m.coeffs, dtype=np.uint64)
        check_csr(indptr, indices, coeffs, m.num_cols)
        up = self.gpu.upload
        return DeviceCsr(up(indptr), up(indices), up(coeffs), len(indptr) - 1, m.num_cols)

    def matrices(self, shape: R1CSShape) -> tuple[DeviceCsr, ...]:
        """The shape's A, B, C on the device (uploaded on first use)."""
        key = id(shape)
        with self._lock:
            hit = self._shapes.get(key)
            if hit is not None and hit[0]() is shape:
                self._shapes.move_to_end(key)
                return hit[1]
        mats = tuple(self.upload_csr(m) for m in (shape.a, shape.b, shape.c))
        with self._lock:
            self._shapes[key] = (weakref.ref(shape), mats)
            self._shapes.move_to_end(key)
            while len(self._shapes) > KEEP_SHAPES:
                self._shapes.popitem(last=False)
        return mats

    def forget(self, shape: R1CSShape | None = None) -> None:
        with self._lock:
            if shape is None:
                self._shapes.clear()
            else:
                self._shapes.pop(id(shape), None)

    def _grid(self, rows: int) -> int:
        return max(1, min(-(-rows // THREADS), self.gpu.sm_count * 32))

    def evaluate(self, shape: R1CSShape, z: Any) -> tuple[Any, Any, Any]:
        """(A·z, B·z, C·z) as device arrays; z is a device FrVec of num_variables rows."""
        if tuple(z.shape) != (shape.num_variables, 4):
            raise BadInput(
                f"assignment has {z.shape[0]} values, circuit {shape.circuit_id!r} "
                f"has {shape.num_variables} variables"
            )
        return self.evaluate_mats(self.matrices(shape), z)

    def evaluate_mats(self, mats: tuple[DeviceCsr, ...], z: Any) -> tuple[Any, Any, Any]:
        """(A·z, B·z, C·z) for three device matrices with the same number of rows."""
        ma, mb, mc = mats
        rows = ma.num_rows
        if mb.num_rows != rows or mc.num_rows != rows:
            raise BadInput("A, B and C must have the same number of rows")
        outs = [self.gpu.empty(rows) for _ in range(3)]
        if rows:
            self.gpu.launch(
                SRC,
                "spmv_abc_k",
                (self._grid(rows), 3),
                THREADS,
                (
                    *outs,
                    ma.indptr,
                    ma.indices,
                    ma.coeffs,
                    mb.indptr,
                    mb.indices,
                    mb.coeffs,
                    mc.indptr,
                    mc.indices,
                    mc.coeffs,
                    z,
                    np.int64(rows),
                ),
            )
        return outs[0], outs[1], outs[2]

    def spmv(self, m: DeviceCsr, x: Any) -> Any:
        """m·x for one device matrix and device vector."""
        if tuple(x.shape) != (m.num_cols, 4) and not (x.shape[0] >= m.num_cols and x.ndim == 2):
            raise BadInput(f"x has {x.shape[0]} rows, the matrix {m.num_cols} columns")
        out = self.gpu.empty(m.num_rows)
        if m.num_rows:
            self.gpu.launch(
                SRC,
                "spmv_k",
                self._grid(m.num_rows),
                THREADS,
                (out, m.indptr, m.indices, m.coeffs, x, np.int64(m.num_rows)),
            )
        return out
