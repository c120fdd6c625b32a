"""a = A·z, b = B·z, c = C·z on one CUDA device (``spmv.cu``).

The constraint matrices are uploaded once per :class:`~cuzk.r1cs.R1CSShape` object in their
compact form (32-bit columns, 1–4-byte coefficient ids, the small table of distinct
coefficients: ~45 bytes per constraint, 5.9 GB for a 32 GiB PoRep partition) and kept while
that object lives (the few most recent shapes); each evaluation then moves only z in and, when
the caller wants host arrays, a, b, c out.

A shape whose key does not fit beside its matrices (:meth:`GpuAbc.stream`) keeps them in
page-locked host memory instead: every product then streams its rows through two device slots
in blocks of a few hundred MB (:class:`~cuzk.backend.cuda.device.Relay`), the rows are
independent, so a block needs only its own row pointers and entries.
"""

from __future__ import annotations

import bisect
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from cuzk.backend.cuda.device import Relay
from cuzk.errors import BadInput
from cuzk.r1cs import R1CSShape
from cuzk.r1cs.shape import CsrMatrix

if TYPE_CHECKING:
    from cuzk.backend.cuda.abc_check import CombinedCheck

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


@dataclass(frozen=True)
class HostCsr:
    """One matrix of a streamed shape: its rows in page-locked host memory, cut into blocks
    that fit a slot of ``slots``; the coefficient table (a few KB) stays on the device."""

    indptr: np.ndarray  # page-locked, uint32/uint64 (rows + 1)
    indices: np.ndarray  # page-locked, uint32 (nnz)
    coeff_ids: np.ndarray  # page-locked, uint8/uint16/uint32 (nnz)
    table: Any  # device (k, 4) uint64
    num_rows: int
    num_cols: int
    kind: str
    edges: tuple[int, ...]  # row blocks: [edges[i], edges[i + 1]) fits a slot
    slots: StreamSlots


class StreamSlots:
    """The two device slots a streamed shape's matrices pass through, and the relay that
    orders their reuse (uploads on their own stream, products on the compute stream)."""

    def __init__(self, gpu: Any, copy_stream: Any, nbytes: int) -> None:
        self.nbytes = nbytes
        with gpu.context():
            self.buffers = [gpu.cp.empty(nbytes, dtype=gpu.cp.uint8) for _ in range(2)]
        self.relay = Relay(gpu, copy_stream, gpu.stream)
        self.lock = threading.Lock()  # one product streams through the slots at a time
        self.count = 0  # blocks streamed so far: consecutive blocks alternate slots


