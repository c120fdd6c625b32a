"""filecoin-proofs' JSON layout of PoSt vanilla proofs (serde of ``FallbackPoStSectorProof``).

One sector's proof::

    {"sector_id": 7, "comm_r": [32 bytes],
     "vanilla_proof": {"sectors": [{"inclusion_proofs": [MerkleProof…],
                                    "comm_c": [32 bytes], "comm_r_last": [32 bytes]}]}}

where a 32-byte value is a field element's little-endian bytes as 32 integers, and a
MerkleProof is ``{"data": {"Single": {"root", "leaf", "path"}}}`` for one-level trees,
``{"Sub": {"base_proof", "sub_proof", "root", "leaf"}}`` or ``{"Top": {"base_proof",
"sub_proof", "top_proof", "root", "leaf"}}``, each path ``{"path": [{"hashes": [siblings…],
"index": position}…]}`` bottom-up.

Reading checks everything a prover must not trust: shapes, canonical field elements, every
inclusion path hashing to its root, one comm_r_last per sector, comm_r = Poseidon2(comm_c,
comm_r_last). A bad file raises :class:`~cuzk.errors.BadInput` naming the sector, challenge and
reason, never a proof.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import io
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np

from cuzk import safejson
from cuzk.circuits.filecoin import post_bincode
from cuzk.circuits.filecoin.merkle_json import (
    fe,
    fe_json,
    field,
    merkle_proof_json,
    read_merkle_proof,
)
from cuzk.circuits.filecoin.post import FallbackPoStCircuit, SectorProof, pad_sectors
from cuzk.circuits.filecoin.post_params import PoStParams
from cuzk.circuits.filecoin.vanilla import (
    OpenableSector,
    PublicSector,
    leaf_challenge,
    public_inputs,
    sector_challenges,
    sector_proof,
)
from cuzk.circuits.filecoin.vanilla_bincode import read_sector_proof
from cuzk.circuits.statement import Built, Statement, payload_digest
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.gadgets.merkle import PathBatch
from cuzk.gadgets.poseidon.native import hash_many


@dataclass(frozen=True)
class SectorVanilla:
    """One ``FallbackPoStSectorProof``: a sector's id and its proof (comm_r included)."""

    sector_id: int  # u64
    proof: SectorProof  # challenged leaves of this sector, in challenge order


def sector_vanilla_json(sv: SectorVanilla, params: PoStParams) -> dict[str, Any]:
    p = sv.proof
    return {
        "sector_id": sv.sector_id,
        "comm_r": fe_json(p.comm_r),
        "vanilla_proof": {
            "sectors": [
                {
                    "inclusion_proofs": [
                        merkle_proof_json(m, params.tree) for m in p.inclusion_proofs
                    ],
                    "comm_c": fe_json(p.comm_c),
                    "comm_r_last": fe_json(p.comm_r_last),
                }
            ]
        },
    }


def dumps(sectors: Sequence[SectorVanilla], params: PoStParams) -> str:
    """A JSON array of ``FallbackPoStSectorProof`` objects."""
    return json.dumps([sector_vanilla_json(s, params) for s in sectors])


def loads(text: str | bytes, params: PoStParams) -> list[SectorVanilla]:
    """Parse and check a JSON array of ``FallbackPoStSectorProof`` (or one object).

    Raises:
        BadInput: malformed JSON or any inconsistency, with where and why.
    """
    return read_sectors(safejson.loads(text, "vanilla proofs", bytes32=True), params)


