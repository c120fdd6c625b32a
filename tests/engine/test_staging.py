"""Staging mode: a second per-device lock and a per-device staging budget. It must not
deadlock with a budget that holds a single partition, must refuse what can never fit, and must
give every byte and pinned buffer back."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

import numpy as np
import pytest

from cuzk.backend import get_backend
from cuzk.engine import FaultInjection, ProofRequest
from cuzk.engine.family import circuit_info
from cuzk.engine.staging import SECOND_STAGE_HEADROOM, PinnedPool, StagingArea
from cuzk.engine.workers import staged_bytes_for, staging_need
from cuzk.errors import ResourceExhausted

from .conftest import LARGER, SMALL
from .helpers import assert_verifies, idle_budget, wait_until


def _info(param_dir, cid: str):
    return circuit_info(cid, param_dir / f"{cid.replace(':', '-')}.params", "cpu", 1)


def _staged(param_dir, cid: str) -> int:
    return staged_bytes_for(_info(param_dir, cid))


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


def test_staging_area_counts_one_kernel_working_set():
    """Kernels run one partition at a time under the compute lock, so two staged partitions
    (30 + 30) and one kernel set (the larger, 40) fit 100; more staged bytes wait."""
    area = StagingArea(0, 100)
    assert area.reserve(30, lambda: False, kernel_bytes=40)
    assert area.reserve(30, lambda: False, kernel_bytes=25)
    assert area.held == 100 and area.high_water == 100
    assert not area.reserve(1, lambda: True, kernel_bytes=0)  # does not fit: abandoned
    area.release(30, kernel_bytes=40)
    assert area.held == 30 + 25  # the remaining holder's kernel set is the largest now
    assert not area.reserve(30, lambda: True, kernel_bytes=41)  # 30 + 30 + 41 > 100
    assert area.reserve(30, lambda: False, kernel_bytes=40)
    area.release(30, kernel_bytes=25)
    area.release(30, kernel_bytes=40)
    assert area.held == 0 and area.waiting == 0
    with pytest.raises(ResourceExhausted):
        area.reserve(61, lambda: False, kernel_bytes=40)  # alone it never fits


def test_staging_area_serves_waiters_in_arrival_order():
    """The worker that releases and comes straight back (holding the GIL) must not overtake
    one that was already waiting."""
    area = StagingArea(0, 100)
    assert area.reserve(50, lambda: False, kernel_bytes=10)
    order: list[str] = []

    def waiter() -> None:
        assert area.reserve(60, lambda: False, poll_s=0.01, kernel_bytes=10)
        order.append("waiting")
        time.sleep(0.05)
        area.release(60, kernel_bytes=10)

    first = threading.Thread(target=waiter)
    first.start()
    wait_until(lambda: area.waiting == 1, what="the first waiter")
    area.release(50, kernel_bytes=10)
    # 50 + 10 would fit right now, but the waiter came first (and 60 + 50 + 10 > 100)
    assert area.reserve(50, lambda: False, poll_s=0.01, kernel_bytes=10)
    order.append("returning")
    first.join(5)
    assert order == ["waiting", "returning"] and area.held == 60


def test_an_abandoned_waiter_leaves_the_queue():
    area = StagingArea(0, 100)
    assert area.reserve(90, lambda: False)
    stop = threading.Event()
    gave_up: list[bool] = []
    t = threading.Thread(target=lambda: gave_up.append(area.reserve(50, stop.is_set, 0.01)))
    t.start()
    wait_until(lambda: area.waiting == 1, what="the waiter")
    stop.set()
    t.join(5)
    assert gave_up == [False] and area.waiting == 0
    assert area.reserve(10, lambda: False)  # nobody ahead: it fits and goes at once
    assert area.held == 100


class _SlowUploads:
    """A CPU backend whose uploads take ``delay`` seconds each; records when each upload ended
    and when each a/b/c evaluation (the first kernel of a partition) began, with the thread."""

    def __init__(self, backend, delay: float, events: list) -> None:
        self._backend, self._delay, self._events = backend, delay, events

    def upload(self, v):
        time.sleep(self._delay)
        out = self._backend.upload(v)
        self._events.append(("staged", threading.current_thread().name, time.perf_counter()))
        return out

    def evaluate_abc(self, shape, z):
        self._events.append(("abc", threading.current_thread().name, time.perf_counter()))
        return self._backend.evaluate_abc(shape, z)

    def _late(self, inner: Future, delay: float, kind: str) -> Future:
        """``inner``'s result ``delay`` seconds after it is ready, recording (kind, thread,
        time) when it is passed on."""
        late: Future = Future()

        def finish() -> None:
            time.sleep(delay)
            self._events.append((kind, threading.current_thread().name, time.perf_counter()))
            try:
                late.set_result(inner.result())
            except BaseException as e:
                late.set_exception(e)

        threading.Thread(target=finish, daemon=True).start()
        return late

    def __getattr__(self, name: str):
        return getattr(self._backend, name)


def test_the_next_partition_is_staged_while_the_previous_ones_kernels_run(
    make_engine, param_dir, seed
):
    """Synthesis ahead, staging slow (one upload of z, 0.2 s) and kernels slower (1 s of
    sleep inside the compute lock, before their first kernel): with room for two staged
    partitions and one kernel working set, every partition after the first has finished
    staging before the previous partition's first kernel even began — the device never
    waits for staging."""
    staged, kernels = staging_need(_info(param_dir, SMALL))
    events: list = []
    engine = make_engine(
        workers_per_device=2,
        synthesis_workers=2,
        staging=True,
        staging_budget=2 * staged + kernels,  # the old per-partition accounting fits one
        faults=FaultInjection(slow_kernel=1.0, slow_kernel_s=1.0),
        backend_factory=lambda i: _SlowUploads(get_backend("cpu", workers=1), 0.2, events),
    )
    request = ProofRequest.of(SMALL, partitions=5, seed=seed)
    assert_verifies(engine.result(engine.submit(request), timeout=120), 5)
    abc = [(t, name) for kind, name, t in events if kind == "abc"]
    abc.sort()
    assert len(abc) == 5
    for (prev_abc, _), (this_abc, worker) in zip(abc, abc[1:], strict=False):
        # this partition's staging: its worker's uploads since that worker's previous kernels
        before = [t for t, w in abc if w == worker and t < this_abc]
        since = before[-1] if before else 0.0
        uploads = [t for kind, w, t in events
                   if kind == "staged" and w == worker and since < t < this_abc]  # fmt: skip
        assert len(uploads) == 1, uploads  # z alone: A's and B's scalars are kernels' work
        assert max(uploads) < prev_abc, "staging waited for the previous partition's kernels"


def test_the_staging_area_counts_device_bytes_only(param_dir):
    """A partition's staged input in the (device) staging area is its device copy of z, plus
    one kernel working set; the host buffer a witness made on the host is gathered into is
    host memory, not the device's."""
    info = _info(param_dir, LARGER)
    staged, kernels = staging_need(info)
    assert staged == 32 * info.num_variables and kernels > 0
    assert staged_bytes_for(info) == staged + kernels


