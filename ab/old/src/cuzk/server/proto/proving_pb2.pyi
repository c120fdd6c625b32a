# ruff: noqa
# Generated from proto/cuzk/v1/proving.proto by cuzk.server.gen_proto.
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ProofKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PROOF_KIND_UNSPECIFIED: _ClassVar[ProofKind]
    POREP_SEAL_COMMIT: _ClassVar[ProofKind]
    SNAP_DEALS_UPDATE: _ClassVar[ProofKind]
    WINDOW_POST_PARTITION: _ClassVar[ProofKind]
    WINNING_POST: _ClassVar[ProofKind]

class Priority(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PRIORITY_UNSPECIFIED: _ClassVar[Priority]
    LOW: _ClassVar[Priority]
    NORMAL: _ClassVar[Priority]
    HIGH: _ClassVar[Priority]
    CRITICAL: _ClassVar[Priority]
PROOF_KIND_UNSPECIFIED: ProofKind
POREP_SEAL_COMMIT: ProofKind
SNAP_DEALS_UPDATE: ProofKind
WINDOW_POST_PARTITION: ProofKind
WINNING_POST: ProofKind
PRIORITY_UNSPECIFIED: Priority
LOW: Priority
NORMAL: Priority
HIGH: Priority
CRITICAL: Priority

class SubmitProofRequest(_message.Message):
    __slots__ = ("request_id", "proof_kind", "sector_size", "registered_proof", "priority", "vanilla_proof", "vanilla_proofs", "sector_number", "miner_id", "randomness", "partition_index", "comm_r_old", "comm_r_new", "comm_d_new", "circuit_id", "seeds")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    PROOF_KIND_FIELD_NUMBER: _ClassVar[int]
    SECTOR_SIZE_FIELD_NUMBER: _ClassVar[int]
    REGISTERED_PROOF_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    VANILLA_PROOF_FIELD_NUMBER: _ClassVar[int]
    VANILLA_PROOFS_FIELD_NUMBER: _ClassVar[int]
    SECTOR_NUMBER_FIELD_NUMBER: _ClassVar[int]
    MINER_ID_FIELD_NUMBER: _ClassVar[int]
    RANDOMNESS_FIELD_NUMBER: _ClassVar[int]
    PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
    COMM_R_OLD_FIELD_NUMBER: _ClassVar[int]
    COMM_R_NEW_FIELD_NUMBER: _ClassVar[int]
    COMM_D_NEW_FIELD_NUMBER: _ClassVar[int]
    CIRCUIT_ID_FIELD_NUMBER: _ClassVar[int]
    SEEDS_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    proof_kind: ProofKind
    sector_size: int
    registered_proof: int
    priority: Priority
    vanilla_proof: bytes
    vanilla_proofs: _containers.RepeatedScalarFieldContainer[bytes]
    sector_number: int
    miner_id: int
    randomness: bytes
    partition_index: int
    comm_r_old: bytes
    comm_r_new: bytes
    comm_d_new: bytes
    circuit_id: str
    seeds: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, request_id: _Optional[str] = ..., proof_kind: _Optional[_Union[ProofKind, str]] = ..., sector_size: _Optional[int] = ..., registered_proof: _Optional[int] = ..., priority: _Optional[_Union[Priority, str]] = ..., vanilla_proof: _Optional[bytes] = ..., vanilla_proofs: _Optional[_Iterable[bytes]] = ..., sector_number: _Optional[int] = ..., miner_id: _Optional[int] = ..., randomness: _Optional[bytes] = ..., partition_index: _Optional[int] = ..., comm_r_old: _Optional[bytes] = ..., comm_r_new: _Optional[bytes] = ..., comm_d_new: _Optional[bytes] = ..., circuit_id: _Optional[str] = ..., seeds: _Optional[_Iterable[int]] = ...) -> None: ...

