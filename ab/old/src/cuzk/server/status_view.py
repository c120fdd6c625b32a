"""What GetStatus and AwaitProof answer: the engine's status and a journalled result rendered
as the reference's messages (gpus, loaded SRS tiers, queues by proof kind; a result with its
timings), the rest of the document in ``status_json``."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from cuzk.engine.request import EngineStatus, JobState, PartitionState, PartitionTimeline, SrsStatus
from cuzk.server import convert
from cuzk.server.journal import JournalEntry
from cuzk.server.proto import proving_pb2 as pb

log = logging.getLogger(__name__)

_ON_DEVICE = (PartitionState.KERNELS, PartitionState.DEVICE_WAIT, PartitionState.FINALIZING)


def status_response(
    st: EngineStatus,
    *,
    completed: int,
    failed: int,
    started: float,
    status_doc: Callable[[EngineStatus], dict] | None,
    journal_health: Callable[[], dict],
) -> pb.GetStatusResponse:
    """GetStatus's answer for the engine's status ``st``; ``status_doc`` (optional) makes the
    JSON document, to which the journal's health is added."""
    gpus = []
    for d in st.devices:
        job = _on_device(st, d.index)
        gpus.append(
            pb.GPUStatus(
                ordinal=d.index,
                name=d.backend,
                vram_total_bytes=d.memory_total,
                vram_free_bytes=d.memory_free,
                current_job_id=job.job_id if job is not None else "",
                current_proof_kind=job.circuit_id if job is not None else "",
                vram_limit_bytes=d.memory_limit,
                vram_peak_bytes=d.memory_peak,
            )
        )
    srs = [
        pb.SRSStatus(
            circuit_id=s.circuit_id,
            tier=_tier(s),
            size_bytes=s.bytes,
            ref_count=s.users,
            streamed_vectors=list(s.streamed),
        )
        for s in st.srs
    ]
    queues: dict[str, list[int]] = {}
    for j in st.jobs:
        q = queues.setdefault(j.circuit_id, [0, 0])
        if j.state is JobState.QUEUED:
            q[0] += 1
        elif j.state is JobState.RUNNING:
            q[1] += 1
    doc = ""
    if status_doc is not None:
        try:
            doc = json.dumps({**status_doc(st), "journal": journal_health()})
        except Exception:  # the summary fields still answer
            log.exception("status document")
    return pb.GetStatusResponse(
        gpus=gpus,
        loaded_srs=srs,
        queues=[
            pb.QueueStatus(proof_kind=k, pending=p, in_progress=r)
            for k, (p, r) in sorted(queues.items())
        ],
        total_proofs_completed=completed,
        total_proofs_failed=failed,
        uptime_seconds=int(time.time() - started),
        pinned_memory_bytes=st.budget.reserved,
        pinned_memory_limit_bytes=st.budget.total,
        status_json=doc,
    )


def await_response(entry: JournalEntry) -> pb.AwaitProofResponse:
    """The AwaitProof answer for a finished journal entry."""
    status = {
        "succeeded": pb.AwaitProofResponse.COMPLETED,
        "failed": pb.AwaitProofResponse.FAILED,
        "cancelled": pb.AwaitProofResponse.CANCELLED,
    }[entry.state]
    resp = pb.AwaitProofResponse(
        job_id=entry.id, status=status, error_message=entry.error or "", circuit_id=entry.circuit_id
    )
    if entry.state == "succeeded":
        t = entry.timings or {}
        resp.proof = entry.proof or b""
        resp.public_inputs.extend(convert.public_inputs_message(entry.public_inputs or ()))
        resp.vk_path = entry.vk_path or ""
        resp.queue_wait_ms = t.get("queue_wait_ms", 0)
        resp.synthesis_ms = t.get("synthesis_ms", 0)
        resp.gpu_compute_ms = t.get("gpu_compute_ms", 0)
        resp.total_ms = t.get("total_ms", 0)
        resp.srs_load_ms = t.get("srs_load_ms", 0)  # part of queue_wait_ms
        resp.timelines.extend(
            convert.timeline_message(PartitionTimeline(**d)) for d in t.get("timelines", ())
        )
    return resp


def srs_of(st: EngineStatus, circuit_id: str) -> SrsStatus | None:
    """The key ``circuit_id``'s residency in ``st`` (None: never loaded)."""
    return next((s for s in st.srs if s.circuit_id == circuit_id), None)


def _tier(s: SrsStatus) -> pb.SRSStatus.Tier:
    """HOT: on a device; WARM: loading, or in host memory only (its devices gave it up for
    other keys); COLD: neither."""
    if s.state == "resident" and s.devices:
        return pb.SRSStatus.HOT
    return pb.SRSStatus.WARM if s.state in ("resident", "loading") else pb.SRSStatus.COLD


def _on_device(st: EngineStatus, device: int) -> Any:
    """The job whose partition holds ``device`` now (in kernels first, then waiting for the
    lock, then finalizing), or None."""
    for state in _ON_DEVICE:
        for job in st.jobs:
            if any(p.state is state and p.timeline.device == device for p in job.partitions):
                return job
    return None
