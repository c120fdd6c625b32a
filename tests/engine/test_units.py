"""Pure parts of the engine: scheduler ordering, budget accounting, fault decisions, timeline
arithmetic."""

from __future__ import annotations

import pytest

from cuzk.engine.budget import (
    CAPPED_KERNEL_SCRATCH,
    MemoryBudget,
    capped_kernel_bytes,
    detect_total,
    kernel_bytes,
    partition_bytes,
)
from cuzk.engine.config import EngineConfig, FaultInjection
from cuzk.engine.request import PartitionTimeline, Priority, ProofRequest
from cuzk.engine.scheduler import Scheduler, WorkKey
from cuzk.engine.timeline import (
    busy_fraction,
    handoff_gaps,
    kernels_span,
    stage_medians,
    steady_busy_fraction,
    union_seconds,
)
from cuzk.errors import BadInput, InternalError, ResourceExhausted

# -- scheduler ---------------------------------------------------------------------------------


def test_scheduler_orders_by_priority_then_job_then_partition():
    s: Scheduler[str] = Scheduler()
    for job, prio, parts in [
        (1, Priority.NORMAL, 2),
        (2, Priority.LOW, 1),
        (3, Priority.NORMAL, 1),
        (4, Priority.CRITICAL, 2),
        (5, Priority.HIGH, 1),
    ]:
        for p in reversed(range(parts)):
            s.enqueue(WorkKey(prio, job, p), f"j{job}p{p}")
    order = []
    while (item := s.admit(lambda *_: True)) is not None:
        order.append(item)
    assert order == ["j4p0", "j4p1", "j5p0", "j1p0", "j1p1", "j3p0", "j2p0"]


def test_scheduler_admission_is_head_of_line():
    s: Scheduler[str] = Scheduler()
    s.enqueue(WorkKey(Priority.HIGH, 1, 0), "big")
    s.enqueue(WorkKey(Priority.LOW, 2, 0), "small")
    # The head does not fit: nothing is admitted, the smaller job may not overtake it.
    assert s.admit(lambda key, item: item != "big") is None
    assert s.head() is not None and s.head()[1] == "big"
    assert s.admit(lambda *_: True) == "big"


def test_scheduler_drop_job_and_ready_queue():
    s: Scheduler[str] = Scheduler()
    for j in (1, 2):
        for p in range(3):
            s.enqueue(WorkKey(Priority.NORMAL, j, p), f"{j}.{p}")
    s.push_ready(WorkKey(Priority.NORMAL, 2, 9), "2.ready")
    s.push_ready(WorkKey(Priority.CRITICAL, 3, 0), "3.ready")
    queued, ready = s.drop_job(2)
    assert sorted(queued) == ["2.0", "2.1", "2.2"] and ready == ["2.ready"]
    assert s.queued_count == 3 and s.ready_count == 1
    assert s.pop_ready() == "3.ready" and s.pop_ready() is None
    assert s.queued_by_priority() == {Priority.NORMAL: 3}
    # A device's urgent lane takes only what is at least as urgent as its bound.
    s.push_ready(WorkKey(Priority.NORMAL, 4, 0), "4.normal")
    assert s.pop_ready(Priority.HIGH) is None and s.ready_count == 1
    s.push_ready(WorkKey(Priority.HIGH, 5, 0), "5.high")
    assert s.pop_ready(Priority.HIGH) == "5.high" and s.pop_ready(Priority.HIGH) is None
    assert s.pop_ready() == "4.normal"


def test_priority_lock_serves_waiters_most_urgent_first():
    """Held by one thread while five others queue with mixed priorities: they get the lock
    by (priority, arrival), one at a time."""
    import threading
    import time

    from cuzk.engine.workers import PriorityLock

    lock = PriorityLock()
    order: list[str] = []
    inside = [0]
    holding, go = threading.Event(), threading.Event()

    def holder() -> None:
        with lock.hold(Priority.LOW):
            holding.set()
            go.wait(10)

    def waiter(name: str, priority: Priority) -> None:
        with lock.hold(priority):
            inside[0] += 1
            assert inside[0] == 1
            order.append(name)
            time.sleep(0.01)
            inside[0] -= 1

    first = threading.Thread(target=holder)
    first.start()
    assert holding.wait(10)
    waiters = []
    for name, p in [("n1", Priority.NORMAL), ("c1", Priority.CRITICAL), ("l1", Priority.LOW),
                    ("n2", Priority.NORMAL), ("c2", Priority.CRITICAL)]:  # fmt: skip
        t = threading.Thread(target=waiter, args=(name, p))
        t.start()
        waiters.append(t)
        time.sleep(0.05)  # arrive in this order
    go.set()
    for t in [first, *waiters]:
        t.join(10)
    assert order == ["c1", "c2", "n1", "n2", "l1"]


