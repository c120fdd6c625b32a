"""An executor's tasks handed over in rank order rather than first come first served.

A process pool's own queue serves tasks in the order their threads submitted them. Two pools
here are shared by work of different urgency: the synthesis pool (a CRITICAL WindowPoSt
partition's views must not queue behind every PoRep view already submitted) and the payload
opener (a request opened in shares must have its shares served together, not interleaved with
another request's submitted at the same moment, and an urgent request's opening goes to the
next free helper).
"""

from __future__ import annotations

import concurrent.futures as cf
import functools
import heapq
import itertools
import threading
from collections.abc import Callable
from typing import Any

#: Smaller runs first: the synthesis pool's (priority, job, partition), the opener's
#: (priority, arrival, share).
Rank = tuple[int, ...]


class RankedSubmitter:
    """Tasks for ``executor`` handed over in rank order: at most ``in_flight`` at a time are
    the executor's (its own queue is first come first served), the others wait here, and each
    one that ends lets the best-ranked waiting one in. Equal ranks keep their order.

    One feeder thread does the handing over. A task's done callback only counts it out: some
    Python versions run those callbacks under the executor's own lock (a broken pool's), so
    one that submitted the next task from there would wait on that lock forever."""

    def __init__(
        self, executor: cf.Executor, in_flight: int, name: str = "cuzk-ranked-feed"
    ) -> None:
        if in_flight < 1:
            raise ValueError("in_flight must be at least 1")
        self._executor = executor
        self._in_flight = in_flight
        self._cond = threading.Condition()
        self._waiting: list[tuple[Rank, int, Callable[..., Any], tuple[Any, ...], cf.Future]] = []
        self._order = itertools.count()
        self._running = 0
        self._closed = False
        self._feeder = threading.Thread(target=self._feed, name=name, daemon=True)
        self._feeder.start()

    def submit(self, rank: Rank, fn: Callable[..., Any], *args: Any) -> cf.Future:
        """A future for ``fn(*args)``, run when no better-ranked task waits."""
        outer: cf.Future = cf.Future()
        with self._cond:
            if self._closed:
                raise RuntimeError("cannot submit a task after close")
            heapq.heappush(self._waiting, (rank, next(self._order), fn, args, outer))
            self._cond.notify()
        return outer

    def close(self) -> None:
        """Cancel every task not yet handed over and stop the feeder (the executor's own
        tasks are its to finish or cancel)."""
        with self._cond:
            self._closed = True
            waiting, self._waiting = self._waiting, []
            self._cond.notify_all()
        for *_, outer in waiting:
            outer.cancel()
        self._feeder.join()

    def _feed(self) -> None:
        while True:
            with self._cond:
                while not self._closed and (self._running >= self._in_flight or not self._waiting):
                    self._cond.wait()
                if self._closed:
                    return
                _, _, fn, args, outer = heapq.heappop(self._waiting)
                if not outer.set_running_or_notify_cancel():
                    continue  # cancelled while it waited
                self._running += 1
            try:
                inner = self._executor.submit(fn, *args)
            except BaseException as e:  # shut down or broken: its caller sees why
                outer.set_exception(e)
                self._count_out()
                continue
            inner.add_done_callback(functools.partial(self._finished, outer))

    def _finished(self, outer: cf.Future, inner: cf.Future) -> None:
        error = cf.CancelledError() if inner.cancelled() else inner.exception()
        if error is None:
            outer.set_result(inner.result())
        else:
            outer.set_exception(error)
        self._count_out()

    def _count_out(self) -> None:
        with self._cond:
            self._running -= 1
            self._cond.notify()
