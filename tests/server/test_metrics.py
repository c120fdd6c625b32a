"""Prometheus metrics: rendered text parsed back with prometheus-client's own parser, counters
and histograms from job events, gauges from a (fake, random) engine status at scrape time."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cuzk.engine.request import (
    BudgetStatus,
    DeviceStatus,
    EngineStatus,
    JobState,
    PartitionState,
    PartitionTimeline,
    Priority,
    SrsStatus,
    WorkerStatus,
)
from cuzk.errors import BadInput
from cuzk.server.metrics import STAGES, Metrics, circuit_kind, stage_seconds


def samples(metrics: Metrics) -> dict[tuple[str, frozenset], float]:
    """(sample name, labels) → value, from the rendered exposition text."""
    out = {}
    for family in text_string_to_metric_families(metrics.render().decode()):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(metrics: Metrics, name: str, **labels: str) -> float:
    return samples(metrics)[(name, frozenset(labels.items()))]


def fake_status(rng) -> EngineStatus:
    r = lambda hi: int(rng.integers(0, hi))  # noqa: E731
    counts = {p.name: {s.value: r(20) for s in JobState} for p in Priority}
    uptime = float(rng.uniform(10, 1000))
    by_kind = {"srs": r(1 << 30), "shape": r(1 << 20), "partition": r(1 << 28)}
    return EngineStatus(
        uptime=uptime,
        accepting=bool(rng.integers(0, 2)),
        counts=counts,
        partitions={s.value: r(50) for s in PartitionState},
        jobs=(),
        budget=BudgetStatus(sum(by_kind.values()) + r(1 << 30) + 1, sum(by_kind.values()), by_kind),
        srs=(
            SrsStatus("synthetic:400", "resident", r(1 << 30), r(3), 1.0),
            SrsStatus("wpost-2k", "resident", r(1 << 30), 0, 2.0),
            SrsStatus("winning-2k", "loading", r(1 << 30), 1, 3.0),
        ),
        evictions=r(10),
        workers=(
            WorkerStatus("s0", "synthesis", None, "job-1/p0"),
            WorkerStatus("d0", "device", 0, None),
            WorkerStatus("d1", "device", 1, "job-1/p1"),
        ),
        devices=tuple(
            DeviceStatus(
                i,
                "cpu",
                float(rng.uniform(0, uptime)),
                memory_give_backs=r(500),
                uploaded_bytes=r(1 << 40),
            )
            for i in range(2)
        ),
    )


def test_counters_count_finished_jobs_by_kind():
    m = Metrics(_never)  # a scrape whose engine status fails still renders the counters
    m.job_finished("synthetic:400", "succeeded", 1.0, {})
    m.job_finished("synthetic:300", "succeeded", 2.0, {})
    m.job_finished("wpost-32g", "failed", 3.0, {"queue": 1.0})
    m.job_finished("winning-2k", "cancelled", 0.5, {})
    assert value(m, "cuzk_proofs_completed_total", kind="synthetic") == 2
    assert value(m, "cuzk_proofs_failed_total", kind="wpost") == 1
    assert value(m, "cuzk_proofs_cancelled_total", kind="winning") == 1
    # every kind starts at zero, so rate() works before the first event
    assert value(m, "cuzk_proofs_failed_total", kind="porep") == 0
    assert value(m, "cuzk_proofs_completed_total", kind="other") == 0
    assert value(m, "cuzk_engine_status_up") == 0


def _never() -> EngineStatus:
    raise RuntimeError("engine gone")


def test_histograms_observe_succeeded_jobs(rng):
    m = Metrics(_never)
    durations = rng.uniform(0.01, 100, size=5)
    stage_sets = [{s: float(rng.uniform(0, 5)) for s in STAGES} for _ in durations]
    for d, stages in zip(durations, stage_sets, strict=True):
        m.job_finished("synthetic:1000", "succeeded", float(d), {**stages, "bogus": 1.0})
    m.job_finished("synthetic:1000", "failed", 1e6, {"queue": 1e6})  # not a proof time
    assert value(m, "cuzk_proof_duration_seconds_count", kind="synthetic") == 5
    assert value(m, "cuzk_proof_duration_seconds_sum", kind="synthetic") == pytest.approx(
        float(durations.sum())
    )
    for stage in STAGES:
        assert value(m, "cuzk_stage_seconds_count", kind="synthetic", stage=stage) == 5
        assert value(m, "cuzk_stage_seconds_sum", kind="synthetic", stage=stage) == pytest.approx(
            sum(s[stage] for s in stage_sets)
        )
    names = {k[0] for k in samples(m)}
    assert not any("bogus" in str(k[1]) for k in samples(m)) and names
    # buckets are cumulative and end with every observation
    le_10 = value(m, "cuzk_proof_duration_seconds_bucket", kind="synthetic", le="10.0")
    assert le_10 == sum(1 for d in durations if d <= 10.0)
    assert value(m, "cuzk_proof_duration_seconds_bucket", kind="synthetic", le="+Inf") == 5


def test_bad_state_is_refused():
    with pytest.raises(BadInput, match="state must be one of"):
        Metrics(_never).job_finished("synthetic:1", "running", 1.0, {})


def test_gauges_reflect_the_status_at_scrape_time(rng):
    current = [fake_status(rng)]
    m = Metrics(lambda: current[0])
    for _ in range(2):  # a second scrape sees the new status, not a cached one
        st = current[0]
        got = samples(m)

        def v(name: str, got=got, **labels: str) -> float:
            return got[(name, frozenset(labels.items()))]

        assert v("cuzk_engine_status_up") == 1
        assert v("cuzk_uptime_seconds") == pytest.approx(st.uptime)
        assert v("cuzk_accepting") == float(st.accepting)
        for prio, by_state in st.counts.items():
            for state, n in by_state.items():
                assert v("cuzk_jobs", priority=prio.lower(), state=state) == n
            assert (
                v("cuzk_queue_depth", priority=prio.lower())
                == by_state["queued"] + by_state["running"]
            )
        for state, n in st.partitions.items():
            assert v("cuzk_partitions", state=state) == n
        assert v("cuzk_budget_limit_bytes") == st.budget.total
        for kind, n in st.budget.by_kind.items():
            assert v("cuzk_budget_reserved_bytes", kind=kind) == n
        assert v("cuzk_budget_in_use_ratio") == pytest.approx(st.budget.reserved / st.budget.total)
        for d in st.devices:
            assert v("cuzk_device_busy_ratio", device=str(d.index), backend="cpu") == pytest.approx(
                d.kernel_seconds / st.uptime
            )
            assert v(
                "cuzk_device_kernel_seconds_total", device=str(d.index), backend="cpu"
            ) == pytest.approx(d.kernel_seconds)
            assert v("cuzk_device_memory_give_backs_total", device=str(d.index)) == (
                d.memory_give_backs
            )
            assert v("cuzk_device_uploaded_bytes_total", device=str(d.index)) == d.uploaded_bytes
        resident = [s for s in st.srs if s.state == "resident"]
        assert v("cuzk_srs_entries", state="resident") == len(resident) == 2
        assert v("cuzk_srs_bytes", state="resident") == sum(s.bytes for s in resident)
        assert v("cuzk_srs_entries", state="loading") == 1
        assert v("cuzk_srs_evictions_total") == st.evictions
        assert v("cuzk_workers", kind="device") == 2 and v("cuzk_workers_busy", kind="device") == 1
        assert v("cuzk_workers_busy", kind="synthesis") == 1
        current[0] = fake_status(rng)


def test_registries_are_private():
    a, b = Metrics(_never), Metrics(_never)
    a.job_finished("synthetic:5", "succeeded", 1.0, {})
    assert value(a, "cuzk_proofs_completed_total", kind="synthetic") == 1
    assert value(b, "cuzk_proofs_completed_total", kind="synthetic") == 0
    assert a.content_type.startswith("text/plain")


@pytest.mark.parametrize(
    "cid,kind",
    [
        ("synthetic:400", "synthetic"),
        ("winning-2k", "winning"),
        ("wpost-32g", "wpost"),
        ("porep-32g", "porep"),
        ("snap-64g", "snap"),
        ("SYNTHETIC:1", "synthetic"),
        ("made-up:1", "other"),
        ("", "other"),
        ("x" * 500, "other"),
    ],
)
def test_circuit_kinds_are_bounded(cid, kind):
    assert circuit_kind(cid) == kind


def test_stage_seconds_is_the_mean_over_partitions(rng):
    marks = [sorted(float(x) for x in rng.uniform(0, 10, size=5)) for _ in range(3)]
    timelines = [
        PartitionTimeline(
            "job-1",
            i,
            0,
            "w",
            queued=m[0],
            synth_start=m[1],
            kernels_start=m[2],
            kernels_end=m[3],
            finalize_end=m[4],
        )
        for i, m in enumerate(marks)
    ]
    got = stage_seconds(timelines)
    # synth_end is missing, so neither synthesis nor device_wait can be measured
    assert set(got) == {"queue", "kernels", "finalize"}
    for stage, (a, b) in {"queue": (0, 1), "kernels": (2, 3), "finalize": (3, 4)}.items():
        assert got[stage] == pytest.approx(sum(m[b] - m[a] for m in marks) / 3)
    assert stage_seconds([]) == {}
