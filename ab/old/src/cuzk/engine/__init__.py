"""The proving engine: jobs of partition proofs through a scheduler, a memory budget, SRS
residency, synthesis and device workers and a verifying assembler (see core.py for the map)."""

from cuzk.engine.api import Engine
from cuzk.engine.config import EngineConfig, FaultInjection
from cuzk.engine.request import (
    EngineStatus,
    JobCancelled,
    JobOutcome,
    JobResult,
    JobState,
    JobStatus,
    PartitionState,
    PartitionTimeline,
    Priority,
    ProofRequest,
)

__all__ = [
    "Engine",
    "EngineConfig",
    "EngineStatus",
    "FaultInjection",
    "JobCancelled",
    "JobOutcome",
    "JobResult",
    "JobState",
    "JobStatus",
    "PartitionState",
    "PartitionTimeline",
    "Priority",
    "ProofRequest",
]
