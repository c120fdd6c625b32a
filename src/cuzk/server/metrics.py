"""Prometheus metrics of the daemon, rendered for HTTP ``/metrics`` and gRPC ``GetMetrics``.

Two sources. Events the daemon reports as jobs end (:meth:`Metrics.job_finished`) feed
counters and histograms; everything that is a *state* — queues, partitions, the memory budget,
device busy time, resident parameters — is read from ``engine_status()`` when scraped, by a
custom collector, so a gauge can never drift from what the engine says.

The registry is private to each :class:`Metrics`, never prometheus-client's global one: two
daemons (or tests) in one process do not share or collide. Circuits are labelled by *kind*
(the circuit catalogue's: ``synthetic``, ``winning``, ``wpost``, ``porep``, ``snap``,
``snarkjs``, else ``other``), never by full id, so label cardinality stays bounded whatever
clients send.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector

from cuzk.circuits import KINDS, find_kind
from cuzk.engine.request import EngineStatus, JobState, PartitionTimeline
from cuzk.errors import BadInput

log = logging.getLogger(__name__)

CIRCUIT_KINDS = tuple(k.name for k in KINDS)
STAGES = ("queue", "synthesis", "device_wait", "kernels", "finalize")
# Proofs take from tens of milliseconds (tiny synthetic circuits) to many minutes (32 GiB PoRep
# on a CPU); roughly ×2.5 steps cover that range with 16 buckets.
DURATION_BUCKETS = (
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    25.0,
    50.0,
    100.0,
    250.0,
    500.0,
    1000.0,
    2500.0,
    float("inf"),
)
STAGE_BUCKETS = (
    0.001,
    0.005,
    0.01,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    25.0,
    50.0,
    100.0,
    250.0,
    float("inf"),
)


def circuit_kind(circuit_id: str) -> str:
    """The bounded label for a circuit id: ``synthetic:400`` → synthetic, ``wpost-32g`` →
    wpost (case and surrounding blanks ignored); anything unrecognised → other."""
    kind = find_kind(circuit_id.strip().lower())
    return kind.name if kind is not None else "other"


def stage_seconds(timelines: Iterable[PartitionTimeline]) -> dict[str, float]:
    """Seconds per engine stage for one job: the mean over the partitions that completed the
    stage — what one partition typically spent there (the value :meth:`Metrics.job_finished`
    takes)."""
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for t in timelines:
        for stage, secs in t.durations().items():
            sums[stage] = sums.get(stage, 0.0) + secs
            counts[stage] = counts.get(stage, 0) + 1
    return {s: sums[s] / counts[s] for s in sums}


class Metrics:
    """The daemon's metrics; thread-safe (prometheus-client's metrics lock internally)."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self, engine_status: Callable[[], EngineStatus]) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        r = self.registry
        self._completed = Counter(
            "cuzk_proofs_completed",
            "Jobs whose proofs were made and verified",
            ["kind"],
            registry=r,
        )
        self._failed = Counter("cuzk_proofs_failed", "Jobs that failed", ["kind"], registry=r)
        self._cancelled = Counter(
            "cuzk_proofs_cancelled", "Jobs that were cancelled", ["kind"], registry=r
        )
        self._duration = Histogram(
            "cuzk_proof_duration_seconds",
            "Seconds from submission to a verified proof, succeeded jobs",
            ["kind"],
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self._stage = Histogram(
            "cuzk_stage_seconds",
            "Seconds a partition spent in each "
            "engine stage (per job: mean over its partitions), succeeded "
            "jobs",
            ["kind", "stage"],
            buckets=STAGE_BUCKETS,
            registry=r,
        )
        self._by_state = {
            JobState.SUCCEEDED.value: self._completed,
            JobState.FAILED.value: self._failed,
            JobState.CANCELLED.value: self._cancelled,
        }
        for kind in (*CIRCUIT_KINDS, "other"):  # zeros from the start, so rate() works
            for counter in self._by_state.values():
                counter.labels(kind=kind)
        r.register(_StatusCollector(engine_status))

    def job_finished(
        self, circuit_id: str, state: str, seconds: float, stages: dict[str, float]
    ) -> None:
        """Count a job that reached terminal ``state`` ("succeeded", "failed" or
        "cancelled"); for succeeded jobs also observe ``seconds`` (submission to proof) and
        ``stages`` (stage name → seconds; names outside :data:`STAGES` are ignored).

        Raises BadInput for a state that is not terminal.
        """
        counter = self._by_state.get(state)
        if counter is None:
            raise BadInput(
                f"job_finished: state must be one of {', '.join(self._by_state)}, got {state!r}"
            )
        kind = circuit_kind(circuit_id)
        counter.labels(kind=kind).inc()
        if state != JobState.SUCCEEDED.value:
            return
        self._duration.labels(kind=kind).observe(max(0.0, seconds))
        for stage, secs in stages.items():
            if stage in STAGES:
                self._stage.labels(kind=kind, stage=stage).observe(max(0.0, secs))

    def render(self) -> bytes:
        """Prometheus text exposition of every metric (content type :attr:`content_type`)."""
        return generate_latest(self.registry)


class _StatusCollector(Collector):
    """Gauges read from the engine's status snapshot at scrape time."""

    def __init__(self, engine_status: Callable[[], EngineStatus]) -> None:
        self._status = engine_status

    def describe(self) -> Iterable[Metric]:
        return ()  # do not call engine_status() at registration

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "cuzk_engine_status_up", "1 if the engine's status could be read at this scrape"
        )
        try:
            st = self._status()
        except Exception:  # a scrape must not fail for the counters' sake
            log.exception("metrics: engine status failed")
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from _status_metrics(st)


