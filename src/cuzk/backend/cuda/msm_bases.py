"""The bases MSMs run over, on one CUDA device: loaded, kept, streamed or precomputed.

:class:`MsmBases` keeps point vectors on the device (affine, Montgomery form, 12 × 32-bit limbs
per Fp element, the point at infinity as all zeros) keyed by :attr:`PointSet.key`: a key's file
streams through page-locked chunks to the device, where ``msm_from_zcash`` converts and checks
it, with no per-point work on the host. :class:`~cuzk.backend.cuda.msm.GpuMsm` runs MSMs over
them; this module owns what they run over, and the launcher both use (``msm.cu`` on the MSM
stream).

Precomputed bases (:meth:`MsmBases.precompute`, off unless asked for): a key's bases never
change, so K shifted copies 2^(c·j)·P (j < K) can be made once when it is loaded. Window w
then takes its points from copy w mod K into bucket row w div K: the additions are the same,
but only ⌈W/K⌉ rows of buckets are reduced, and fewer rows make a wider window pay.

Streamed bases (``preload(bases, stream_bytes=S)``): a vector too large for the device's
memory stays in page-locked host memory, converted once to the device layout (the zcash row and
the device row have the same size, so the file is read straight into that buffer and converted
in place through the device). Every MSM over it then runs in passes of S bytes of points
(:func:`pass_points`).
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuzk.backend.base import PointSet
from cuzk.backend.cuda.device import HIGH_PRIORITY, LOW_PRIORITY, Gpu
from cuzk.backend.cuda.points import FLAG_MASK, FP_WORDS, GROUPS
from cuzk.errors import BadInput

log = logging.getLogger(__name__)

KERNEL_FILE = "msm.cu"
FIXED_BASE_FILE = "fixed_base.cu"  # its affine conversion makes the precomputed copies
BLOCK = 128
#: Windows tried by :func:`choose_window`.
MIN_WINDOW, MAX_WINDOW = 5, 20
#: The widest window precomputed bases may be made for on request (``precompute(window=…)``);
#: :func:`choose_window` stays within MAX_WINDOW, which measured faster.
MAX_PRECOMPUTED_WINDOW = 24
#: Points per pass when making a copy of precomputed bases (bounds the XYZZ buffer).
COPY_PASS = 1 << 22
#: Points per thread in fixed_base.cu's affine conversion (one inversion each).
COPY_AFFINE_K = 32
#: Points uploaded and converted per step while loading a vector.
LOAD_BLOCK = 1 << 20
#: Bytes read from a key file per read call while loading streamed bases (several in parallel).
HOST_READ_BLOCK = 64 << 20
HOST_READ_THREADS = 8
#: ``msm_from_zcash``'s "no bad point" marker.
NO_BAD_POINT = (1 << 64) - 1


def choose_window(m: int, group: str = "g1", copies: int = 1) -> int:
    """The window c minimising W·(m + 500) + R·f·2^(c-1), W = ⌈256/c⌉ windows, R = ⌈W/K⌉
    bucket rows with K ``copies`` of precomputed bases (R = W without): one mixed addition
    per entry, f per bucket for the reduction (two full additions at a lower efficiency) and
    a fixed cost per window. f = 3 fits the window sweeps on the H200 for both groups with
    the paired Fp product (G1 2^20 → 16, 2^24 → 20; G2 2^22 → 16, where 19 was 6 % slower
    than 17); `group` stays in the signature for the next refit. With copies the windows stay
    at most MAX_WINDOW too: one row of c = 20 beat wider windows wherever both ran (session
    12: G1 2^24 111.7 ms at c = 20 against 113.0 at 22, 2^26 418 against 431 at 24; four
    copies at c = 24 gained nothing at 2^26), though the model alone would go wider."""
    f = 3.0
    best_c, best = MIN_WINDOW, math.inf
    for c in range(MIN_WINDOW, MAX_WINDOW + 1):
        nwin = -(-256 // c)
        rows = -(-nwin // max(1, copies))
        cost = nwin * (m + 500) + rows * f * (1 << (c - 1))
        if cost < best:
            best_c, best = c, cost
    return best_c


def window_rows(c: int, copies: int = 1) -> tuple[int, int, list[int]]:
    """(W, R, exponents) of a window-c MSM over ``copies`` copies of precomputed bases: W =
    ⌈256/c⌉ windows, R = ⌈W/K⌉ bucket rows (window w adds into row w div K, from the copy
    2^(c·(w mod K))·P), and row r's sum weighs 2^(c·K·r) in the result."""
    nwin = -(-256 // c)
    k = max(1, min(copies, nwin))
    rows = -(-nwin // k)
    return nwin, rows, [c * k * r for r in range(rows)]


def point_words(group: str) -> tuple[int, int]:
    """(uint32 words per affine point, per XYZZ point)."""
    nfp = GROUPS[group][0]
    return 2 * nfp * FP_WORDS, 4 * nfp * FP_WORDS


def _rows(bases: PointSet, start: int, stop: int) -> np.ndarray:
    """Points start…stop−1 of ``bases`` as file bytes, mapped for this chunk only (so a
    tens-of-GB vector never holds more than one chunk of its file in this process)."""
    size = GROUPS[bases.group][1]
    try:
        return np.memmap(bases.path, dtype=np.uint8, mode="r", offset=bases.offset + start * size,
                         shape=((stop - start) * size,))  # fmt: skip
    except (OSError, ValueError) as e:
        raise BadInput(
            f"cannot read {bases.group} points {start}…{stop - 1} from {bases.path}: {e}"
        ) from e


def _check_flags(bases: PointSet, first_bad: int) -> None:
    """BadInput naming the first point ``msm_from_zcash`` found with invalid flags, if any."""
    if first_bad != NO_BAD_POINT:
        flags = int(_rows(bases, first_bad, first_bad + 1)[0]) & FLAG_MASK
        raise BadInput(
            f"{bases.group} point {first_bad}: flags 0x{flags:02x} are invalid for an "
            "uncompressed encoding"
        )


@dataclass
class ResidentBases:
    """A loaded vector: on the device, or in page-locked host memory when streamed."""

    group: str
    count: int
    points: Any  # uint32 (copies·count, words): affine, Montgomery, infinity = zeros
    copies: int = 1  # copy j (rows j·count…) holds 2^(window·j)·P
    window: int = 0  # the c the copies were made for (0: no copies)
    stream_bytes: int = 0  # > 0: ``points`` is page-locked host memory, streamed in such passes

    @property
    def streamed(self) -> bool:
        return self.stream_bytes > 0


def pass_points(group: str, stream_bytes: int) -> int:
    """Points per pass of a vector streamed through buffers of ``stream_bytes`` (≥ 1)."""
    return max(1, stream_bytes // (point_words(group)[0] * 4))


def _read_into(path: str, offset: int, out: np.ndarray) -> None:
    """Fill ``out``'s bytes from ``path`` at ``offset``, blocks read in parallel (``preadv``
    releases the GIL; one thread reads a page-cached file at a few GB/s)."""
    flat = out.reshape(-1).view(np.uint8)
    blocks = range(0, flat.size, HOST_READ_BLOCK)

    def read(fd: int, start: int) -> None:
        view = flat[start : start + HOST_READ_BLOCK].data
        done = 0
        while done < len(view):
            got = os.preadv(fd, [view[done:]], offset + start + done)
            if got <= 0:
                raise BadInput(f"{path} ends before byte {offset + start + done + len(view)}")
            done += got

    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        raise BadInput(f"cannot read points from {path}: {e}") from e
    try:
        with ThreadPoolExecutor(HOST_READ_THREADS, thread_name_prefix="cuzk-read") as pool:
            for f in [pool.submit(read, fd, b) for b in blocks]:
                f.result()
    except OSError as e:
        raise BadInput(f"cannot read points from {path}: {e}") from e
    finally:
        os.close(fd)


@dataclass(frozen=True)
class MsmLane:
    """An MSM stream and the copy stream its streamed bases upload on. One worker thread
    runs each lane's MSMs (:class:`~cuzk.backend.cuda.msm.GpuMsm`); code running in it reads
    its lane's streams as ``_stream`` and ``_copy_stream``."""

    stream: Any
    copy_stream: Any


class MsmBases:
    """Point vectors on one CUDA device, and the MSM streams' kernel launcher."""

    def __init__(self, gpu: Gpu, lanes: int = 1) -> None:
        self.gpu = gpu
        self.device = gpu.device
        self._cp = gpu.cp
        # With two lanes the first (split MSMs: short passes, each ending in a host wait for
        # its count) goes before the second (the dense H MSM, whose kernels fill the device):
        # at equal priority each of the first lane's kernels queued behind the dense one's
        # thread blocks, and a pass's host round trips stretched (16 GiB, session 22: L's MSM
        # 0.9 s alone, ≈ 2 s beside H's). One lane keeps CUDA's default.
        priorities: list[int | None] = [None] if lanes == 1 else [HIGH_PRIORITY, LOW_PRIORITY]
        self._lanes = tuple(
            MsmLane(gpu.side_stream(priorities[i]), gpu.side_stream()) for i in range(lanes)
        )
        self._local = threading.local()  # .lane: the lane whose worker thread this is
        self._bases: dict[str, ResidentBases] = {}
        self._lock = threading.Lock()
        #: When a list, each launch appends (kernel name, CUDA event recorded after it); the
        #: benchmark's per-stage profile. None (the default) records nothing.
        self.trace: list | None = None
        #: Extra -D options for the kernels (tuning switches such as ACC_MIN_BLOCKS).
        self.defines: dict[str, object] = {}

    @property
    def _lane(self) -> MsmLane:
        """The calling thread's lane: its worker's, the first lane for any other thread
        (loading and precomputing bases, benchmarks)."""
        lane: MsmLane | None = getattr(self._local, "lane", None)
        return self._lanes[0] if lane is None else lane

    @property
    def _dense_lane(self) -> bool:
        """Whether the calling thread runs the second lane's MSMs (the dense H MSM beside the
        others, under a memory cap)."""
        return len(self._lanes) > 1 and self._lane is self._lanes[-1]

    @property
    def _stream(self) -> Any:
        """The calling thread's MSM stream."""
        return self._lane.stream

    @property
    def _copy_stream(self) -> Any:
        """The copy stream of the calling thread's lane (uploads of streamed bases)."""
        return self._lane.copy_stream

    def preload(self, bases: PointSet, stream_bytes: int = 0) -> None:
        """Load ``bases`` from its file into VRAM (once per key): the file's bytes stream
        through page-locked chunks to the device, where ``msm_from_zcash`` converts them — no
        per-point work on the host, one host wait per vector (its flags check). With
        ``stream_bytes`` > 0 the points go to page-locked host memory instead and every MSM
        streams them through two device buffers of that size (see the module docstring).
        A vector already loaded stays as it is (evict it first to change how)."""
        if bases.group not in GROUPS:
            raise BadInput(f"unknown group {bases.group!r}")
        with self._lock:
            if bases.key in self._bases:
                return
        if stream_bytes > 0:
            self._load_host(bases, stream_bytes)
            return
        cp = self._cp
        nfp = GROUPS[bases.group][0]
        n = bases.count
        words = point_words(bases.group)[0]
        with self.gpu.context(self._stream), self.gpu.guard(f"loading {n} {bases.group} points"):
            points = cp.empty((n, words), dtype=cp.uint32)
            bad = cp.full(1, NO_BAD_POINT, dtype=cp.uint64)
            for start in range(0, n, LOAD_BLOCK):
                stop = min(n, start + LOAD_BLOCK)
                raw = self.gpu.upload(_rows(bases, start, stop), stream=self._stream)
                elements = (stop - start) * 2 * nfp
                self._launch(bases.group, "msm_from_zcash", elements, raw, points[start:stop],
                             np.uint64(elements), np.uint64(start), bad)  # fmt: skip
            first_bad = int(bad.get(stream=self._stream)[0])  # waits for the whole vector
        _check_flags(bases, first_bad)
        self._adopt(bases, points)

    def _load_host(self, bases: PointSet, stream_bytes: int) -> None:
        """Streamed bases: the file read into page-locked host memory, then converted in place
        through the device a block at a time (upload, ``msm_from_zcash``, download)."""
        cp = self._cp
        nfp = GROUPS[bases.group][0]
        n, words = bases.count, point_words(bases.group)[0]
        t0 = time.perf_counter()
        host = self.gpu.host_pages((n, words), np.uint32)
        _read_into(bases.path, bases.offset, host)  # the reading threads fault the pages in
        t1 = time.perf_counter()
        self.gpu.page_lock(host)
        t2 = time.perf_counter()
        raw_rows = host.view(np.uint8).reshape(n, words * 4)
        with self.gpu.context(self._stream), self.gpu.guard(f"loading {n} {bases.group} points"):
            bad = cp.full(1, NO_BAD_POINT, dtype=cp.uint64)
            step = min(n, LOAD_BLOCK)
            raw = cp.empty((step, words * 4), dtype=cp.uint8)
            conv = cp.empty((step, words), dtype=cp.uint32)
            for start in range(0, n, step):
                stop = min(n, start + step)
                cnt = stop - start
                raw[:cnt].set(raw_rows[start:stop], stream=self._stream)
                elements = cnt * 2 * nfp
                self._launch(bases.group, "msm_from_zcash", elements, raw, conv,
                             np.uint64(elements), np.uint64(start), bad)  # fmt: skip
                conv[:cnt].get(stream=self._stream, out=host[start:stop])
            first_bad = int(bad.get(stream=self._stream)[0])  # waits for the whole vector
        _check_flags(bases, first_bad)
        t3 = time.perf_counter()
        gb = host.nbytes / 1e9
        # Where a key's load time goes (page-locking, the file, the device's conversion): a
        # cold load is the file's; the others do not depend on the page cache.
        log.info(
            "%s at byte %d: %d %s points, %.1f GB read in %.1f s (%.1f GB/s), page-locked in "
            "%.1f s, converted on the device in %.1f s", os.path.basename(bases.path),
            bases.offset, n, bases.group, gb, t1 - t0, gb / max(t1 - t0, 1e-9),
            t2 - t1, t3 - t2,
        )  # fmt: skip
        with self._lock:
            self._bases[bases.key] = ResidentBases(bases.group, n, host, stream_bytes=stream_bytes)

    def streamed(self, bases: PointSet) -> bool:
        """Whether loaded ``bases`` live in host memory and stream to the device per MSM."""
        res = self._bases.get(bases.key)
        return res is not None and res.streamed

    def _adopt(self, bases: PointSet, points: Any) -> None:
        """Register device points (uint32 (count, words), Montgomery) under ``bases.key``."""
        with self._lock:
            self._bases[bases.key] = ResidentBases(bases.group, bases.count, points)

    def evict(self, bases: PointSet) -> None:
        with self._lock:
            self._bases.pop(bases.key, None)

    def resident(self, bases: PointSet) -> Any:
        """The device array holding ``bases`` (after preload; without precomputed copies)."""
        res = self._bases[bases.key]
        return res.points[: res.count]

    def precomputed(self, bases: PointSet) -> tuple[int, int]:
        """(copies held, the window they were made for) of resident ``bases``; (1, 0) without
        copies."""
        res = self._bases[bases.key]
        return res.copies, res.window

    def precompute(self, bases: PointSet, copies: int, *, window: int | None = None) -> int:
        """Make ``copies`` shifted copies of ``bases`` in VRAM (copy j = 2^(c·j)·P; copy 0
        the bases themselves) for MSMs of window c over all of them: ``window``, else the
        one :func:`choose_window` picks for the full vector with that many copies. Every later
        MSM over ``bases`` uses them, and that window. At most one copy per window is made.
        Returns the number of copies held (1: none; ``copies`` ≤ 1 drops earlier ones).

        Costs ``copies`` times the vector's VRAM; making a copy is c doublings per point and
        one affine conversion (an inversion per 32 points), once per key.

        Raises:
            BadInput: the copies would need more than 2^31 point indices, or the window is out
                of range.
        """
        self.preload(bases)
        res = self._bases[bases.key]
        n = res.count
        if res.streamed:
            return 1  # streamed bases are uploaded per MSM: copies would multiply the traffic
        if copies <= 1:
            if res.copies > 1:
                self._adopt(bases, res.points[:n].copy())
            return 1
        c = window or choose_window(n, res.group, copies)
        if not 2 <= c <= MAX_PRECOMPUTED_WINDOW:
            raise BadInput(f"window {c} out of range for precomputed bases")
        k = min(copies, window_rows(c)[0])
        if res.copies == k and res.window == c:
            return k
        if k * n >= 1 << 31:
            raise BadInput(f"{k} copies of {n} points exceed the 2^31 point indices of an MSM")
        cp = self._cp
        u32 = np.uint32
        group = res.group
        words, xyzz_words = point_words(group)
        nfp = GROUPS[group][0]
        with self.gpu.context(self._stream), self.gpu.guard(f"{k} copies of {bases.key}"):
            points = cp.empty((k * n, words), dtype=cp.uint32)
            points[:n] = res.points[:n]
            step = min(n, COPY_PASS)
            xyzz = cp.empty((step, xyzz_words), dtype=cp.uint32)
            scratch = cp.empty((step, nfp * FP_WORDS), dtype=cp.uint32)
            for j in range(1, k):
                for start in range(0, n, step):
                    cnt = min(step, n - start)
                    src = points[(j - 1) * n + start : (j - 1) * n + start + cnt]
                    self._launch(group, "msm_shift_copy", cnt, src, xyzz, np.uint64(cnt), u32(c))
                    dst = points[j * n + start : j * n + start + cnt]
                    threads = -(-cnt // COPY_AFFINE_K)
                    self.gpu.launch(FIXED_BASE_FILE, f"fixed_base_affine_{group}",
                                    -(-threads // BLOCK), BLOCK,
                                    (xyzz, np.uint64(cnt), u32(COPY_AFFINE_K), scratch, dst,
                                     u32(0)), stream=self._stream)  # fmt: skip
                    self._mark("fixed_base_affine")
            self._stream.synchronize()
        with self._lock:
            self._bases[bases.key] = ResidentBases(group, n, points, k, c)
        return k

    # -- the MSM stream's launcher ---------------------------------------------------------------
    def _launch(self, group: str, name: str, threads: int, *args: Any) -> None:
        """Queue ``name`` on the MSM stream through the device's one launcher (same error
        mapping as every other kernel of this device)."""
        if threads <= 0:
            return
        defines = {**self.defines, "MSM_G2": int(group == "g2")}
        grid = (threads + BLOCK - 1) // BLOCK
        self.gpu.launch(KERNEL_FILE, name, grid, BLOCK, args, defines=defines, stream=self._stream)
        self._mark(name)

    def _mark(self, name: str) -> None:
        if self.trace is not None:
            event = self._cp.cuda.Event()
            event.record(self._stream)
            self.trace.append((name, event))