def read_sectors(doc: Any, params: PoStParams) -> list[SectorVanilla]:
    """:func:`loads` of an already parsed document: every sector read first, then all their
    Poseidon hashes (comm_r and every inclusion path) computed in bulk and checked in order.

    Raises:
        BadInput: any inconsistency, with where and why.
    """
    items = doc if isinstance(doc, list) else [doc]
    if not items:
        raise BadInput("vanilla proofs: empty list")
    read = []
    for i, item in enumerate(items):
        what = f"sector proof {i}"
        sid = field(item, "sector_id", what)
        if type(sid) is not int or not 0 <= sid < 1 << 64:
            raise BadInput(f"{what}: sector_id must be a u64")
        comm_r = fe(field(item, "comm_r", what), f"{what} comm_r")
        sectors = field(field(item, "vanilla_proof", what), "sectors", what)
        if not isinstance(sectors, list) or len(sectors) != 1:
            raise BadInput(f"{what}: expected exactly one sector in vanilla_proof")
        s = sectors[0]
        comm_c = fe(field(s, "comm_c", what), f"{what} comm_c")
        comm_r_last = fe(field(s, "comm_r_last", what), f"{what} comm_r_last")
        incl = field(s, "inclusion_proofs", what)
        if not isinstance(incl, list) or not incl:
            raise BadInput(f"{what}: no inclusion proofs")
        paths = tuple(read_merkle_proof(m, params.tree, f"{what} challenge {j}")
                      for j, m in enumerate(incl))  # fmt: skip
        read.append(SectorVanilla(sid, SectorProof(comm_r, comm_c, comm_r_last, paths)))
    return check_hashes(read, params)


def check_hashes(read: list[SectorVanilla], params: PoStParams) -> list[SectorVanilla]:
    """``read`` once every sector's comm_r and inclusion paths hash as they claim (in bulk,
    all the sectors' paths as one :class:`PathBatch`).

    Raises:
        BadInput: the first sector or path that does not, in order.
    """
    comms = fr.to_ints(
        hash_many(
            fr.from_ints([x for sv in read for x in (sv.proof.comm_c, sv.proof.comm_r_last)]), 2
        )
    )
    batch = PathBatch.concat([sv.proof.inclusion_proofs for sv in read])
    if [w.shape[1] + 1 for w in batch.siblings] != params.tree.arities:
        raise BadInput("vanilla proofs: inclusion paths do not have TreeR's levels")
    digests = batch.hash_levels()
    batch = batch.with_digests(digests)
    hashes_ok = (fr.to_canonical_limbs(digests[-1]) == batch.roots).all(axis=1)
    counts = [len(sv.proof.inclusion_proofs) for sv in read]
    last = fr.to_canonical_limbs(fr.from_ints([sv.proof.comm_r_last for sv in read]))
    roots_ok = (batch.roots == np.repeat(last, counts, axis=0)).all(axis=1)
    first = 0
    for i, (sv, comm_r, n) in enumerate(zip(read, comms, counts, strict=True)):
        what = f"sector proof {i}"
        if comm_r != sv.proof.comm_r:
            raise BadInput(f"{what}: comm_r is not Poseidon(comm_c, comm_r_last)")
        if not (hashes_ok[first : first + n].all() and roots_ok[first : first + n].all()):
            for j in range(n):
                if not hashes_ok[first + j]:
                    raise BadInput(f"{what} challenge {j}: inclusion path does not hash to "
                                   "its root")  # fmt: skip
                if not roots_ok[first + j]:
                    raise BadInput(f"{what} challenge {j}: root differs from comm_r_last")
        first += n
    # Each sector's paths as its slice of the checked batch: columns that pickle as buffers,
    # with the digests synthesis would otherwise hash again.
    ends = np.cumsum(counts)
    return [SectorVanilla(sv.sector_id, dataclasses.replace(sv.proof,
                                                           inclusion_proofs=batch[e - n : e]))
            for sv, n, e in zip(read, counts, ends.tolist(), strict=True)]  # fmt: skip


def challenged_leaves(
    params: PoStParams, sector_ids: Sequence[int], randomness: int, partition: int = 0
) -> list[list[int]]:
    """Per sector, the leaves ``generate_fallback_sector_challenges`` challenges: WinningPoSt's
    one sector its 66; WindowPoSt's sectors (partition ``partition``, in order) 10 each."""
    if params.kind == "winning":
        if len(sector_ids) != 1:
            raise BadInput("WinningPoSt proves exactly one sector")
        sid = sector_ids[0]
        return [[leaf_challenge(params, randomness, sid, n) for n in range(params.sector_count)]]
    first = partition * params.sector_count
    return [sector_challenges(params, randomness, sid, first + i)
            for i, sid in enumerate(sector_ids)]  # fmt: skip


