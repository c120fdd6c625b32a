"""Curio's golden 32 GiB WindowPoSt vanilla proof against the wpost-32g circuit.

filecoin-project/curio (commit e0294b0f948132d41e8f42f59fa949495d5fd3af) keeps, in
``lib/proof/testgolden/``, a real ``FallbackPoStSectorProof`` in bincode (``post.vproof``, here
tests/circuits/fixtures/curio-wpost-32g.vproof, 24,960 bytes) and its public statement
(``postpub.json``, here tests/data/curio/): randomness 0^32, StackedDrgWindow32GiBV1 (Go abi 8),
sector 1 of miner 1000, its comm_r as a CID. The proof must parse, prove exactly the leaves that
randomness challenges (derived here from the SHA-256 rule, independently of cuzk's code, and as
listed in ``post.vproof.decoded.json``), and satisfy one sector block of the wpost-32g circuit
(the whole partition is 2,349 such blocks, 125M constraints: one is checked, ~50k).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from cuzk.circuits.filecoin.post_params import API_V1_0, window_params
from cuzk.circuits.filecoin.vanilla_bincode import sector_proof_from_bincode
from cuzk.circuits.filecoin.vanilla_json import loads, partition_circuit
from cuzk.errors import BadInput
from cuzk.r1cs.system import CheckCS

VPROOF = Path(__file__).parent / "fixtures" / "curio-wpost-32g.vproof"
DATA = Path(__file__).parents[1] / "data" / "curio"
VPROOF_SHA256 = "3c906a399450aba007683a8a974604ffef5297a25c51731eb7832e26340c41e9"
LEAVES = 1 << 30  # 32 GiB / 32-byte nodes
PARAMS = window_params(32 << 30, API_V1_0)  # abi 8 is the V1 WindowPoSt proof


def _public() -> dict:
    return json.loads((DATA / "postpub.json").read_text())


def _comm_r_from_cid(cid: str) -> int:
    """comm_r from a sealed-sector CID: multibase 'b' (base32), CIDv1, codec
    fil-commitment-sealed (0xf102), multihash poseidon-bls12_381-a2-fc1 (0xb401), 32 bytes."""
    assert cid[0] == "b"
    body = cid[1:].upper()
    raw = base64.b32decode(body + "=" * (-len(body) % 8))
    assert raw[:8] == bytes.fromhex("0182e20381e80220")
    return int.from_bytes(raw[8:], "little")


def _challenged_leaves(randomness: bytes, sector: int) -> list[int]:
    """SHA-256(randomness ‖ sector u64 LE ‖ n u64 LE), first 8 bytes LE, mod the leaf count,
    n = 0..9 (the first sector of partition 0 under every api version)."""
    return [int.from_bytes(hashlib.sha256(randomness + sector.to_bytes(8, "little")
                                          + n.to_bytes(8, "little")).digest()[:8], "little")
            % LEAVES for n in range(10)]  # fmt: skip


def _vanilla():
    raw = VPROOF.read_bytes()
    (sv,) = loads(json.dumps(sector_proof_from_bincode(raw, "curio")), PARAMS)
    return sv


def test_the_fixture_is_curios_file():
    assert hashlib.sha256(VPROOF.read_bytes()).hexdigest() == VPROOF_SHA256
    pub = _public()
    assert pub["Proofs"][0]["PoStProof"] == 8 and pub["Prover"] == 1000
    assert base64.b64decode(pub["Randomness"]) == bytes(32)


def test_curio_vproof_parses_and_matches_its_statement():
    pub = _public()
    (sector,) = pub["ChallengedSectors"]
    sv = _vanilla()
    assert sv.sector_id == sector["SectorNumber"] == 1
    assert sv.proof.comm_r == _comm_r_from_cid(sector["SealedCID"]["/"])
    leaves = _challenged_leaves(base64.b64decode(pub["Randomness"]), sv.sector_id)
    decoded = json.loads((DATA / "post.vproof.decoded.json").read_text())
    assert [p["leaf_index"] for p in decoded["sectors"][0]["inclusion_proofs"]] == leaves
    assert decoded["comm_r_hex"] == sv.proof.comm_r.to_bytes(32, "little").hex()

    circuit, inputs = partition_circuit(PARAMS, [sv], randomness=0)
    assert circuit.block_count() == PARAMS.sector_count == 2349
    assert inputs[:11] == [sv.proof.comm_r, *leaves]
    assert inputs == inputs[:11] * PARAMS.sector_count  # the one sector, repeated


def test_one_sector_block_satisfies_the_wpost_32g_circuit():
    sv = _vanilla()
    circuit, inputs = partition_circuit(PARAMS, [sv], randomness=0)
    cs = CheckCS()
    circuit.view([0]).synthesize(cs)
    assert cs.is_satisfied(), cs.first_failure
    assert cs.num_constraints > 50_000
    assert cs.inputs == [1, *inputs[:11]]


def _unsatisfied(sector) -> tuple[int, str] | None:
    circuit, _ = partition_circuit(PARAMS, [_vanilla()], randomness=0)
    cs = CheckCS()
    dataclasses.replace(circuit.view([0]), sectors=(sector,)).synthesize(cs)
    return cs.first_failure


@pytest.mark.parametrize("field", ["comm_c", "leaf", "sibling"])
def test_a_tampered_witness_does_not_satisfy_the_block(field, rng):
    p = _vanilla().proof
    j = int(rng.integers(len(p.inclusion_proofs)))
    mp = p.inclusion_proofs[j]
    if field == "comm_c":
        bad = dataclasses.replace(p, comm_c=p.comm_c + 1)
        where = "enforce_comm_c_comm_r_last_hash_comm_r"
    else:
        if field == "leaf":
            mp = dataclasses.replace(mp, leaf=mp.leaf + 1)
        else:
            level = [list(s) for s in mp.siblings]
            level[0][0] += 1
            mp = dataclasses.replace(mp, siblings=level)
        paths = list(p.inclusion_proofs)
        paths[j] = mp
        bad = dataclasses.replace(p, inclusion_proofs=tuple(paths))
        where = f"challenge_inclusion_{j}"
    failure = _unsatisfied(bad)
    assert failure is not None and where in failure[1]


def test_tampered_bytes_and_wrong_statements_are_refused(rng):
    raw = bytearray(VPROOF.read_bytes())
    # a byte inside the first inclusion proof's first sibling hash (after sector_id, comm_r,
    # two sequence lengths, the Merkle proof variant and two more lengths)
    raw[76 + int(rng.integers(31))] ^= 1 << int(rng.integers(8))
    with pytest.raises(BadInput):
        loads(json.dumps(sector_proof_from_bincode(bytes(raw), "curio")), PARAMS)
    sv = _vanilla()
    with pytest.raises(BadInput, match="the challenge is leaf"):
        partition_circuit(PARAMS, [sv], randomness=1)
    with pytest.raises(BadInput, match="the challenge is leaf"):
        partition_circuit(PARAMS, [dataclasses.replace(sv, sector_id=2)], randomness=0)
