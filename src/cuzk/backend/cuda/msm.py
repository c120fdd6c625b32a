"""Multi-scalar multiplication on one CUDA device: Pippenger over bases kept or streamed.

:class:`GpuMsm` runs MSMs over point vectors kept on the device with the kernels of ``msm.cu``:

1. scalars (FrVec rows, Montgomery form) converted to canonical on the device, cut into signed
   c-bit digits, counted per (window, |digit|) bucket and scattered into bucket order (a
   counting sort: histogram, exclusive scan, scatter);
2. fixed-length chunks of the sorted entries added into XYZZ partial bucket sums (balanced
   whatever the bucket sizes), then each bucket's partials summed by a tree;
3. per window Σ (b+1)·S_b by running sums over groups of 32 buckets, level by level (the group
   totals are the next level's buckets, the level's weight applied by doublings), all levels'
   results tree-reduced to one point per window;
4. on the host, Σ 2^(c·w)·S_w by Horner's rule on py-arkworks points.

The bases are what its :class:`~cuzk.backend.cuda.msm_bases.MsmBases` side keeps: resident,
precomputed in shifted copies, or streamed from page-locked host memory. An MSM over streamed
bases runs in *passes* of S bytes of points: two device buffers, filled on a copy stream, so the
upload of pass i+1 overlaps the bucket work of pass i; each pass sorts and accumulates its
slice of the points into buckets carried across the passes, in place
(:class:`CarriedBuckets`), whose windows are reduced once, after the last pass. The same
passes bound the scratch of a resident MSM when ``max_pass_points`` is set (under a device
memory cap).

A GpuMsm runs on its device's :class:`~cuzk.backend.cuda.device.Gpu` (the one runtime per
device: launcher, error mapping, kernel cache) on side streams of its own, so MSMs overlap the
compute stream's H pipeline. Each *lane* (:class:`~cuzk.backend.cuda.msm_bases.MsmLane`) is an
MSM stream with its own copy stream and one worker thread that queues its MSMs in order. With
two lanes, plain MSMs (dense scalars: the H quotient's) run on the second, beside the split
MSMs of the first: over streamed bases a split MSM of mostly 0/1 scalars waits on the bus while
a dense one keeps the SMs busy, so each hides the other (``lanes=2`` under a memory cap). An
MSM over scalars the compute stream is still making waits for an event recorded there
(``after``), not for the host. A future resolves when its per-window results have been copied
back (the only host wait).
"""

from __future__ import annotations

import collections
import contextlib
import logging
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuzk.backend.base import MIN_ONES_SHARE_FOR_SPLIT, MsmPlan, PointSet, check_fr_vec
from cuzk.backend.cuda import msm_ba
from cuzk.backend.cuda.device import Gpu, Relay
from cuzk.backend.cuda.fr_vec import GpuFr
from cuzk.backend.cuda.memory import LARGE_BYTES, memory_log, size_class
from cuzk.backend.cuda.msm_bases import (
    BLOCK,
    MAX_PRECOMPUTED_WINDOW,
    MsmBases,
    MsmLane,
    ResidentBases,
    choose_window,
    pass_points,
    point_words,
    window_rows,
)
from cuzk.backend.cuda.pass_scalars import PassScalars, planned, sliced
from cuzk.backend.cuda.points import FLAG_INFINITY, FP_WORDS, GROUPS, xyzz_to_zcash
from cuzk.backend.cuda.workspace import Workspace
from cuzk.errors import BadInput

