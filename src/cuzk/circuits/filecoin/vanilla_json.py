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

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuzk.circuits.filecoin.post import FallbackPoStCircuit, PoStParams, SectorProof, pad_sectors
from cuzk.circuits.filecoin.vanilla import (
    PublicSector,
    RandomSector,
    leaf_challenge,
    public_inputs,
    sector_challenges,
    sector_proof,
)
from cuzk.errors import BadInput
from cuzk.field.constants import R
from cuzk.gadgets.merkle import MerklePath, TreeShape
from cuzk.gadgets.poseidon.native import hash_one


@dataclass(frozen=True)
class SectorVanilla:
    """One ``FallbackPoStSectorProof``: a sector's id and its proof (comm_r included)."""

    sector_id: int  # u64
    proof: SectorProof  # challenged leaves of this sector, in challenge order


def _enc(x: int) -> list[int]:
    return list(int(x).to_bytes(32, "little"))


def _dec(v: Any, what: str) -> int:
    if not (isinstance(v, list) and len(v) == 32 and all(type(b) is int and 0 <= b < 256
                                                         for b in v)):  # fmt: skip
        raise BadInput(f"{what}: expected 32 bytes as integers")
    x = int.from_bytes(bytes(v), "little")
    if x >= R:
        raise BadInput(f"{what}: not a canonical field element")
    return x


def _path_json(siblings: Sequence[Sequence[int]], positions: Sequence[int]) -> dict[str, Any]:
    return {
        "path": [
            {"hashes": [_enc(h) for h in s], "index": p}
            for s, p in zip(siblings, positions, strict=True)
        ]
    }


def merkle_proof_json(mp: MerklePath, t: TreeShape) -> dict[str, Any]:
    """A MerkleProof in upstream's serde layout (Single, Sub or Top by the tree's shape); every
    family's vanilla proofs (PoSt, PoRep C1, SnapDeals) write their paths with it."""
    nb = t.base_levels
    base = _path_json(mp.siblings[:nb], mp.positions[:nb])
    root, leaf = _enc(mp.root), _enc(mp.leaf)
    if not t.sub_arity:
        return {"data": {"Single": {"root": root, "leaf": leaf, "path": base}}}
    sub = _path_json(mp.siblings[nb : nb + 1], mp.positions[nb : nb + 1])
    if not t.top_arity:
        return {"data": {"Sub": {"base_proof": base, "sub_proof": sub, "root": root, "leaf": leaf}}}
    top = _path_json(mp.siblings[nb + 1 :], mp.positions[nb + 1 :])
    return {"data": {"Top": {"base_proof": base, "sub_proof": sub, "top_proof": top,
                             "root": root, "leaf": leaf}}}  # fmt: skip


def sector_vanilla_json(sv: SectorVanilla, params: PoStParams) -> dict[str, Any]:
    p = sv.proof
    return {
        "sector_id": sv.sector_id,
        "comm_r": _enc(p.comm_r),
        "vanilla_proof": {
            "sectors": [
                {
                    "inclusion_proofs": [
                        merkle_proof_json(m, params.tree) for m in p.inclusion_proofs
                    ],
                    "comm_c": _enc(p.comm_c),
                    "comm_r_last": _enc(p.comm_r_last),
                }
            ]
        },
    }


def dumps(sectors: Sequence[SectorVanilla], params: PoStParams) -> str:
    """A JSON array of ``FallbackPoStSectorProof`` objects."""
    return json.dumps([sector_vanilla_json(s, params) for s in sectors])


