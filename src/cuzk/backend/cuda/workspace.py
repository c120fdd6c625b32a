"""One device block that a single thread's CuPy requests are carved from for a while.

Under a memory cap the dense H MSM runs on a lane of its own (:mod:`cuzk.backend.cuda.msm`),
and CuPy's pools keep each stream's freed blocks for that stream only. So the MSM's buffers
and scratch, cached on its lane's stream in size classes of their own, were what the next
partition's a/b/c vectors needed, and the pools gave them back (a cudaFree: a device-wide
wait) five times a partition at 16 GiB (session 22).

A :class:`Workspace` is one block of the size class of the MSM's scalars (the domain
vectors' class), taken on the *compute* stream, where the H quotient has just freed a and b:
the pools hand it a block of a, and take it back, as a block of that stream and class, for the
next partition's a/b/c. Inside it the MSM's own requests are served first-fit
(:meth:`Workspace.malloc`, set as the lane thread's CuPy allocator for the MSM's run): every
piece is used on the lane's stream in the order it was handed out, as the pools' own blocks
are. A request that does not fit goes to the process's allocator as before (counted in
:attr:`Workspace.overflow`).

Its use is ordered both ways by its user (:meth:`GpuMsm._workspace`): the lane waits for an
event recorded on the compute stream once the block is taken, and the block goes back only
after the lane's and its copy stream's work is done (the MSM's result is read on the host).
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable
from typing import Any

#: Pieces are aligned as CuPy aligns its own blocks.
ALIGN = 512


class _Piece:
    """The owner of one piece: when CuPy drops the memory, the piece returns to the block."""

    __slots__ = ("offset", "size", "workspace")

    def __init__(self, workspace: Workspace, offset: int, size: int) -> None:
        self.workspace, self.offset, self.size = workspace, offset, size

    def __del__(self) -> None:
        self.workspace.give(self.offset, self.size)


class Workspace:
    """Pieces of one device block (``block``: a CuPy MemoryPointer held until the workspace
    and every piece are gone), handed out first-fit and coalesced when given back.
    ``fallback(size)``: the allocator for what does not fit; ``wrap(ptr, size, owner)``: a
    CuPy MemoryPointer over a piece (UnownedMemory keeping ``owner`` alive)."""

    def __init__(
        self,
        block: Any,
        size: int,
        fallback: Callable[[int], Any],
        wrap: Callable[[int, int, object], Any],
    ) -> None:
        self._block = block
        self._base = int(block.ptr)
        self.size = size
        self._fallback = fallback
        self._wrap = wrap
        self._lock = threading.Lock()
        #: Free ranges as sorted offsets and their lengths.
        self._starts: list[int] = [0] if size else []
        self._lengths: list[int] = [size] if size else []
        #: Requests served by ``fallback`` (too large for what was free).
        self.overflow = 0

    def malloc(self, nbytes: int) -> Any:
        """A CuPy MemoryPointer of at least ``nbytes``: a piece of the block if one fits."""
        size = max(ALIGN, -(-nbytes // ALIGN) * ALIGN)
        offset = self._take(size)
        if offset is None:
            with self._lock:
                self.overflow += 1
            return self._fallback(nbytes)
        return self._wrap(self._base + offset, size, _Piece(self, offset, size))

    def free_bytes(self) -> int:
        with self._lock:
            return sum(self._lengths)

    def _take(self, size: int) -> int | None:
        with self._lock:
            for i, length in enumerate(self._lengths):
                if length >= size:
                    offset = self._starts[i]
                    if length == size:
                        del self._starts[i], self._lengths[i]
                    else:
                        self._starts[i] += size
                        self._lengths[i] -= size
                    return offset
        return None

    def give(self, offset: int, size: int) -> None:
        """Return a piece (its owner's finalizer, from whichever thread drops it)."""
        with self._lock:
            i = bisect.bisect_left(self._starts, offset)
            self._starts.insert(i, offset)
            self._lengths.insert(i, size)
            if i + 1 < len(self._starts) and offset + size == self._starts[i + 1]:
                self._lengths[i] += self._lengths.pop(i + 1)
                del self._starts[i + 1]
            if i > 0 and self._starts[i - 1] + self._lengths[i - 1] == offset:
                self._lengths[i - 1] += self._lengths.pop(i)
                del self._starts[i]
