"""cuzk.v1 wire messages → engine requests, and engine answers → wire messages.

A ``SubmitProofRequest`` names what to prove in Filecoin's terms (proof kind, the numeric
registered proof type filecoin-ffi uses, sector size, vanilla proofs, miner id, randomness);
the engine wants a circuit id and either witness seeds or a payload in that circuit family's
own format. This module is the only place that translation happens, and it never trusts the
bytes: whatever arrives, it returns a :class:`~cuzk.engine.ProofRequest` or raises
:class:`~cuzk.errors.BadInput` with a message for the client (the servicer turns that into
INVALID_ARGUMENT). The engine parses and checks the payload itself when it is submitted.

Registered proof numbers are filecoin-ffi's (Go ``abi.RegisteredSealProof`` etc.): seal
0–4 V1, 5–9 V1_1, 10–14 V1_1 with synthetic PoRep, 15–19 V1_2 non-interactive, each group in
the order 2 KiB, 8 MiB, 512 MiB, 32 GiB, 64 GiB; PoSt 0–4 Winning, 5–9 Window V1, 10–14
Window V1_1 (filecoin-proofs-api's V1_2); update 0–4.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass

from google.protobuf.message import DecodeError

from cuzk.engine import Priority, ProofRequest
from cuzk.engine.request import JobResult, PartitionTimeline
from cuzk.errors import BadInput
from cuzk.field.constants import R
from cuzk.server.proto import proving_pb2 as pb

SECTOR_SIZES = (2 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30)
SIZE_NAMES = ("2k", "8m", "512m", "32g", "64g")
_SIZE_LABELS = ("2KiB", "8MiB", "512MiB", "32GiB", "64GiB")

# proto Priority (LOW=1 … CRITICAL=4, 0 unspecified) → engine Priority (CRITICAL=0 runs first)
_PRIORITY = {
    pb.PRIORITY_UNSPECIFIED: Priority.NORMAL,
    pb.LOW: Priority.LOW,
    pb.NORMAL: Priority.NORMAL,
    pb.HIGH: Priority.HIGH,
    pb.CRITICAL: Priority.CRITICAL,
}
_WIRE_PRIORITY = {v: k for k, v in _PRIORITY.items() if k != pb.PRIORITY_UNSPECIFIED}


@dataclass(frozen=True)
class Converted:
    """A decoded submission: the engine request and the proof kind it came as."""

    request: ProofRequest
    kind: str  # "porep", "snap", "wpost", "winning" or "circuit" (named directly)


def decode(message_type: type, raw: bytes, what: str):  # noqa: ANN201 - a protobuf message
    """Parse ``raw`` as ``message_type``; BadInput (never DecodeError) if it is not one."""
    try:
        msg = message_type()
        msg.ParseFromString(raw)
        return msg
    except (DecodeError, ValueError, TypeError, RecursionError) as e:
        raise BadInput(f"{what}: not a valid {message_type.__name__} ({e})") from None


def submit_from_bytes(raw: bytes) -> Converted:
    """Decode a serialized SubmitProofRequest and convert it (BadInput on anything wrong)."""
    return to_engine(decode(pb.SubmitProofRequest, raw, "SubmitProof"))


def to_engine(msg: pb.SubmitProofRequest) -> Converted:
    """Translate a SubmitProofRequest into the engine's request."""
    priority = engine_priority(msg.priority)
    request_id = msg.request_id or None
    if request_id is not None and len(request_id) > 256:
        raise BadInput("request_id: at most 256 characters")
    if msg.circuit_id:
        circuit_id, seeds, payload = _direct(msg)
        kind = "circuit"
    else:
        kind, circuit_id, seeds, payload = _by_kind(msg)
    return Converted(make_request(circuit_id, seeds, payload, priority, request_id), kind)


def make_request(
    circuit_id: str,
    seeds: Sequence[int],
    payload: bytes,
    priority: Priority,
    request_id: str | None,
) -> ProofRequest:
    """A ProofRequest with either seeds or a payload (also used to re-submit journalled jobs)."""
    return ProofRequest(
        circuit_id=circuit_id,
        seeds=tuple(seeds),
        payload=bytes(payload),
        priority=priority,
        request_id=request_id,
    )


def engine_priority(value: int) -> Priority:
    try:
        return _PRIORITY[value]
    except KeyError:
        raise BadInput(f"priority: unknown value {value} (LOW=1 … CRITICAL=4)") from None


def wire_priority(priority: Priority) -> int:
    return _WIRE_PRIORITY[priority]


