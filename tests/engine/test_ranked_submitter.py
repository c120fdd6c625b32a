"""The synthesis pool's tasks reach its processes in rank order (priority, job, partition),
whatever order their threads submitted them in, and a task waiting its turn can be cancelled,
fails as the executor makes it fail, and is cancelled when the pool closes."""

from __future__ import annotations

import concurrent.futures as cf
import random
import threading

import pytest

from cuzk.engine.ranked import RankedSubmitter


@pytest.fixture
def one_worker():
    executor = cf.ThreadPoolExecutor(1)
    yield executor
    executor.shutdown(wait=True, cancel_futures=True)


def _blocker(submitter: RankedSubmitter, rank=(0,)) -> tuple[threading.Event, cf.Future]:
    """A task that holds the only slot until its event is set."""
    release = threading.Event()
    started = threading.Event()

    def hold() -> str:
        started.set()
        assert release.wait(10)
        return "held"

    future = submitter.submit(rank, hold)
    assert started.wait(10)
    return release, future


def test_waiting_tasks_run_best_rank_first(one_worker, seed):
    submitter = RankedSubmitter(one_worker, in_flight=1)
    try:
        release, held = _blocker(submitter)
        ran: list[tuple[tuple[int, ...], int]] = []
        rng = random.Random(seed)
        ranks = [(rng.randrange(3), rng.randrange(4), rng.randrange(10)) for _ in range(40)]
        futures = [
            submitter.submit(rank, lambda rank=rank, i=i: ran.append((rank, i)) or i)
            for i, rank in enumerate(ranks)
        ]
        release.set()
        assert held.result(10) == "held"
        assert [f.result(10) for f in futures] == list(range(len(ranks)))
        # best rank first; equal ranks in the order they were submitted
        assert ran == sorted(((r, i) for i, r in enumerate(ranks)))
    finally:
        submitter.close()


def test_a_task_fails_or_is_cancelled_as_the_executor_has_it(one_worker):
    submitter = RankedSubmitter(one_worker, in_flight=1)
    try:
        release, held = _blocker(submitter)

        def fail() -> None:
            raise ValueError("the worker's error")

        failing = submitter.submit((2,), fail)
        dropped = submitter.submit((1,), lambda: "never")
        assert dropped.cancel()  # still waiting here: it never reaches the executor
        release.set()
        with pytest.raises(ValueError, match="the worker's error"):
            failing.result(10)
        assert dropped.cancelled() and held.result(10) == "held"
        one_worker.shutdown(wait=True)
        refused = submitter.submit((3,), lambda: "after shutdown")
        with pytest.raises(RuntimeError):
            refused.result(10)
    finally:
        submitter.close()


def test_close_cancels_what_waits_and_stops_its_thread(one_worker):
    before = set(threading.enumerate())
    submitter = RankedSubmitter(one_worker, in_flight=1)
    release, held = _blocker(submitter)
    waiting = [submitter.submit((i,), lambda i=i: i) for i in range(5)]
    submitter.close()
    assert all(f.cancelled() for f in waiting)
    started = set(threading.enumerate()) - before
    assert not any(t.name == "cuzk-synth-feed" for t in started)
    release.set()
    assert held.result(10) == "held"  # the executor's own task still finishes
    with pytest.raises(RuntimeError, match="after close"):
        submitter.submit((0,), lambda: None)


def test_at_most_in_flight_tasks_are_the_executors():
    executor = cf.ThreadPoolExecutor(4)
    submitter = RankedSubmitter(executor, in_flight=2)
    lock = threading.Lock()
    now = peak = 0
    gate = threading.Event()

    def task() -> None:
        nonlocal now, peak
        with lock:
            now += 1
            peak = max(peak, now)
        gate.wait(0.05)
        with lock:
            now -= 1

    try:
        futures = [submitter.submit((0,), task) for _ in range(12)]
        cf.wait(futures, timeout=10)
        assert all(f.done() and f.exception() is None for f in futures)
        assert peak == 2
    finally:
        submitter.close()
        executor.shutdown(wait=True)
