"""What crosses the engine's boundary: requests in, results and states out.

Everything here is a small frozen dataclass or an enum, so the daemon (issue 5) can map it to
protobuf messages one field at a time and nothing a client holds can change under it.

A request is one *job*; a job of P partitions is P independent Groth16 proofs of the same
circuit, each with its own witness seed (Filecoin's PoRep is 10 partitions). The result is the
concatenation of the P 192-byte proofs, plus the public inputs of each partition.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from cuzk.circuits.statement import payload_digest
from cuzk.errors import BadInput, CuzkError

#: Curio's WindowPoSt ids name every sector of the partition ("wdpost-<miner>-<partition>-[n n
#: …]"): up to 2,349 sector numbers of up to 20 digits, ≈ 50 KB.
MAX_REQUEST_ID_LEN = 1 << 16
MAX_SEED = (1 << 64) - 1


class Priority(enum.IntEnum):
    """Lower values run first; CRITICAL is for proofs with a chain deadline (WindowPoSt)."""

    CRITICAL = 0
    HIGH = 1
    NORMAL = 2
    LOW = 3


class JobState(enum.Enum):
    """A job's lifecycle. QUEUED → RUNNING → one of the three terminal states (a queued job
    may also go straight to FAILED or CANCELLED)."""

    QUEUED = "queued"  # no partition has started synthesis
    RUNNING = "running"  # some partition has started
    SUCCEEDED = "succeeded"  # every partition proved and the whole proof verified
    FAILED = "failed"  # a partition failed (error names it); the rest were skipped
    CANCELLED = "cancelled"  # the client (or a non-graceful shutdown) cancelled it

    @property
    def terminal(self) -> bool:
        return self in _TERMINAL_JOB


_TERMINAL_JOB = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})


class PartitionState(enum.Enum):
    """One partition's lifecycle through the pipeline; the last four are terminal."""

    QUEUED = "queued"  # in the scheduler, holding nothing
    SYNTHESIZING = "synthesizing"  # admitted: memory reserved, witness being built
    READY = "ready"  # synthesized, waiting for a device worker
    DEVICE_WAIT = "device_wait"  # taken by a device worker, waiting for the compute lock
    KERNELS = "kernels"  # inside the compute lock
    FINALIZING = "finalizing"  # assembling A, B, C outside the lock
    DONE = "done"  # proof made (verified with the whole job)
    FAILED = "failed"  # this partition raised; its job failed
    SKIPPED = "skipped"  # dropped because its job failed or was cancelled before it ran
    DISCARDED = "discarded"  # was running when its job ended; its work was thrown away

    @property
    def terminal(self) -> bool:
        return self in _TERMINAL_PART


_TERMINAL_PART = frozenset(
    {PartitionState.DONE, PartitionState.FAILED, PartitionState.SKIPPED, PartitionState.DISCARDED}
)


class JobCancelled(CuzkError):
    """``result()`` of a job that was cancelled."""


CANCELLED_BY_CLIENT = "cancelled by the client"  # a cancellation's reason unless one is given


