"""What each pass of an MSM in passes reads (:meth:`cuzk.backend.cuda.msm.GpuMsm._run_passes`):
the scalars of its slice of points, which of them are ones, which are dropped.

Two sources: :func:`sliced` cuts a whole MSM's device scalars and plan at the pass boundaries;
:func:`planned` gathers, classifies and splits each pass's scalars on the device as the pass
runs, so that under a memory cap neither the MSM's scalar vector, a plan of all of it nor all
its rows are ever on the device.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from cuzk.backend.base import MIN_ONES_SHARE_FOR_SPLIT
from cuzk.backend.cuda.device import Gpu
from cuzk.backend.cuda.fr_vec import GpuFr

#: What each pass of an MSM reads: ``(k, lo, hi)`` → pass k's (the scalars of its tail, their
#: indices among the pass's points or None for all of them in order, the indices of its
#: scalar-one points or None), device arrays on the MSM stream.
PassScalars = Callable[[int, int, int], tuple[Any, Any, Any]]


def _device_index(cp: Any, idx: Any) -> Any:
    """Sorted indices (host or device) as an int64 device array."""
    if isinstance(idx, np.ndarray):
        return cp.asarray(idx.astype(np.int64))
    return idx.astype(cp.int64)


def _cuts(cp: Any, idx: Any, edges: np.ndarray, stream: Any) -> np.ndarray | None:
    """Where each of ``edges`` falls in the sorted index array ``idx`` (host positions)."""
    if idx is None:
        return None
    if isinstance(idx, np.ndarray):
        return np.searchsorted(idx, edges)
    found = cp.searchsorted(idx, cp.asarray(edges.astype(idx.dtype)))
    return cp.asnumpy(found, stream=stream)


@functools.cache
def _compact_kernel(cp: Any) -> Any:
    return cp.ElementwiseKernel(
        "bool keep, int32 at", "raw int32 out", "if (keep) out[at - 1] = (int)i", "cuzk_compact"
    )


def _compact(cp: Any, keep: Any, at: Any, count: int) -> Any:
    """``flatnonzero(keep)`` as int32, given ``at`` (keep's inclusive cumulative sum) and
    ``count`` (its last value) already on the host: queued on the current stream with no host
    wait of its own (CuPy's flatnonzero waits to learn its length)."""
    out = cp.empty(count, dtype=cp.int32)
    if count:
        _compact_kernel(cp)(keep, at, out)
    return out


def sliced(
    cp: Any, stream: Any, d_all: Any, ones: Any, tail: Any, edges: np.ndarray
) -> PassScalars:
    """Each pass's scalars from a whole MSM's device scalars and plan: ``ones`` and ``tail``
    (sorted indices, host or device) are cut at the pass boundaries with one search (one
    small host wait for device ones)."""
    ones_at = _cuts(cp, ones, edges, stream)
    tail_at = _cuts(cp, tail, edges, stream)

    def cut(k: int, lo: int, hi: int) -> tuple[Any, Any, Any]:
        if tail is None or tail_at is None:
            d_scalars, gather = d_all[lo:hi], None
        else:
            t = _device_index(cp, tail[tail_at[k] : tail_at[k + 1]])
            d_scalars, gather = d_all[t], (t - lo).astype(cp.uint32)
        o = None
        if ones is not None and ones_at is not None:
            o = (_device_index(cp, ones[ones_at[k] : ones_at[k + 1]]) - lo).astype(cp.uint32)
        return d_scalars, gather, o

    return cut


def planned(gpu: Gpu, fr: GpuFr, stream: Any, source: Any, rows: Any) -> PassScalars:
    """Each pass's scalars gathered and split on the device as the pass runs (on ``stream``):
    source[rows[lo:hi]] (or source[lo:hi]) classified, the ones apart from the rest when they
    are common enough (as a whole plan would split them), zeros dropped. The pass's slice of
    the host ``rows`` is uploaded on ``stream`` (a direct DMA from page-locked rows).

    The compaction's sizes are the pass's counts of ones and of other values: the host waits
    for them once a pass, behind the lane's queued kernels. Counting pass k ahead, before
    pass k − 1's kernels were queued, was tried and measured no faster (a PoRep partition at
    16 GiB on an H100: H started 0.2 s sooner and ran 0.2 s longer beside this lane; the
    device's SMs, not these waits, set the pace)."""
    cp = gpu.cp

    def plan(k: int, lo: int, hi: int) -> tuple[Any, Any, Any]:
        if rows is None:
            vals = source[lo:hi]
        else:
            vals = cp.take(source, gpu.upload(rows[lo:hi], stream=stream), axis=0)
        kinds = fr.classify(vals, stream)
        is_one, is_other = kinds == 1, kinds == 2
        ones_at = cp.cumsum(is_one, dtype=cp.int32)
        other_at = cp.cumsum(is_other, dtype=cp.int32)
        # The pass's one host wait: both counts at once (two flatnonzero calls waited twice,
        # each a round trip behind the lane's queued kernels).
        counts = cp.asnumpy(cp.stack((ones_at[-1], other_at[-1])), stream=stream)
        n_ones, n_other = int(counts[0]), int(counts[1])
        if n_ones < MIN_ONES_SHARE_FOR_SPLIT * max(1, hi - lo):
            ones = None
            rest = _compact(cp, kinds != 0, ones_at + other_at, n_ones + n_other)
        else:
            ones = _compact(cp, is_one, ones_at, n_ones).view(cp.uint32)
            rest = _compact(cp, is_other, other_at, n_other)
        return vals[rest], rest.view(cp.uint32), ones

    return plan