def test_a_second_partition_stages_only_with_device_headroom():
    """Beside a holder, a partition stages only if the device keeps the headroom free after
    the resident key; alone it always stages (a key taking most of a GPU: one at a time)."""
    gib = 1 << 30
    area = StagingArea(0, 70 * gib, device_total=139 * gib)
    small_key, big_key = 44 * gib, 57 * gib  # porep-32g / wpost-32g points on one device
    assert area.reserve(12 * gib, lambda: False, kernel_bytes=40 * gib, resident_bytes=big_key)
    # 139 − 57 − (24 + 40) = 18 GiB left: less than the headroom, so it waits and gives up
    assert not area.reserve(12 * gib, lambda: True, kernel_bytes=40 * gib, resident_bytes=big_key)
    area.release(12 * gib, kernel_bytes=40 * gib)
    assert area.reserve(12 * gib, lambda: False, kernel_bytes=40 * gib, resident_bytes=small_key)
    # 139 − 44 − (24 + 40) = 31 GiB left: room for the second
    assert area.reserve(12 * gib, lambda: False, kernel_bytes=40 * gib, resident_bytes=small_key)
    assert area.held == 64 * gib and SECOND_STAGE_HEADROOM == 24 * gib


def test_a_holder_gives_its_staged_inputs_back_for_the_next():
    """An area of one partition (z + one kernel working set, as under a device cap): the
    next partition waits while the holder keeps z, and stages as soon as the holder gives z
    back while its kernel working set stays counted."""
    z, kernels = 40, 100
    area = StagingArea(0, z + kernels)
    assert area.reserve(z, lambda: False, kernel_bytes=kernels)
    assert not area.reserve(z, lambda: True, kernel_bytes=kernels)  # would wait: gives up
    area.release_staged(z)
    assert area.held == kernels
    assert area.reserve(z, lambda: False, kernel_bytes=kernels)  # at once now
    assert area.held == z + kernels
    area.release(0, kernel_bytes=kernels)  # the first one's kernels end
    area.release(z, kernel_bytes=kernels)
    assert area.held == 0 and area.staged == 0


