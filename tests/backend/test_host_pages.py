"""Host pages filled first and page-locked after (streamed keys and matrices), on a stand-in
CUDA runtime: the pages hold what was written, are locked once, and are unlocked before they
are unmapped, only when the last view goes. On a GPU: test_cuda_msm.py's streamed tests."""

from __future__ import annotations

import faulthandler
import gc
import mmap
import os
import random
import signal

import numpy as np
import pytest

from cuzk.backend.cuda.host_pages import HOST_REGISTER_PORTABLE, HostPages, pages_of


class Runtime:
    """Records hostRegister/hostUnregister calls, and whether the pages were still mapped."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int]] = []
        self.pages: HostPages | None = None

    def hostRegister(self, ptr: int, size: int, flags: int) -> None:
        self.calls.append(("register", ptr, size))
        assert flags == HOST_REGISTER_PORTABLE

    def hostUnregister(self, ptr: int) -> None:
        self.calls.append(("unregister", ptr, 0))


def test_pages_hold_what_is_written_and_lock_once() -> None:
    rng = np.random.default_rng(random.randrange(1 << 30))
    rows = int(rng.integers(1, 5000))
    data = rng.integers(0, 1 << 32, size=(rows, 24), dtype=np.uint32)
    a = HostPages(data.shape, np.uint32).array()
    assert a.shape == data.shape and a.dtype == np.uint32 and a.flags.writeable
    np.copyto(a, data)
    pages = pages_of(a[rows // 2 :])  # found through a view too
    assert pages is not None and not pages.locked
    rt = Runtime()
    pages.lock(rt)
    pages.lock(rt)
    assert rt.calls == [("register", a.ctypes.data, data.nbytes)]
    assert pages.locked
    np.testing.assert_array_equal(a, data)


def test_unlocked_only_after_the_last_view_goes_and_before_unmapping() -> None:
    rt = Runtime()
    pages = HostPages((1 << 20,), np.uint64)
    a = pages.array()
    a[:] = np.arange(a.size, dtype=np.uint64)
    ptr = pages.ptr
    pages.lock(rt)
    view = a[7:]
    mapping = pages._map
    del pages, a
    gc.collect()
    assert rt.calls == [("register", ptr, 8 << 20)]  # the view keeps the pages
    assert int(view[0]) == 7 and not mapping.closed
    del view
    gc.collect()
    assert rt.calls[-1] == ("unregister", ptr, 0)
    assert mapping.closed


def test_unlocked_pages_are_unmapped_without_unregistering() -> None:
    rt = Runtime()
    pages = HostPages((3, 5), np.uint32)
    mapping = pages._map
    del pages
    gc.collect()
    assert mapping.closed and rt.calls == []


def test_empty_pages_need_no_lock() -> None:
    rt = Runtime()
    pages = HostPages((0, 4), np.uint32)
    pages.lock(rt)
    assert pages.array().size == 0 and rt.calls == []


def test_plain_arrays_have_no_pages() -> None:
    assert pages_of(np.zeros(4)) is None


def test_a_refused_lock_leaves_the_pages_unlocked() -> None:
    class Refusing(Runtime):
        def hostRegister(self, ptr: int, size: int, flags: int) -> None:
            raise RuntimeError("cudaErrorMemoryAllocation: out of memory")

    pages = HostPages((16,), np.uint8)
    with pytest.raises(RuntimeError):
        pages.lock(Refusing())
    assert not pages.locked


@pytest.mark.skipif(not hasattr(mmap, "MADV_DONTFORK"), reason="no MADV_DONTFORK on this OS")
def test_pages_are_not_inherited_by_a_child_process() -> None:
    """Like the driver's own page-locked memory: a fork copies none of a key's pages (the
    child finds nothing mapped there)."""
    a = HostPages((1024,), np.uint64).array()
    a[:] = 7
    pid = os.fork()
    if pid == 0:  # the child: reading the pages faults
        # (quietly: pytest's fault handler would print "Fatal Python error" in the test log)
        faulthandler.disable()
        try:
            int(a[0])
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSEGV
    assert int(a[0]) == 7  # the parent keeps them
