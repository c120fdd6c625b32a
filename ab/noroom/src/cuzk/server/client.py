"""A thin Python client of the cuzk.v1 API, used by ``cuzk client``, ``cuzk bench --addr``,
the demo and the tests.

gRPC failures come back as :class:`~cuzk.errors.BadInput` (INVALID_ARGUMENT, NOT_FOUND,
UNAUTHENTICATED — the caller can fix them), :class:`~cuzk.errors.ResourceExhausted`, or
:class:`DaemonUnavailable` (no daemon, or it is shutting down), each with the daemon's message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import grpc

from cuzk.engine.request import PartitionTimeline
from cuzk.errors import BadInput, CuzkError, InternalError, ResourceExhausted
from cuzk.server import convert
from cuzk.server.auth import bearer, channel_credentials
from cuzk.server.proto import proving_pb2 as pb
from cuzk.server.proto import proving_pb2_grpc as pb_grpc

DEFAULT_MAX_MESSAGE = 256 << 20


class DaemonUnavailable(CuzkError):
    """No daemon answers at the address, or it is shutting down."""


@dataclass(frozen=True)
class ProofOutcome:
    """An AwaitProof answer in Python terms."""

    job_id: str
    status: str  # "completed", "failed", "cancelled", "timeout" or "unknown"
    proof: bytes
    error: str
    public_inputs: list[list[int]]  # per partition, without ONE
    vk_path: str
    circuit_id: str
    timings_ms: dict[str, int]  # queue_wait, srs_load, synthesis, gpu_compute, total
    timelines: list[PartitionTimeline]

    @classmethod
    def of(cls, r: pb.AwaitProofResponse) -> ProofOutcome:
        return cls(
            r.job_id,
            pb.AwaitProofResponse.Status.Name(r.status).lower(),
            r.proof,
            r.error_message,
            convert.public_inputs_from_message(r.public_inputs),
            r.vk_path,
            r.circuit_id,
            {
                k: getattr(r, f"{k}_ms")
                for k in ("queue_wait", "srs_load", "synthesis", "gpu_compute", "total")
            },
            [convert.timeline_from_message(r.job_id, t) for t in r.timelines],
        )


def channel_target(addr: str) -> str:
    """gRPC target for ``unix:///path``, ``unix:path`` or ``host:port``."""
    return addr if addr.startswith("unix:") or "://" in addr else f"dns:///{addr}"


class Client:
    """One channel to a daemon; methods mirror the RPCs."""

    def __init__(
        self,
        addr: str,
        *,
        token: str | None = None,
        tls_ca: Path | None = None,
        tls: bool = False,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE,
    ) -> None:
        self.addr = addr
        options = [
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes),
        ]
        target = channel_target(addr)
        if tls or tls_ca is not None:
            self._channel = grpc.secure_channel(target, channel_credentials(tls_ca), options)
        else:
            self._channel = grpc.insecure_channel(target, options)
        self._stub = pb_grpc.ProvingEngineStub(self._channel)
        self._metadata = bearer(token) if token else None

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def wait_ready(self, timeout: float) -> None:
        """Block until the channel connects (DaemonUnavailable after ``timeout`` seconds)."""
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout)
        except grpc.FutureTimeoutError as e:
            raise DaemonUnavailable(f"no cuzk daemon answers at {self.addr}") from e

    def _call(self, method: str, request: object, timeout: float | None = None) -> object:
        try:
            return getattr(self._stub, method)(request, timeout=timeout, metadata=self._metadata)
        except grpc.RpcError as e:
            raise _error(e, self.addr) from None

    # -- RPCs --

    def submit(self, request: pb.SubmitProofRequest) -> str:
        # why the ignore below: _call's result is typed as protobuf's Message; the RPC's own
        # response type is known by its name only
        return self._call("SubmitProof", request).job_id  # type: ignore[attr-defined]

    def submit_circuit(
        self,
        circuit_id: str,
        seeds: Sequence[int] = (),
        payload: bytes = b"",
        *,
        priority: pb.Priority = pb.NORMAL,
        request_id: str = "",
    ) -> str:
        return self.submit(
            pb.SubmitProofRequest(
                circuit_id=circuit_id,
                seeds=list(seeds),
                vanilla_proof=payload,
                priority=priority,
                request_id=request_id,
            )
        )

    def await_proof(self, job_id: str, timeout_s: float = 0.0) -> ProofOutcome:
        r = self._call(
            "AwaitProof", pb.AwaitProofRequest(job_id=job_id, timeout_ms=round(timeout_s * 1000))
        )
        # why the ignore below: r is AwaitProof's response, typed as protobuf's Message by _call
        return ProofOutcome.of(r)  # type: ignore[arg-type]

    def prove(self, request: pb.SubmitProofRequest, timeout_s: float | None = None) -> ProofOutcome:
        """Prove; ``timeout_s`` is the call's deadline (the daemon cancels the job when it
        passes: DaemonUnavailable with DEADLINE_EXCEEDED here)."""
        r = self._call("Prove", pb.ProveRequest(submit=request), timeout=timeout_s)
        # why the ignore below: r is Prove's response, typed as protobuf's Message by _call
        return ProofOutcome.of(r.result)  # type: ignore[attr-defined]

    def cancel(self, job_id: str) -> bool:
        return self._call(
            # why the ignore below: the response is CancelProof's, typed as protobuf's Message by
            # _call
            "CancelProof",  # type: ignore[attr-defined]
            pb.CancelProofRequest(job_id=job_id),
        ).was_running

    def status(self) -> pb.GetStatusResponse:
        # why the ignore below: the response is GetStatus's, typed as protobuf's Message by _call
        return self._call("GetStatus", pb.GetStatusRequest())  # type: ignore[return-value]

    def metrics(self) -> str:
        return self._call(
            # why the ignore below: the response is GetMetrics's, typed as protobuf's Message by
            # _call
            "GetMetrics",  # type: ignore[attr-defined]
            pb.GetMetricsRequest(),
        ).prometheus_text

    def preload(self, circuit_id: str) -> pb.PreloadSrsResponse:
        return self._call(
            # why the ignore below: the response is PreloadSRS's, typed as protobuf's Message by
            # _call
            "PreloadSRS",  # type: ignore[return-value]
            pb.PreloadSrsRequest(circuit_id=circuit_id),
        )

    def evict(self, circuit_id: str) -> pb.EvictSrsResponse:
        return self._call(
            # why the ignore below: the response is EvictSRS's, typed as protobuf's Message by _call
            "EvictSRS",  # type: ignore[return-value]
            pb.EvictSrsRequest(circuit_id=circuit_id),
        )


def _error(e: grpc.RpcError, addr: str) -> CuzkError:
    code = e.code() if hasattr(e, "code") else None
    detail = e.details() if hasattr(e, "details") else str(e)
    if code in (
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.PERMISSION_DENIED,
    ):
        err: CuzkError = BadInput(detail)
    elif code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        err = ResourceExhausted(detail)
    elif code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        err = DaemonUnavailable(f"{addr}: {detail}")
    else:
        err = InternalError(f"{code.name if code else 'error'}: {detail}")
    # why the ignore below: the gRPC status rides on the error for the callers that ask (CuzkError
    # declares no such field)
    err.code = code  # type: ignore[attr-defined]
    return err
