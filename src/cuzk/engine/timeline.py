"""Timestamps of every partition's stages, and the numbers a benchmark derives from them.

The engine stamps each partition at: queued, synthesis start/end, device pick (a device worker
took it and began waiting for the compute lock), kernels start/end (the lock held) and finalize
end, on one monotonic clock started with the engine. From those records this module computes
device busy time (the union of kernel intervals per device), per-stage medians and the engine's
own overhead between consecutive kernel regions — the figures ``cuzk bench`` prints and draws.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterable, Sequence

from cuzk.engine.request import PartitionTimeline

STAMPS = (
    "queued",
    "synth_start",
    "synth_end",
    "device_pick",
    "kernels_start",
    "kernels_end",
    "finalize_end",
)


class Clock:
    """Seconds since the engine started (perf_counter: monotonic, sub-microsecond)."""

    def __init__(self) -> None:
        self._t0 = time.perf_counter()

    def __call__(self) -> float:
        return time.perf_counter() - self._t0


def union_seconds(intervals: Iterable[tuple[float, float]]) -> float:
    """Total length covered by possibly overlapping [start, end) intervals."""
    total, cur_start, cur_end = 0.0, None, None
    for a, b in sorted(intervals):
        if cur_end is None or a > cur_end:
            if cur_end is not None and cur_start is not None:
                total += cur_end - cur_start
            cur_start, cur_end = a, b
        else:
            cur_end = max(cur_end, b)
    if cur_end is not None and cur_start is not None:
        total += cur_end - cur_start
    return total


def kernel_intervals(
    timelines: Iterable[PartitionTimeline], device: int | None = None
) -> list[tuple[float, float]]:
    """Sorted (kernels start, end) of the partitions that ran on ``device`` (None: any)."""
    return sorted(
        (t.kernels_start, t.kernels_end)
        for t in timelines
        if (device is None or t.device == device)
        and t.kernels_start is not None
        and t.kernels_end is not None
    )


def busy_fraction(
    timelines: Sequence[PartitionTimeline], device: int, window: tuple[float, float]
) -> float:
    """Share of ``window`` during which ``device``'s compute lock was held."""
    lo, hi = window
    if hi <= lo:
        return 0.0
    clipped = [(max(a, lo), min(b, hi)) for a, b in kernel_intervals(timelines, device)]
    return union_seconds((a, b) for a, b in clipped if b > a) / (hi - lo)


def steady_busy_fraction(timelines: Sequence[PartitionTimeline], device: int) -> float:
    """Busy share between ``device``'s first kernel start and its last kernel end: the steady
    state, without the pipeline's fill (the first partition's synthesis and staging, when no
    device can have work yet) and drain (the last proof's assembly)."""
    spans = kernel_intervals(timelines, device)
    if not spans:
        return 0.0
    return busy_fraction(timelines, device, (spans[0][0], max(b for _, b in spans)))


def kernels_span(timelines: Iterable[PartitionTimeline]) -> float:
    """Seconds from the first kernel start to the last kernel end, over every device: a
    bench's time with its pipeline's fill (the first request opened, synthesized and staged
    before any device has work) and drain (the last proof's assembly and check) left out.
    Divided by the proofs, it is what a daemon whose queue never empties delivers."""
    spans = kernel_intervals(timelines)
    if not spans:
        return 0.0
    return max(b for _, b in spans) - spans[0][0]


def stage_medians(timelines: Iterable[PartitionTimeline]) -> dict[str, float]:
    """Median seconds per engine stage and per prover stage, over partitions that ran it."""
    samples: dict[str, list[float]] = {}
    for t in timelines:
        for name, seconds in t.durations().items():
            samples.setdefault(name, []).append(seconds)
        for name, seconds in t.stages.items():
            samples.setdefault(f"prover.{name}", []).append(seconds)
    return {k: statistics.median(v) for k, v in samples.items()}


def handoff_gaps(timelines: Sequence[PartitionTimeline], device: int) -> list[float]:
    """Idle gaps on ``device`` between one kernel region's end and the next one's start,
    counted only when the next partition was already waiting (picked before the previous
    ended): the engine's own overhead, not a lack of work."""
    runs = sorted(
        (
            t
            for t in timelines
            if t.device == device and t.kernels_start is not None and t.kernels_end is not None
        ),
        # why the ignore below: the filter above keeps only timelines whose kernels_start is set
        key=lambda t: t.kernels_start,  # type: ignore[arg-type, return-value]
    )
    gaps = []
    for prev, nxt in zip(runs, runs[1:], strict=False):
        assert prev.kernels_end is not None and nxt.kernels_start is not None
        if nxt.device_pick is not None and nxt.device_pick <= prev.kernels_end:
            gaps.append(max(0.0, nxt.kernels_start - prev.kernels_end))
    return gaps
