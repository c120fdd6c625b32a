"""The key budget: on devices that report their memory, resident keys reserve their points in
each device's memory beside the staging area. Two keys that do not fit together take turns
(the idle one is evicted); a key that could never fit is refused at submit.

The devices here are CPU backends that report a memory size chosen per test, so the accounting
is the real engine's with keys of a few KB."""

from __future__ import annotations

import pytest

from cuzk.backend import get_backend
from cuzk.backend.base import MemoryInfo
from cuzk.circuits import get_circuit
from cuzk.engine import EngineConfig, FaultInjection, JobState, Priority, ProofRequest, key_plan
from cuzk.engine.budget import DEVICE_MARGIN, device_key_budget
from cuzk.engine.family import circuit_info
from cuzk.engine.srs import AUTO_COPIES
from cuzk.engine.srs_entry import device_bytes, matrix_bytes
from cuzk.errors import BadInput, ResourceExhausted
from cuzk.r1cs import synthesize_shape
from cuzk.server.http import status_json
from cuzk.server.journal import Journal
from cuzk.server.proto import proving_pb2 as pb
from cuzk.server.service import ProvingService

from .conftest import LARGER, SMALL
from .helpers import assert_verifies, idle_budget, wait_until

STAGING = 8 << 30


class _ReportsMemory:
    """A CPU backend that says it is a device of ``total`` bytes, and records the MSM copies
    it is asked for (held as asked, or refused as out of memory with ``refuse``)."""

    def __init__(self, backend, total: int, refuse: bool = False) -> None:
        self._backend, self._total, self._refuse = backend, total, refuse
        self.copies: dict[str, int] = {}
        self.failing_loads = 0  # vectors whose load fails next, as out of device memory
        self.forgotten: list = []  # shapes whose device matrices it was told to drop
        self.streamed: dict[str, int] = {}  # vector key → stream buffer bytes it was loaded with
        self.streamed_shapes: list = []  # (shape, block bytes) it was told to stream
        self.give_backs = 0  # what it reports as cached blocks given back under a cap
        self.uploaded = 0  # and as bytes copied to the device

    def stream_shape(self, shape, block_bytes: int) -> None:
        self.streamed_shapes.append((shape, block_bytes))
        self._backend.stream_shape(shape, block_bytes)

    def forget_shape(self, shape) -> None:
        self.forgotten.append(shape)
        self._backend.forget_shape(shape)

    def preload(self, bases, stream_bytes: int = 0) -> None:
        if self.failing_loads:
            self.failing_loads -= 1
            raise ResourceExhausted("CUDA device: loading parameters: out of memory")
        self.streamed[bases.key] = stream_bytes
        self._backend.preload(bases, stream_bytes)

    def memory(self) -> MemoryInfo:
        return MemoryInfo(
            self._total, self._total, give_backs=self.give_backs, uploaded=self.uploaded
        )

    def precompute(self, bases, copies: int) -> int:
        if self._refuse and copies > 1:
            raise ResourceExhausted("CUDA device 0: copies: out of memory")
        self.copies[bases.key] = copies
        return copies

    def __getattr__(self, name: str):
        return getattr(self._backend, name)


def _info(param_dir, cid: str):
    return circuit_info(cid, param_dir / f"{cid.replace(':', '-')}.params", "cpu", 1)


def _need(param_dir, cid: str) -> int:
    """The key budget its entry needs to load (points and the shape's estimate)."""
    return device_bytes(_info(param_dir, cid))


def _resident(param_dir, cid: str) -> int:
    """What it holds once loaded: points and the shape's matrices, exactly."""
    shape = synthesize_shape(get_circuit(cid), cid)
    return _info(param_dir, cid).point_bytes + shape.nbytes


