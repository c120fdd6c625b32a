"""The engine's internal, mutable records of jobs and partitions (guarded by the engine lock).

Clients never see these: :mod:`cuzk.engine.request` has the frozen snapshots made from them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from cuzk.circuits import Statement
from cuzk.engine.assembler import PartitionProof
from cuzk.engine.budget import Reservation
from cuzk.engine.request import (
    JobResult,
    JobState,
    JobStatus,
    PartitionState,
    PartitionStatus,
    PartitionTimeline,
    ProofRequest,
)
from cuzk.engine.scheduler import WorkKey
from cuzk.engine.srs import CircuitInfo, Resident
from cuzk.groth16 import prover
from cuzk.groth16.keys import VerifyingKey
from cuzk.r1cs import Circuit

# Partition states that hold memory (a reservation and a residency pin).
ACTIVE = frozenset(
    {
        PartitionState.SYNTHESIZING,
        PartitionState.READY,
        PartitionState.DEVICE_WAIT,
        PartitionState.KERNELS,
        PartitionState.FINALIZING,
    }
)


@dataclass(eq=False)
class Partition:
    job: Job
    index: int
    state: PartitionState = PartitionState.QUEUED
    marks: dict[str, float] = field(default_factory=dict)  # timeline stamp → seconds
    device: int | None = None
    worker: str | None = None
    reservation: Reservation | None = None  # parts "kernel" and "carry"
    entry: Resident | None = None  # the residency it pins while active
    on_device: int | None = None  # the device whose copy of the key it holds there (bound)
    srs_wait: float = 0.0  # seconds between queued and synth_start while `entry` was loading
    assignment: prover.Assignment | None = None
    timings: prover.Timings = field(default_factory=prover.Timings)
    output: PartitionProof | None = None
    circuit: Circuit | None = None  # with its witness, from synthesis until the kernels end

    @property
    def key(self) -> WorkKey:
        return WorkKey(int(self.job.request.priority), self.job.seq, self.index)

    @property
    def label(self) -> str:
        return f"{self.job.id}/p{self.index}"

    def timeline(self) -> PartitionTimeline:
        m = self.marks
        return PartitionTimeline(
            job_id=self.job.id,
            partition=self.index,
            device=self.device,
            worker=self.worker,
            queued=m["queued"],
            synth_start=m.get("synth_start"),
            synth_end=m.get("synth_end"),
            device_pick=m.get("device_pick"),
            kernels_start=m.get("kernels_start"),
            kernels_end=m.get("kernels_end"),
            finalize_end=m.get("finalize_end"),
            stages=dict(self.timings.stages),
        )


@dataclass(eq=False)
class Job:
    id: str
    seq: int
    request: ProofRequest
    digest: str  # payload digest, for deduplication
    info: CircuitInfo
    statement: Statement  # the parsed request: partition count, circuits, expected inputs
    state: JobState = JobState.QUEUED
    parts: list[Partition] = field(default_factory=list)
    error: BaseException | None = None
    error_text: str | None = None
    result: JobResult | None = None
    vk: VerifyingKey | None = None  # taken from the residency entry while it is pinned
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def terminal(self) -> bool:
        return self.state.terminal

    @property
    def request_key(self) -> str:
        """The id fault injection and logs use: the client's request id, else the job id."""
        return self.request.request_id or self.id

    @property
    def active(self) -> int:
        return sum(p.state in ACTIVE for p in self.parts)

    def snapshot(self) -> JobStatus:
        return JobStatus(
            job_id=self.id,
            request_id=self.request.request_id,
            circuit_id=self.request.circuit_id,
            priority=self.request.priority,
            state=self.state,
            error=self.error_text,
            partitions=tuple(PartitionStatus(p.index, p.state, p.timeline()) for p in self.parts),
        )
