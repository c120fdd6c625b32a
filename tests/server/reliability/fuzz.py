"""A seeded generator of hostile cuzk.v1 requests and the storm that sends them.

Each request is one of: random bytes to a random method; a valid message with bytes flipped,
cut or inserted; a well-formed message whose fields are hostile (deep JSON, numbers of
thousands of digits, huge or odd strings, path traversal, out-of-range enums, many seeds). The
storm sends them concurrently and sorts the answers by status code; INTERNAL, UNKNOWN and a
deadline passing (a hang) are failures, every other code is an acceptable answer.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import grpc

from cuzk.server.proto import proving_pb2 as pb

from .harness import RESPONSES, call

FAILURES = ("INTERNAL", "UNKNOWN", "DEADLINE_EXCEEDED", "DATA_LOSS")
CIRCUITS = ("synthetic:512", "synthetic:0512", "winning-2k", "porep-2k", "wpost-2k", "snap-2k")
ODD_TEXT = ("", " ", "../../etc/passwd", "/etc/shadow", "job-", "a:b:c", "\x00", "é" * 40,
            "synthetic:-1", "synthetic:99999999999999999999", "\ud7ff", "%s%n")  # fmt: skip


def hostile_payload(r: random.Random) -> bytes:
    pick = r.randrange(10)
    n = r.choice((10, 1000, 5000, 100_000))
    if pick == 0:
        return b"[" * n + b"]" * n
    if pick == 1:
        return b'{"a":' * n + b"1" + b"}" * n
    if pick == 2:
        return b'{"x": ' + b"9" * r.choice((4301, 5000, 50_000)) + b"}"
    if pick == 3:
        return b'{"circuit": "winning-2k", "sectors": [' + b"1" * 5000 + b"]}"
    if pick == 4:
        return b'["' + b"9" * 5000 + b'"]'
    if pick == 5:
        return r.randbytes(r.randrange(0, 4096))
    if pick == 6:
        return b"{" + r.randbytes(r.randrange(0, 512))
    if pick == 7:
        return b'{"circuit": "' + r.choice(CIRCUITS).encode() + b'", "x": null}'
    if pick == 8:
        return "\u00b2\u00b3".encode() * r.randrange(1, 100)
    return b'{"SectorNum": 1, "Phase1Out": "' + r.randbytes(64).hex().encode() + b'"}'


def _text(r: random.Random) -> str:
    pick = r.randrange(5)
    if pick == 0:
        return r.choice(ODD_TEXT)
    if pick == 1:
        return "j" * r.choice((129, 1000, 10_000))
    if pick == 2:
        return "".join(chr(r.randrange(1, 0xD7FF)) for _ in range(r.randrange(1, 50)))
    if pick == 3:
        return r.choice(CIRCUITS)
    return f"job-{r.randbytes(8).hex()}"


def _u64(r: random.Random) -> int:
    return r.choice((0, 1, 4, 5, 9, 10, 14, 15, 19, 20, 2**32 - 1, 2**63, 2**64 - 1))


def submit_message(r: random.Random) -> pb.SubmitProofRequest:
    if r.random() < 0.15:  # a valid request (a small synthetic job), to be accepted and proved
        return pb.SubmitProofRequest(
            circuit_id="synthetic:512",
            seeds=[r.randrange(1, 2**64) for _ in range(r.randrange(1, 3))],
            priority=r.randrange(0, 5),
            request_id=f"fuzz-{r.randrange(50)}" if r.random() < 0.3 else "",
        )
    m = pb.SubmitProofRequest()
    if r.random() < 0.5:
        m.circuit_id = _text(r)
    else:
        m.proof_kind = r.randrange(0, 8)
        m.registered_proof = _u64(r)
    if r.random() < 0.3:
        m.sector_size = r.choice((0, 2048, 8 << 20, 32 << 30, 2**64 - 1))
    if r.random() < 0.5:
        m.vanilla_proof = hostile_payload(r)
    if r.random() < 0.4:
        m.vanilla_proofs.extend(hostile_payload(r) for _ in range(r.randrange(1, 4)))
    if r.random() < 0.4:
        m.seeds.extend(r.randrange(2**64) for _ in range(r.choice((1, 2, 65, 5000))))
    if r.random() < 0.3:
        m.randomness = r.randbytes(r.choice((0, 31, 32, 33, 1000)))
    if r.random() < 0.3:
        m.request_id = _text(r)
    m.priority = r.randrange(0, 6) if r.random() < 0.9 else 1000
    m.miner_id = _u64(r)
    m.partition_index = r.randrange(2**32)
    for name in ("comm_r_old", "comm_r_new", "comm_d_new"):
        if r.random() < 0.2:
            setattr(m, name, r.randbytes(r.choice((0, 32, 33))))
    return m


def message(r: random.Random, method: str, job_ids: list[str]) -> object:
    """A well-formed message for ``method`` with hostile field values."""
    job = r.choice(job_ids) if job_ids and r.random() < 0.3 else _text(r)
    if method == "SubmitProof":
        return submit_message(r)
    if method == "Prove":
        return pb.ProveRequest(submit=submit_message(r))
    if method == "AwaitProof":
        return pb.AwaitProofRequest(job_id=job, timeout_ms=r.choice((1, 10, 50)))
    if method == "CancelProof":
        return pb.CancelProofRequest(job_id=job)
    if method in ("PreloadSRS", "EvictSRS"):
        cls = pb.PreloadSrsRequest if method == "PreloadSRS" else pb.EvictSrsRequest
        return cls(circuit_id=_text(r))
    return RESPONSES[method]  # (GetStatus, GetMetrics: no fields; the type is enough)


def _mutate(r: random.Random, raw: bytes) -> bytes:
    b = bytearray(raw)
    for _ in range(r.randrange(1, 6)):
        op = r.randrange(3)
        if op == 0 and b:
            b[r.randrange(len(b))] = r.randrange(256)
        elif op == 1:
            b[r.randrange(len(b) + 1) : r.randrange(len(b) + 1)] = r.randbytes(r.randrange(1, 9))
        elif b:
            del b[r.randrange(len(b)) :]
    return bytes(b)


def requests(seed: int, n: int, job_ids: list[str]) -> Iterator[tuple[str, bytes]]:
    """``n`` (method, raw request) pairs from ``seed``."""
    r = random.Random(seed)
    methods = list(RESPONSES)
    for _ in range(n):
        method = r.choice(methods)
        kind = r.randrange(3)
        if kind == 0:
            yield method, r.randbytes(r.choice((0, 1, 7, 100, 2000)))
            continue
        msg = message(r, method, job_ids)
        raw = msg.SerializeToString() if not isinstance(msg, type) else b""
        yield method, (_mutate(r, raw) if kind == 1 else raw)


@dataclass
class Storm:
    tried: int = 0
    codes: Counter = field(default_factory=Counter)
    failures: list[tuple[str, str, str]] = field(default_factory=list)  # method, code, detail
    accepted: list[str] = field(default_factory=list)  # job ids the storm's submits got
    samples: dict[str, str] = field(default_factory=dict)  # one answer's detail per code

    def figures(self) -> dict[str, object]:
        return {"requests": self.tried, "by_code": dict(sorted(self.codes.items())),
                "internal": self.codes["INTERNAL"] + self.codes["UNKNOWN"],
                "hangs": self.codes["DEADLINE_EXCEEDED"],
                "accepted_jobs": len(self.accepted)}  # fmt: skip


async def storm(address: str, seed: int, n: int, *, concurrency: int = 32,
                deadline_s: float = 30.0) -> Storm:  # fmt: skip
    """Send ``n`` fuzzed requests, ``concurrency`` at a time, each with a deadline."""
    result = Storm()
    target = address if address.startswith("unix:") else f"dns:///{address}"
    limit = asyncio.Semaphore(concurrency)
    async with grpc.aio.insecure_channel(target) as ch:

        async def one(method: str, raw: bytes) -> None:
            async with limit:
                result.tried += 1
                try:
                    answer = await call(ch, method, raw, timeout=deadline_s)
                except grpc.aio.AioRpcError as e:
                    code = e.code().name
                    result.codes[code] += 1
                    result.samples.setdefault(code, f"{method}: {(e.details() or '')[:200]}")
                    if code in FAILURES:
                        result.failures.append((method, code, (e.details() or "")[:300]))
                    return
                result.codes["OK"] += 1
                job = getattr(answer, "job_id", "") if method == "SubmitProof" else ""
                if job:
                    result.accepted.append(job)

        await asyncio.gather(*(one(m, raw) for m, raw in requests(seed, n, result.accepted)))
    return result
