"""Ordering of partition work: pure Python, no threads, no I/O, no clocks.

Two priority queues, both ordered by (priority, job sequence, partition index), so the oldest
job's lowest partition of the most urgent class always comes first:

* ``queued`` — partitions waiting to be admitted to synthesis (they hold nothing yet);
* ``ready`` — synthesized partitions waiting for a device worker (they hold their memory).

Admission is strictly head-of-line: only the head of ``queued`` may be admitted, and only when
the caller's predicate (memory budget, look-ahead) says it fits. A large urgent job therefore
waits for room instead of being overtaken forever by small ones, and a CRITICAL job submitted
behind twenty NORMAL ones is the next thing admitted.

The engine calls every method under its own lock; the scheduler is not thread-safe by itself.
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, order=True)
class WorkKey:
    """Sort key of one partition's work; smaller runs first."""

    priority: int  # Priority value (CRITICAL = 0)
    job_seq: int  # submission order of the job
    partition: int  # partition index within the job


@dataclass(order=True)
class _Entry(Generic[T]):
    key: WorkKey
    tiebreak: int
    item: T = field(compare=False)


class _Heap(Generic[T]):
    def __init__(self) -> None:
        self._heap: list[_Entry[T]] = []
        self._tiebreak = itertools.count()

    def push(self, key: WorkKey, item: T) -> None:
        heapq.heappush(self._heap, _Entry(key, next(self._tiebreak), item))

    def peek(self) -> tuple[WorkKey, T] | None:
        return (self._heap[0].key, self._heap[0].item) if self._heap else None

    def pop(self) -> tuple[WorkKey, T] | None:
        if not self._heap:
            return None
        e = heapq.heappop(self._heap)
        return e.key, e.item

    def pop_first(self, pred: Callable[[WorkKey, T], bool]) -> tuple[WorkKey, T] | None:
        """The most urgent entry that ``pred`` accepts, removed; the head is tried first (the
        common case), then the rest in order: O(n log n), and n is the look-ahead."""
        if not self._heap:
            return None
        if pred(self._heap[0].key, self._heap[0].item):
            return self.pop()
        for e in sorted(self._heap)[1:]:
            if pred(e.key, e.item):
                self._heap.remove(e)
                heapq.heapify(self._heap)
                return e.key, e.item
        return None

    def remove_job(self, job_seq: int) -> list[T]:
        """Drop every entry of one job; O(n), which is fine because cancellations and
        failures are rare next to pushes and pops."""
        gone = [e.item for e in self._heap if e.key.job_seq == job_seq]
        if gone:
            self._heap = [e for e in self._heap if e.key.job_seq != job_seq]
            heapq.heapify(self._heap)
        return gone

    def keys(self) -> Iterator[WorkKey]:
        return (e.key for e in self._heap)

    def __len__(self) -> int:
        return len(self._heap)


class Scheduler(Generic[T]):
    """The two queues and the admission rule; items are opaque to it."""

    def __init__(self) -> None:
        self._queued: _Heap[T] = _Heap()
        self._ready: _Heap[T] = _Heap()

    # -- synthesis admission -------------------------------------------------------------------
    def enqueue(self, key: WorkKey, item: T) -> None:
        self._queued.push(key, item)

    def head(self) -> tuple[WorkKey, T] | None:
        """The partition that must be admitted next (nothing may overtake it)."""
        return self._queued.peek()

    def admit(self, fits: Callable[[WorkKey, T], bool]) -> T | None:
        """Pop and return the head if ``fits(key, item)``; None if empty or it does not fit."""
        head = self._queued.peek()
        if head is None or not fits(*head):
            return None
        self._queued.pop()
        return head[1]

    # -- device hand-off -----------------------------------------------------------------------
    def push_ready(self, key: WorkKey, item: T) -> None:
        self._ready.push(key, item)

    def pop_ready(
        self, max_priority: int | None = None, accept: Callable[[T], bool] | None = None
    ) -> T | None:
        """The most urgent ready item that ``accept`` takes (any, without it: a device takes
        only partitions whose key it holds); with ``max_priority`` only one at least that
        urgent (a device's urgent lane), else None."""

        def takes(key: WorkKey, item: T) -> bool:
            urgent_enough = max_priority is None or key.priority <= max_priority
            return urgent_enough and (accept is None or accept(item))

        e = self._ready.pop_first(takes)
        return None if e is None else e[1]

    # -- bookkeeping ---------------------------------------------------------------------------
    def drop_job(self, job_seq: int) -> tuple[list[T], list[T]]:
        """Remove a failed or cancelled job's work: (queued items, ready items). Ready items
        still hold memory; the caller releases it."""
        return self._queued.remove_job(job_seq), self._ready.remove_job(job_seq)

    @property
    def queued_count(self) -> int:
        return len(self._queued)

    @property
    def ready_count(self) -> int:
        return len(self._ready)

    def queued_by_priority(self) -> Counter[int]:
        return Counter(k.priority for k in self._queued.keys())