def generate(
    params: PoStParams, sectors: Sequence[OpenableSector], randomness: int, partition: int = 0
) -> list[SectorVanilla]:
    """What filecoin-proofs' ``generate_single_vanilla_proof`` returns per sector, with the
    challenges of :func:`challenged_leaves`."""
    leaves = challenged_leaves(params, [s.sector_id for s in sectors], randomness, partition)
    return [SectorVanilla(s.sector_id, sector_proof(params, s, ch))
            for s, ch in zip(sectors, leaves, strict=True)]  # fmt: skip


def partition_circuit(
    params: PoStParams, vanilla: Sequence[SectorVanilla], randomness: int, partition: int = 0
) -> tuple[FallbackPoStCircuit, list[int]]:
    """The circuit and public inputs (without ONE) for one partition from parsed vanilla
    proofs, checking every inclusion proof is for the leaf the randomness challenges.

    WinningPoSt takes one sector proof with 66 inclusion proofs and unrolls it into 66
    one-challenge sectors; WindowPoSt takes the partition's sector proofs in order and repeats
    the last to fill the partition.

    Raises:
        BadInput: wrong counts, or a proof for a leaf that was not challenged.
    """
    if params.kind == "winning":
        if len(vanilla) != 1:
            raise BadInput(f"WinningPoSt takes one sector proof, got {len(vanilla)}")
        sv = vanilla[0]
        want = [leaf_challenge(params, randomness, sv.sector_id, n)
                for n in range(params.sector_count)]  # fmt: skip
        _check_leaves(sv, want, params, 0)
        p = sv.proof
        proofs = tuple(SectorProof(p.comm_r, p.comm_c, p.comm_r_last, (m,))
                       for m in p.inclusion_proofs)  # fmt: skip
        public = [PublicSector(sv.sector_id, p.comm_r)] * params.sector_count
        return FallbackPoStCircuit(params, proofs), public_inputs(params, randomness, public)
    if not 0 < len(vanilla) <= params.sector_count:
        raise BadInput(f"a WindowPoSt partition takes 1 … {params.sector_count} sector proofs")
    first = partition * params.sector_count
    for i, sv in enumerate(vanilla):
        want = sector_challenges(params, randomness, sv.sector_id, first + i)
        _check_leaves(sv, want, params, i)
    circuit = FallbackPoStCircuit(params, pad_sectors([sv.proof for sv in vanilla], params))
    # public_inputs chunks all sectors by partition; give it this partition's at its offset.
    public = [PublicSector(sv.sector_id, sv.proof.comm_r) for sv in vanilla]
    placeholder = [public[0]] * first
    return circuit, public_inputs(params, randomness, placeholder + public, partition)


def _check_leaves(sv: SectorVanilla, want: list[int], params: PoStParams, i: int) -> None:
    got = sv.proof.inclusion_proofs
    if len(got) != len(want):
        raise BadInput(f"sector proof {i}: {len(got)} inclusion proofs, expected {len(want)}")
    proved_leaves = PathBatch.of(got).leaf_indices().tolist()
    for j, (proved, leaf) in enumerate(zip(proved_leaves, want, strict=True)):
        if proved != leaf:
            raise BadInput(f"sector proof {i} challenge {j}: proves leaf {proved}, "
                           f"the challenge is leaf {leaf}")  # fmt: skip


# -- request files --------------------------------------------------------------------------

SIZE_LABELS = {2 << 10: "2KiB", 8 << 20: "8MiB", 512 << 20: "512MiB", 32 << 30: "32GiB",
               64 << 30: "64GiB"}  # fmt: skip


def registered_proof(params: PoStParams) -> str:
    """filecoin-proofs-api's name of the proof type (``StackedDrgWinning2KiBV1``, …)."""
    size = SIZE_LABELS[params.sector_size]
    if params.kind == "winning":
        return f"StackedDrgWinning{size}V1"
    return f"StackedDrgWindow{size}V1_2" if params.api_version == "1.2.0" else (
        f"StackedDrgWindow{size}V1")  # fmt: skip


def write_request(
    out: TextIO,
    params: PoStParams,
    vanilla: Iterable[SectorVanilla],
    randomness: int,
    prover_id: int,
    partition: int = 0,
) -> None:
    """Write :func:`request_json`'s text to ``out`` one sector at a time (a full 32 GiB
    WindowPoSt partition is ~200 MB of JSON)."""
    head = json.dumps({
        "registered_proof": registered_proof(params),
        "circuit": params.circuit_id,
        "randomness": fe_json(randomness),
        "prover_id": fe_json(prover_id),
        "partition": partition,
    })  # fmt: skip
    out.write(head[:-1] + ', "vanilla_proofs": [')
    for i, s in enumerate(vanilla):
        out.write((", " if i else "") + json.dumps(sector_vanilla_json(s, params)))
    out.write("]}")


