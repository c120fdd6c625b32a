"""cuzk.v1 wire messages → engine requests, and engine answers → wire messages.

A ``SubmitProofRequest`` names what to prove in Filecoin's terms (proof kind, the numeric
registered proof type filecoin-ffi uses, sector size, vanilla proofs, miner id, randomness);
the engine wants a circuit id and either witness seeds or a payload in that circuit kind's own
format. This module translates the *message*: the proof kind and registered proof number into
a circuit id (through the circuit catalogue), the message's fields into the parts a Filecoin
client sends (:class:`~cuzk.circuits.filecoin.wire.ClientParts`). How those parts become a
payload — vanilla proofs in JSON or bincode, the PoSt envelope — is the circuit kind's business
(:func:`cuzk.circuits.catalogue.payload_from_parts`). It never trusts the bytes: whatever
arrives, it returns a :class:`~cuzk.engine.ProofRequest` or raises
:class:`~cuzk.errors.BadInput` with a message for the client (the servicer turns that into
INVALID_ARGUMENT). The engine parses and checks the payload itself when it is submitted.

Registered proof numbers are filecoin-ffi's (Go ``abi.RegisteredSealProof`` etc.): seal
0–4 V1, 5–9 V1_1, 10–14 V1_1 with synthetic PoRep, 15–19 V1_2 non-interactive, each group in
the order 2 KiB, 8 MiB, 512 MiB, 32 GiB, 64 GiB; PoSt 0–4 Winning, 5–9 Window V1, 10–14
Window V1_1 (filecoin-proofs-api's V1_2); update 0–4.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from google.protobuf.message import DecodeError, Message

from cuzk.circuits.catalogue import canonical_id, filecoin_circuit, payload_from_parts
from cuzk.circuits.filecoin.wire import ClientParts
from cuzk.engine import Priority, ProofRequest
from cuzk.engine.request import MAX_REQUEST_ID_LEN, JobResult, PartitionTimeline
from cuzk.errors import BadInput
from cuzk.server.proto import proving_pb2 as pb

M = TypeVar("M", bound=Message)

# Sector sizes in the order of every group of filecoin-ffi's registered proof numbers.
SECTOR_SIZES = (2 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30)
_SIZE_LABELS = ("2KiB", "8MiB", "512MiB", "32GiB", "64GiB")
MAX_CIRCUIT_ID = 128

# proto Priority (LOW=1 … CRITICAL=4, 0 unspecified) → engine Priority (CRITICAL=0 runs first)
_PRIORITY: dict[int, Priority] = {
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
    field: str | None = None  # the message field the payload came from (for errors)


def decode(message_type: type[M], raw: bytes, what: str) -> M:
    """Parse ``raw`` as ``message_type``; BadInput (never DecodeError) if it is not one."""
    try:
        msg = message_type()
        msg.ParseFromString(raw)
        return msg
    except (DecodeError, ValueError, TypeError, RecursionError) as e:
        field = _bad_text_field(message_type.DESCRIPTOR, raw)
        if field is not None:
            raise BadInput(f"{what}: {field}: not valid UTF-8 (a string field)") from None
        raise BadInput(f"{what}: not a valid {message_type.__name__} ({e})") from None


def _bad_text_field(descriptor: Any, raw: bytes, depth: int = 0) -> str | None:
    """The dotted name of the first string field in ``raw`` that is not UTF-8 (protobuf's own
    error does not name it), or None; walks the wire format, entering message fields."""
    pos, fields = 0, descriptor.fields_by_number
    try:
        while pos < len(raw):
            key, pos = _varint(raw, pos)
            number, wire = key >> 3, key & 7
            if wire == 0:
                _, pos = _varint(raw, pos)
            elif wire in (1, 5):
                pos += 8 if wire == 1 else 4
            elif wire == 2:
                size, pos = _varint(raw, pos)
                value, pos = raw[pos : pos + size], pos + size
                f = fields.get(number)
                if f is not None and f.type == f.TYPE_STRING:
                    value.decode("utf-8")
                elif f is not None and f.type == f.TYPE_MESSAGE and depth < 8:
                    inner = _bad_text_field(f.message_type, value, depth + 1)
                    if inner is not None:
                        return f"{f.name}.{inner}"
            else:
                return None
    except UnicodeDecodeError:
        return f.name
    except IndexError:
        return None
    return None


def _varint(raw: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = raw[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80 or shift > 63:
            return value, pos
        shift += 7


def submit_from_bytes(raw: bytes) -> Converted:
    """Decode a serialized SubmitProofRequest and convert it (BadInput on anything wrong)."""
    return to_engine(decode(pb.SubmitProofRequest, raw, "SubmitProof"))


def to_engine(msg: pb.SubmitProofRequest) -> Converted:
    """Translate a SubmitProofRequest into the engine's request."""
    priority = engine_priority(msg.priority)
    request_id = msg.request_id or None
    if request_id is not None and len(request_id) > MAX_REQUEST_ID_LEN:
        raise BadInput(
            f"request_id: at most {MAX_REQUEST_ID_LEN:,} characters, got {len(request_id):,}"
        )
    if msg.circuit_id:
        circuit_id, seeds, payload = _direct(msg)
        kind = "circuit"
    else:
        kind, circuit_id, seeds, payload = _by_kind(msg)
    field = None if not payload else "vanilla_proofs" if msg.vanilla_proofs else "vanilla_proof"
    return Converted(make_request(circuit_id, seeds, payload, priority, request_id), kind, field)


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