def _direct(msg: pb.SubmitProofRequest) -> tuple[str, tuple[int, ...], bytes]:
    """``circuit_id`` set: seeds or vanilla_proof is the whole input."""
    if len(msg.circuit_id) > 128:
        raise BadInput("circuit_id: at most 128 characters")
    seeds, payload = tuple(msg.seeds), bytes(msg.vanilla_proof)
    if msg.vanilla_proofs:
        raise BadInput("circuit_id requests take seeds or vanilla_proof, not vanilla_proofs")
    if bool(seeds) == bool(payload):
        raise BadInput(f"{msg.circuit_id}: give either seeds or vanilla_proof (exactly one)")
    return msg.circuit_id, seeds, payload


def _size_index(msg: pb.SubmitProofRequest, registered: int, first: int, what: str) -> int:
    i = registered - first
    if msg.sector_size and msg.sector_size != SECTOR_SIZES[i]:
        raise BadInput(
            f"sector_size {msg.sector_size} does not match {what} {registered} ({_SIZE_LABELS[i]})"
        )
    return i


def _by_kind(msg: pb.SubmitProofRequest) -> tuple[str, str, tuple[int, ...], bytes]:
    kind, rp = msg.proof_kind, msg.registered_proof
    if msg.seeds:
        raise BadInput("seeds are only taken with circuit_id")
    if kind == pb.POREP_SEAL_COMMIT:
        if rp > 19:
            raise BadInput(f"registered_proof {rp} is not a RegisteredSealProof (0–19)")
        i = _size_index(msg, rp, rp - rp % 5, "RegisteredSealProof")
        if not msg.vanilla_proof:
            raise BadInput("POREP_SEAL_COMMIT needs vanilla_proof (the C1 output)")
        if msg.vanilla_proofs:
            raise BadInput("POREP_SEAL_COMMIT takes vanilla_proof, not vanilla_proofs")
        return "porep", f"porep-{SIZE_NAMES[i]}", (), bytes(msg.vanilla_proof)
    if kind == pb.SNAP_DEALS_UPDATE:
        if rp > 4:
            raise BadInput(f"registered_proof {rp} is not a RegisteredUpdateProof (0–4)")
        i = _size_index(msg, rp, 0, "RegisteredUpdateProof")
        return "snap", f"snap-{SIZE_NAMES[i]}", (), _snap_payload(msg, i)
    if kind == pb.WINNING_POST:
        if rp > 4:
            raise BadInput(f"registered_proof {rp} is not a Winning RegisteredPoStProof (0–4)")
        i = _size_index(msg, rp, 0, "RegisteredPoStProof")
        if msg.partition_index:
            raise BadInput("WINNING_POST has a single partition; partition_index must be 0")
        return "winning", f"winning-{SIZE_NAMES[i]}", (), _post_payload(msg, "winning", i)
    if kind == pb.WINDOW_POST_PARTITION:
        if 5 <= rp <= 9:
            raise BadInput(
                f"registered_proof {rp} is a retired WindowPoSt V1 type; use V1_1 (10–14)"
            )
        if not 10 <= rp <= 14:
            raise BadInput(f"registered_proof {rp} is not a Window RegisteredPoStProof (10–14)")
        i = _size_index(msg, rp, 10, "RegisteredPoStProof")
        return "wpost", f"wpost-{SIZE_NAMES[i]}", (), _post_payload(msg, "wpost", i)
    if kind == pb.PROOF_KIND_UNSPECIFIED:
        raise BadInput("proof_kind is unspecified (and no circuit_id names a circuit)")
    raise BadInput(f"proof_kind: unknown value {kind}")


def _bytes32(value: bytes, what: str) -> list[int]:
    if len(value) != 32:
        raise BadInput(f"{what}: expected 32 bytes, got {len(value)}")
    return list(value)


def prover_id(miner_id: int) -> int:
    """filecoin-ffi's prover id for an actor: the payload of its ID address (the actor id as
    unsigned LEB128), zero-padded to 32 bytes and read as a little-endian field element."""
    out = bytearray()
    while True:
        low, miner_id = miner_id & 0x7F, miner_id >> 7
        out.append(low | (0x80 if miner_id else 0))
        if not miner_id:
            return int.from_bytes(bytes(out), "little")


