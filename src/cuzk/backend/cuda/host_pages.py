"""Host memory that is filled first and page-locked after: how streamed keys and matrices
reach page-locked memory.

``cudaHostAlloc`` hands out pages the driver faults in, zeroes and locks on one thread: on the
H100 host that took 29 s for porep-32g's 47.5 GB, against 2.3 s for reading the file from the
page cache. Here the pages are plain anonymous memory (asked for as huge pages where the kernel
offers them), so whatever fills them — eight threads reading the key file, a copy of a matrix —
faults them in as it writes, in parallel. ``cudaHostRegister`` then only locks pages that
already exist. The array stays page-locked until its last view goes; then the pages are
unlocked and unmapped, in that order.

The CUDA runtime is passed in (``hostRegister``/``hostUnregister``, as CuPy's runtime module
has them), so the bookkeeping runs without a GPU.
"""

from __future__ import annotations

import ctypes
import mmap
import threading
import weakref
from typing import Any

import numpy as np

#: ``cudaHostRegisterPortable``: the pages count as page-locked for every device, like the
#: portable ``cudaHostAlloc`` they replace (one host copy of a key serves each GPU).
HOST_REGISTER_PORTABLE = 1


class HostPages:
    """Anonymous host pages behind one numpy array (its ``base``), page-locked on request.

    Arrays built from :attr:`__array_interface__` keep this object as their base, and so do
    their views; the pages are given back only when the last of them goes."""

    def __init__(self, shape: tuple[int, ...], dtype: Any) -> None:
        self.dtype = np.dtype(dtype)
        self.shape = tuple(int(s) for s in shape)
        self.nbytes = int(np.prod(self.shape)) * self.dtype.itemsize
        self._map = mmap.mmap(-1, max(self.nbytes, 1), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        # Huge pages: fewer faults while filling and fewer pages to lock (a kernel without
        # transparent huge pages keeps 4 KiB pages, which work the same). Not inherited by a
        # child process, as the driver's own page-locked memory is not: a fork would
        # otherwise have to copy the locked pages.
        for advice in ("MADV_HUGEPAGE", "MADV_DONTFORK"):
            if hasattr(mmap, advice):
                try:
                    self._map.madvise(getattr(mmap, advice))
                except OSError:
                    pass
        anchor = ctypes.c_char.from_buffer(self._map)
        self.ptr = ctypes.addressof(anchor)
        del anchor  # an export of the map would keep it from being closed
        self._lock = threading.Lock()
        #: [the runtime that locked the pages, or None]: shared with the finalizer.
        self._locked_by: list[Any] = [None]
        weakref.finalize(self, _release, self._map, self.ptr, self._locked_by)
        self.__array_interface__ = {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.ptr, False),
            "version": 3,
        }

    def array(self) -> np.ndarray:
        """The pages as an array of ``shape`` and ``dtype`` (its base is this object)."""
        return np.asarray(self)

    @property
    def locked(self) -> bool:
        return self._locked_by[0] is not None

    def lock(self, runtime: Any) -> None:
        """Page-lock the pages (``runtime.hostRegister``); once, whoever asks again."""
        with self._lock:
            if self._locked_by[0] is not None or self.nbytes == 0:
                return
            runtime.hostRegister(self.ptr, self.nbytes, HOST_REGISTER_PORTABLE)
            self._locked_by[0] = runtime


def _release(pages: mmap.mmap, ptr: int, locked_by: list[Any]) -> None:
    """Unlock (if locked), then unmap: the driver must let go of pages before they vanish."""
    if locked_by[0] is not None:
        try:
            locked_by[0].hostUnregister(ptr)
        except Exception:  # the CUDA context may be gone at interpreter exit
            pass
    pages.close()


def pages_of(a: np.ndarray) -> HostPages | None:
    """The :class:`HostPages` an array (or a view of one) lives in, if any."""
    base: Any = a
    while base is not None:
        if isinstance(base, HostPages):
            return base
        base = getattr(base, "base", None)
    return None