def _engine(make_engine, key_budget: int, devices: int = 1, **config):
    """An engine whose devices report memory for ``key_budget`` (copies off unless asked)."""
    total = key_budget + STAGING + DEVICE_MARGIN
    assert device_key_budget(total, STAGING) == key_budget
    refuse = config.pop("refuse", False)
    made: list[_ReportsMemory] = []

    def factory(i: int) -> _ReportsMemory:
        made.append(_ReportsMemory(get_backend("cpu", workers=1), total, refuse))
        return made[-1]

    config.setdefault("msm_copies", 1)
    engine = make_engine(devices=devices, staging=True, staging_budget=STAGING,
                         backend_factory=factory, **config)  # fmt: skip
    engine.backends = made
    return engine


def test_two_keys_that_do_not_fit_together_take_turns(make_engine, param_dir, seed):
    budget = _need(param_dir, LARGER) + _resident(param_dir, SMALL) // 2  # one at a time
    engine = _engine(make_engine, budget)
    order = [SMALL, LARGER, SMALL, LARGER]
    for i, cid in enumerate(order):
        request = ProofRequest.of(cid, partitions=2, seed=seed + i)
        assert_verifies(engine.prove(request, timeout=120), 2)
        st = engine.status()
        (kb,) = st.device_budgets
        assert kb.total == budget
        resident = [s for s in st.srs if s.devices]
        assert [(s.circuit_id, s.devices) for s in resident] == [(cid, (0,))]
        assert resident[0].device_bytes == _resident(param_dir, cid)
        assert kb.reserved == resident[0].device_bytes <= budget
    wait_until(lambda: idle_budget(engine), what="partitions to drain")
    assert engine.status().evictions == len(order) - 1
    st = engine.status()
    total = budget + STAGING + DEVICE_MARGIN
    for d in st.devices:  # the device holds the resident key; nothing is staged now
        assert (d.memory_total, d.key_bytes, d.staged_bytes) == (
            total,
            _resident(param_dir, LARGER),
            0,
        )
        assert d.memory_free == total - d.key_bytes
    body = status_json(st)
    assert body["devices"][0]["memory_free_bytes"] == st.devices[0].memory_free
    assert body["device_budgets"] == [
        {"device": 0, "total_bytes": budget, "reserved_bytes": d.key_bytes,
         "free_bytes": budget - d.key_bytes}
    ]  # fmt: skip
    on_device = [s for s in body["srs"] if s["devices"]]  # the other: host memory only
    assert [(s["circuit_id"], s["device_bytes"], s["devices"]) for s in on_device] == [
        (LARGER, _resident(param_dir, LARGER), [0])
    ]
    # All at once: each job waits at the head of the queue until the other key's partitions
    # in flight are done and it can be evicted.
    jobs = [engine.submit(ProofRequest.of(cid, partitions=3, seed=seed + 10 + i))
            for i, cid in enumerate(order)]  # fmt: skip
    for job_id in jobs:
        assert_verifies(engine.result(job_id, timeout=120), 3)
    assert engine.status().evictions == 2 * len(order) - 1


def _on(engine, cid: str) -> tuple[int, ...]:
    """The devices that hold ``cid``'s key now."""
    return next((s.devices for s in engine.status().srs if s.circuit_id == cid), ())