# -- budget ------------------------------------------------------------------------------------


def test_budget_two_step_release_is_idempotent():
    b = MemoryBudget(1000)
    r = b.reserve("partition", "job-1/p0", {"kernel": 600, "carry": 300})
    assert b.reserved == 900 and b.available == 100 and not b.fits(101)
    assert b.release(r, "kernel") == 600
    assert b.release(r, "kernel") == 0
    assert b.reserved == 300 and b.live_reservations == 1
    assert b.release(r) == 300 and b.release(r) == 0
    assert b.reserved == 0 and b.live_reservations == 0
    assert b.by_kind() == {"srs": 0, "shape": 0, "partition": 0}


def test_budget_refuses_what_can_never_fit():
    b = MemoryBudget(1000)
    b.check_can_fit(1000, "x")
    with pytest.raises(ResourceExhausted, match="can never run"):
        b.check_can_fit(1001, "a partition of synthetic:9")
    with pytest.raises(InternalError):
        b.reserve("partition", "too big", {"kernel": 2000})
    with pytest.raises(ResourceExhausted):
        MemoryBudget(0)


def test_budget_resize_replaces_estimates():
    b = MemoryBudget(1000)
    r = b.reserve("shape", "shape x", {"matrices": 100})
    b.resize(r, "matrices", 250)
    assert b.by_kind()["shape"] == 250
    b.release(r)
    assert b.reserved == 0


def test_detect_total_reads_meminfo(tmp_path):
    f = tmp_path / "meminfo"
    f.write_text("MemTotal: 4000 kB\nMemFree: 100 kB\nMemAvailable: 3000 kB\n")
    assert detect_total(margin=1024, meminfo=str(f)) == 3000 * 1024 - 1024
    assert detect_total(margin=1 << 40, meminfo=str(f)) == 0
    assert detect_total(margin=0) > 0  # this machine's /proc/meminfo


def test_partition_bytes_scale_with_the_circuit():
    small, big = partition_bytes(300, 512), partition_bytes(3000, 4096)
    assert set(small) == {"kernel", "carry"}
    assert all(big[k] > small[k] for k in small)


# -- config and faults -------------------------------------------------------------------------


def test_fault_decisions_are_deterministic_and_targeted():
    f = FaultInjection(kernel_error=0.5, seed=3)
    hits = [f.fires("kernel", f"r{i}", 0) for i in range(400)]
    assert hits == [f.fires("kernel", f"r{i}", 0) for i in range(400)]
    assert 120 < sum(hits) < 280
    assert not any(f.fires("synthesis", f"r{i}", 0) for i in range(50))
    only = FaultInjection(synthesis_error=1.0, targets=frozenset({"bad"}))
    assert only.fires("synthesis", "bad", 3) and not only.fires("synthesis", "good", 3)
    assert FaultInjection.uniform(0.2).active and not FaultInjection().active
    with pytest.raises(BadInput):
        FaultInjection(kernel_error=1.5)


def test_config_validation(tmp_path):
    with pytest.raises(BadInput):
        EngineConfig(param_dir=tmp_path, devices=0)
    with pytest.raises(BadInput):
        EngineConfig(param_dir=tmp_path, backend="tpu")
    cfg = EngineConfig(param_dir=str(tmp_path), devices=2, workers_per_device=3)  # type: ignore
    assert cfg.lookahead == 6
    assert cfg.params_path("synthetic:300") == tmp_path / "synthetic-300.params"
    # Poseidon deferral: every backend by default; "cpu" keeps CUDA witnesses on the host
    assert cfg.poseidon_deferred
    assert EngineConfig(param_dir=tmp_path, backend="cuda").poseidon_deferred
    cuda_host_poseidon = EngineConfig(param_dir=tmp_path, backend="cuda", defer_poseidon="cpu")
    assert not cuda_host_poseidon.poseidon_deferred
    assert EngineConfig(param_dir=tmp_path, defer_poseidon="cpu").poseidon_deferred
    assert not EngineConfig(param_dir=tmp_path, defer_poseidon="off").poseidon_deferred
    with pytest.raises(BadInput):
        EngineConfig(param_dir=tmp_path, defer_poseidon="yes")


def test_request_payload_ignores_priority():
    a = ProofRequest.of("synthetic:300", partitions=2, seed=4)
    b = ProofRequest(a.circuit_id, a.seeds, Priority.CRITICAL, "x")
    assert a.payload_digest() == b.payload_digest()
    assert a.payload_digest() != ProofRequest.of("synthetic:300", seed=4).payload_digest()
    assert a.partitions == 2 and a.seeds == (4, 5)