def request_json(
    params: PoStParams,
    vanilla: Sequence[SectorVanilla],
    randomness: int,
    prover_id: int,
    partition: int = 0,
) -> str:
    """A PoSt proving request: our envelope around upstream's vanilla proof array —
    ``{registered_proof, circuit, randomness, prover_id, partition, vanilla_proofs}`` (32-byte
    values as arrays of integers, like the vanilla proofs)."""
    buf = io.StringIO()
    write_request(buf, params, vanilla, randomness, prover_id, partition)
    return buf.getvalue()


def read_request(text: str | bytes) -> tuple[str, FallbackPoStCircuit, list[int]]:
    """(circuit id, circuit with its witness, public inputs without ONE) from a request file
    written by :func:`request_json`; every check of :func:`loads` and
    :func:`partition_circuit` applies.

    Raises:
        BadInput: malformed or inconsistent request.
    """
    from cuzk.circuits.filecoin.post import post_params

    raws = None
    if isinstance(text, bytes) and text.startswith(BLOB_ENVELOPE):
        doc, raws = read_blob_envelope(text)
    else:
        doc = safejson.loads(text, "PoSt request", bytes32=True)
    cid = field(doc, "circuit", "PoSt request")
    if not isinstance(cid, str):
        raise BadInput("PoSt request: circuit must be a string")
    params = post_params(cid)
    partition = field(doc, "partition", "PoSt request")
    if type(partition) is not int or partition < 0:
        raise BadInput("PoSt request: partition must be a non-negative integer")
    randomness = fe(field(doc, "randomness", "PoSt request"), "randomness")
    fe(field(doc, "prover_id", "PoSt request"), "prover_id")
    if raws is not None:  # a daemon's envelope: the sector proofs as sent
        vanilla = _read_raw_blobs(raws, params)
    elif "vanilla_proof_blobs" in doc:  # the same as JSON with base64 (an older daemon's)
        if "vanilla_proofs" in doc:
            raise BadInput("PoSt request: vanilla_proofs and vanilla_proof_blobs together")
        vanilla = _read_blobs(doc["vanilla_proof_blobs"], params)
    else:
        vanilla = read_sectors(field(doc, "vanilla_proofs", "PoSt request"), params)
    circuit, inputs = partition_circuit(params, vanilla, randomness, partition)
    return cid, circuit, inputs


#: The first line of a daemon's PoSt envelope (:func:`blob_envelope`).
BLOB_ENVELOPE = b"cuzk-post-envelope/1\n"


def blob_envelope(header: dict[str, Any], blobs: Sequence[bytes]) -> bytes:
    """A daemon's PoSt payload: :data:`BLOB_ENVELOPE`, the request's fields as one line of
    JSON (with ``vanilla_proof_sizes``, the sector proofs' sizes), then the sector proofs as the
    client sent them, back to back. Base64 inside a JSON document (the older envelope, still
    read) cost ≈ 2 s of CPU per full 32 GiB WindowPoSt partition, half to write it and half to
    read it, on the path of the proof's latency."""
    head = {**header, "vanilla_proof_sizes": [len(b) for b in blobs]}
    return b"".join([BLOB_ENVELOPE, json.dumps(head, separators=(",", ":")).encode(), b"\n",
                     *blobs])  # fmt: skip