def _align(n: int) -> int:
    return -(-n // 16) * 16


def block_nbytes(indptr: np.ndarray, ids_itemsize: int, lo: int, hi: int) -> int:
    """Device bytes of rows [lo, hi) in a slot: their row pointers, then columns, then ids."""
    entries = int(indptr[hi]) - int(indptr[lo])
    return _align((hi - lo + 1) * indptr.itemsize) + _align(entries * 4) + entries * ids_itemsize


def row_blocks(indptr: np.ndarray, ids_itemsize: int, block_bytes: int) -> tuple[int, ...]:
    """Row edges cutting a matrix into blocks of at most ``block_bytes`` in a slot (a block
    of one row when that row alone is larger)."""
    rows = len(indptr) - 1
    edges = [0]
    while edges[-1] < rows:
        lo = edges[-1]
        hi = bisect.bisect_right(
            range(lo + 1, rows + 1),
            block_bytes,
            key=lambda r: block_nbytes(indptr, ids_itemsize, lo, r),
        )
        edges.append(lo + max(1, hi))
    return tuple(edges)


#: A shape's A, B and C as :class:`GpuAbc` holds them.
Matrices = tuple[DeviceCsr, ...] | tuple[HostCsr, ...]


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
        self._shapes: OrderedDict[int, tuple[weakref.ref, Matrices]] = OrderedDict()
        self._copy_stream: Any = None  # uploads of streamed shapes' blocks (made on first use)

    def upload_csr(self, m: CsrMatrix) -> DeviceCsr:
        indptr, indices, ids, table, kind = host_arrays(m)
        up = self.gpu.upload
        return DeviceCsr(
            up(indptr), up(indices), up(ids), self._table(table), len(indptr) - 1, m.num_cols,
            kind,
        )  # fmt: skip

    def stream(self, shape: R1CSShape, block_bytes: int) -> None:
        """Keep ``shape``'s matrices in page-locked host memory from now on and stream them
        in row blocks of about ``block_bytes`` (two device slots of that size): for a key that
        does not fit on the device beside them. Replaces matrices already on the device."""
        if block_bytes <= 0:
            raise BadInput(f"block_bytes must be positive, got {block_bytes}")
        if self.streams(shape):  # a later load of the same key: its copy is here already
            return
        hosts = [host_arrays(m) for m in (shape.a, shape.b, shape.c)]
        cuts = [row_blocks(ip, ids.itemsize, block_bytes) for ip, _, ids, _, _ in hosts]
        largest = max(
            block_nbytes(ip, ids.itemsize, e[i], e[i + 1])
            for (ip, _, ids, _, _), e in zip(hosts, cuts, strict=True)
            for i in range(len(e) - 1)
        ) if shape.num_constraints else 16  # fmt: skip
        if self._copy_stream is None:
            self._copy_stream = self.gpu.side_stream()
        slots = StreamSlots(self.gpu, self._copy_stream, largest)
        mats = []
        for (ip, ix, ids, t, kind), e, m in zip(
            hosts, cuts, (shape.a, shape.b, shape.c), strict=True
        ):
            pinned = (self.gpu.pinned_copy(ip), self.gpu.pinned_copy(ix), self.gpu.pinned_copy(ids))
            mats.append(HostCsr(*pinned, self._table(t), len(ip) - 1, m.num_cols, kind, e, slots))
        self._remember(shape, tuple(mats))

    def _table(self, table: np.ndarray) -> Any:
        if len(table) == 0:  # no entries: any table will do, and a zero-size one has no pointer
            table = np.zeros((1, 4), dtype=np.uint64)
        return self.gpu.upload(table)

    def streams(self, shape: R1CSShape) -> bool:
        """Whether ``shape``'s matrices stream from host memory (:meth:`stream`)."""
        with self._lock:
            hit = self._shapes.get(id(shape))
            return hit is not None and hit[0]() is shape and isinstance(hit[1][0], HostCsr)

    def matrices(self, shape: R1CSShape) -> Matrices:
        """The shape's A, B, C: on the device (uploaded on first use), or in host memory when
        the shape streams."""
        key = id(shape)
        with self._lock:
            hit = self._shapes.get(key)
            if hit is not None and hit[0]() is shape:
                self._shapes.move_to_end(key)
                return hit[1]
        mats = tuple(self.upload_csr(m) for m in (shape.a, shape.b, shape.c))
        self._remember(shape, mats)
        return mats

    def _remember(self, shape: R1CSShape, mats: Matrices) -> None:
        key = id(shape)
        with self._lock:
            self._shapes[key] = (weakref.ref(shape, partial(self._dropped, key)), mats)
            self._shapes.move_to_end(key)
            # Only matrices on the device make room for newer ones. A streamed shape stays
            # until it is forgotten or collected: pushed out, its next product would upload
            # all of it to a device chosen for having no room for it.
            resident = [k for k, (_, m) in self._shapes.items() if not isinstance(m[0], HostCsr)]
            for k in resident[: max(0, len(resident) - KEEP_SHAPES)]:
                del self._shapes[k]

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
        self, mats: Matrices, z: Any, capacity: int | None = None
    ) -> tuple[Any, Any, Any]:
        """(A·z, B·z, C·z) for three matrices with the same number of rows: one launch when
        they are on the device with one width (always, for synthesized shapes: one table),
        else one product each."""
        ma, mb, mc = mats
        rows = ma.num_rows
        if mb.num_rows != rows or mc.num_rows != rows:
            raise BadInput("A, B and C must have the same number of rows")
        if len({m.kind for m in mats}) != 1 or isinstance(ma, HostCsr):
            a, b, c = (
                self.spmv(m, z) if capacity is None else self.padded(m, z, capacity) for m in mats
            )
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
        self, m: DeviceCsr | HostCsr, x: Any, rows: tuple[int, int] | None = None, out: Any = None
    ) -> Any:
        """m·x for one matrix and device vector: rows [lo, hi) of it with ``rows`` (the row
        pointers hold absolute offsets, so a slice of them is a matrix of those rows), written
        into ``out`` when given."""
        if tuple(x.shape) != (m.num_cols, 4) and not (x.shape[0] >= m.num_cols and x.ndim == 2):
            raise BadInput(f"x has {x.shape[0]} rows, the matrix {m.num_cols} columns")
        lo, hi = rows if rows is not None else (0, m.num_rows)
        if not 0 <= lo <= hi <= m.num_rows:
            raise BadInput(f"rows {lo}..{hi} of a matrix of {m.num_rows}")
        out = self.gpu.empty(hi - lo) if out is None else out
        if tuple(out.shape) != (hi - lo, 4):
            raise BadInput(f"out has {out.shape[0]} rows for {hi - lo}")
        if isinstance(m, HostCsr):
            self._streamed_spmv(m, x, lo, hi, out)
        elif hi > lo:
            self._launch(m.kind, out, m.indptr[lo : hi + 1], m.indices, m.coeff_ids, m.table, x,
                         hi - lo, 0)  # fmt: skip
        return out

    def _launch(self, kind: str, out: Any, *args: Any) -> None:
        *arrays, rows, base = args
        self.gpu.launch(SRC, f"spmv_{kind}", self._grid(rows), THREADS,
                        (out, *arrays, np.int64(rows), np.int64(base)))  # fmt: skip

    def _streamed_spmv(self, m: HostCsr, x: Any, lo: int, hi: int, out: Any) -> None:
        """Rows [lo, hi) of a streamed matrix, block by block: block k's upload (copy
        stream) overlaps the product of block k − 1 (compute stream)."""
        first = max(0, bisect.bisect_right(m.edges, lo) - 1)
        slots = m.slots
        with slots.lock:
            for i in range(first, len(m.edges) - 1):
                r0, r1 = max(lo, m.edges[i]), min(hi, m.edges[i + 1])
                if r0 >= r1:
                    break
                begin, end = int(m.indptr[r0]), int(m.indptr[r1])
                buf = slots.buffers[slots.count % 2]
                ptr_at = _align((r1 - r0 + 1) * m.indptr.itemsize)
                ids_at = ptr_at + _align((end - begin) * 4)
                ptr = buf[: (r1 - r0 + 1) * m.indptr.itemsize].view(m.indptr.dtype)
                ix = buf[ptr_at : ptr_at + (end - begin) * 4].view(np.uint32)
                ids = buf[ids_at : ids_at + (end - begin) * m.coeff_ids.itemsize].view(
                    m.coeff_ids.dtype
                )
                slots.relay.fill(slots.count, [
                    (ptr, m.indptr[r0 : r1 + 1]),
                    (ix, m.indices[begin:end]),
                    (ids, m.coeff_ids[begin:end]),
                ])  # fmt: skip
                self._launch(m.kind, out[r0 - lo : r1 - lo], ptr, ix, ids, m.table, x,
                             r1 - r0, begin)  # fmt: skip
                slots.relay.release(slots.count)
                slots.count += 1

    def padded(self, m: DeviceCsr | HostCsr, z: Any, capacity: int) -> Any:
        """m·z as the head of a zero-padded buffer of ``capacity`` rows (where the H
        quotient is made in place)."""
        full = self.gpu.empty(max(capacity, m.num_rows))
        with self.gpu.context():
            full[m.num_rows :].fill(0)
        return self.spmv(m, z, out=full[: m.num_rows])


@dataclass(eq=False)
class RowProduct:
    """m·z not made yet: the CUDA backend's c under a memory cap. It is evaluated where it is
    read — by the H quotient into a buffer that b no longer needs, and by the exact a·b = c
    check in slices — so a, b and c never hold three vectors of the domain at once.
    ``check``: the deferred a·b = c check (:mod:`~cuzk.backend.cuda.abc_check`) that is
    given c where the H quotient makes it."""

    matrix: DeviceCsr | HostCsr
    z: Any
    check: CombinedCheck | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return (self.matrix.num_rows, 4)
