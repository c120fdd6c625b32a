"""a = A·z, b = B·z, c = C·z on one CUDA device (``spmv.cu``).

The constraint matrices are uploaded once per :class:`~cuzk.r1cs.R1CSShape` object in their
compact form (32-bit columns, 1–4-byte coefficient ids, the small table of distinct
coefficients: ~45 bytes per constraint, 5.9 GB for a 32 GiB PoRep partition) and kept while
that object lives (the few most recent shapes); each evaluation then moves only z in and, when
the caller wants host arrays, a, b, c out.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from cuzk.errors import BadInput
from cuzk.r1cs import R1CSShape
from cuzk.r1cs.shape import CsrMatrix

SRC = "spmv.cu"
THREADS = 256
#: Shapes whose matrices stay on the device (while the shape object lives: an evicted
#: circuit's matrices leave the device when the engine drops its shape).
KEEP_SHAPES = 2
_PTR_NAMES = {np.dtype(np.uint32): "u32", np.dtype(np.uint64): "u64"}
_ID_NAMES = {np.dtype(np.uint8): "u8", np.dtype(np.uint16): "u16", np.dtype(np.uint32): "u32"}


@dataclass(frozen=True)
class DeviceCsr:
    indptr: Any  # uint32/uint64 (rows + 1)
    indices: Any  # uint32 (nnz)
    coeff_ids: Any  # uint8/uint16/uint32 (nnz)
    table: Any  # (k, 4) uint64: the distinct coefficients
    num_rows: int
    num_cols: int
    kind: str  # "<indptr width>_<id width>", e.g. "u32_u16": the kernel suffix

    @property
    def nbytes(self) -> int:
        return sum(int(x.nbytes) for x in (self.indptr, self.indices, self.coeff_ids, self.table))


def host_arrays(m: CsrMatrix) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]:
    """(indptr, uint32 indices, ids, table, kernel suffix) of ``m``, checked for what the
    kernel's unchecked loads rely on: monotone row pointers from 0 to nnz, every column below
    ``num_cols`` and every id below the table's length."""
    if m.num_cols >= 1 << 32:
        raise BadInput(f"{m.num_cols} columns: the kernel takes 32-bit column indices")
    indptr = np.ascontiguousarray(m.indptr)
    indices = np.ascontiguousarray(m.indices, dtype=np.uint32)
    ids = np.ascontiguousarray(m.coeff_ids)
    table = np.ascontiguousarray(m.table, dtype=np.uint64)
    kind = f"{_PTR_NAMES.get(indptr.dtype)}_{_ID_NAMES.get(ids.dtype)}"
    if "None" in kind:
        raise BadInput(f"no kernel for row pointers {indptr.dtype} and ids {ids.dtype}")
    nnz = len(indices)
    if indptr[0] != 0 or indptr[-1] != nnz or np.any(indptr[1:] < indptr[:-1]):
        raise BadInput("indptr must be non-decreasing from 0 to nnz")
    if nnz and int(indices.max()) >= m.num_cols:
        raise BadInput(f"column index out of range for {m.num_cols} columns")
    if nnz and int(ids.max()) >= len(table):
        raise BadInput(f"coefficient id out of range for a table of {len(table)}")
    return indptr, indices, ids, table, kind


