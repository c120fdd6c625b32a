"""Clients waiting on a long job hold no thread: with more of them than the old server had
request threads (64), GetStatus, CancelProof and a CRITICAL SubmitProof still answer at once,
and every waiter gets its answer when the job ends. ``-m heavy`` runs it with 1,000 waiters."""

from __future__ import annotations

import asyncio

import pytest

from ..conftest import CIRCUIT
from .harness import report
from .starvation import SLOW_BLOCKER, starve


def _check(result, waiters: int) -> None:
    assert result.answered == waiters
    for name in ("status_s", "cancel_s", "critical_submit_s"):
        assert max(getattr(result, name)) < 1.0, (name, result.figures())
    # Waiting costs no thread: a few pools' threads at most, never one per waiter.
    assert result.threads_waiting - result.threads_before < 32, result.figures()


def test_status_cancel_and_critical_submit_get_through_150_waiters(make_daemon):
    d = make_daemon(**SLOW_BLOCKER)
    result = asyncio.run(starve(d, CIRCUIT, waiters=150, probes=3))
    _check(result, 150)
    report("starvation (fast, 150 waiters)", **result.figures())


@pytest.mark.heavy
def test_status_cancel_and_critical_submit_get_through_1000_waiters(make_daemon):
    d = make_daemon(**SLOW_BLOCKER)
    result = asyncio.run(starve(d, CIRCUIT, waiters=1000, probes=10))
    _check(result, 1000)
    report("starvation (heavy, 1000 waiters)", **result.figures())
