"""Tools of the reliability suite: raw asyncio gRPC calls (hundreds of clients from one
thread), latency and process figures, and the figures collected for the end-of-run report."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any

import grpc

from cuzk.server.proto import proving_pb2 as pb

SERVICE = "/cuzk.v1.ProvingEngine/"
RESPONSES: dict[str, type] = {
    "SubmitProof": pb.SubmitProofResponse,
    "AwaitProof": pb.AwaitProofResponse,
    "Prove": pb.ProveResponse,
    "CancelProof": pb.CancelProofResponse,
    "GetStatus": pb.GetStatusResponse,
    "GetMetrics": pb.GetMetricsResponse,
    "PreloadSRS": pb.PreloadSrsResponse,
    "EvictSRS": pb.EvictSrsResponse,
}

# Figures each reliability test adds (name → fields); the suite's conftest prints them at the
# end of the run, for BENCHMARKS.md.
FIGURES: dict[str, dict[str, Any]] = {}


def report(name: str, **fields: Any) -> None:
    FIGURES[name] = fields


def target(address: str) -> str:
    return address if address.startswith("unix:") else f"dns:///{address}"


async def call(
    channel: grpc.aio.Channel,
    method: str,
    request: Any,
    *,
    timeout: float | None = 30.0,
    metadata: Sequence[tuple[str, str]] | None = None,
) -> Any:
    """One unary call; ``request`` is a message or raw bytes; returns the decoded answer."""
    rpc = channel.unary_unary(
        SERVICE + method,
        request_serializer=lambda m: m if isinstance(m, bytes) else m.SerializeToString(),
        response_deserializer=RESPONSES[method].FromString,
    )
    return await rpc(request, timeout=timeout, metadata=metadata)


async def timed(awaitable: Awaitable[Any]) -> tuple[float, Any]:
    """(seconds, result) of one awaited call."""
    t0 = time.perf_counter()
    result = await awaitable
    return time.perf_counter() - t0, result


async def wait_until(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        await asyncio.sleep(0.02)


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


@dataclass(frozen=True)
class Process:
    """This process's threads and resident memory."""

    threads: int
    rss_mib: float

    @classmethod
    def now(cls) -> Process:
        rss = 0.0
        with open(f"/proc/{os.getpid()}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) / 1024
        return cls(threading.active_count(), round(rss, 1))