def _family(
    kind: type[GaugeMetricFamily] | type[CounterMetricFamily],
    name: str,
    doc: str,
    labels: list[str],
    rows: Iterable[tuple[list[str], float]],
) -> Metric:
    family = kind(name, doc, labels=labels)
    for values, v in rows:
        family.add_metric(values, v)
    return family


def _gauge(
    name: str, doc: str, labels: list[str], rows: Iterable[tuple[list[str], float]]
) -> Metric:
    return _family(GaugeMetricFamily, name, doc, labels, rows)


def _counter(
    name: str, doc: str, labels: list[str], rows: Iterable[tuple[list[str], float]]
) -> Metric:
    return _family(CounterMetricFamily, name, doc, labels, rows)


def _status_metrics(st: EngineStatus) -> Iterator[Metric]:
    yield _gauge("cuzk_uptime_seconds", "Seconds since the engine started", [], [([], st.uptime)])
    yield _gauge(
        "cuzk_accepting",
        "1 while the engine takes new work",
        [],
        [([], 1.0 if st.accepting else 0.0)],
    )
    yield _gauge(
        "cuzk_jobs",
        "Jobs the engine remembers, by priority and state",
        ["priority", "state"],
        [
            ([prio.lower(), state], n)
            for prio, by_state in st.counts.items()
            for state, n in by_state.items()
        ],
    )
    yield _gauge(
        "cuzk_queue_depth",
        "Jobs queued or running (not finished), by priority",
        ["priority"],
        [
            ([prio.lower()], by_state.get("queued", 0) + by_state.get("running", 0))
            for prio, by_state in st.counts.items()
        ],
    )
    yield _gauge(
        "cuzk_partitions",
        "Partitions of remembered jobs, by state",
        ["state"],
        [([state], n) for state, n in st.partitions.items()],
    )
    yield _gauge(
        "cuzk_budget_limit_bytes", "Memory the engine may reserve", [], [([], st.budget.total)]
    )
    yield _gauge(
        "cuzk_budget_reserved_bytes",
        "Memory reserved now, by what holds it",
        ["kind"],
        [([k], v) for k, v in st.budget.by_kind.items()],
    )
    yield _gauge(
        "cuzk_budget_in_use_ratio",
        "Reserved / limit",
        [],
        [([], st.budget.reserved / st.budget.total if st.budget.total else 0.0)],
    )
    if st.device_budgets:
        yield _gauge(
            "cuzk_device_key_budget_bytes",
            "A device's memory for resident parameters (beside its staging area)",
            ["device"],
            [([str(i)], kb.total) for i, kb in enumerate(st.device_budgets)],
        )
        yield _gauge(
            "cuzk_device_key_reserved_bytes",
            "A device's memory held by resident parameters now",
            ["device"],
            [([str(i)], kb.reserved) for i, kb in enumerate(st.device_budgets)],
        )
    yield _gauge(
        "cuzk_device_memory_limit_bytes",
        "The cap a device's use is kept under (device_memory_limit; 0: the whole device)",
        ["device"],
        [([str(d.index)], d.memory_limit) for d in st.devices],
    )
    yield _gauge(
        "cuzk_device_memory_peak_bytes",
        "The most a device has had in use since the daemon started, measured (0: unknown)",
        ["device"],
        [([str(d.index)], d.memory_peak) for d in st.devices],
    )
    yield _counter(
        "cuzk_device_memory_give_backs",
        "Cached blocks given back to a device to keep a request under its cap, each a "
        "device-wide wait (since the daemon started)",
        ["device"],
        [([str(d.index)], d.memory_give_backs) for d in st.devices],
    )
    yield _counter(
        "cuzk_device_uploaded_bytes",
        "Bytes copied from host memory to a device (streamed key vectors and matrices, "
        "witnesses) since the daemon started",
        ["device"],
        [([str(d.index)], d.uploaded_bytes) for d in st.devices],
    )
    yield _gauge(
        "cuzk_srs_streamed_vectors",
        "Vectors of a key streamed from host memory to a device per proof (0: all resident)",
        ["circuit"],
        [([s.circuit_id], len(s.streamed)) for s in st.srs],
    )
    yield _gauge(
        "cuzk_device_busy_ratio",
        "Kernel (compute lock) seconds / uptime",
        ["device", "backend"],
        [
            ([str(d.index), d.backend], d.kernel_seconds / st.uptime if st.uptime > 0 else 0.0)
            for d in st.devices
        ],
    )
    yield _counter(
        "cuzk_device_kernel_seconds",
        "Seconds the device's compute lock was held",
        ["device", "backend"],
        [([str(d.index), d.backend], d.kernel_seconds) for d in st.devices],
    )
    by_state: dict[str, tuple[int, int]] = {"resident": (0, 0), "loading": (0, 0)}
    for s in st.srs:
        n, b = by_state.get(s.state, (0, 0))
        by_state[s.state] = (n + 1, b + s.bytes)
    yield _gauge(
        "cuzk_srs_entries",
        "Circuits' parameters held, by state",
        ["state"],
        [([state], n) for state, (n, _) in by_state.items()],
    )
    yield _gauge(
        "cuzk_srs_bytes",
        "Budget bytes held by circuits' parameters, by state",
        ["state"],
        [([state], b) for state, (_, b) in by_state.items()],
    )
    evictions = CounterMetricFamily(
        "cuzk_srs_evictions", "Parameter sets evicted under memory pressure"
    )
    evictions.add_metric([], st.evictions)
    yield evictions
    workers: dict[str, list[int]] = {}
    for w in st.workers:
        row = workers.setdefault(w.kind, [0, 0])
        row[0] += 1
        row[1] += w.busy_with is not None
    yield _gauge(
        "cuzk_workers",
        "Worker threads, by kind",
        ["kind"],
        [([k], n) for k, (n, _) in workers.items()],
    )
    yield _gauge(
        "cuzk_workers_busy",
        "Worker threads working on a partition now, by kind",
        ["kind"],
        [([k], busy) for k, (_, busy) in workers.items()],
    )