BA_KERNEL_FILE = "msm_ba.cu"
#: A second lane's passes over streamed bases use buffers of at most this size (a 16 GiB
#: cap's plan for porep-32g): its MSM runs beside the first lane's, in what the H quotient
#: left of the kernels' working set once a, b and c are gone (≈ 4.4 GiB at 2^27; two such
#: buffers, a pass's sorted entries and partial sums and the carried buckets take ≈ 2.8).
DENSE_LANE_STREAM_BYTES = 9 << 26
#: The second lane's MSMs over device scalars of at least this size run in a workspace taken
#: on the compute stream (:meth:`GpuMsm._workspace`): the H quotient's (4 GiB at 2^27).
WORKSPACE_MIN_BYTES = LARGE_BYTES
#: The second lane's carried buckets may take this many bytes of its workspace: its MSM in
#: passes then runs with the window its whole count of scalars would choose, narrowed until
#: they fit (H at 2^27: c = 20, 13 windows instead of 14, 1.31 GB of buckets). The room comes
#: from the buckets being carried in place: a pass's partial sums are then one slot a chunk
#: (0.2 GB with DENSE_LANE_CHUNKS), not one a bucket (0.80 GB at c = 19, 1.41 GB at 20, which
#: overflowed the 16 GiB plan in session 32), so H's workspace holds ≈ 3.4 GB of its 4.29 at
#: c = 20 in place.
#: The first lane keeps the first pass's window: its scratch under a cap has no such room
#: (cuzk.engine.budget.CAPPED_KERNEL_SCRATCH).
DENSE_CARRIED_BYTES = 1_400_000_000
#: The accumulation aims at about this many chunks (threads) per MSM.
TARGET_CHUNKS = 1 << 19
#: ...and the second lane's at this many: its blocks then last ≈ 1.6 ms instead of ≈ 3.3 (H's
#: passes at c = 20: 104 entries a thread, not 208). A started block runs to its end whatever
#: its stream's priority, so each kernel the first lane launches while H accumulates waits for
#: H's blocks to end before it gets an SM (session 33: the first lane's planned passes, chains
#: of ≈ 15 dependent kernels, took 2.5–8 times their time alone beside H). Fewer chunks cost H
#: less (fewer partial sums, a smaller segment tree): porep-32g at 16 GiB on an H100 (session
#: 35; two runs at 2^21 and 2^20, one at 2^19) had a partition's kernels take 1.97–1.99 s at
#: 2^21, 1.92–1.94 at 2^20 and 1.93 at 2^19, where the first lane still ends ≈ 0.4 s before H
#: but A slows. In place the partial sums take one slot a chunk: 0.20 GB of H's workspace.
DENSE_LANE_CHUNKS = 1 << 20
MIN_CHUNK = 16
#: Partial sums of one bucket added per thread and tree level.
SEG_FANIN = 8
#: Buckets per thread in the bucket reduction (a power of two), at most...
GROUP_SIZE = 32
#: ...and at least this many; between the two, a level's groups shrink until it has about
#: REDUCE_THREADS threads (two blocks of 128 per SM: what a G2 reduction keeps resident).
MIN_GROUP = 8
REDUCE_THREADS = 1 << 15
#: Points summed per thread by the batch-addition and tree-reduction kernels.
SUM_FANIN = 8
ONES_FANIN = 32
#: An MSM in passes reduces each pass's sum of its scalar-one points only down to this many
#: partial sums, and adds every pass's partial sums once, after the last pass: each level of
#: the tree is a launch that waits for the one before, and the last ones are a few threads
#: each (a PoRep A pass's 2.6 M ones: 7 launches, now 3, and 5 once for all 21 passes). Beside
#: H a launch of the first lane waits for an SM (bench/NOTES.md, session 33).
ONES_TAIL_ROWS = 2048