def _post_payload(msg: pb.SubmitProofRequest, family: str, i: int) -> bytes:
    """The PoSt request envelope ``cuzk.circuits.filecoin.vanilla_json.read_request`` takes."""
    if msg.vanilla_proof:
        raise BadInput("PoSt requests take vanilla_proofs (one per sector), not vanilla_proof")
    if not msg.vanilla_proofs:
        raise BadInput("PoSt requests need vanilla_proofs (one per sector)")
    randomness = _bytes32(msg.randomness, "randomness")
    if int.from_bytes(bytes(randomness), "little") >= R:
        raise BadInput(
            "randomness: not a canonical field element (clear its top two bits: "
            "randomness[31] &= 0x3f, as Lotus does)"
        )
    sectors = [_sector_proof(raw, k) for k, raw in enumerate(msg.vanilla_proofs)]
    name = (
        f"StackedDrgWinning{_SIZE_LABELS[i]}V1"
        if family == "winning"
        else f"StackedDrgWindow{_SIZE_LABELS[i]}V1_2"
    )
    envelope = {
        "registered_proof": name,
        "circuit": f"{family}-{SIZE_NAMES[i]}",
        "randomness": randomness,
        "prover_id": list(prover_id(msg.miner_id).to_bytes(32, "little")),
        "partition": msg.partition_index,
        "vanilla_proofs": sectors,
    }
    return json.dumps(envelope, separators=(",", ":")).encode()


def _sector_proof(raw: bytes, k: int) -> object:
    """One FallbackPoStSectorProof: upstream's JSON (serde) layout, or its bincode encoding
    (what filecoin-ffi hands the reference's Go client). Text starting with "{" is tried as
    JSON first; a bincode proof can start with that byte too (sector id 123 mod 256), so on a
    JSON error it is read as bincode before being refused."""
    what = f"vanilla_proofs[{k}]"
    json_error = None
    if raw.lstrip()[:1] == b"{":
        try:
            doc = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
            json_error = e
        else:
            if not isinstance(doc, dict):
                raise BadInput(f"{what}: expected a JSON object")
            return doc
    try:
        return sector_proof_from_bincode(bytes(raw), what)
    except BadInput as e:
        if json_error is not None:
            raise BadInput(f"{what}: neither JSON ({json_error}) nor bincode ({e})") from None
        raise


# -- bincode (what filecoin-ffi's GenerateSingleVanillaProof returns) ---------------------------
#
# bincode 1.x with its default options: integers little-endian and fixed width, sequence
# lengths and usize as u64, enum variants as a u32 index, a 32-byte domain element as its 32 raw
# bytes, struct fields in declaration order. Decoding yields exactly the dict serde's JSON would.


class _Bincode:
    def __init__(self, data: bytes, what: str) -> None:
        self.data, self.pos, self.what = data, 0, what

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise BadInput(
                f"{self.what}: truncated bincode (needs {n} bytes at offset "
                f"{self.pos}, {len(self.data)} in all)"
            )
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def u64(self) -> int:
        return int.from_bytes(self.take(8), "little")

    def domain(self) -> list[int]:
        return list(self.take(32))

    def seq(self, item, min_item_bytes: int) -> list:  # noqa: ANN001 - a reader method
        n = self.u64()
        if n * min_item_bytes > len(self.data) - self.pos:
            raise BadInput(
                f"{self.what}: bincode sequence of {n} items at offset "
                f"{self.pos - 8} is longer than the data"
            )
        return [item() for _ in range(n)]

    def path(self) -> dict:
        return {
            "path": self.seq(lambda: {"hashes": self.seq(self.domain, 32), "index": self.u64()}, 16)
        }

    def merkle_proof(self) -> dict:
        variant = int.from_bytes(self.take(4), "little")
        if variant == 0:
            root, leaf = self.domain(), self.domain()
            return {"data": {"Single": {"root": root, "leaf": leaf, "path": self.path()}}}
        if variant == 1:
            base, sub = self.path(), self.path()
            return {
                "data": {
                    "Sub": {
                        "base_proof": base,
                        "sub_proof": sub,
                        "root": self.domain(),
                        "leaf": self.domain(),
                    }
                }
            }
        if variant == 2:
            base, sub, top = self.path(), self.path(), self.path()
            return {
                "data": {
                    "Top": {
                        "base_proof": base,
                        "sub_proof": sub,
                        "top_proof": top,
                        "root": self.domain(),
                        "leaf": self.domain(),
                    }
                }
            }
        raise BadInput(f"{self.what}: unknown Merkle proof variant {variant} in bincode")

    def sector(self) -> dict:
        return {
            "inclusion_proofs": self.seq(self.merkle_proof, 4),
            "comm_c": self.domain(),
            "comm_r_last": self.domain(),
        }


