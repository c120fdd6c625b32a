"""The RPC table of the cuzk.v1 ProvingEngine service and how errors become status codes.

Requests arrive as raw bytes (the handlers are registered without a deserializer) so that
decoding is ours: a message too large, not protobuf, or with fields of the wrong wire type is
answered with INVALID_ARGUMENT and a reason, like any other malformed request, and the daemon
carries on. Errors map by category: BadInput → INVALID_ARGUMENT, ResourceExhausted →
RESOURCE_EXHAUSTED, :class:`Abort` → its code (an unknown job → NOT_FOUND, shutting down →
UNAVAILABLE), anything else → INTERNAL (logged with its traceback; the client sees one line).

Prove is SubmitProof plus a wait that gRPC cancels when the caller's deadline passes or the
caller goes away; the job is then let go of (:meth:`ProvingService.leave`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import grpc

from cuzk.errors import BadInput, CuzkError, ResourceExhausted
from cuzk.server import convert
from cuzk.server.proto import proving_pb2 as pb

if TYPE_CHECKING:
    from cuzk.server.service import ProvingService

log = logging.getLogger(__name__)

SERVICE = "cuzk.v1.ProvingEngine"
MAX_DETAIL = 2000  # characters of an error message sent back (gRPC's metadata is limited)
_LARGE_RPCS = frozenset({"SubmitProof", "Prove"})  # the requests that carry vanilla proofs
_WAITING_RPCS = frozenset({"AwaitProof", "Prove"})  # the calls that wait for a job's end


class Abort(Exception):
    """Ends an RPC with a status code (raised inside handlers, set on the call's context)."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


class RpcTable:
    """The eight RPCs over one :class:`ProvingService`, as raw-bytes handlers for the asyncio
    gRPC server. Waiting is a coroutine; blocking work runs in the service's small pools."""

    def __init__(self, service: ProvingService) -> None:
        self.service = service
        self._waiting_calls = 0  # AwaitProof/Prove calls admitted (being read, or waiting)

    def handler(self) -> grpc.GenericRpcHandler:
        svc = self.service
        run = svc.blocking
        rpcs: dict[str, tuple[type, Callable[[Any], Awaitable[Any]]]] = {
            "SubmitProof": (pb.SubmitProofRequest, lambda r: run("submit", _submit, svc, r)),
            "AwaitProof": (pb.AwaitProofRequest, lambda r: svc.await_(r.job_id, r.timeout_ms)),
            "Prove": (pb.ProveRequest, lambda r: self._accept_prove(r.submit)),
            "CancelProof": (pb.CancelProofRequest, lambda r: run("control", _cancel, svc, r)),
            "GetStatus": (pb.GetStatusRequest, lambda r: run("control", svc.status)),
            "GetMetrics": (pb.GetMetricsRequest, lambda r: run("control", _metrics, svc)),
            "PreloadSRS": (
                pb.PreloadSrsRequest,
                lambda r: run("preload", svc.preload, r.circuit_id),
            ),
            "EvictSRS": (pb.EvictSrsRequest, lambda r: run("control", svc.evict, r.circuit_id)),
        }
        handlers: dict[str, grpc.RpcMethodHandler] = {
            name: grpc.stream_unary_rpc_method_handler(
                self._wrap(name, req_type, fn), response_serializer=_serialize
            )
            for name, (req_type, fn) in rpcs.items()
        }
        return grpc.method_handlers_generic_handler(SERVICE, handlers)

    # -- Prove: a submission, then a wait that ends with the caller ----------------------------

    async def _accept_prove(self, msg: pb.SubmitProofRequest) -> pb.SubmitProofResponse:
        """Prove's submission. If the client gives up while it is being accepted (its thread
        carries on), the job it makes is let go of as soon as it exists."""
        svc = self.service
        task = asyncio.ensure_future(svc.blocking("submit", _submit, svc, msg, True))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.add_done_callback(self._accepted_unwanted)
            raise

    def _accepted_unwanted(self, task: asyncio.Future[pb.SubmitProofResponse]) -> None:
        if not task.cancelled() and task.exception() is None:
            self._leave_soon(task.result().job_id)

    async def _prove_wait(self, job_id: str) -> pb.ProveResponse:
        """Prove's wait for its job. gRPC cancels it when the caller's deadline passes or the
        caller cancels or disconnects; the job is then let go of (:meth:`leave`)."""
        answered = False
        try:
            response = pb.ProveResponse(result=await self.service.await_(job_id, 0))
            answered = True
            return response
        finally:
            if not answered:
                self._leave_soon(job_id)

    def _leave_soon(self, job_id: str) -> None:
        """:meth:`ProvingService.leave` off the event loop (it takes the engine's lock)."""
        try:
            self.service.pool("control").submit(self.service.leave, job_id)
        except RuntimeError:  # the pools are closing: the daemon is stopping anyway
            self.service.leave(job_id)

    # -- reading, checking, answering ---------------------------------------------------------

    def _wrap(
        self, name: str, req_type: type, fn: Callable[[Any], Awaitable[Any]]
    ) -> Callable[[Any, Any], Awaitable[Any]]:
        """The handler: reading the request (see :mod:`cuzk.server.admission`), size checks,
        decoding, ``fn``, errors → status codes. Prove's ``fn`` is its submission; its wait
        for the proof comes after the request's bytes are gone.

        Handlers are registered as client-streaming (the wire format of a unary call is the
        same) so that the request is read here, when the admission allows, rather than by
        gRPC before the handler runs. Errors are set on the context and returned, not raised
        with ``abort``: the exception's traceback would hold the request's bytes for as long
        as gRPC keeps it."""
        svc = self.service
        limit = svc.max_message_bytes
        admission = svc.admission

        waits = name in _WAITING_RPCS

        async def handle(_requests: Any, context: grpc.aio.ServicerContext) -> Any:
            admitted = False
            try:
                if waits:
                    self._admit_waiter(name)  # (before anything is read or submitted)
                    admitted = True
                raw = await admission.read(context, name, gated=name in _LARGE_RPCS)
                size = len(raw)
                if size > limit:
                    raise BadInput(
                        f"{name}: message of {size:,} bytes exceeds the limit "
                        f"of {limit:,} (server.max_message_bytes)"
                    )
                async with admission.admit(size, name):
                    request: Any = convert.decode(req_type, raw, name)
                    del raw
                    answer = await fn(request)
                    del request
                if name == "Prove":
                    return await self._prove_wait(answer.job_id)
                return answer
            except Abort as e:
                code, message = e.code, str(e)
            except BadInput as e:
                code, message = grpc.StatusCode.INVALID_ARGUMENT, str(e)
            except ResourceExhausted as e:
                code, message = grpc.StatusCode.RESOURCE_EXHAUSTED, str(e)
            except CuzkError as e:
                code, message = grpc.StatusCode.INTERNAL, f"{type(e).__name__}: {e}"
            except Exception as e:  # one bad call never takes the daemon down
                log.exception("%s failed", name)
                code, message = grpc.StatusCode.INTERNAL, f"internal error: {e}"
            finally:
                if admitted:
                    self._waiting_calls -= 1
            message = svc.redacted(message)
            context.set_code(code)
            context.set_details(
                message if len(message) <= MAX_DETAIL else message[:MAX_DETAIL] + "…"
            )
            return None

        return handle

    def _admit_waiter(self, name: str) -> None:
        """Count an AwaitProof or Prove call (on the loop thread, no lock), or refuse it when
        ``max_waiting_calls`` wait already: a refusal the client can act on, where gRPC's own
        limits would cancel calls whose jobs nobody cancelled."""
        if self._waiting_calls >= self.service.max_waiting_calls:
            raise ResourceExhausted(
                f"{name}: {self._waiting_calls:,} calls are waiting for proofs already, this "
                f"daemon's limit (server.max_waiting_calls); nothing was submitted or waited "
                "for. Retry later, or wait with fewer calls (one AwaitProof per job; AwaitProof "
                "with timeout_ms returns TIMEOUT to poll again)"
            )
        self._waiting_calls += 1


def _submit(
    svc: ProvingService, msg: pb.SubmitProofRequest, prove: bool = False
) -> pb.SubmitProofResponse:
    return svc.submit(convert.to_engine(msg), prove=prove)


def _cancel(svc: ProvingService, msg: pb.CancelProofRequest) -> pb.CancelProofResponse:
    return pb.CancelProofResponse(was_running=svc.cancel(msg.job_id))


def _metrics(svc: ProvingService) -> pb.GetMetricsResponse:
    return pb.GetMetricsResponse(prometheus_text=svc.metrics_text())


def _serialize(message: Any) -> bytes:
    return b"" if message is None else message.SerializeToString()
