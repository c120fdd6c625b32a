"""The committed stubs are what the .proto generates, and the wire contract with the reference
daemon (field numbers and enum values of filecoin-project/curio's
extern/cuzk/cuzk-proto/proto/cuzk/v1/proving.proto) holds."""

from __future__ import annotations

import importlib.util

import pytest

from cuzk.server import gen_proto
from cuzk.server.proto import proving_pb2 as pb

# From the reference proving.proto (curio, extern/cuzk/cuzk-proto): message → {field: number}.
REFERENCE_FIELDS = {
    "SubmitProofRequest": {
        "request_id": 1,
        "proof_kind": 2,
        "sector_size": 3,
        "registered_proof": 4,
        "priority": 5,
        "vanilla_proof": 10,
        "vanilla_proofs": 11,
        "sector_number": 20,
        "miner_id": 21,
        "randomness": 22,
        "partition_index": 23,
        "comm_r_old": 30,
        "comm_r_new": 31,
        "comm_d_new": 32,
    },
    "SubmitProofResponse": {"job_id": 1, "queue_position": 2, "assigned_gpu": 3},
    "AwaitProofRequest": {"job_id": 1, "timeout_ms": 2},
    "AwaitProofResponse": {
        "job_id": 1,
        "status": 2,
        "proof": 3,
        "error_message": 4,
        "queue_wait_ms": 10,
        "srs_load_ms": 11,
        "synthesis_ms": 12,
        "gpu_compute_ms": 13,
        "total_ms": 14,
    },
    "ProveRequest": {"submit": 1},
    "ProveResponse": {"result": 1},
    "CancelProofRequest": {"job_id": 1},
    "CancelProofResponse": {"was_running": 1},
    "GetStatusResponse": {
        "gpus": 1,
        "loaded_srs": 2,
        "queues": 3,
        "total_proofs_completed": 4,
        "total_proofs_failed": 5,
        "uptime_seconds": 6,
        "pinned_memory_bytes": 7,
        "pinned_memory_limit_bytes": 8,
    },
    "GPUStatus": {
        "ordinal": 1,
        "name": 2,
        "vram_total_bytes": 3,
        "vram_free_bytes": 4,
        "current_job_id": 5,
        "current_proof_kind": 6,
    },
    "SRSStatus": {"circuit_id": 1, "tier": 2, "size_bytes": 3, "ref_count": 4},
    "QueueStatus": {"proof_kind": 1, "pending": 2, "in_progress": 3},
    "PreloadSrsRequest": {"circuit_id": 1},
    "PreloadSrsResponse": {"already_loaded": 1, "load_time_ms": 2},
    "EvictSrsRequest": {"circuit_id": 1},
    "EvictSrsResponse": {"was_loaded": 1, "freed_bytes": 2},
    "GetMetricsResponse": {"prometheus_text": 1},
}
REFERENCE_ENUMS = {
    "ProofKind": {
        "PROOF_KIND_UNSPECIFIED": 0,
        "POREP_SEAL_COMMIT": 1,
        "SNAP_DEALS_UPDATE": 2,
        "WINDOW_POST_PARTITION": 3,
        "WINNING_POST": 4,
    },
    "Priority": {"PRIORITY_UNSPECIFIED": 0, "LOW": 1, "NORMAL": 2, "HIGH": 3, "CRITICAL": 4},
}
REFERENCE_RPCS = [
    "SubmitProof",
    "AwaitProof",
    "Prove",
    "CancelProof",
    "GetStatus",
    "GetMetrics",
    "PreloadSRS",
    "EvictSRS",
]


@pytest.mark.skipif(
    importlib.util.find_spec("grpc_tools") is None,
    reason="grpcio-tools (the dev extra) is not installed",
)
def test_committed_stubs_match_the_proto(tmp_path):
    for path in gen_proto.generate(tmp_path):
        committed = gen_proto.OUT_DIR / path.name
        assert committed.read_text() == path.read_text(), (
            f"{committed} is stale: run python -m cuzk.server.gen_proto"
        )


def test_reference_wire_contract():
    d = pb.DESCRIPTOR
    assert d.package == "cuzk.v1"
    service = d.services_by_name["ProvingEngine"]
    assert [m.name for m in service.methods] == REFERENCE_RPCS
    for message, fields in REFERENCE_FIELDS.items():
        got = {f.name: f.number for f in d.message_types_by_name[message].fields}
        for name, number in fields.items():
            assert got[name] == number, f"{message}.{name}"
        extra = {n: v for n, v in got.items() if n not in fields}
        assert all(v >= 40 for v in extra.values()), f"{message}: additions below 40: {extra}"
    for enum, values in REFERENCE_ENUMS.items():
        assert {v.name: v.number for v in d.enum_types_by_name[enum].values} == values
    status = d.message_types_by_name["AwaitProofResponse"].enum_types_by_name["Status"]
    assert {v.name: v.number for v in status.values} == {
        "UNKNOWN": 0,
        "COMPLETED": 1,
        "FAILED": 2,
        "CANCELLED": 3,
        "TIMEOUT": 4,
    }
    tier = d.message_types_by_name["SRSStatus"].enum_types_by_name["Tier"]
    assert {v.name: v.number for v in tier.values} == {"HOT": 0, "WARM": 1, "COLD": 2}