@dataclass(frozen=True)
class ProofRequest:
    """One proving job.

    The witness comes from exactly one of two places. ``seeds`` (one per partition, so
    ``len(seeds)`` partitions) drive the synthetic benchmark circuits and the seeded Filecoin
    test circuits. ``payload`` is bytes in the circuit family's own format — a PoSt request
    with vanilla proofs (``winning-*``, ``wpost-*``), a PoRep C1 output (``porep-*``), a
    SnapDeals update (``snap-*``), a circom ``.wtns`` witness for a snarkjs key
    (``snarkjs:NAME`` proves with ``<param_dir>/NAME.zkey``; one partition) — and the engine
    learns the partition count by parsing it at submit (its prover family's ``open``,
    :mod:`cuzk.engine.family`).

    ``request_id`` is the client's idempotency key: resubmitting the same id with the same
    payload (circuit, seeds and payload bytes) returns the original job; the same id with
    another payload is refused. Priority is not part of the payload.
    """

    circuit_id: str  # a registered circuit id, e.g. "synthetic:400", "wpost-2k", "snarkjs:NAME"
    seeds: tuple[int, ...] = ()  # one witness seed per partition, 0 ≤ seed < 2⁶⁴
    priority: Priority = Priority.NORMAL
    request_id: str | None = None  # client idempotency key (≤ MAX_REQUEST_ID_LEN characters)
    payload: bytes = field(default=b"", repr=False)  # the circuit family's input document

    @classmethod
    def of(
        cls,
        circuit_id: str,
        *,
        partitions: int = 1,
        seed: int = 0,
        priority: Priority = Priority.NORMAL,
        request_id: str | None = None,
    ) -> ProofRequest:
        """``partitions`` partitions with seeds seed, seed + 1, …"""
        return cls(circuit_id, tuple(seed + i for i in range(partitions)), priority, request_id)

    def __post_init__(self) -> None:
        if not isinstance(self.circuit_id, str) or not self.circuit_id:
            raise BadInput("a request needs a circuit id")
        if not isinstance(self.seeds, tuple):
            raise BadInput("seeds must be a tuple of integers")
        if not isinstance(self.payload, bytes):
            raise BadInput(f"payload must be bytes, got {type(self.payload).__name__}")
        if bool(self.seeds) == bool(self.payload):
            raise BadInput(
                "a request needs either witness seeds (one per partition) or a payload, "
                "not both and not neither"
            )
        for i, s in enumerate(self.seeds):
            if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s <= MAX_SEED:
                raise BadInput(f"partition {i}: seed must be an integer in [0, 2^64), got {s!r}")
        if not isinstance(self.priority, Priority):
            raise BadInput(f"priority must be a Priority, got {self.priority!r}")
        if self.request_id is not None and (
            not isinstance(self.request_id, str)
            or not 0 < len(self.request_id) <= MAX_REQUEST_ID_LEN
        ):
            raise BadInput(f"request id must be a string of 1–{MAX_REQUEST_ID_LEN:,} characters")

    @property
    def partitions(self) -> int | None:
        """The partition count of a seeded request; None for a payload (the engine parses
        it at submit and reports the count in :class:`JobStatus`)."""
        return len(self.seeds) if self.seeds else None

    def payload_digest(self) -> str:
        """What deduplication compares: the statement to prove, not how urgently."""
        return payload_digest(self.circuit_id, self.seeds, self.payload)


@dataclass(frozen=True)
class PartitionTimeline:
    """When one partition passed each stage, in seconds since the engine started (None: not
    reached). The Gantt chart of ``cuzk bench --timeline`` is drawn from these."""

    job_id: str
    partition: int
    device: int | None  # device index that ran its kernels
    worker: str | None  # device worker thread name
    queued: float  # submitted
    synth_start: float | None = None
    synth_end: float | None = None
    device_pick: float | None = None  # a device worker took it and began waiting for the lock
    kernels_start: float | None = None  # compute lock acquired
    kernels_end: float | None = None  # compute lock released
    finalize_end: float | None = None  # proof assembled
    stages: dict[str, float] = field(default_factory=dict)  # prover's own stage seconds

    def durations(self) -> dict[str, float]:
        """Seconds per engine stage, for the stages this partition completed."""
        marks = [
            ("queue", self.queued, self.synth_start),
            ("synthesis", self.synth_start, self.synth_end),
            ("device_wait", self.synth_end, self.kernels_start),
            ("kernels", self.kernels_start, self.kernels_end),
            ("finalize", self.kernels_end, self.finalize_end),
        ]
        return {k: b - a for k, a, b in marks if a is not None and b is not None}


@dataclass(frozen=True)
class JobResult:
    """A finished, verified job."""

    job_id: str
    request_id: str | None
    circuit_id: str
    proof: bytes  # 192 bytes per partition, concatenated in partition order
    public_inputs: tuple[tuple[int, ...], ...]  # per partition, without ONE
    vk_path: str  # the verifying key the proof checks against (snarkjs:NAME: the .zkey,
    # which holds it; cuzk.interop.read_zkey(path).vk, or `snarkjs zkey export verificationkey`)
    timelines: tuple[PartitionTimeline, ...]
    srs_load_s: float = 0.0  # of the queue wait, spent while the parameters were loading