def test_on_two_devices_a_second_key_takes_one_and_the_busy_key_keeps_the_other(
    make_engine, param_dir, seed
):
    """A key that does not fit beside a busy one: on one device it waits for the busy key's
    work to drain everywhere; with two, one device gives the busy key up (its partitions there
    finish) and the other keeps proving the busy job. Afterwards the busy key comes back to
    both devices as soon as new work of it is admitted and the other key is idle."""
    budget = _need(param_dir, LARGER) + _resident(param_dir, SMALL) // 2  # one key per device
    slow = FaultInjection(slow_kernel=1.0, slow_kernel_s=0.4, targets=frozenset({"bulk"}))
    engine = _engine(make_engine, budget, devices=2, faults=slow)
    bulk = engine.submit(ProofRequest.of(SMALL, partitions=12, seed=seed, request_id="bulk"))
    wait_until(lambda: _on(engine, SMALL) == (0, 1), what="the bulk key on both devices")
    urgent = ProofRequest.of(LARGER, seed=seed + 50, priority=Priority.HIGH)
    assert_verifies(engine.prove(urgent, timeout=60), 1)
    st = engine.status()
    (bulk_status,) = [j for j in st.jobs if j.job_id == bulk]
    assert bulk_status.state is JobState.RUNNING  # the urgent key did not wait for it all
    small, larger = _on(engine, SMALL), _on(engine, LARGER)
    assert len(larger) == 1 and sorted(small + larger) == [0, 1]
    keys = {d.index: d.key_bytes for d in st.devices}
    assert keys[larger[0]] == _resident(param_dir, LARGER)
    gave_up = engine.backends[larger[0]].forgotten  # the bulk key's matrices left it
    small_rows = synthesize_shape(get_circuit(SMALL), SMALL).num_constraints
    assert [s.num_constraints for s in gave_up] == [small_rows]
    assert all(kb.reserved <= budget for kb in st.device_budgets)
    assert_verifies(engine.result(bulk, timeout=120), 12)
    again = ProofRequest.of(SMALL, partitions=2, seed=seed + 60)
    assert_verifies(engine.prove(again, timeout=60), 2)
    assert (_on(engine, SMALL), _on(engine, LARGER)) == ((0, 1), ())
    # Nothing busy: the other key goes to both devices. Then the first one's way back fails
    # once on device 1 (out of memory there): its work runs on device 0 (a partition that
    # went to device 1 meanwhile goes back to the queue), and a later admission retries.
    assert_verifies(engine.prove(ProofRequest.of(LARGER, seed=seed + 70), timeout=60), 1)
    assert (_on(engine, SMALL), _on(engine, LARGER)) == ((), (0, 1))
    engine.backends[1].failing_loads = 1
    assert_verifies(engine.prove(ProofRequest.of(SMALL, partitions=3, seed=seed + 80),
                                 timeout=60), 3)  # fmt: skip
    assert engine.backends[1].failing_loads == 0  # the failed load happened
    assert 0 in _on(engine, SMALL) and 0 not in _on(engine, LARGER)
    assert_verifies(engine.prove(ProofRequest.of(SMALL, seed=seed + 90), timeout=60), 1)
    assert (_on(engine, SMALL), _on(engine, LARGER)) == ((0, 1), ())


def test_a_random_mix_of_two_keys_on_two_devices_never_sticks(make_engine, param_dir, seed, rng):
    """Keys that fit one per device, jobs of both at random priorities and sizes, some cancelled
    while they run: every other job verifies, nothing waits forever, no budget is exceeded, and
    when all is done no partition pins a key on a device."""
    budget = _need(param_dir, LARGER) + _resident(param_dir, SMALL) // 2
    slow = FaultInjection(slow_kernel=0.3, slow_kernel_s=0.05, seed=seed)
    engine = _engine(make_engine, budget, devices=2, faults=slow)
    jobs = []
    for i in range(14):
        cid = (SMALL, LARGER)[int(rng.integers(2))]
        prio = (Priority.CRITICAL, Priority.HIGH, Priority.NORMAL, Priority.LOW)[
            int(rng.integers(4))
        ]
        n = int(rng.integers(1, 4))
        request = ProofRequest.of(cid, partitions=n, seed=seed + 10 * i, priority=prio)
        jobs.append((engine.submit(request), n))
    cancelled = {jobs[int(k)][0] for k in rng.choice(len(jobs), size=3, replace=False)}
    for job_id in cancelled:
        engine.cancel(job_id)
    for job_id, n in jobs:
        if job_id not in cancelled:
            assert_verifies(engine.result(job_id, timeout=120), n)
    wait_until(lambda: idle_budget(engine), what="partitions to drain")
    st = engine.status()
    assert all(kb.reserved <= kb.total for kb in st.device_budgets)
    for s in st.srs:  # every key on each device it sits on fits that device's budget
        assert s.users == 0 and s.device_bytes <= budget
    assert sum(d.key_bytes for d in st.devices) == sum(kb.reserved for kb in st.device_budgets)
    assert st.evictions > 0  # the keys did trade places