def reduction_levels(
    nb: int, rows: int, min_threads: int = REDUCE_THREADS
) -> list[tuple[int, int, int]]:
    """The levels (width, group size, groups) of the bucket reduction of ``rows`` windows of
    ``nb`` buckets: level l+1's buckets are level l's group totals 1..groups-1.

    Each thread of a level runs a chain of 2·gs dependent additions plus one doubling per bit
    of the earlier levels' weights, so the level's time is the longer of that chain and its
    total work spread over the device. With few buckets (small MSMs, and every level after
    the first) the chain is the cost: G2 2^20's reduction of 16 × 2^15 buckets took 9.3 of
    39.6 ms on the H200 with 32-bucket groups (later levels of 512 and 16 threads; ≈ 190
    dependent additions in all, so ≈ 50 µs each). Groups shrink (never below MIN_GROUP, whose
    extra levels' doublings would cost more than they save) until a level has about
    ``min_threads`` threads; ``min_threads = 0`` keeps GROUP_SIZE throughout."""
    levels, width = [], nb
    while width > 0:
        gs = GROUP_SIZE
        while gs > MIN_GROUP and rows * -(-width // gs) < min_threads:
            gs //= 2
        gs = min(gs, width)
        ngroups = -(-width // gs)
        levels.append((width, gs, ngroups))
        width = ngroups - 1
    return levels


def _device_u32(cp: Any, indices: Any) -> Any:
    """Index array (host or device) as a uint32 array on the current device."""
    if isinstance(indices, np.ndarray):
        return cp.asarray(indices.astype(np.uint32))
    return indices.astype(cp.uint32)


def _edges(n: int, step: int) -> np.ndarray:
    """Pass boundaries over ``n`` points, ``step`` at a time."""
    return np.array([*range(0, n, step), n], dtype=np.int64)


def _horner(terms: list[tuple[int, Any]], identity: Any) -> Any:
    """Σ 2^e·P over (e, P) pairs: max(e) doublings in all."""
    terms = sorted(terms, key=lambda t: -t[0])
    acc, e_cur = identity, terms[0][0] if terms else 0
    for e, point in terms:
        while e_cur > e:
            acc = acc + acc
            e_cur -= 1
        acc = acc + point
    while e_cur > 0:
        acc = acc + acc
        e_cur -= 1
    return acc


def carried_window(first: int, whole: int, group: str, room: int) -> int:
    """The window of an MSM's carried buckets: ``first`` (the first pass's own choice) widened
    towards what the whole MSM's ``whole`` scalars would choose, as far as the buckets of all
    its windows (XYZZ points of ``group``) fit in ``room`` bytes; never narrower than
    ``first``. One window fewer is one addition fewer per scalar in every pass."""
    words = point_words(group)[1]
    wide = choose_window(whole, group)
    while wide > first and (window_rows(wide)[1] << (wide - 1)) * words * 4 > room:
        wide -= 1
    return max(first, wide)


@dataclass
class CarriedBuckets:
    """The buckets of an MSM run in passes, carried from pass to pass: every pass sorts and
    accumulates its own points with window ``c`` into ``acc`` in place (XYZZ, (rows·2^(c−1),
    words), zeros = infinity; each bucket's first partial sum *is* its carried sum, and a pass
    needs partial-sum slots only for buckets spanning several chunks, at most one a chunk);
    the windows are reduced once, after the last pass.
    Measured on the H200 (bench/streamed_msm.py, G1 2^27 in 22 passes): the per-pass bucket
    reduction was 150 of 1,262 ms dense and 43 of 245 ms for a PoRep-like witness."""

    c: int
    acc: Any


class GpuMsm(MsmBases):
    """MSMs over G1/G2 bases kept on one CUDA device; see the module docstring."""

    def __init__(self, gpu: Gpu, *, batch_affine: bool = False, lanes: int = 1) -> None:
        """``lanes``: 1, or 2 to run plain MSMs beside the split ones (module docstring)."""
        if lanes not in (1, 2):
            raise BadInput(f"an MSM runner has 1 or 2 lanes, not {lanes}")
        super().__init__(gpu, lanes)
        #: Bucket sums by batch-affine rounds (msm_ba.cu) instead of XYZZ chunks; off by
        #: default until measured on a device (bench/gpu_msm.py --batch-affine).
        self.batch_affine = batch_affine
        self._fr = GpuFr(gpu)  # classifies a planned MSM's scalars, pass by pass
        #: With a device memory cap: a resident MSM over more points runs in passes of this
        #: many (its scratch, ≈ 52 B per point and window, stays bounded); None: one pass.
        self.max_pass_points: int | None = None
        self._executors = [
            ThreadPoolExecutor(
                1,
                thread_name_prefix=f"cuzk-gpu{gpu.device}-msm{'-dense' if i else ''}",
                initializer=self._enter_lane,
                initargs=(lane,),
            )
            for i, lane in enumerate(self._lanes)
        ]
        #: MSMs run in a workspace (:meth:`_workspace`), and their requests that did not fit.
        self.workspaces = 0
        self.workspace_overflow = 0
        #: Threads the bucket reduction aims at per level (:func:`reduction_levels`); 0 keeps
        #: GROUP_SIZE buckets per thread (the benchmark compares the two).
        self.reduce_threads = REDUCE_THREADS

    # -- MSM -----------------------------------------------------------------------------------
    def msm(
        self, bases: PointSet, scalars: Any, *, window: int | None = None, after: Any = None
    ) -> Future:
        """Σ scalars[i]·bases[i] as a py-arkworks point. ``scalars``: an FrVec, or a CuPy
        (n, 4) uint64 array of the same Montgomery rows on this device, complete once the
        event ``after`` (if given) has passed."""
        self._check(bases, scalars)
        self.preload(bases)
        self._window_for(self._bases[bases.key], len(scalars), window)  # a bad one fails here
        dense = self._executors[-1]  # the second lane's, when there is one
        return dense.submit(self._run, bases, scalars, None, None, window, after)

    def split_msm(
        self,
        bases: PointSet,
        scalars: Any,
        *,
        window: int | None = None,
        plan: tuple[Any, Any] | None = None,
        after: Any = None,
    ) -> Future:
        """The same sum with the scalar-one points added by batch addition and an MSM over
        the other non-zero scalars only (one MSM over all non-zero scalars when ones are rare).

        ``scalars``: a host FrVec (planned here with :class:`MsmPlan`), or a device array of
        this GPU with its ``plan`` — (indices of ones, indices of the other non-zero scalars)
        as device int arrays (``GpuFr.split_plan``) — so that neither the scalars nor the plan
        cross PCIe; both complete once the event ``after`` (if given) has passed.
        """
        self._check(bases, scalars)
        if plan is None:
            if not isinstance(scalars, np.ndarray):
                scalars = self._cp.asnumpy(scalars)
            host_plan = MsmPlan.of(scalars)
            ones, tail = host_plan.ones, host_plan.tail
        else:
            ones, tail = plan
        self.preload(bases)
        self._window_for(self._bases[bases.key], len(scalars), window)  # a bad one fails here
        if len(ones) < MIN_ONES_SHARE_FOR_SPLIT * max(1, len(scalars)):
            if plan is None:
                ones, tail = ones[:0], host_plan.nonzero()
            else:  # the device plan's disjoint sorted sets, merged the same way there
                cp = self._cp
                with self.gpu.context():  # the compute stream, where the plan was made
                    ones, tail = ones[:0], cp.sort(cp.concatenate((ones, tail)))
                after = self.gpu.record()
        return self._executors[0].submit(self._run, bases, scalars, ones, tail, window, after)

    def split_msm_planned(
        self,
        bases: PointSet,
        source: Any,
        rows: Any = None,
        *,
        window: int | None = None,
        after: Any = None,
    ) -> Future:
        """The split MSM of the scalars source[rows] (``rows``: host indices, one per point,
        best page-locked) or of ``source`` itself, planned pass by pass on the device
        (:func:`~cuzk.backend.cuda.pass_scalars.planned`): under a memory cap neither the
        gathered scalars, a plan nor the row indices of the whole MSM are on the device (for a
        PoRep partition: B's 1.2 GiB of scalars, 0.8 GiB of L, A and B plans, 0.65 GiB of A and
        B rows). ``source`` is a device FrVec of this GPU, complete once the event ``after``
        has passed."""
        check_fr_vec(source, "scalars")
        count = int(source.shape[0]) if rows is None else int(rows.shape[0])
        if count != bases.count:
            raise BadInput(f"{count} scalars for {bases.count} points")
        self.preload(bases)
        self._window_for(self._bases[bases.key], count, window)  # a bad one fails here
        return self._executors[0].submit(self._run_planned, bases, source, rows, window, after)

    def _enter_lane(self, lane: MsmLane) -> None:
        """A lane's worker thread, once: its MSMs run on that lane's streams."""
        self._local.lane = lane

    @contextlib.contextmanager
    def _running(self, bases: PointSet, after: Any) -> Iterator[ResidentBases]:
        """An MSM's run on its lane's MSM stream (the lane's worker thread): its resident
        bases, once the event ``after`` has passed, with CUDA errors mapped for the bases it
        names."""
        res = self._bases.get(bases.key)
        if res is None:
            raise BadInput(f"{bases.key} was evicted before its MSM ran")
        with self.gpu.context(self._stream), self.gpu.guard(f"{res.group} MSM of {bases.key}"):
            if after is not None:
                self._stream.wait_event(after)
            yield res

    def _run_planned(
        self, bases: PointSet, source: Any, rows: Any, window: int | None, after: Any
    ) -> Any:
        with self._running(bases, after) as res:
            edges = _edges(res.count, self._pass_size(res))
            scalars = planned(self.gpu, self._fr, self._stream, source, rows)
            parts, exponents = self._run_passes(res, edges, window, scalars)
            host = self._download(parts)  # inside the guard: queued kernels' errors show here
        return self._finish(res.group, host, exponents)

    def close(self) -> None:
        for executor in self._executors:
            executor.shutdown(wait=True)
        with self._lock:
            self._bases.clear()

    def __enter__(self) -> GpuMsm:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def _check(bases: PointSet, scalars: Any) -> None:
        check_fr_vec(scalars, "scalars", bases.count)

    def _run(
        self,
        bases: PointSet,
        scalars: Any,
        ones: np.ndarray | None,
        tail: np.ndarray | None,
        window: int | None,
        after: Any = None,
    ) -> Any:
        cp = self._cp
        with self._running(bases, after) as res, self._workspace(scalars):
            parts: list[Any] = []
            exponents: list[int] = []
            # Host scalars: one upload of all rows (one DMA when the caller's buffer is
            # page-locked); the tail is gathered on the device, not on the host.
            d_all = scalars if not isinstance(scalars, np.ndarray) else cp.asarray(scalars)
            step = self._pass_size(res)
            if res.streamed or step < res.count:
                edges = _edges(res.count, step)
                slices = sliced(cp, self._stream, d_all, ones, tail, edges)
                parts, exponents = self._run_passes(res, edges, window, slices)
            else:
                if tail is None:
                    d_scalars, gather = d_all, None
                else:
                    gather = _device_u32(cp, tail)
                    d_scalars = d_all[gather]
                if len(d_scalars):
                    terms, exps = self.enqueue_windows(res, d_scalars, gather, window)
                    parts.append(terms)
                    exponents += exps
                if ones is not None and len(ones):
                    parts.append(self.enqueue_sum(res, _device_u32(cp, ones)))
                    exponents.append(0)
            host = self._download(parts)  # inside the guard: queued kernels' errors show here
        return self._finish(res.group, host, exponents)

    @contextlib.contextmanager
    def _workspace(self, scalars: Any) -> Iterator[None]:
        """In the second lane (under a cap), with device scalars of at least
        :data:`WORKSPACE_MIN_BYTES`: the MSM's own requests carved from one block of the
        scalars' size class, taken and given back on the compute stream
        (:mod:`cuzk.backend.cuda.workspace`: why). Elsewhere nothing changes."""
        cp = self._cp
        if not self._dense_lane or isinstance(scalars, np.ndarray):
            yield
            return
        nbytes = int(scalars.nbytes)
        if nbytes < WORKSPACE_MIN_BYTES:
            yield
            return
        size = size_class(nbytes)
        fallback = cp.cuda.get_allocator()  # the process's (the capped allocator)
        try:
            with self.gpu.context():  # the compute stream: its cache gives the block and takes it
                block = fallback(size)
                taken = self.gpu.record()
        except cp.cuda.memory.OutOfMemoryError:  # no room for a whole block: pieces, as before
            block = None
        if block is None:
            yield
            return
        self._stream.wait_event(taken)  # nothing queued there still reads the block
        device = self.device

        def wrap(ptr: int, n: int, owner: object) -> Any:
            return cp.cuda.MemoryPointer(cp.cuda.UnownedMemory(ptr, n, owner, device), 0)

        workspace = Workspace(block, size, fallback, wrap)
        self.workspaces += 1
        try:
            with cp.cuda.using_allocator(workspace.malloc):
                yield
        finally:
            # The block goes back to the compute stream's cache once its pieces are dropped:
            # every reader (this lane's kernels, its copy stream's uploads) must be done.
            with contextlib.suppress(Exception):  # an error of queued work shows elsewhere
                self._stream.synchronize()
                self._copy_stream.synchronize()
            self.workspace_overflow += workspace.overflow
            if memory_log.isEnabledFor(logging.DEBUG):
                memory_log.debug(
                    "H workspace of %.2f GiB: %d requests past it", size / 2**30, workspace.overflow
                )

    def _download(self, parts: list[Any]) -> np.ndarray | None:
        """The terms the passes queued, on the host (waits for the MSM stream)."""
        if not parts:
            return None
        return self._cp.asnumpy(self._cp.concatenate(parts), stream=self._stream)

    def _pass_size(self, res: ResidentBases) -> int:
        """Points per pass of an MSM over ``res``: the stream buffer's for streamed bases (at
        most :data:`DENSE_LANE_STREAM_BYTES` in a second lane), ``max_pass_points`` for
        resident ones without copies (all of them otherwise)."""
        if res.streamed:
            size = res.stream_bytes
            if self._dense_lane:
                size = min(size, DENSE_LANE_STREAM_BYTES)
            return pass_points(res.group, size)
        if res.copies == 1 and self.max_pass_points:
            return self.max_pass_points
        return max(1, res.count)

    def _run_passes(
        self, res: ResidentBases, edges: np.ndarray, window: int | None, scalars: PassScalars
    ) -> tuple[list[Any], list[int]]:
        """Launch the MSM in passes over the slices of points between ``edges`` (current
        stream: the MSM stream), each with the scalars ``scalars(k, lo, hi)`` gives (see
        :data:`~cuzk.backend.cuda.pass_scalars.PassScalars`). With more than one pass the
        buckets are carried from pass to pass and reduced once at the end. Returns the terms
        and exponents (the carried windows', each pass's sum of its scalar-one points), summed
        on the host.

        Streamed bases are uploaded into two device buffers on the copy stream: pass i's
        upload waits for the kernels of pass i − 2 (the buffer's last reader), and pass i's
        kernels wait for its upload. Pass i + 1's upload is queued before pass i's scalars
        are planned (a host wait for their count), and pass i waits for its own upload only
        after that plan: uploads run back to back instead of each waiting for the host."""
        cp = self._cp
        n = res.count
        buffers: list[Any] = []
        relay = None
        if res.streamed:
            # Both buffers before any pass's scratch (see Relay: the slots' memory may come
            # from what this stream freed while its kernels still read it — a buffer allocated
            # after pass 0's scratch was freed, written at once by the copy stream, corrupted
            # pass 0: points off the curve and illegal instructions in the GPU test).
            width = res.points.shape[1]
            step = int(np.max(np.diff(edges))) if len(edges) > 1 else 0
            buffers = [cp.empty((min(step, n), width), dtype=cp.uint32) for _ in range(2)]
            relay = Relay(self.gpu, self._copy_stream, self._stream)

        def upload(j: int) -> None:  # pass j's points into buffer j % 2
            a, b = int(edges[j]), int(edges[j + 1])
            assert relay is not None
            relay.upload(j, [(buffers[j % 2][: b - a], res.points[a:b])])

        passes = len(edges) - 1
        parts: list[Any] = []
        exponents: list[int] = []
        carry: CarriedBuckets | None = None
        ones_rows: list[Any] = []  # each pass's partial sums of its scalar-one points
        # The second lane never waits on the host otherwise, so it would queue all its
        # passes at once (H at 16 GiB: 22, ≈ 330 kernels and their uploads), and in session
        # 24's trace one of the first lane's L, B₁, B₂ then ended only with H in every
        # partition, however short alone: work queued behind all of H's. There pass k is
        # queued once pass k − 2 is done: two passes in flight.
        in_flight: collections.deque[Any] = collections.deque()
        for k in range(passes):
            lo, hi = int(edges[k]), int(edges[k + 1])
            if self._dense_lane and len(in_flight) == 2:
                with self.gpu.guard("waiting for an earlier pass"):
                    in_flight.popleft().synchronize()
            if relay is not None:
                points = buffers[k % 2][: hi - lo]
                if k == 0:
                    upload(0)
                if k + 1 < passes:
                    upload(k + 1)  # its buffer's last reader, pass k − 1, is queued
            else:
                points = res.points[lo:hi]
            view = ResidentBases(res.group, hi - lo, points)
            d_scalars, gather, ones = scalars(k, lo, hi)
            if relay is not None:
                relay.wait(k)
            if len(d_scalars):
                if carry is None and len(edges) > 2 and not self.batch_affine:
                    whole = len(d_scalars) * n // (hi - lo)  # the pass's share, scaled
                    carry = self._carried(view, len(d_scalars), whole, window)
                terms, exps = self.enqueue_windows(view, d_scalars, gather, window, carry)
                if carry is None:
                    parts.append(terms)
                    exponents += exps
            if ones is not None and len(ones):
                ones_rows.append(self.enqueue_sum(view, ones, keep=ONES_TAIL_ROWS))
            if relay is not None:
                relay.release(k)
            if self._dense_lane:
                in_flight.append(self.gpu.record(self._stream))
        if ones_rows:
            tail = cp.concatenate(ones_rows) if len(ones_rows) > 1 else ones_rows[0]
            parts.append(self._sum_rows(res.group, tail, 1, int(tail.shape[0])))
            exponents.append(0)
        if carry is not None:
            nwin, rows, exps = window_rows(carry.c)
            nb = 1 << (carry.c - 1)
            # The buckets are read directly (no segment table: acc stands in for its pointer).
            acc = carry.acc
            parts.append(self._reduce_windows(res.group, acc, nb, 0, 0, acc, rows, nb))
            exponents += exps
        return parts, exponents

    def _carried(
        self, view: ResidentBases, m: int, whole: int, window: int | None
    ) -> CarriedBuckets:
        """Empty carried buckets for an MSM in passes whose first pass has ``m`` scalars and
        the whole MSM about ``whole``. The window is ``window`` if given, else the first pass's
        choice, widened on the second lane by :func:`carried_window` within
        :data:`DENSE_CARRIED_BYTES` (the buckets cost their bytes, read and written a pass)."""
        c = self._window_for(view, m, window)
        if window is None and self._dense_lane:
            c = carried_window(c, whole, view.group, DENSE_CARRIED_BYTES)
        rows = window_rows(c)[1]
        words = point_words(view.group)[1]
        return CarriedBuckets(c, self._cp.zeros((rows << (c - 1), words), dtype=self._cp.uint32))

    def _window_for(self, res: ResidentBases, m: int, window: int | None) -> int:
        """The window an MSM of ``m`` scalars over ``res`` runs with: the copies' own when
        precomputed (BadInput for another), else ``window`` or :func:`choose_window`'s."""
        if res.copies > 1:
            if window not in (None, res.window):
                raise BadInput(f"these bases are precomputed for window {res.window}, not {window}")
            if self.batch_affine:
                raise BadInput("batch-affine buckets do not take precomputed bases")
            c = res.window
        else:
            c = window or choose_window(m, res.group)
        if not 2 <= c <= MAX_PRECOMPUTED_WINDOW:
            raise BadInput(f"window {c} out of range")
        return c

    def enqueue_windows(
        self,
        res: ResidentBases,
        d_scalars: Any,
        gather: Any = None,
        window: int | None = None,
        carry: CarriedBuckets | None = None,
    ) -> tuple[Any, list[int]]:
        """Launch the MSM of device scalars ((m, 4) uint64 Montgomery rows; point i is
        gather[i] if given) on the current stream. Returns (terms, exponents): the MSM is
        Σ 2^exponents[k]·terms[k] over the XYZZ rows of the device array ``terms``. With
        ``carry`` the bucket sums are written into the carried buckets instead (with their
        window) and nothing is returned: (None, [])."""
        cp = self._cp
        u32 = np.uint32
        group = res.group
        m = int(d_scalars.shape[0])
        c = carry.c if carry is not None else self._window_for(res, m, window)
        nwin, rows, exponents = window_rows(c, res.copies)
        nb = 1 << (c - 1)
        nkeys = rows * nb
        xyzz_words = point_words(group)[1]
        copy_args = (u32(res.copies), u32(res.count))
        # Counting sort of the (row, bucket) keys.
        counts = cp.zeros(nkeys + 1, dtype=cp.uint32)
        g = gather if gather is not None else counts  # any pointer when unused
        use_gather = u32(gather is not None)
        self._launch(group, "msm_digits", m, d_scalars, u32(m), u32(c), u32(nwin), g,
                     use_gather, counts, counts, u32(0), *copy_args)  # fmt: skip
        offsets = cp.zeros(nkeys + 1, dtype=cp.uint32)
        offsets[1:] = cp.cumsum(counts[:nkeys], dtype=cp.uint32)
        cursor = offsets[:nkeys].copy()
        self._mark("scan")
        total_max = m * nwin
        entries = cp.empty(total_max, dtype=cp.uint32)
        self._launch(group, "msm_digits", m, d_scalars, u32(m), u32(c), u32(nwin), g,
                     use_gather, cursor, entries, u32(1), *copy_args)  # fmt: skip
        if self.batch_affine:
            dense = self._ba_buckets(res, entries, offsets, nwin, nb, m)
            del entries, cursor
            windows = self._reduce_windows(group, dense, nb, 0, 0, offsets, nwin, nb)
            return windows, [c * w for w in range(nwin)]
        # Chunks of the sorted entries and the partial-sum slots of every bucket: one per chunk
        # it spans, or in place (carried buckets) one per chunk past its first, its first
        # slot being the carried bucket (msm.cu's slot_of).
        in_place = carry is not None
        target = DENSE_LANE_CHUNKS if self._dense_lane else TARGET_CHUNKS
        chunk = max(MIN_CHUNK, -(-total_max // target))
        nchunks = -(-total_max // chunk)
        off = offsets.astype(cp.int64)
        nseg = cp.where(off[1:] > off[:-1], (off[1:] - 1) // chunk - off[:-1] // chunk + 1, 0)
        seg_base = cp.zeros(nkeys + 1, dtype=cp.uint32)
        seg_base[1:] = cp.cumsum(cp.maximum(nseg - 1, 0) if in_place else nseg, dtype=cp.uint32)
        nseg_max = nseg.max(keepdims=True).astype(cp.uint32)  # stays on the device
        del off, nseg, cursor
        # In place, the slots past the buckets' first number at most one per chunk boundary.
        nslots = nchunks if in_place else min(nkeys, total_max) + nchunks
        partials = cp.empty((nslots, xyzz_words), dtype=cp.uint32)
        chunk_key = cp.empty(nchunks, dtype=cp.uint32)
        self._mark("segments")
        buckets = carry.acc if carry is not None else partials  # any pointer when not in place
        self._launch(group, "msm_accumulate", nchunks, res.points, entries, offsets, seg_base,
                     u32(nkeys), u32(chunk), u32(nchunks), partials, chunk_key, buckets,
                     u32(in_place))  # fmt: skip
        # A bucket holds at most m entries per window of its row (K with copies), so it spans
        # at most ⌈m·K/chunk⌉ + 1 chunks: that many partials, summed F at a time; levels at or
        # above the actual maximum exit at once.
        max_seg = nseg_max
        stride, bound = 1, -(-m * min(res.copies, nwin) // chunk) + 1
        while stride < bound:
            self._launch(group, "msm_seg_reduce", nchunks, partials, chunk_key, offsets,
                         seg_base, u32(nkeys), u32(chunk), u32(nchunks), u32(stride),
                         u32(SEG_FANIN), max_seg, buckets, u32(in_place))  # fmt: skip
            stride *= SEG_FANIN
        if in_place:
            return None, []
        windows = self._reduce_windows(group, partials, 0, 0, 1, seg_base, rows, nb)
        return windows, exponents

    def _reduce_windows(
        self,
        group: str,
        src: Any,
        row_stride: int,
        col_off: int,
        use_seg: int,
        seg_base: Any,
        nwin: int,
        nb: int,
    ) -> Any:
        """Launch Σ_b (b+1)·V_b per window (``msm_reduce_level``) over bucket sums V read from
        ``src`` (with ``use_seg``: the first partial of each bucket's slots in ``seg_base``,
        else row w at ``w·row_stride + col_off``); returns the (nwin, words) window sums."""
        cp = self._cp
        u32 = np.uint32
        xyzz_words = point_words(group)[1]
        # Σ (b+1)·S_b per window, level by level: level l's buckets are level l-1's group
        # totals 1.., its results weighted by the product of the earlier group sizes (powers
        # of two, applied in the kernel), all written into one (W, Σ groups) array.
        levels = reduction_levels(nb, nwin, self.reduce_threads)
        total_cols = sum(lv[2] for lv in levels)
        all_a = cp.empty((nwin * total_cols, xyzz_words), dtype=cp.uint32)
        a_off, shift = 0, 0
        for width, gs, ngroups in levels:
            out_t = cp.empty((nwin * ngroups, xyzz_words), dtype=cp.uint32)
            self._launch(group, "msm_reduce_level", nwin * ngroups, src, u32(row_stride),
                         u32(col_off), seg_base, u32(use_seg), u32(nwin), u32(width), u32(gs),
                         u32(ngroups), all_a, u32(total_cols), u32(a_off), u32(shift),
                         out_t)  # fmt: skip
            src, row_stride, col_off, use_seg = out_t, ngroups, 1, 0
            a_off += ngroups
            shift += gs.bit_length() - 1  # gs is a power of two whenever a level follows
        return self._sum_rows(group, all_a, nwin, total_cols)

    def _ba_buckets(
        self, res: ResidentBases, entries: Any, offsets: Any, nwin: int, nb: int, m: int
    ) -> Any:
        """Every bucket's sum as a dense (nwin·nb, words) XYZZ array, by batch-affine rounds
        over the sorted ``entries`` (see msm_ba.py), a group of windows at a time. One host
        wait: the largest bucket, which fixes the number of rounds."""
        cp = self._cp
        u32 = np.uint32
        group = res.group
        nfp = GROUPS[group][0]
        nkeys = nwin * nb
        dense = cp.empty((nkeys, point_words(group)[1]), dtype=cp.uint32)
        rounds = msm_ba.rounds_for(int(cp.max(offsets[1:] - offsets[:-1])))
        field_bytes = nfp * FP_WORDS * 4
        words = point_words(group)[0]
        for w0, w1 in msm_ba.window_groups(nwin, m):
            k0, nk = w0 * nb, (w1 - w0) * nb
            in_off = offsets[k0 : k0 + nk + 1]
            level, gathered, tasks = entries, 1, m * (w1 - w0)  # level 0: the entries
            buffers = [None, None]
            for r in range(rounds):
                out_off = msm_ba.next_offsets(cp, in_off).astype(cp.uint32)
                tasks = msm_ba.task_bound(tasks, nk)
                k = msm_ba.batch_size(tasks)
                blocks = -(-tasks // (k * msm_ba.BA_BLOCK))
                threads = blocks * msm_ba.BA_BLOCK
                if buffers[r % 2] is None:
                    buffers[r % 2] = cp.empty((tasks, words), dtype=cp.uint32)
                out = buffers[r % 2]
                scratch = cp.empty((k * threads, field_bytes // 4), dtype=cp.uint32)
                self._launch_ba(group, "msm_ba_round", blocks, 2 * msm_ba.BA_BLOCK * field_bytes,
                                res.points, entries, level, u32(gathered), in_off, out_off,
                                u32(nk), u32(k), out, scratch)  # fmt: skip
                del scratch
                level, gathered, in_off = out, 0, out_off
            self._launch_ba(group, "msm_ba_to_dense", -(-nk // BLOCK), 0, res.points, entries,
                            level, u32(gathered), in_off, u32(nk), np.uint64(k0),
                            dense)  # fmt: skip
        return dense

    def _launch_ba(self, group: str, name: str, blocks: int, smem: int, *args: Any) -> None:
        """Queue a batch-affine kernel (``msm_ba.cu``) on the MSM stream."""
        if blocks <= 0:
            return
        defines = {**self.defines, "MSM_G2": int(group == "g2"), "BA_BLOCK": msm_ba.BA_BLOCK}
        block = msm_ba.BA_BLOCK if name == "msm_ba_round" else BLOCK
        self.gpu.launch(BA_KERNEL_FILE, name, blocks, block, args, smem, defines=defines,
                        stream=self._stream)  # fmt: skip
        self._mark(name)

    def enqueue_sum(self, res: ResidentBases, d_idx: Any, keep: int = 1) -> Any:
        """Launch Σ points[idx] (batch addition) on the current stream; returns (k, words)
        partial sums, k ≤ ``keep`` (1: the sum itself)."""
        cp = self._cp
        u32 = np.uint32
        m = int(d_idx.shape[0])
        nout = -(-m // ONES_FANIN)
        out = cp.empty((nout, point_words(res.group)[1]), dtype=cp.uint32)
        self._launch(
            res.group, "msm_sum_affine", nout, res.points, d_idx, u32(m), u32(ONES_FANIN), out
        )
        return self._sum_rows(res.group, out, 1, nout, keep)

    def _sum_rows(self, group: str, arr: Any, rows: int, cols: int, keep: int = 1) -> Any:
        """Each of ``rows`` rows of ``cols`` points summed, SUM_FANIN to one a level, until a
        row has at most ``keep``: the (rows·cols', words) partial sums."""
        cp = self._cp
        u32 = np.uint32
        while cols > keep:
            cols_out = -(-cols // SUM_FANIN)
            out = cp.empty((rows * cols_out, arr.shape[1]), dtype=cp.uint32)
            self._launch(
                group,
                "msm_sum_rows",
                rows * cols_out,
                arr,
                u32(rows),
                u32(cols),
                u32(SUM_FANIN),
                out,
                u32(cols_out),
            )
            arr, cols = out, cols_out
        return arr

    def _finish(self, group: str, host: np.ndarray | None, exponents: list[int]) -> Any:
        from cuzk.curve.encoding import g1_from_bytes, g2_from_bytes
        from cuzk.curve.points import G1Point, G2Point

        decode, cls = (g1_from_bytes, G1Point) if group == "g1" else (g2_from_bytes, G2Point)
        if host is None:
            return cls.identity()
        terms = [
            (e, decode(b, compressed=False, checked=False))
            for e, b in zip(exponents, xyzz_to_zcash(group, host), strict=True)
            if b[0] != FLAG_INFINITY
        ]
        return _horner(terms, cls.identity())