class SubmitProofResponse(_message.Message):
    __slots__ = ("job_id", "queue_position", "assigned_gpu")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    QUEUE_POSITION_FIELD_NUMBER: _ClassVar[int]
    ASSIGNED_GPU_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    queue_position: int
    assigned_gpu: str
    def __init__(self, job_id: _Optional[str] = ..., queue_position: _Optional[int] = ..., assigned_gpu: _Optional[str] = ...) -> None: ...

class AwaitProofRequest(_message.Message):
    __slots__ = ("job_id", "timeout_ms")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    timeout_ms: int
    def __init__(self, job_id: _Optional[str] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class PartitionTimeline(_message.Message):
    __slots__ = ("partition", "device", "worker", "queued", "synth_start", "synth_end", "device_pick", "kernels_start", "kernels_end", "finalize_end")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    QUEUED_FIELD_NUMBER: _ClassVar[int]
    SYNTH_START_FIELD_NUMBER: _ClassVar[int]
    SYNTH_END_FIELD_NUMBER: _ClassVar[int]
    DEVICE_PICK_FIELD_NUMBER: _ClassVar[int]
    KERNELS_START_FIELD_NUMBER: _ClassVar[int]
    KERNELS_END_FIELD_NUMBER: _ClassVar[int]
    FINALIZE_END_FIELD_NUMBER: _ClassVar[int]
    partition: int
    device: int
    worker: str
    queued: float
    synth_start: float
    synth_end: float
    device_pick: float
    kernels_start: float
    kernels_end: float
    finalize_end: float
    def __init__(self, partition: _Optional[int] = ..., device: _Optional[int] = ..., worker: _Optional[str] = ..., queued: _Optional[float] = ..., synth_start: _Optional[float] = ..., synth_end: _Optional[float] = ..., device_pick: _Optional[float] = ..., kernels_start: _Optional[float] = ..., kernels_end: _Optional[float] = ..., finalize_end: _Optional[float] = ...) -> None: ...

class PublicInputs(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, values: _Optional[_Iterable[bytes]] = ...) -> None: ...

class AwaitProofResponse(_message.Message):
    __slots__ = ("job_id", "status", "proof", "error_message", "queue_wait_ms", "srs_load_ms", "synthesis_ms", "gpu_compute_ms", "total_ms", "public_inputs", "vk_path", "circuit_id", "timelines")
    class Status(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN: _ClassVar[AwaitProofResponse.Status]
        COMPLETED: _ClassVar[AwaitProofResponse.Status]
        FAILED: _ClassVar[AwaitProofResponse.Status]
        CANCELLED: _ClassVar[AwaitProofResponse.Status]
        TIMEOUT: _ClassVar[AwaitProofResponse.Status]
    UNKNOWN: AwaitProofResponse.Status
    COMPLETED: AwaitProofResponse.Status
    FAILED: AwaitProofResponse.Status
    CANCELLED: AwaitProofResponse.Status
    TIMEOUT: AwaitProofResponse.Status
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    PROOF_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    SRS_LOAD_MS_FIELD_NUMBER: _ClassVar[int]
    SYNTHESIS_MS_FIELD_NUMBER: _ClassVar[int]
    GPU_COMPUTE_MS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_MS_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_INPUTS_FIELD_NUMBER: _ClassVar[int]
    VK_PATH_FIELD_NUMBER: _ClassVar[int]
    CIRCUIT_ID_FIELD_NUMBER: _ClassVar[int]
    TIMELINES_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    status: AwaitProofResponse.Status
    proof: bytes
    error_message: str
    queue_wait_ms: int
    srs_load_ms: int
    synthesis_ms: int
    gpu_compute_ms: int
    total_ms: int
    public_inputs: _containers.RepeatedCompositeFieldContainer[PublicInputs]
    vk_path: str
    circuit_id: str
    timelines: _containers.RepeatedCompositeFieldContainer[PartitionTimeline]
    def __init__(self, job_id: _Optional[str] = ..., status: _Optional[_Union[AwaitProofResponse.Status, str]] = ..., proof: _Optional[bytes] = ..., error_message: _Optional[str] = ..., queue_wait_ms: _Optional[int] = ..., srs_load_ms: _Optional[int] = ..., synthesis_ms: _Optional[int] = ..., gpu_compute_ms: _Optional[int] = ..., total_ms: _Optional[int] = ..., public_inputs: _Optional[_Iterable[_Union[PublicInputs, _Mapping]]] = ..., vk_path: _Optional[str] = ..., circuit_id: _Optional[str] = ..., timelines: _Optional[_Iterable[_Union[PartitionTimeline, _Mapping]]] = ...) -> None: ...

class ProveRequest(_message.Message):
    __slots__ = ("submit",)
    SUBMIT_FIELD_NUMBER: _ClassVar[int]
    submit: SubmitProofRequest
    def __init__(self, submit: _Optional[_Union[SubmitProofRequest, _Mapping]] = ...) -> None: ...

class ProveResponse(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: AwaitProofResponse
    def __init__(self, result: _Optional[_Union[AwaitProofResponse, _Mapping]] = ...) -> None: ...

class CancelProofRequest(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class CancelProofResponse(_message.Message):
    __slots__ = ("was_running",)
    WAS_RUNNING_FIELD_NUMBER: _ClassVar[int]
    was_running: bool
    def __init__(self, was_running: _Optional[bool] = ...) -> None: ...

class GetStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetStatusResponse(_message.Message):
    __slots__ = ("gpus", "loaded_srs", "queues", "total_proofs_completed", "total_proofs_failed", "uptime_seconds", "pinned_memory_bytes", "pinned_memory_limit_bytes", "status_json")
    GPUS_FIELD_NUMBER: _ClassVar[int]
    LOADED_SRS_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_PROOFS_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    TOTAL_PROOFS_FAILED_FIELD_NUMBER: _ClassVar[int]
    UPTIME_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PINNED_MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    PINNED_MEMORY_LIMIT_BYTES_FIELD_NUMBER: _ClassVar[int]
    STATUS_JSON_FIELD_NUMBER: _ClassVar[int]
    gpus: _containers.RepeatedCompositeFieldContainer[GPUStatus]
    loaded_srs: _containers.RepeatedCompositeFieldContainer[SRSStatus]
    queues: _containers.RepeatedCompositeFieldContainer[QueueStatus]
    total_proofs_completed: int
    total_proofs_failed: int
    uptime_seconds: int
    pinned_memory_bytes: int
    pinned_memory_limit_bytes: int
    status_json: str
    def __init__(self, gpus: _Optional[_Iterable[_Union[GPUStatus, _Mapping]]] = ..., loaded_srs: _Optional[_Iterable[_Union[SRSStatus, _Mapping]]] = ..., queues: _Optional[_Iterable[_Union[QueueStatus, _Mapping]]] = ..., total_proofs_completed: _Optional[int] = ..., total_proofs_failed: _Optional[int] = ..., uptime_seconds: _Optional[int] = ..., pinned_memory_bytes: _Optional[int] = ..., pinned_memory_limit_bytes: _Optional[int] = ..., status_json: _Optional[str] = ...) -> None: ...

class GPUStatus(_message.Message):
    __slots__ = ("ordinal", "name", "vram_total_bytes", "vram_free_bytes", "current_job_id", "current_proof_kind", "vram_limit_bytes", "vram_peak_bytes")
    ORDINAL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VRAM_TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    VRAM_FREE_BYTES_FIELD_NUMBER: _ClassVar[int]
    CURRENT_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    CURRENT_PROOF_KIND_FIELD_NUMBER: _ClassVar[int]
    VRAM_LIMIT_BYTES_FIELD_NUMBER: _ClassVar[int]
    VRAM_PEAK_BYTES_FIELD_NUMBER: _ClassVar[int]
    ordinal: int
    name: str
    vram_total_bytes: int
    vram_free_bytes: int
    current_job_id: str
    current_proof_kind: str
    vram_limit_bytes: int
    vram_peak_bytes: int
    def __init__(self, ordinal: _Optional[int] = ..., name: _Optional[str] = ..., vram_total_bytes: _Optional[int] = ..., vram_free_bytes: _Optional[int] = ..., current_job_id: _Optional[str] = ..., current_proof_kind: _Optional[str] = ..., vram_limit_bytes: _Optional[int] = ..., vram_peak_bytes: _Optional[int] = ...) -> None: ...

class SRSStatus(_message.Message):
    __slots__ = ("circuit_id", "tier", "size_bytes", "ref_count", "streamed_vectors")
    class Tier(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        HOT: _ClassVar[SRSStatus.Tier]
        WARM: _ClassVar[SRSStatus.Tier]
        COLD: _ClassVar[SRSStatus.Tier]
    HOT: SRSStatus.Tier
    WARM: SRSStatus.Tier
    COLD: SRSStatus.Tier
    CIRCUIT_ID_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    REF_COUNT_FIELD_NUMBER: _ClassVar[int]
    STREAMED_VECTORS_FIELD_NUMBER: _ClassVar[int]
    circuit_id: str
    tier: SRSStatus.Tier
    size_bytes: int
    ref_count: int
    streamed_vectors: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, circuit_id: _Optional[str] = ..., tier: _Optional[_Union[SRSStatus.Tier, str]] = ..., size_bytes: _Optional[int] = ..., ref_count: _Optional[int] = ..., streamed_vectors: _Optional[_Iterable[str]] = ...) -> None: ...

class QueueStatus(_message.Message):
    __slots__ = ("proof_kind", "pending", "in_progress")
    PROOF_KIND_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    IN_PROGRESS_FIELD_NUMBER: _ClassVar[int]
    proof_kind: str
    pending: int
    in_progress: int
    def __init__(self, proof_kind: _Optional[str] = ..., pending: _Optional[int] = ..., in_progress: _Optional[int] = ...) -> None: ...

class PreloadSrsRequest(_message.Message):
    __slots__ = ("circuit_id",)
    CIRCUIT_ID_FIELD_NUMBER: _ClassVar[int]
    circuit_id: str
    def __init__(self, circuit_id: _Optional[str] = ...) -> None: ...

class PreloadSrsResponse(_message.Message):
    __slots__ = ("already_loaded", "load_time_ms")
    ALREADY_LOADED_FIELD_NUMBER: _ClassVar[int]
    LOAD_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    already_loaded: bool
    load_time_ms: int
    def __init__(self, already_loaded: _Optional[bool] = ..., load_time_ms: _Optional[int] = ...) -> None: ...

class EvictSrsRequest(_message.Message):
    __slots__ = ("circuit_id",)
    CIRCUIT_ID_FIELD_NUMBER: _ClassVar[int]
    circuit_id: str
    def __init__(self, circuit_id: _Optional[str] = ...) -> None: ...

class EvictSrsResponse(_message.Message):
    __slots__ = ("was_loaded", "freed_bytes")
    WAS_LOADED_FIELD_NUMBER: _ClassVar[int]
    FREED_BYTES_FIELD_NUMBER: _ClassVar[int]
    was_loaded: bool
    freed_bytes: int
    def __init__(self, was_loaded: _Optional[bool] = ..., freed_bytes: _Optional[int] = ...) -> None: ...

class GetMetricsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetMetricsResponse(_message.Message):
    __slots__ = ("prometheus_text",)
    PROMETHEUS_TEXT_FIELD_NUMBER: _ClassVar[int]
    prometheus_text: str
    def __init__(self, prometheus_text: _Optional[str] = ...) -> None: ...