def test_the_daemon_reports_each_devices_memory(make_engine, param_dir, tmp_path, seed):
    """GetStatus's vram_total_bytes and vram_free_bytes (Curio's client reads them): the
    device's memory and what resident keys and staged partitions leave of it."""
    budget = _need(param_dir, LARGER)
    engine = _engine(make_engine, budget)
    service = ProvingService(
        engine, Journal(tmp_path / "journal.db", 60.0), max_message_bytes=1 << 20
    )
    assert_verifies(engine.prove(ProofRequest.of(LARGER, seed=seed), timeout=60), 1)
    gpu = service.status().gpus[0]
    total = budget + STAGING + DEVICE_MARGIN
    assert (gpu.vram_total_bytes, gpu.vram_free_bytes) == (
        total,
        total - _resident(param_dir, LARGER),
    )
    # A second key takes the device; the first stays in host memory only: WARM, not HOT.
    assert_verifies(engine.prove(ProofRequest.of(SMALL, seed=seed + 1), timeout=60), 1)
    tiers = {s.circuit_id: s.tier for s in service.status().loaded_srs}
    assert tiers == {SMALL: pb.SRSStatus.HOT, LARGER: pb.SRSStatus.WARM}
    # The give-backs and uploads a capped backend counts reach the status and /status's JSON.
    engine.backends[0].give_backs, engine.backends[0].uploaded = 3 + seed % 97, seed << 20
    (dev,) = status_json(engine.status())["devices"]
    assert (dev["memory_give_backs"], dev["uploaded_bytes"]) == (3 + seed % 97, seed << 20)


def test_both_keys_stay_resident_when_they_fit(make_engine, param_dir, seed):
    engine = _engine(make_engine, _need(param_dir, SMALL) + _need(param_dir, LARGER))
    jobs = [engine.submit(ProofRequest.of(cid, seed=seed + i))
            for i, cid in enumerate((SMALL, LARGER, SMALL))]  # fmt: skip
    for job_id in jobs:
        assert_verifies(engine.result(job_id, timeout=120), 1)
    st = engine.status()
    assert st.evictions == 0
    both = _resident(param_dir, SMALL) + _resident(param_dir, LARGER)
    assert [kb.reserved for kb in st.device_budgets] == [both]


def test_a_key_larger_than_the_key_budget_streams(make_engine, param_dir, seed):
    """A key one byte too large for the key budget is not refused: the vectors that do not
    fit are loaded to stream from host memory (L and A stay first), the device holds no more
    than its key budget, the host budget counts the streamed bytes, and the proofs verify."""
    budget = _need(param_dir, LARGER) - 1
    engine = _engine(make_engine, budget)
    assert_verifies(engine.prove(ProofRequest.of(LARGER, partitions=2, seed=seed), timeout=120), 2)
    st = engine.status()
    (kb,) = st.device_budgets
    (entry,) = [s for s in st.srs if s.circuit_id == LARGER]
    assert entry.streamed and set(entry.streamed) <= {"h", "l", "a", "b_g1", "b_g2"}
    assert "l" not in entry.streamed or set(entry.streamed) >= {"a", "b_g1", "b_g2", "h"}
    assert kb.reserved == entry.device_bytes <= budget
    loaded = engine.backends[0].streamed
    streamed = [key for key, nbytes in loaded.items() if nbytes > 0]
    assert len(streamed) == len(entry.streamed)
    info = _info(param_dir, LARGER)
    pinned = sum(dict(info.vector_bytes)[v] for v in entry.streamed)
    assert st.budget.by_kind["srs"] == info.srs_bytes + pinned
    assert status_json(st)["srs"][0]["streamed"] == list(entry.streamed)
    engine.prove(ProofRequest.of(SMALL), timeout=60)  # a smaller key runs beside it