@dataclass(frozen=True)
class JobOutcome:
    """How a job ended, as the engine's completion callback receives it (once per job).

    ``result`` is set when ``state`` is SUCCEEDED; otherwise ``error`` is what
    :meth:`cuzk.engine.Engine.result` would raise (its category — BadInput, ResourceExhausted,
    DeviceFault, InternalError or JobCancelled — with a message naming the partition and stage).
    """

    job_id: str
    request_id: str | None
    circuit_id: str
    state: JobState  # SUCCEEDED, FAILED or CANCELLED
    result: JobResult | None
    error: CuzkError | None


@dataclass(frozen=True)
class PartitionStatus:
    index: int
    state: PartitionState
    timeline: PartitionTimeline


@dataclass(frozen=True)
class JobStatus:
    job_id: str
    request_id: str | None
    circuit_id: str
    priority: Priority
    state: JobState
    error: str | None  # "partition k: reason" for a failed job
    partitions: tuple[PartitionStatus, ...]


@dataclass(frozen=True)
class BudgetStatus:
    total: int  # bytes the engine may reserve
    reserved: int  # bytes reserved now
    by_kind: dict[str, int]  # "srs", "shape", "partition" → bytes


@dataclass(frozen=True)
class SrsStatus:
    circuit_id: str
    state: str  # "loading", "resident" or "failed"
    bytes: int  # budget reserved for it (all devices, parameters and shape)
    users: int  # partitions in flight that need it (0: idle, evictable)
    last_used: float  # seconds since engine start
    device_bytes: int = 0  # what it holds of a device's key budget (0: no key budget)
    msm_copies: int = 1  # shifted copies of its bases on the devices that hold it (1: none)
    devices: tuple[int, ...] = ()  # the devices that hold it
    streamed: tuple[str, ...] = ()  # its vectors streamed from host memory on some device


@dataclass(frozen=True)
class WorkerStatus:
    name: str  # thread name
    kind: str  # "synthesis" or "device"
    device: int | None
    busy_with: str | None  # "job-7/p2" or None when idle


@dataclass(frozen=True)
class DeviceStatus:
    index: int
    backend: str
    kernel_seconds: float  # total time the compute lock was held
    staged_bytes: int = 0  # staging mode: bytes reserved by staged partitions now
    pinned_lent: int = 0  # pinned host buffers lent to partitions now
    pinned_idle_bytes: int = 0  # pinned host buffers kept for reuse
    memory_total: int = 0  # the device's memory (0: a CPU virtual device)
    key_bytes: int = 0  # held by resident keys (points and matrices) on this device
    memory_limit: int = 0  # the cap its use is kept under (0: none; memory_total is the cap)
    memory_peak: int = 0  # the most in use on the device since start, measured (0: unknown)
    staging_total: int = 0  # its staging area (grown to one partition of a key placed there)
    memory_give_backs: int = 0  # cached blocks given back to stay under the cap (device waits)
    uploaded_bytes: int = 0  # copied host → device since start (0: not counted)

    @property
    def memory_free(self) -> int:
        """The device's memory that no resident key or staged partition holds, by the
        engine's accounting (not a device query: those would stall running kernels)."""
        return max(0, self.memory_total - self.key_bytes - self.staged_bytes)


@dataclass(frozen=True)
class EngineStatus:
    """An honest snapshot: every job the engine still remembers, counted by priority."""

    uptime: float  # seconds since the engine started
    accepting: bool  # False once shutdown began
    counts: dict[str, dict[str, int]]  # priority name → {state name → jobs}
    partitions: dict[str, int]  # partition state name → partitions (of remembered jobs)
    jobs: tuple[JobStatus, ...]
    budget: BudgetStatus
    srs: tuple[SrsStatus, ...]
    evictions: int  # residency entries evicted under memory pressure since start
    workers: tuple[WorkerStatus, ...]
    devices: tuple[DeviceStatus, ...]
    #: Each device's memory for resident parameters (GPUs); empty on CPU virtual devices.
    device_budgets: tuple[BudgetStatus, ...] = ()