def _field(obj: Any, key: str, what: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise BadInput(f"{what}: missing {key!r}")
    return obj[key]


def _read_path(obj: Any, arity: int, levels: int, what: str) -> tuple[list[list[int]], list[int]]:
    elems = _field(obj, "path", what)
    if not isinstance(elems, list) or len(elems) != levels:
        raise BadInput(f"{what}: expected {levels} path levels")
    sibs, pos = [], []
    for k, e in enumerate(elems):
        hashes = _field(e, "hashes", f"{what} level {k}")
        index = _field(e, "index", f"{what} level {k}")
        if not isinstance(hashes, list) or len(hashes) != arity - 1:
            raise BadInput(f"{what} level {k}: arity {arity} needs {arity - 1} sibling hashes")
        if type(index) is not int or not 0 <= index < arity:
            raise BadInput(f"{what} level {k}: index {index!r} out of range")
        sibs.append([_dec(h, f"{what} level {k} hash {j}") for j, h in enumerate(hashes)])
        pos.append(index)
    return sibs, pos


def read_merkle_proof(obj: Any, params: PoStParams, what: str) -> MerklePath:
    """Parse and verify one inclusion proof (its path must hash to its root)."""
    t = params.tree
    data = _field(obj, "data", what)
    kind = "Top" if t.top_arity else "Sub" if t.sub_arity else "Single"
    body = _field(data, kind, f"{what} (a {kind} proof for this tree)")
    leaf = _dec(_field(body, "leaf", what), f"{what} leaf")
    root = _dec(_field(body, "root", what), f"{what} root")
    if kind == "Single":
        sibs, pos = _read_path(_field(body, "path", what), t.base_arity, t.base_levels, what)
    else:
        sibs, pos = _read_path(_field(body, "base_proof", what), t.base_arity, t.base_levels,
                               f"{what} base")  # fmt: skip
        s, p = _read_path(_field(body, "sub_proof", what), t.sub_arity, 1, f"{what} sub")
        sibs, pos = sibs + s, pos + p
        if kind == "Top":
            s, p = _read_path(_field(body, "top_proof", what), t.top_arity, 1, f"{what} top")
            sibs, pos = sibs + s, pos + p
    mp = MerklePath(leaf, sibs, pos, root)
    if path_root(mp) != root:
        raise BadInput(f"{what}: inclusion path does not hash to its root")
    return mp


def path_root(mp: MerklePath) -> int:
    """The root an inclusion path hashes to (Poseidon, Merkle tags by arity)."""
    cur = mp.leaf
    for sibs, p in zip(mp.siblings, mp.positions, strict=True):
        cur = hash_one([*sibs[:p], cur, *sibs[p:]])
    return cur


def leaf_index(mp: MerklePath, params: PoStParams) -> int:
    """The challenged leaf an inclusion path proves (positions read as mixed-radix digits)."""
    index, scale = 0, 1
    for p, a in zip(mp.positions, params.tree.arities, strict=True):
        index += p * scale
        scale *= a
    return index


def loads(text: str | bytes, params: PoStParams) -> list[SectorVanilla]:
    """Parse and check a JSON array of ``FallbackPoStSectorProof`` (or one object).

    Raises:
        BadInput: malformed JSON or any inconsistency, with where and why.
    """
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BadInput(f"vanilla proofs: not valid JSON ({e})") from e
    items = doc if isinstance(doc, list) else [doc]
    if not items:
        raise BadInput("vanilla proofs: empty list")
    out = []
    for i, item in enumerate(items):
        what = f"sector proof {i}"
        sid = _field(item, "sector_id", what)
        if type(sid) is not int or not 0 <= sid < 1 << 64:
            raise BadInput(f"{what}: sector_id must be a u64")
        comm_r = _dec(_field(item, "comm_r", what), f"{what} comm_r")
        sectors = _field(_field(item, "vanilla_proof", what), "sectors", what)
        if not isinstance(sectors, list) or len(sectors) != 1:
            raise BadInput(f"{what}: expected exactly one sector in vanilla_proof")
        s = sectors[0]
        comm_c = _dec(_field(s, "comm_c", what), f"{what} comm_c")
        comm_r_last = _dec(_field(s, "comm_r_last", what), f"{what} comm_r_last")
        if hash_one([comm_c, comm_r_last]) != comm_r:
            raise BadInput(f"{what}: comm_r is not Poseidon(comm_c, comm_r_last)")
        incl = _field(s, "inclusion_proofs", what)
        if not isinstance(incl, list) or not incl:
            raise BadInput(f"{what}: no inclusion proofs")
        paths = []
        for j, m in enumerate(incl):
            mp = read_merkle_proof(m, params, f"{what} challenge {j}")
            if mp.root != comm_r_last:
                raise BadInput(f"{what} challenge {j}: root differs from comm_r_last")
            paths.append(mp)
        out.append(SectorVanilla(sid, SectorProof(comm_r, comm_c, comm_r_last, tuple(paths))))
    return out


def generate(
    params: PoStParams, sectors: Sequence[RandomSector], randomness: int, partition: int = 0
) -> list[SectorVanilla]:
    """What filecoin-proofs' ``generate_single_vanilla_proof`` returns per sector, with the
    challenges of ``generate_fallback_sector_challenges`` (WinningPoSt: one sector, its 66
    challenges; WindowPoSt: the partition's sectors, 10 each)."""
    if params.kind == "winning":
        if len(sectors) != 1:
            raise BadInput("WinningPoSt proves exactly one sector")
        s = sectors[0]
        ch = [
            leaf_challenge(params, randomness, s.sector_id, n) for n in range(params.sector_count)
        ]
        return [SectorVanilla(s.sector_id, sector_proof(params, s, ch))]
    first = partition * params.sector_count
    return [
        SectorVanilla(
            s.sector_id,
            sector_proof(params, s, sector_challenges(params, randomness, s.sector_id, first + i)),
        )
        for i, s in enumerate(sectors)
    ]


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
    for j, (m, leaf) in enumerate(zip(got, want, strict=True)):
        if leaf_index(m, params) != leaf:
            raise BadInput(f"sector proof {i} challenge {j}: proves leaf "
                           f"{leaf_index(m, params)}, the challenge is leaf {leaf}")  # fmt: skip


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
    return json.dumps({
        "registered_proof": registered_proof(params),
        "circuit": params.circuit_id,
        "randomness": _enc(randomness),
        "prover_id": _enc(prover_id),
        "partition": partition,
        "vanilla_proofs": [sector_vanilla_json(s, params) for s in vanilla],
    })  # fmt: skip


def read_request(text: str | bytes) -> tuple[str, FallbackPoStCircuit, list[int]]:
    """(circuit id, circuit with its witness, public inputs without ONE) from a request file
    written by :func:`request_json`; every check of :func:`loads` and
    :func:`partition_circuit` applies.

    Raises:
        BadInput: malformed or inconsistent request.
    """
    from cuzk.circuits.filecoin.post import post_params

    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BadInput(f"PoSt request: not valid JSON ({e})") from e
    cid = _field(doc, "circuit", "PoSt request")
    if not isinstance(cid, str):
        raise BadInput("PoSt request: circuit must be a string")
    params = post_params(cid)
    partition = _field(doc, "partition", "PoSt request")
    if type(partition) is not int or partition < 0:
        raise BadInput("PoSt request: partition must be a non-negative integer")
    randomness = _dec(_field(doc, "randomness", "PoSt request"), "randomness")
    _dec(_field(doc, "prover_id", "PoSt request"), "prover_id")
    vanilla = loads(json.dumps(_field(doc, "vanilla_proofs", "PoSt request")), params)
    circuit, inputs = partition_circuit(params, vanilla, randomness, partition)
    return cid, circuit, inputs


def random_request(
    params: PoStParams, rng: np.random.Generator, sectors: int | None = None, partition: int = 0
) -> tuple[str, list[SectorVanilla]]:
    """A checked PoSt request for random sectors (``cuzk gen-vanilla``, tests, demos):
    WinningPoSt one sector, WindowPoSt ``sectors`` (default: a full partition) of partition
    ``partition``, with random randomness and prover id. Returns (request JSON, vanilla)."""
    from cuzk.circuits.filecoin.vanilla import random_sector
    from cuzk.field import fr

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
    first = partition * params.sector_count
    chosen = [random_sector(params, first + i, rng) for i in range(count)]
    vanilla = generate(params, chosen, randomness, partition)
    text = request_json(params, vanilla, randomness, prover_id, partition)
    read_request(text)  # everything handed out must read back and check
    return text, vanilla
