"""How often this process's interpreter lock is taken when a Python thread wants it.

One process drives every device of an engine: its device workers, staging and completion
threads share one GIL. CPU seconds (`cuzk.cli.cpu_time`) say how much the process works, not
whether its threads queue for the lock — and queueing is what stops one process from feeding
more GPUs. The meter is a thread that sleeps a short period again and again; each time it wakes
it needs the lock, and how long that takes is a sample of the lock's state: a wait (beyond the
sleep's own overshoot) means another thread held it. CPython makes a waiting thread ask for the
lock after its switch interval (5 ms by default), so a wait lasts at most that long plus the
holder's current bytecode or C call.

``held_share`` is the share of wake-ups that waited more than ``threshold_s``: an estimate of
the share of time the lock is held by others (holds shorter than the threshold are missed, and
an overloaded machine's late wake-ups count as held). ``wait_share`` is the share of the
meter's own time spent waiting, which a ready thread of the engine would also lose.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

#: Sleep between samples: 200 samples a second, each holding the lock for microseconds.
PERIOD_S = 0.005
#: A wake-up later than this beyond the sleep counts as finding the lock held (Linux oversleeps
#: by ≈ 0.05–0.1 ms; a held lock costs up to the 5 ms switch interval).
THRESHOLD_S = 0.0005


@dataclass(frozen=True)
class GilReading:
    samples: int
    held_share: float  # wake-ups that waited > threshold / all wake-ups
    wait_share: float  # time spent waiting / time elapsed
    mean_wait_ms: float  # mean wait per wake-up beyond the sleep


class GilMeter:
    """A sampling thread; use as a context manager around the window to measure."""

    def __init__(
        self,
        period_s: float = PERIOD_S,
        threshold_s: float = THRESHOLD_S,
        *,
        clock: Callable[[], float] = time.perf_counter,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.period_s = period_s
        self.threshold_s = threshold_s
        self._clock, self._sleep = clock, sleep
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._samples = self._held = 0
        self._waited = self._elapsed = 0.0

    def sample(self) -> None:
        """One sleep and wake-up; the thread's loop, callable directly by tests."""
        t0 = self._clock()
        self._sleep(self.period_s)
        elapsed = self._clock() - t0
        wait = max(0.0, elapsed - self.period_s)
        with self._lock:
            self._samples += 1
            self._held += wait > self.threshold_s
            self._waited += wait
            self._elapsed += elapsed

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()

    def __enter__(self) -> GilMeter:
        self._thread = threading.Thread(target=self._run, name="cuzk-gil-meter", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def reading(self) -> GilReading:
        with self._lock:
            n, elapsed = self._samples, self._elapsed
            return GilReading(
                samples=n,
                held_share=self._held / n if n else 0.0,
                wait_share=self._waited / elapsed if elapsed > 0 else 0.0,
                mean_wait_ms=1e3 * self._waited / n if n else 0.0,
            )
