"""Append-only numpy storage for shape synthesis, and the smallest dtypes that hold a range.

Shape synthesis of a 32 GiB PoRep partition appends ~700M matrix entries: as Python lists that
is tens of GB (a pointer plus an int object per entry). :class:`GrowArray` keeps them in numpy
chunks instead — growing never copies what is already stored, and :meth:`GrowArray.drain` moves
everything into one final array of the chosen dtype while freeing the chunks as it goes, so the
peak is the final array plus one chunk rather than twice the data.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable

import numpy as np

FIRST_CHUNK = 1 << 12  # small circuits (tests, template recording) stay small
MAX_CHUNK = 1 << 22  # 16 MiB of uint32: big enough that per-chunk overhead vanishes


def _chunk(n: int, dtype: np.dtype) -> np.ndarray:
    """An uninitialised chunk; from its own anonymous mapping once it is a MiB or more.

    Freed heap blocks of a few MiB stay with the C allocator (glibc raises its mmap threshold
    after the first large free), so draining chunks into the final arrays would leave the
    process holding both: own mappings are returned to the system the moment they go."""
    nbytes = n * dtype.itemsize
    if nbytes < 1 << 20:
        return np.empty(n, dtype=dtype)
    return np.frombuffer(mmap.mmap(-1, nbytes), dtype=dtype, count=n)


def index_dtype(n: int) -> np.dtype:
    """The unsigned dtype that holds every value in [0, n]: row pointers and column indices
    sized to need (uint32 below 2^32, which every circuit up to 32 GiB sectors is)."""
    return np.dtype(np.uint32) if n < 1 << 32 else np.dtype(np.uint64)


def id_dtype(table_size: int) -> np.dtype:
    """The narrowest unsigned dtype that numbers ``table_size`` entries (coefficient ids)."""
    for dt in (np.uint8, np.uint16, np.uint32):
        if table_size <= int(np.iinfo(dt).max) + 1:
            return np.dtype(dt)
    raise ValueError(f"{table_size} table entries do not fit 32-bit ids")


class GrowArray:
    """A 1-D array that only grows at the end, stored in chunks of doubling size.

    An unsigned array also grows in width: it starts as narrow as asked (uint16 coefficient
    ids, row lengths, name ids: the common case) and is rewritten one width up, chunk by
    chunk, the first time a value does not fit."""

    def __init__(self, dtype: np.dtype | type) -> None:
        self.dtype = np.dtype(dtype)
        self._full: list[np.ndarray] = []
        self._cur = _chunk(FIRST_CHUNK, self.dtype)
        self._fill = 0
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def extend(self, values: np.ndarray) -> None:
        """Append ``values``: converted to this array's dtype, widened first where an unsigned
        array is too narrow for them (a signed array's caller checks the range)."""
        values = np.asarray(values)
        at, n = 0, len(values)
        if n and self.dtype.kind == "u" and int(values.max()) > int(np.iinfo(self.dtype).max):
            self._widen(int(values.max()))
        while at < n:
            room = len(self._cur) - self._fill
            if room == 0:
                self._full.append(self._cur)
                self._cur = _chunk(min(2 * len(self._cur), MAX_CHUNK), self.dtype)
                self._fill, room = 0, len(self._cur)
            k = min(room, n - at)
            self._cur[self._fill : self._fill + k] = values[at : at + k]
            self._fill += k
            at += k
        self._size += n

    def _widen(self, top: int) -> None:
        dtype = np.dtype(np.uint32) if top < 1 << 32 else np.dtype(np.uint64)
        self._full = [_widened(c, dtype) for c in self._full]
        self._cur = _widened(self._cur, dtype)  # the unfilled tail is copied, never read
        self.dtype = dtype

    def _chunks(self) -> list[np.ndarray]:
        return [*self._full, self._cur[: self._fill]]

    def tail(self, start: int, stop: int | None = None) -> np.ndarray:
        """A copy of elements [start, stop) (stop: the end by default): what a gadget or a
        block appended, for checking and replaying it."""
        stop = self._size if stop is None else stop
        if not 0 <= start <= stop <= self._size:
            raise IndexError(f"elements [{start}, {stop}) of {self._size}")
        out, pos = [], 0
        for c in self._chunks():
            lo, hi = max(start - pos, 0), min(stop - pos, len(c))
            if lo < hi:
                out.append(c[lo:hi])
            pos += len(c)
        return np.concatenate(out) if out else np.empty(0, dtype=self.dtype)

    def drain(
        self,
        out: np.ndarray,
        convert: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> np.ndarray:
        """Move every element into ``out`` (of length ``len(self)``; ``convert`` maps a chunk
        first) and empty this array, freeing each chunk as soon as it is copied."""
        if len(out) != self._size:
            raise ValueError(f"drain into {len(out)} slots of {self._size} elements")
        self._full.append(self._cur[: self._fill])
        self._cur = np.empty(0, dtype=self.dtype)
        pos = 0
        while self._full:
            c = self._full.pop(0)
            out[pos : pos + len(c)] = convert(c) if convert is not None else c
            pos += len(c)
        self._cur = _chunk(FIRST_CHUNK, self.dtype)
        self._fill = self._size = 0
        return out


def _widened(c: np.ndarray, dtype: np.dtype) -> np.ndarray:
    out = _chunk(len(c), dtype)
    out[:] = c
    return out