def circuit_id_field(value: str) -> str:
    """A request's ``circuit_id`` field, checked for length and presence."""
    if not value:
        raise BadInput("circuit_id is empty")
    if len(value) > MAX_CIRCUIT_ID:
        raise BadInput(f"circuit_id: at most {MAX_CIRCUIT_ID} characters, got {len(value):,}")
    return value


def _direct(msg: pb.SubmitProofRequest) -> tuple[str, tuple[int, ...], bytes]:
    """``circuit_id`` set: seeds or vanilla_proof is the whole input."""
    circuit_id_field(msg.circuit_id)
    seeds, payload = tuple(msg.seeds), bytes(msg.vanilla_proof)
    if msg.vanilla_proofs:
        raise BadInput("circuit_id requests take seeds or vanilla_proof, not vanilla_proofs")
    if bool(seeds) == bool(payload):
        raise BadInput(f"{msg.circuit_id}: give either seeds or vanilla_proof (exactly one)")
    return canonical_id(msg.circuit_id), seeds, payload


def _size_index(msg: pb.SubmitProofRequest, registered: int, first: int, what: str) -> int:
    i = registered - first
    if msg.sector_size and msg.sector_size != SECTOR_SIZES[i]:
        raise BadInput(
            f"sector_size {msg.sector_size} does not match {what} {registered} ({_SIZE_LABELS[i]})"
        )
    return i


def _by_kind(msg: pb.SubmitProofRequest) -> tuple[str, str, tuple[int, ...], bytes]:
    """Proof kind and registered proof number → (kind, circuit id); the message's fields →
    the parts the kind builds its payload from."""
    kind, rp = msg.proof_kind, msg.registered_proof
    if msg.seeds:
        raise BadInput("seeds are only taken with circuit_id")
    if kind == pb.POREP_SEAL_COMMIT:
        if rp > 19:
            raise BadInput(f"registered_proof {rp} is not a RegisteredSealProof (0–19)")
        name, i = "porep", _size_index(msg, rp, rp - rp % 5, "RegisteredSealProof")
    elif kind == pb.SNAP_DEALS_UPDATE:
        if rp > 4:
            raise BadInput(f"registered_proof {rp} is not a RegisteredUpdateProof (0–4)")
        name, i = "snap", _size_index(msg, rp, 0, "RegisteredUpdateProof")
    elif kind == pb.WINNING_POST:
        if rp > 4:
            raise BadInput(f"registered_proof {rp} is not a Winning RegisteredPoStProof (0–4)")
        name, i = "winning", _size_index(msg, rp, 0, "RegisteredPoStProof")
    elif kind == pb.WINDOW_POST_PARTITION:
        if 5 <= rp <= 9:
            raise BadInput(
                f"registered_proof {rp} is a retired WindowPoSt V1 type; use V1_1 (10–14)"
            )
        if not 10 <= rp <= 14:
            raise BadInput(f"registered_proof {rp} is not a Window RegisteredPoStProof (10–14)")
        name, i = "wpost", _size_index(msg, rp, 10, "RegisteredPoStProof")
    elif kind == pb.PROOF_KIND_UNSPECIFIED:
        raise BadInput("proof_kind is unspecified (and no circuit_id names a circuit)")
    else:
        raise BadInput(f"proof_kind: unknown value {kind}")
    circuit_id = filecoin_circuit(name, SECTOR_SIZES[i])
    parts = ClientParts(
        vanilla_proof=bytes(msg.vanilla_proof),
        vanilla_proofs=tuple(bytes(p) for p in msg.vanilla_proofs),
        randomness=bytes(msg.randomness),
        miner_id=msg.miner_id,
        partition=msg.partition_index,
        comm_r_old=bytes(msg.comm_r_old),
        comm_r_new=bytes(msg.comm_r_new),
        comm_d_new=bytes(msg.comm_d_new),
    )
    return name, circuit_id, (), payload_from_parts(circuit_id, parts)


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