def test_a_key_without_room_for_its_matrices_streams_them_too(
    make_engine, param_dir, seed, monkeypatch
):
    """A key budget too small for the shape's matrices and the points' buffers: the plan
    streams the matrices as well (the
    backend is told the slot size), the device holds no more than its key budget, the host
    budget counts them as page-locked, and the proofs verify."""
    info = _info(param_dir, LARGER)
    shape_estimate = matrix_bytes(info)
    block = shape_estimate // 8
    monkeypatch.setattr(key_plan, "MATRIX_BLOCK_BYTES", block)
    largest = max(dict(info.vector_bytes).values())
    # two buffers of the largest vector fit beside the slots, not beside the matrices
    budget = 2 * block + 2 * largest + 1000
    assert budget < shape_estimate + 2 * largest
    engine = _engine(make_engine, budget)
    assert_verifies(engine.prove(ProofRequest.of(LARGER, partitions=2, seed=seed), timeout=120), 2)
    st = engine.status()
    (kb,) = st.device_budgets
    (entry,) = [s for s in st.srs if s.circuit_id == LARGER]
    assert key_plan.MATRICES in entry.streamed
    ((shape, nbytes),) = engine.backends[0].streamed_shapes
    assert (shape.circuit_id, nbytes) == (LARGER, block)
    assert kb.reserved == entry.device_bytes <= budget
    vectors = sum(dict(info.vector_bytes)[v] for v in entry.streamed if v != key_plan.MATRICES)
    assert st.budget.by_kind["srs"] == info.srs_bytes + vectors + shape_estimate