def read_blob_envelope(payload: bytes) -> tuple[dict[str, Any], list[bytes]]:
    """(the request's fields, the sector proofs) of a :func:`blob_envelope` payload."""
    start = len(BLOB_ENVELOPE)
    end = payload.find(b"\n", start)
    if end < 0:
        raise BadInput("PoSt request: the envelope's header line is not terminated")
    doc = safejson.loads(payload[start:end], "PoSt request header", bytes32=True)
    if not isinstance(doc, dict):
        raise BadInput("PoSt request: the envelope's header must be a JSON object")
    sizes = doc.pop("vanilla_proof_sizes", None)
    if not isinstance(sizes, list) or not sizes:
        raise BadInput("PoSt request: vanilla_proof_sizes must be a non-empty array")
    if not all(type(n) is int and n >= 0 for n in sizes):
        raise BadInput("PoSt request: vanilla_proof_sizes must hold byte counts")
    if "vanilla_proofs" in doc or "vanilla_proof_blobs" in doc:
        raise BadInput("PoSt request: the envelope's header also holds sector proofs")
    body = end + 1
    if body + sum(sizes) != len(payload):
        raise BadInput(
            f"PoSt request: the sector proofs' sizes add up to {sum(sizes)} bytes, the "
            f"envelope holds {len(payload) - body} after its header"
        )
    raws = []
    for n in sizes:
        raws.append(payload[body : body + n])
        body += n
    return doc, raws


def _read_blobs(blobs: Any, params: PoStParams) -> list[SectorVanilla]:
    """The sector proofs of the older JSON envelope: base64 of each proof as the client sent
    it (then as :func:`_read_raw_blobs`)."""
    if not isinstance(blobs, list) or not blobs:
        raise BadInput("PoSt request: vanilla_proof_blobs must be a non-empty array")
    raws = []
    for k, blob in enumerate(blobs):
        try:
            raw = base64.b64decode(blob, validate=True) if isinstance(blob, str) else None
        except (binascii.Error, ValueError):
            raw = None
        if raw is None:
            raise BadInput(f"PoSt request: vanilla_proofs[{k}] is not base64 text")
        raws.append(raw)
    return _read_raw_blobs(raws, params)


def _read_raw_blobs(raws: list[bytes], params: PoStParams) -> list[SectorVanilla]:
    """Sector proofs as the client sent them, serde JSON or bincode. Bincode in the tree's
    layout is read in bulk (:mod:`.post_bincode`); otherwise each proof the general way, 32-byte
    values as bytes."""
    bulk = post_bincode.read_sector_proofs(raws, params.tree)
    if bulk is not None:
        return check_hashes([SectorVanilla(sid, proof) for sid, proof in bulk], params)
    docs = [read_sector_proof(raw, f"vanilla_proofs[{k}]", raw32=True)
            for k, raw in enumerate(raws)]  # fmt: skip
    return read_sectors(docs, params)


def open_statement(circuit_id: str, payload: bytes) -> Statement:
    """The engine's entry point: a PoSt request for ``circuit_id``, checked whole (one
    partition, whose public inputs the request fixes)."""
    vanilla_id, circuit, inputs = read_request(payload)
    if vanilla_id != circuit_id:
        raise BadInput(f"the PoSt request is for {vanilla_id}, not {circuit_id}")
    digest = payload_digest(circuit_id, (), payload)
    return Statement(circuit_id, 1, Built((circuit,)), digest, (tuple(inputs),))


def random_request(
    params: PoStParams, rng: np.random.Generator, sectors: int | None = None, partition: int = 0
) -> tuple[str, list[SectorVanilla]]:
    """A checked PoSt request for random sectors (``cuzk gen-vanilla``, tests, demos):
    WinningPoSt one sector, WindowPoSt ``sectors`` (default: a full partition) of partition
    ``partition``, with random randomness and prover id. Returns (request JSON, vanilla)."""
    from cuzk.circuits.filecoin.vanilla import random_sector

    if params.kind == "winning":
        count = 1
        if sectors not in (None, 1) or partition:
            raise BadInput("WinningPoSt proves one sector in one partition")
    else:
        count = params.sector_count if sectors is None else sectors
        if not 0 < count <= params.sector_count:
            raise BadInput(
                f"a {params.circuit_id} partition holds 1 … {params.sector_count} sectors"
            )
    randomness, prover_id = (fr.to_int(x) for x in fr.random(2, rng))
    randomness &= (1 << 254) - 1  # chain randomness as Lotus hands it over: top two bits clear
    first = partition * params.sector_count
    chosen = [random_sector(params, first + i, rng) for i in range(count)]
    vanilla = generate(params, chosen, randomness, partition)
    text = request_json(params, vanilla, randomness, prover_id, partition)
    read_request(text)  # everything handed out must read back and check
    return text, vanilla