def _assert_each_stages_before_the_last_msm_ends(engine, cid, seed, events, slow: str) -> None:
    """Prove 4 partitions of ``cid``: every proof verifies, every byte comes back, and each
    partition was staged before the previous one's slow MSM (event ``slow``) ended."""
    request = ProofRequest.of(cid, partitions=4, seed=seed)
    assert_verifies(engine.result(engine.submit(request), timeout=120), 4)
    wait_until(lambda: idle_budget(engine), what="partitions to drain")
    assert all(d.staged_bytes == 0 and d.pinned_lent == 0 for d in engine.status().devices)
    stages = sorted(t for kind, _, t in events if kind == "staged")
    done = sorted(t for kind, _, t in events if kind == slow)
    assert len(stages) == 4 and len(done) == 4
    for k in range(1, 4):  # partition k staged before partition k − 1's slow MSM ended
        assert stages[k] < done[k - 1], (k, stages, done)


class _SlowDenseMsm(_SlowUploads):
    """A CPU backend whose plain MSMs (the H quotient's: the prover's only plain one) finish
    ``delay`` seconds late, its uploads on time; records (as :class:`_SlowUploads`) when each
    partition's z was staged, and when each H MSM finished, with the thread."""

    def __init__(self, backend, delay: float, events: list) -> None:
        super().__init__(backend, 0.0, events)
        self._msm_delay = delay

    def msm(self, bases, scalars):
        return self._late(self._backend.msm(bases, scalars), self._msm_delay, "h")


def test_the_next_partition_stages_while_the_last_msm_runs(make_engine, param_dir, seed):
    """With room for one partition only (as on a capped GPU), a worker frees its z once the
    MSMs over the witness are done: the next partition stages while the H MSM (made 0.6 s
    slow here) still runs, instead of after the whole kernel region. Every proof verifies and
    every byte comes back."""
    staged, kernels = staging_need(_info(param_dir, SMALL))
    events: list = []
    engine = make_engine(
        workers_per_device=2,
        synthesis_workers=2,
        staging=True,
        staging_budget=staged + kernels,
        backend_factory=lambda i: _SlowDenseMsm(get_backend("cpu", workers=1), 0.6, events),
    )
    _assert_each_stages_before_the_last_msm_ends(engine, SMALL, seed, events, "h")


