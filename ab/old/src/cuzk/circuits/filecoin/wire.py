"""From what a Filecoin client sends to the payload each proof kind's reader takes.

A client (Curio through filecoin-ffi) hands over a proof's parts separately — vanilla proofs,
randomness, the miner's actor id, the partition, commitments. Each Filecoin kind's payload is
one document its reader checks whole at submit (:mod:`cuzk.circuits.catalogue` names the
reader of each kind); the functions here assemble that document from the parts, refusing parts
that kind does not take. They know nothing of protobuf: the daemon fills a
:class:`ClientParts` from its messages and picks the function through the catalogue.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from cuzk.circuits.filecoin.post import post_params
from cuzk.circuits.filecoin.snap import snap_params
from cuzk.circuits.filecoin.snap_vanilla import request_document
from cuzk.circuits.filecoin.vanilla_bincode import read_partition_proof
from cuzk.circuits.filecoin.vanilla_json import blob_envelope, registered_proof
from cuzk.errors import BadInput
from cuzk.field.constants import R


@dataclass(frozen=True)
class ClientParts:
    """A Filecoin proof request's parts as the client sent them (empty: not sent)."""

    vanilla_proof: bytes = b""  # one document (PoRep: the C1 output)
    vanilla_proofs: tuple[bytes, ...] = ()  # one per sector (PoSt) or partition (SnapDeals)
    randomness: bytes = b""  # PoSt: 32 bytes
    miner_id: int = 0  # PoSt: the actor id
    partition: int = 0  # WindowPoSt: the partition index
    comm_r_old: bytes = b""  # SnapDeals: 32 bytes each
    comm_r_new: bytes = b""
    comm_d_new: bytes = b""


def prover_id(miner_id: int) -> int:
    """filecoin-ffi's prover id for an actor: the payload of its ID address (the actor id as
    unsigned LEB128), zero-padded to 32 bytes and read as a little-endian field element."""
    out = bytearray()
    while True:
        low, miner_id = miner_id & 0x7F, miner_id >> 7
        out.append(low | (0x80 if miner_id else 0))
        if not miner_id:
            return int.from_bytes(bytes(out), "little")


def porep_payload(circuit_id: str, parts: ClientParts) -> bytes:
    """PoRep: the C1 output itself (:func:`.porep_c1.open_statement` reads it)."""
    if not parts.vanilla_proof:
        raise BadInput(f"{circuit_id} needs vanilla_proof (the C1 output)")
    if parts.vanilla_proofs:
        raise BadInput(f"{circuit_id} takes vanilla_proof, not vanilla_proofs")
    return parts.vanilla_proof


def post_payload(circuit_id: str, parts: ClientParts) -> bytes:
    """PoSt: the request envelope :func:`.vanilla_json.read_request` takes
    (:func:`.vanilla_json.blob_envelope`), around the sector proofs as the client sent them
    (each serde JSON or bincode: the engine's reader decodes and checks them,
    :func:`.vanilla_bincode.read_sector_proof`). Decoding here and writing the dicts back as
    JSON took ≈ 20 s of the daemon's own CPU for a full 32 GiB partition (2,349 sectors), and
    the reader then parsed that JSON again."""
    params = post_params(circuit_id)
    if params.kind == "winning" and parts.partition:
        raise BadInput(f"{circuit_id} has a single partition; partition_index must be 0")
    if parts.vanilla_proof:
        raise BadInput("PoSt requests take vanilla_proofs (one per sector), not vanilla_proof")
    if not parts.vanilla_proofs:
        raise BadInput("PoSt requests need vanilla_proofs (one per sector)")
    randomness = _bytes32(parts.randomness, "randomness")
    if int.from_bytes(randomness, "little") >= R:
        raise BadInput(
            "randomness: not a canonical field element (clear its top two bits: "
            "randomness[31] &= 0x3f, as Lotus does)"
        )
    header = {
        "registered_proof": registered_proof(params),
        "circuit": circuit_id,
        "randomness": list(randomness),
        "prover_id": list(prover_id(parts.miner_id).to_bytes(32, "little")),
        "partition": parts.partition,
    }
    return blob_envelope(header, parts.vanilla_proofs)


def snap_payload(circuit_id: str, parts: ClientParts) -> bytes:
    """SnapDeals: the request document :func:`.snap_vanilla.read_update` takes, around the
    partition proofs (each bincode, as ``GenerateUpdateVanillaProofs`` returns it, or serde
    JSON; :func:`.vanilla_bincode.read_partition_proof`) and the three commitments.

    ``h`` is not on the wire: filecoin-proofs proves every update of a size with that size's
    default (:attr:`.snap.SnapParams.h_default`), so a Curio request is read with it.
    """
    params = snap_params(circuit_id)
    if parts.vanilla_proof:
        raise BadInput(f"{circuit_id} takes vanilla_proofs (one per partition), not vanilla_proof")
    if len(parts.vanilla_proofs) != params.partition_count:
        raise BadInput(
            f"{circuit_id} needs vanilla_proofs: one PartitionProof per partition "
            f"({params.partition_count}), got {len(parts.vanilla_proofs)}"
        )
    old, d_new, new = (
        int.from_bytes(commitment(raw, name, sealed=name != "comm_d_new"), "little")
        for raw, name in ((parts.comm_r_old, "comm_r_old"), (parts.comm_d_new, "comm_d_new"),
                          (parts.comm_r_new, "comm_r_new"))
    )  # fmt: skip
    proofs = [
        read_partition_proof(raw, f"vanilla_proofs[{k}]")
        for k, raw in enumerate(parts.vanilla_proofs)
    ]
    doc = request_document(params, params.h_default, (old, d_new, new), proofs)
    return json.dumps(doc, separators=(",", ":")).encode()


# go-fil-commcid's binary CIDs (v1): codec fil-commitment-sealed (0xf102) with multihash
# poseidon-bls12_381-a2-fc1 (0xb401), or fil-commitment-unsealed (0xf101) with
# sha2-256-trunc254-padded (0x1012); each as unsigned varints, then the digest's length (32).
# Curio's ProveUpdateCuzk sends ``cid.Bytes()`` where the reference daemon takes the raw digest.
_SEALED_CID = bytes.fromhex("0182e20381e80220")
_UNSEALED_CID = bytes.fromhex("0181e203922020")


def commitment(value: bytes, what: str, *, sealed: bool) -> bytes:
    """A 32-byte commitment sent raw or as its binary CID (the digest is the commitment)."""
    if len(value) == 32:
        return bytes(value)
    prefix, kind = (_SEALED_CID, "sealed") if sealed else (_UNSEALED_CID, "unsealed")
    if len(value) == len(prefix) + 32 and value.startswith(prefix):
        return bytes(value[len(prefix) :])
    raise BadInput(
        f"{what}: expected the 32-byte commitment or its {kind}-sector CID "
        f"({len(prefix) + 32} bytes), got {len(value)} bytes"
        + (" (a CID of another kind)" if value[:1] == b"\x01" else "")
    )


def _bytes32(value: bytes, what: str) -> bytes:
    if len(value) != 32:
        raise BadInput(f"{what}: expected 32 bytes, got {len(value)}")
    return bytes(value)