# -- timeline ----------------------------------------------------------------------------------


def _t(device, pick, ks, ke, synth=(0.0, 0.1)):
    return PartitionTimeline(
        "job-1", 0, device, "w", 0.0, synth[0], synth[1], pick, ks, ke, ke + 0.01, {"h": 0.2}
    )


def test_union_and_busy_fraction():
    assert union_seconds([(0, 1), (0.5, 2), (3, 4)]) == pytest.approx(3.0)
    assert union_seconds([]) == 0.0
    tl = [_t(0, 0.1, 1.0, 2.0), _t(0, 0.2, 1.5, 3.0), _t(1, 0.1, 0.0, 10.0)]
    assert busy_fraction(tl, 0, (0.0, 4.0)) == pytest.approx(0.5)
    assert busy_fraction(tl, 1, (2.0, 4.0)) == pytest.approx(1.0)
    assert busy_fraction(tl, 0, (1.0, 1.0)) == 0.0
    # steady state: from the first kernel start (1.0) to the last end (3.0), all busy
    assert steady_busy_fraction(tl, 0) == pytest.approx(1.0)
    gap = [_t(0, 0.0, 1.0, 2.0), _t(0, 0.0, 3.0, 4.0)]
    assert steady_busy_fraction(gap, 0) == pytest.approx(2 / 3)
    assert steady_busy_fraction(tl, 2) == 0.0  # a device that ran nothing


def test_kernels_span_leaves_out_fill_and_drain():
    # synthesis from 0.0, kernels 1.0–2.0 and 2.5–3.25 on device 0, 1.5–3.5 on device 1;
    # finalize ends 0.01 s after each: none of that outside the kernels counts
    tl = [_t(0, 0.1, 1.0, 2.0), _t(0, 0.2, 2.5, 3.25), _t(1, 0.1, 1.5, 3.5)]
    assert kernels_span(tl) == pytest.approx(2.5)
    assert kernels_span(tl[:1]) == pytest.approx(1.0)
    unfinished = PartitionTimeline("job-2", 0, 0, "w", 0.0, 0.0, 0.1, 0.1, 9.0, None, None, {})
    assert kernels_span([*tl, unfinished]) == pytest.approx(2.5)  # kernels that never ended
    assert kernels_span([]) == 0.0


def test_handoff_gaps_count_only_waiting_partitions():
    tl = [_t(0, 0.0, 1.0, 2.0), _t(0, 1.5, 2.004, 3.0), _t(0, 5.0, 5.1, 6.0)]
    # The third partition was picked after the second ended: idle, not overhead.
    assert handoff_gaps(tl, 0) == [pytest.approx(0.004)]


def test_stage_medians():
    tl = [_t(0, 0.1, 1.0, 2.0), _t(0, 0.1, 1.0, 4.0), _t(0, 0.1, 1.0, 3.0)]
    med = stage_medians(tl)
    assert med["kernels"] == pytest.approx(2.0)
    assert med["prover.h"] == pytest.approx(0.2)
    assert med["synthesis"] == pytest.approx(0.1)


def test_gpu_partitions_weigh_only_their_witness_on_the_host():
    """A 32 GiB partition on a GPU: the 2^27-domain kernel vectors live in VRAM (the staging
    area counts them), so the host budget sees the witness alone; on the CPU both."""
    n, m = 130_278_869, 1 << 27
    cpu, gpu = partition_bytes(n, m, "cpu"), partition_bytes(n, m, "cuda")
    assert gpu["kernel"] == 0 and 0 < gpu["carry"] < cpu["carry"]
    # at least its 32-byte values and a gathering copy; ten fit a 128 GiB host's budget
    assert 64 * n <= gpu["carry"] and 10 * gpu["carry"] < 120 << 30
    assert cpu["kernel"] >= 40 << 30


def test_capped_kernel_bytes_count_two_domain_buffers_and_the_scratch():
    """Under a cap the kernels hold two domain buffers and a bounded scratch: the MSMs gather
    and plan their scalars pass by pass, through row indices uploaded a pass at a time, so
    neither the variable count nor the MSMs' sizes weigh on the device."""
    gib = 1 << 30
    m = 1 << 27  # porep-32g's domain
    got = capped_kernel_bytes(m)
    assert got == 64 * m + CAPPED_KERNEL_SCRATCH
    assert 9.2 * gib < got < 9.3 * gib
    assert kernel_bytes(m, "cuda", capped=True) == got
    assert kernel_bytes(m, "cuda") > 4 * got  # the uncapped kernels hold more
