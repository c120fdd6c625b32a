"""Take files out of the page cache, so the next read of them comes from the disk (a cold load).

    python bench/page_cache.py evict /var/tmp/cuzk32/keys/*.params
    python bench/page_cache.py show  /var/tmp/cuzk32/keys/*.params

``evict`` writes dirty pages back (fsync) and asks the kernel to drop each file's cached pages
(``posix_fadvise(DONTNEED)``): no root needed, unlike ``/proc/sys/vm/drop_caches``, and other
files stay cached. The kernel may keep pages that are mapped or in use, so both commands print
how much of each file is still resident (``mincore`` over a read-only mapping): a load timed
after ``evict`` is called cold only if that share is near zero.
"""

from __future__ import annotations

import argparse
import ctypes
import mmap
import os
import sys

_libc = ctypes.CDLL(None, use_errno=True)
_PAGE = os.sysconf("SC_PAGE_SIZE")
_WINDOW = 1 << 30  # map a GiB at a time, so a 60 GB file needs no 60 GB of address space at once


_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [
    ctypes.c_void_p,
    ctypes.c_size_t,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_long,
]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
_MAP_FAILED = ctypes.c_void_p(-1).value


def resident_bytes(path: str) -> tuple[int, int]:
    """(bytes of the file in the page cache, file size)."""
    size = os.path.getsize(path)
    resident = 0
    fd = os.open(path, os.O_RDONLY)
    try:
        for start in range(0, size, _WINDOW):
            length = min(_WINDOW, size - start)
            addr = _libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, start)
            if addr in (None, _MAP_FAILED):
                raise OSError(ctypes.get_errno(), f"mmap of {path} failed")
            try:
                vec = (ctypes.c_ubyte * ((length + _PAGE - 1) // _PAGE))()
                if _libc.mincore(addr, length, vec) != 0:
                    raise OSError(ctypes.get_errno(), f"mincore of {path} failed")
                resident += sum(1 for v in bytes(vec) if v & 1) * _PAGE
            finally:
                _libc.munmap(addr, length)
    finally:
        os.close(fd)
    return min(resident, size), size


def evict(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["evict", "show"])
    parser.add_argument("files", nargs="+")
    args = parser.parse_args(argv)
    total = cached = 0
    for path in args.files:
        if args.action == "evict":
            evict(path)
        res, size = resident_bytes(path)
        total += size
        cached += res
        print(f"{path}: {res / 2**30:.2f} of {size / 2**30:.2f} GiB in the page cache")
    if len(args.files) > 1:
        print(f"all: {cached / 2**30:.2f} of {total / 2**30:.2f} GiB in the page cache")
    return 0


if __name__ == "__main__":
    sys.exit(main())