@pytest.mark.parametrize(
    ("room_gib", "matrices_stream"), [(2.3, True), (6.3, True), (7.6, False), (45.0, False)]
)
def test_porep_32g_plans_stream_the_matrices_only_on_the_smallest_devices(
    room_gib, matrices_stream
):
    """porep-32g's vectors and 5.5 GiB of matrices (measured): at a 24 or 28 GiB cap (2.3 or
    6.3 GiB left for the key) the matrices stream through two slots; from a 32 GiB cap (7.5
    GiB left) up they stay, beside 1 GiB point buffers."""
    gib = 1 << 30
    vectors = {"h": int(12.9 * gib), "l": int(12.5 * gib), "a": int(6.2 * gib),
               "b_g1": int(4.0 * gib), "b_g2": int(6.4 * gib)}  # fmt: skip
    shape, room = int(5.5 * gib), int(room_gib * gib)
    plan = key_plan.plan_key(vectors, shape, room)
    assert plan is not None and plan.device_bytes <= room
    assert plan.streams(key_plan.MATRICES) == matrices_stream
    if matrices_stream:
        assert plan.matrix_bytes == 2 * plan.block_bytes == 2 * key_plan.MATRIX_BLOCK_BYTES
        assert plan.host_bytes == shape + sum(vectors.values())
        want = min(key_plan.STREAM_BUFFER_BYTES, (room - plan.matrix_bytes) // 2)
        assert plan.stream_bytes == want > (room - shape) // 2
    else:
        assert (plan.matrix_bytes, plan.block_bytes) == (shape, 0)
        assert plan.stream_bytes == key_plan.STREAM_BUFFER_BYTES
    assert key_plan.plan_key(vectors, shape, 2 * key_plan.MATRIX_BLOCK_BYTES) is None


def test_a_key_below_the_floor_is_refused_at_submit(make_engine, param_dir):
    """A key budget that cannot hold even the shape's matrices and two stream buffers
    refuses the circuit at once, naming the setting to change."""
    engine = _engine(make_engine, 1000)
    with pytest.raises(ResourceExhausted, match="staging_budget"):
        engine.submit(ProofRequest.of(LARGER))
    with pytest.raises(ResourceExhausted, match="staging_budget"):
        engine.preload(LARGER)


def test_cpu_devices_have_no_key_budget(make_engine):
    engine = make_engine()
    assert engine.status().device_budgets == ()
    assert engine.status().devices[0].memory_total == 0
    assert status_json(engine.status())["device_budgets"] == []


def test_cpu_virtual_devices_can_report_a_memory_size(make_engine, param_dir, seed):
    """``cpu_device_memory`` (cuzk bench --cpu-device-memory): each virtual device gets the
    key budget a GPU of that size would: half for staging, and no margin (a virtual device
    has no CUDA context). ``device_memory_limit`` caps it; under a cap the staging area
    starts empty and grows to one partition of each key placed on the device."""
    from cuzk.engine.workers import staged_bytes_for

    total = 2 * _need(param_dir, LARGER)
    engine = make_engine(devices=2, staging=True, cpu_device_memory=4 * total)
    assert_verifies(engine.prove(ProofRequest.of(SMALL, seed=seed), timeout=60), 1)
    st = engine.status()
    assert [kb.total for kb in st.device_budgets] == [2 * total] * 2
    engine.shutdown()
    engine = make_engine(devices=2, staging=True, cpu_device_memory=4 * total,
                         device_memory_limit=total)  # fmt: skip
    assert_verifies(engine.prove(ProofRequest.of(SMALL, seed=seed), timeout=60), 1)
    st = engine.status()
    partition = staged_bytes_for(_info(param_dir, SMALL), capped=True)
    assert _on(engine, SMALL) == (0, 1)
    assert [kb.total for kb in st.device_budgets] == [total - partition] * 2
    assert [d.staging_total for d in st.devices] == [partition] * 2
    with pytest.raises(BadInput, match="cpu backend only"):
        EngineConfig(param_dir, backend="cuda", cpu_device_memory=total)
    with pytest.raises(BadInput, match="positive"):
        EngineConfig(param_dir, cpu_device_memory=0)
    with pytest.raises(BadInput, match="positive"):
        EngineConfig(param_dir, device_memory_limit=-1)


def test_msm_copies_fill_half_the_free_key_budget_or_none(make_engine, param_dir, seed):
    """Auto: 13 copies of every vector on every device when 12 more copies of the points take
    at most half the key budget left free; reserved there and shown in the status. Without
    that room, none."""
    points = _info(param_dir, SMALL).point_bytes
    need = _need(param_dir, SMALL)
    roomy = _engine(make_engine, need + 2 * 12 * points, devices=2, msm_copies=None)
    assert_verifies(roomy.prove(ProofRequest.of(SMALL, partitions=2, seed=seed), timeout=60), 2)
    for backend in roomy.backends:
        assert sorted(backend.copies.values()) == [AUTO_COPIES] * 5  # h, l, a, b_g1, b_g2
    (srs,) = roomy.status().srs
    assert srs.msm_copies == AUTO_COPIES
    assert srs.device_bytes == _resident(param_dir, SMALL) + 12 * points
    assert status_json(roomy.status())["srs"][0]["msm_copies"] == AUTO_COPIES
    tight = _engine(make_engine, need + 2 * 12 * points - 1, msm_copies=None)
    assert_verifies(tight.prove(ProofRequest.of(SMALL, seed=seed + 1), timeout=60), 1)
    assert tight.backends[0].copies == {}
    assert tight.status().srs[0].msm_copies == 1


def test_msm_copies_asked_for_and_refused(make_engine, param_dir, seed):
    """An explicit count is made when it fits the free key budget (no halving); a device out of
    memory for them drops them and the key loads without."""
    points = _info(param_dir, SMALL).point_bytes
    need = _need(param_dir, SMALL)
    asked = _engine(make_engine, need + 3 * points, msm_copies=4)
    assert_verifies(asked.prove(ProofRequest.of(SMALL, seed=seed), timeout=60), 1)
    assert set(asked.backends[0].copies.values()) == {4}
    assert asked.status().srs[0].msm_copies == 4
    refused = _engine(make_engine, need + 3 * points, msm_copies=4, refuse=True)
    assert_verifies(refused.prove(ProofRequest.of(SMALL, seed=seed + 1), timeout=60), 1)
    assert set(refused.backends[0].copies.values()) == {1}  # dropped again
    assert refused.status().srs[0].msm_copies == 1
    assert refused.status().srs[0].device_bytes == _resident(param_dir, SMALL)


def test_copies_are_reserved_when_the_key_is_admitted(make_engine, param_dir, seed):
    """Two keys admitted together: the first reserves its copies with its key, so the second
    sees the rest of the budget only, and the budget is never exceeded."""
    small = _info(param_dir, SMALL).point_bytes
    budget = _need(param_dir, SMALL) + _need(param_dir, LARGER) + 12 * small
    engine = _engine(make_engine, budget, synthesis_workers=2, msm_copies=AUTO_COPIES)
    jobs = [engine.submit(ProofRequest.of(cid, seed=seed + i))
            for i, cid in enumerate((SMALL, LARGER))]  # fmt: skip
    for job_id in jobs:
        assert_verifies(engine.result(job_id, timeout=60), 1)
    st = engine.status()
    assert {s.circuit_id: s.msm_copies for s in st.srs} == {SMALL: AUTO_COPIES, LARGER: 1}
    assert st.device_budgets and st.device_budgets[0].reserved <= budget
    assert sorted(set(engine.backends[0].copies.values())) == [AUTO_COPIES]  # SMALL's only


def test_a_tight_cap_with_four_workers_never_deadlocks(make_engine, param_dir, seed):
    """A device capped just above what one partition and a wholly streamed key need, four
    device workers, two circuits taking turns at random priorities: every one of 240 partitions
    proves and verifies (no deadlock, no job failed for memory), and at every look the device's
    keys and staging area stay within the cap."""
    import random

    from cuzk.engine.srs_entry import least_device_bytes
    from cuzk.engine.workers import staged_bytes_for

    infos = [_info(param_dir, cid) for cid in (SMALL, LARGER)]
    cap = max(staged_bytes_for(i) for i in infos) + max(least_device_bytes(i) for i in infos)
    cap += 4096
    engine = make_engine(workers_per_device=4, staging=True, device_memory_limit=cap)
    rnd = random.Random(seed)
    ids = [
        engine.submit(
            ProofRequest.of(
                rnd.choice((SMALL, LARGER)),
                partitions=4,
                seed=seed + i,
                priority=rnd.choice(list(Priority)),
            )  # fmt: skip
        )
        for i in range(60)
    ]
    for job_id in ids:
        result = engine.result(job_id, timeout=300)
        assert_verifies(result, 4)
        st = engine.status()
        (kb,) = st.device_budgets
        (dev,) = st.devices
        assert kb.reserved <= kb.total and kb.total + dev.staging_total <= cap
    st = engine.status()
    assert any(s.streamed for s in st.srs), "the cap was meant to make a key stream"
    assert all(s.state == "resident" for s in st.srs)


@pytest.mark.parametrize(("totals", "capped"), [((24, 40), True), ((80,), False)])
def test_a_small_gpu_runs_the_capped_kernels_without_a_cap_set(make_engine, totals, capped):
    """GPUs below AUTO_CAP_BELOW with no device_memory_limit run as if capped at the largest
    one's size (each plans with its own memory); larger ones keep the default kernels. The
    devices are CPU backends reporting GPU sizes under a cuda config (nothing is proved)."""
    from cuzk.engine.api import AUTO_CAP_BELOW

    made: list[_ReportsMemory] = []

    def factory(i: int) -> _ReportsMemory:
        made.append(_ReportsMemory(get_backend("cpu", workers=1), totals[i] << 30))
        return made[-1]

    engine = make_engine(devices=len(totals), backend="cuda", staging=True,
                         backend_factory=factory)  # fmt: skip
    assert engine.config.capped == capped == (min(totals) << 30 < AUTO_CAP_BELOW)
    want = (max(totals) << 30) if capped else None
    assert engine.config.device_memory_limit == want
    assert [d.memory_total for d in engine.devices] == [t << 30 for t in totals]
    assert len(made) == len(totals) * (2 if capped else 1)  # reopened under the cap
