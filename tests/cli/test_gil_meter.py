"""The GIL meter: its arithmetic on a scripted clock, and a real thread that never releases the
lock for long (a pure-Python loop) against the meter's idle baseline."""

from __future__ import annotations

import threading
import time

from cuzk.cli.gil_meter import GilMeter


class ScriptedClock:
    """perf_counter and sleep for the meter: each sleep advances time by the period plus the
    next scripted wait."""

    def __init__(self, waits: list[float]) -> None:
        self.now, self.waits = 0.0, list(waits)

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds + self.waits.pop(0)


def test_reading_counts_waits_beyond_the_threshold():
    waits = [0.0001, 0.004, 0.0002, 0.005, 0.0]
    script = ScriptedClock(waits)
    meter = GilMeter(0.005, 0.0005, clock=script.clock, sleep=script.sleep)
    for _ in waits:
        meter.sample()
    r = meter.reading()
    assert r.samples == 5
    assert r.held_share == 2 / 5
    assert abs(r.mean_wait_ms - 1e3 * sum(waits) / 5) < 1e-9
    assert abs(r.wait_share - sum(waits) / (5 * 0.005 + sum(waits))) < 1e-9


def test_an_empty_meter_reads_zero():
    r = GilMeter().reading()
    assert (r.samples, r.held_share, r.wait_share, r.mean_wait_ms) == (0, 0.0, 0.0, 0.0)


def _spin(stop: threading.Event) -> None:
    x = 0
    while not stop.is_set():
        x += 1  # pure bytecode: holds the lock until CPython's switch interval takes it


def test_a_spinning_thread_is_seen_holding_the_lock():
    stop = threading.Event()
    spinner = threading.Thread(target=_spin, args=(stop,), daemon=True)
    with GilMeter() as meter:
        spinner.start()
        time.sleep(0.6)
        stop.set()
        spinner.join()
    r = meter.reading()
    # Every wake-up during the spin waits for the switch interval (5 ms): most samples are
    # held, whatever else the machine does (a busy machine only makes wake-ups later).
    assert r.samples >= 20
    assert r.held_share > 0.5 and r.mean_wait_ms > 1.0
