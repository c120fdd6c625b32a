"""Staging mode: a second per-device lock and a per-device staging budget. It must not
deadlock with a budget that holds a single partition, must refuse what can never fit, and must
give every byte and pinned buffer back."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from cuzk.engine import ProofRequest
from cuzk.engine.srs import circuit_info
from cuzk.engine.staging import PinnedPool, StagingArea
from cuzk.engine.workers import staged_bytes_for
from cuzk.errors import ResourceExhausted

from .conftest import LARGER, SMALL
from .helpers import assert_verifies, idle_budget, wait_until


def _staged(param_dir, cid: str) -> int:
    return staged_bytes_for(circuit_info(cid, param_dir / f"{cid.replace(':', '-')}.params",
                                         "cpu", 1))  # fmt: skip


def test_single_partition_budget_runs_many_workers_without_deadlock(make_engine, param_dir, seed):
    engine = make_engine(devices=2, workers_per_device=3, synthesis_workers=2, staging=True,
                         staging_budget=_staged(param_dir, LARGER))  # fmt: skip
    reqs = [ProofRequest.of(LARGER if i % 2 else SMALL, partitions=1 + i % 3, seed=seed + 10 * i)
            for i in range(8)]  # fmt: skip
    ids = [engine.submit(r) for r in reqs]
    for job_id, r in zip(ids, reqs, strict=True):
        assert_verifies(engine.result(job_id, timeout=120), r.partitions)
    wait_until(lambda: idle_budget(engine), what="partitions to drain")
    st = engine.status()
    assert all(d.staged_bytes == 0 and d.pinned_lent == 0 for d in st.devices)
    assert all(d.kernel_seconds > 0 for d in st.devices)
    assert all("stage" in p.timeline.stages for j in st.jobs for p in j.partitions)


def test_a_partition_that_can_never_be_staged_is_refused_at_submit(make_engine, param_dir):
    engine = make_engine(staging=True, staging_budget=_staged(param_dir, SMALL))
    engine.prove(ProofRequest.of(SMALL), timeout=60)  # fits exactly
    with pytest.raises(ResourceExhausted, match="staging budget"):
        engine.submit(ProofRequest.of(LARGER))


def test_staging_area_waits_and_abandons():
    area = StagingArea(0, 100)
    assert area.reserve(60, lambda: False)
    gave_up = threading.Event()
    stop = threading.Event()
    t = threading.Thread(target=lambda: gave_up.set() if not area.reserve(60, stop.is_set)
                         else None)  # fmt: skip
    t.start()
    t.join(0.2)
    assert t.is_alive(), "the second reservation must wait for room"
    stop.set()
    t.join(5)
    assert gave_up.is_set() and area.held == 60
    got = threading.Event()
    t = threading.Thread(target=lambda: area.reserve(60, lambda: False) and got.set())
    t.start()
    area.release(60)
    t.join(5)
    assert got.is_set() and area.held == 60 and area.high_water == 60
    area.release(60)
    with pytest.raises(ResourceExhausted):
        area.reserve(101, lambda: False)


def test_pinned_pool_reuses_and_bounds_idle_buffers(rng):
    made: list[int] = []

    def allocate(n: int) -> np.ndarray:
        made.append(n)
        return np.empty((n, 4), dtype=np.uint64)

    pool = PinnedPool(allocate, keep_bytes=1000 * 32)
    a = pool.take(500)
    a[:] = rng.integers(0, 2**63, size=(500, 4), dtype=np.uint64)
    pool.give(a)
    b = pool.take(400)  # reuses the 500-row buffer
    assert made == [500] and b.shape == (400, 4) and pool.lent == 1
    c = pool.take(800)  # nothing idle fits: a new buffer
    assert made == [500, 800]
    pool.give(b)
    pool.give(c)  # 1300 rows idle > 1000 kept: the largest is dropped
    assert pool.lent == 0 and pool.idle_bytes == 500 * 32
    pool.give(c)  # giving twice is harmless
    assert pool.lent == 0