def test_a_holder_lends_what_its_h_quotient_held():
    """Once H's MSM is done, the compute lock's holder keeps z and a tail of scratch (30 + 10
    of its 30 + 60): the next partition (30 + 60) stages beside them, its working set counted
    once against the lender's 40; a larger tail (30 + 50 > 60) still makes it wait."""
    area = StagingArea(0, 100)
    assert area.reserve(30, lambda: False, kernel_bytes=60)
    assert not area.reserve(30, lambda: True, kernel_bytes=60)  # 30 + 30 + 60 > 100
    got = threading.Event()
    t = threading.Thread(target=lambda: area.reserve(30, lambda: False, 0.01, 60) and got.set())
    t.start()
    wait_until(lambda: area.waiting == 1, what="the next partition")
    area.lend(30, 60, tail=10)
    t.join(5)
    assert got.is_set() and area.held == 30 + max(60, 30 + 10) and area.tail == 40
    area.release_tail(30)  # the lender's MSMs over the witness are done: its z goes
    area.release_tail(10)  # its kernels end
    assert area.tail == 0 and area.held == 30 + 60
    area.lend(30, 60, tail=50)
    assert area.held == 0 + max(0, 80)
    assert not area.reserve(30, lambda: True, kernel_bytes=60)  # 30 + max(60, 80) > 100
    assert area.reserve(20, lambda: False, kernel_bytes=60)  # 20 + 80 fits
    area.release_tail(80)
    area.release(20, kernel_bytes=60)
    assert area.held == 0 and area.waiting == 0
    with pytest.raises(AssertionError):
        area.lend(30, 60, tail=10)  # nothing held to lend


def test_a_lender_still_counts_as_a_partition_beside_the_next():
    """The headroom a device keeps before a second partition stages (a key taking most of
    the device) applies beside a lender as beside any holder."""
    need = 30 + 60
    for spare, fits in ((-1, False), (0, True)):
        area = StagingArea(0, 100, device_total=need + SECOND_STAGE_HEADROOM + spare)
        assert area.reserve(30, lambda: False, kernel_bytes=60)
        area.lend(30, 60, tail=10)
        assert area.reserve(30, lambda: True, kernel_bytes=60) is fits


class _SlowSplitA(_SlowUploads):
    """A CPU backend whose fourth split MSM of each partition (A's: the prover submits L's,
    B₁'s and B₂'s before it, one partition at a time under the compute lock) finishes
    ``delay`` seconds late; records when each partition's z was staged and when each A MSM
    finished, with the thread."""

    def __init__(self, backend, delay: float, events: list) -> None:
        super().__init__(backend, 0.0, events)
        self._a_delay = delay
        self._calls = 0

    def split_msm(self, bases, scalars, rows=None):
        inner = self._backend.split_msm(bases, scalars, rows)
        self._calls += 1
        return inner if self._calls % 4 else self._late(inner, self._a_delay, "a")


def test_under_a_cap_the_next_partition_stages_while_a_runs_after_h(
    make_engine, param_dir, seed, monkeypatch
):
    """Under a cap with room for one partition, a worker whose H MSM ends before A's lends
    what its H quotient held: the next partition stages while A (made 0.6 s slow) still runs,
    where it used to wait for A to give z back. Every proof verifies and every byte comes
    back. (The kernels' tail is 0 here: a CPU partition's whole working set is below the
    GPU's scratch bound, which a tail never exceeds.)"""
    from cuzk.engine import budget
    from cuzk.engine.srs_entry import least_device_bytes

    monkeypatch.setattr(budget, "CAPPED_KERNEL_SCRATCH", 0)
    infos = [_info(param_dir, cid) for cid in (SMALL, LARGER)]
    staged, kernels = staging_need(infos[1], capped=True)
    assert staged <= kernels  # the next z fits where the lender's working set was
    # Room for one partition of the larger circuit (as the four-worker test under a cap).
    cap = max(staged_bytes_for(i) for i in infos) + max(least_device_bytes(i) for i in infos)
    cap += 4096
    events: list = []
    engine = make_engine(
        workers_per_device=2,
        synthesis_workers=2,
        staging=True,
        device_memory_limit=cap,
        backend_factory=lambda i: _SlowSplitA(
            get_backend("cpu", workers=1, device=i, memory_limit=cap), 0.6, events
        ),
    )
    _assert_each_stages_before_the_last_msm_ends(engine, LARGER, seed, events, "a")