def sector_proof_from_bincode(data: bytes, what: str) -> dict:
    """A bincode ``FallbackPoStSectorProof`` as the dict its serde JSON would parse to."""
    r = _Bincode(data, what)
    out = {
        "sector_id": r.u64(),
        "comm_r": r.domain(),
        "vanilla_proof": {"sectors": r.seq(r.sector, 72)},
    }
    if r.pos != len(data):
        raise BadInput(f"{what}: {len(data) - r.pos} bytes left over after the bincode proof")
    return out


def _snap_payload(msg: pb.SubmitProofRequest, i: int) -> bytes:
    """SnapDeals: the partition proofs and the three commitments, in one JSON document."""
    if not msg.vanilla_proofs:
        raise BadInput("SNAP_DEALS_UPDATE needs vanilla_proofs (one per partition)")
    return json.dumps(
        {
            "registered_proof": f"StackedDrg{_SIZE_LABELS[i]}V1",
            "comm_r_old": _bytes32(msg.comm_r_old, "comm_r_old"),
            "comm_r_new": _bytes32(msg.comm_r_new, "comm_r_new"),
            "comm_d_new": _bytes32(msg.comm_d_new, "comm_d_new"),
            "vanilla_proofs": [base64.b64encode(p).decode() for p in msg.vanilla_proofs],
        },
        separators=(",", ":"),
    ).encode()


# -- answers -------------------------------------------------------------------------------


def timing_ms(timelines: Sequence[PartitionTimeline]) -> dict[str, int]:
    """AwaitProof's timing fields from the partitions' timelines: the job's wait before its
    first partition started, and synthesis and kernel time summed over partitions."""

    def ms(seconds: float) -> int:
        return max(0, round(seconds * 1000))

    queued = [t.queued for t in timelines]
    starts = [t.synth_start for t in timelines if t.synth_start is not None]
    synth = sum(
        t.synth_end - t.synth_start
        for t in timelines
        if t.synth_start is not None and t.synth_end is not None
    )
    gpu = sum(
        t.kernels_end - t.kernels_start
        for t in timelines
        if t.kernels_start is not None and t.kernels_end is not None
    )
    ends = [t.finalize_end for t in timelines if t.finalize_end is not None]
    return {
        "queue_wait_ms": ms(min(starts) - min(queued)) if starts and queued else 0,
        "synthesis_ms": ms(synth),
        "gpu_compute_ms": ms(gpu),
        "engine_ms": ms(max(ends) - min(queued)) if ends and queued else 0,
    }


def timeline_message(t: PartitionTimeline) -> pb.PartitionTimeline:
    msg = pb.PartitionTimeline(partition=t.partition, worker=t.worker or "", queued=t.queued)
    if t.device is not None:
        msg.device = t.device
    for name in (
        "synth_start",
        "synth_end",
        "device_pick",
        "kernels_start",
        "kernels_end",
        "finalize_end",
    ):
        value = getattr(t, name)
        if value is not None:
            setattr(msg, name, value)
    return msg


def timeline_from_message(job_id: str, msg: pb.PartitionTimeline) -> PartitionTimeline:
    """The engine's dataclass again (for drawing a daemon's timeline with the bench's code)."""

    def opt(name: str) -> float | None:
        return getattr(msg, name) if msg.HasField(name) else None

    return PartitionTimeline(
        job_id,
        msg.partition,
        msg.device if msg.HasField("device") else None,
        msg.worker or None,
        msg.queued,
        opt("synth_start"),
        opt("synth_end"),
        opt("device_pick"),
        opt("kernels_start"),
        opt("kernels_end"),
        opt("finalize_end"),
    )


def public_inputs_message(inputs: Sequence[Sequence[int]]) -> list[pb.PublicInputs]:
    return [
        pb.PublicInputs(values=[int(x).to_bytes(32, "little") for x in part]) for part in inputs
    ]


def public_inputs_from_message(parts: Sequence[pb.PublicInputs]) -> list[list[int]]:
    return [[int.from_bytes(v, "little") for v in p.values] for p in parts]


def result_fields(result: JobResult) -> dict[str, object]:
    """The AwaitProofResponse fields a finished job's result fills."""
    return {
        "proof": result.proof,
        "public_inputs": public_inputs_message(result.public_inputs),
        "vk_path": result.vk_path,
        "circuit_id": result.circuit_id,
    }