class GpuAbc:
    """Sparse matrix × vector over Fr on one :class:`~cuzk.backend.cuda.device.Gpu`."""

    def __init__(self, gpu: Any) -> None:
        self.gpu = gpu
        self._lock = threading.RLock()  # (the drop callback may run inside it, from the GC)
        self._shapes: OrderedDict[int, tuple[weakref.ref, tuple[DeviceCsr, ...]]] = OrderedDict()

    def upload_csr(self, m: CsrMatrix) -> DeviceCsr:
        indptr, indices, ids, table, kind = host_arrays(m)
        if len(table) == 0:  # no entries: any table will do, and a zero-size one has no pointer
            table = np.zeros((1, 4), dtype=np.uint64)
        up = self.gpu.upload
        return DeviceCsr(
            up(indptr), up(indices), up(ids), up(table), len(indptr) - 1, m.num_cols, kind
        )

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
            self._shapes[key] = (weakref.ref(shape, partial(self._dropped, key)), mats)
            self._shapes.move_to_end(key)
            while len(self._shapes) > KEEP_SHAPES:
                self._shapes.popitem(last=False)
        return mats

    def _dropped(self, key: int, ref: weakref.ref) -> None:
        """A cached shape was collected: its matrices leave the device now, not when two
        newer shapes push them out (a 32 GiB circuit's are ~6 GB the key budget no longer
        counts once its entry is evicted)."""
        with self._lock:
            hit = self._shapes.get(key)
            if hit is not None and hit[0] is ref:
                del self._shapes[key]

    def forget(self, shape: R1CSShape | None = None) -> None:
        with self._lock:
            if shape is None:
                self._shapes.clear()
            else:
                self._shapes.pop(id(shape), None)

    def _grid(self, rows: int) -> int:
        return max(1, min(-(-rows // THREADS), self.gpu.sm_count * 32))

    def evaluate(
        self, shape: R1CSShape, z: Any, capacity: int | None = None
    ) -> tuple[Any, Any, Any]:
        """(A·z, B·z, C·z) as device arrays; z is a device FrVec of num_variables rows.
        ``capacity``: each result is the head of a buffer of that many rows, zero beyond the
        constraints (so the H pipeline can transform it in place)."""
        if tuple(z.shape) != (shape.num_variables, 4):
            raise BadInput(
                f"assignment has {z.shape[0]} values, circuit {shape.circuit_id!r} "
                f"has {shape.num_variables} variables"
            )
        return self.evaluate_mats(self.matrices(shape), z, capacity)

    def evaluate_mats(
        self, mats: tuple[DeviceCsr, ...], z: Any, capacity: int | None = None
    ) -> tuple[Any, Any, Any]:
        """(A·z, B·z, C·z) for three device matrices with the same number of rows: one launch
        when their widths agree (always, for synthesized shapes: one table), else one each."""
        ma, mb, mc = mats
        rows = ma.num_rows
        if mb.num_rows != rows or mc.num_rows != rows:
            raise BadInput("A, B and C must have the same number of rows")
        if len({m.kind for m in mats}) != 1:
            a, b, c = (self.spmv(m, z) for m in mats)
            return a, b, c
        outs = [self.gpu.empty(rows) for _ in range(3)]
        if capacity is not None and capacity > rows:
            full = [self.gpu.empty(capacity) for _ in range(3)]
            with self.gpu.context():
                for f in full:
                    f[rows:].fill(0)
            outs = [f[:rows] for f in full]
        if rows:
            args = [x for m in mats for x in (m.indptr, m.indices, m.coeff_ids, m.table)]
            self.gpu.launch(
                SRC,
                f"spmv_abc_{ma.kind}",
                (self._grid(rows), 3),
                THREADS,
                (*outs, *args, z, np.int64(rows)),
            )
        return outs[0], outs[1], outs[2]

    def spmv(
        self, m: DeviceCsr, x: Any, rows: tuple[int, int] | None = None, out: Any = None
    ) -> Any:
        """m·x for one device matrix and device vector: rows [lo, hi) of it with ``rows``
        (the row pointers hold absolute offsets, so a slice of them is a matrix of those
        rows), written into ``out`` when given."""
        if tuple(x.shape) != (m.num_cols, 4) and not (x.shape[0] >= m.num_cols and x.ndim == 2):
            raise BadInput(f"x has {x.shape[0]} rows, the matrix {m.num_cols} columns")
        lo, hi = rows if rows is not None else (0, m.num_rows)
        if not 0 <= lo <= hi <= m.num_rows:
            raise BadInput(f"rows {lo}..{hi} of a matrix of {m.num_rows}")
        out = self.gpu.empty(hi - lo) if out is None else out
        if tuple(out.shape) != (hi - lo, 4):
            raise BadInput(f"out has {out.shape[0]} rows for {hi - lo}")
        if hi > lo:
            self.gpu.launch(
                SRC,
                f"spmv_{m.kind}",
                self._grid(hi - lo),
                THREADS,
                (out, m.indptr[lo : hi + 1], m.indices, m.coeff_ids, m.table, x,
                 np.int64(hi - lo)),
            )  # fmt: skip
        return out

    def padded(self, m: DeviceCsr, z: Any, capacity: int) -> Any:
        """m·z as the head of a zero-padded buffer of ``capacity`` rows (where the H
        quotient is made in place)."""
        full = self.gpu.empty(max(capacity, m.num_rows))
        with self.gpu.context():
            full[m.num_rows :].fill(0)
        return self.spmv(m, z, out=full[: m.num_rows])


@dataclass(frozen=True)
class RowProduct:
    """m·z not made yet: the CUDA backend's c under a memory cap. It is evaluated where it is
    read — by the a·b = c check in slices, and by the H quotient into a buffer that b no longer
    needs — so a, b and c never hold three vectors of the domain at once."""

    matrix: DeviceCsr
    z: Any

    @property
    def shape(self) -> tuple[int, int]:
        return (self.matrix.num_rows, 4)
