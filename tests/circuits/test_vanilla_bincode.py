"""filecoin-ffi's bincode PoSt vanilla proofs: decoded to exactly what serde's JSON parses to
(checked against an independent encoder written here from the bincode rules), for all three
Merkle proof shapes, and hostile bytes refused with a reason, never an exception of another kind
or a large allocation."""

from __future__ import annotations

import json

import pytest

from cuzk.circuits.filecoin.post import post_params
from cuzk.circuits.filecoin.post_params import PoStParams
from cuzk.circuits.filecoin.vanilla import random_sector
from cuzk.circuits.filecoin.vanilla_bincode import read_sector_proof, sector_proof_from_bincode
from cuzk.circuits.filecoin.vanilla_json import generate, loads, sector_vanilla_json
from cuzk.circuits.filecoin.wire import prover_id
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.gadgets.merkle import TreeShape


def _path(path: dict) -> bytes:
    out = len(path["path"]).to_bytes(8, "little")
    for e in path["path"]:
        out += len(e["hashes"]).to_bytes(8, "little") + b"".join(bytes(h) for h in e["hashes"])
        out += e["index"].to_bytes(8, "little")
    return out


def encode_merkle(m: dict) -> bytes:
    """An independent bincode encoder of a MerkleProof's serde layout."""
    ((kind, body),) = m["data"].items()
    out = ["Single", "Sub", "Top"].index(kind).to_bytes(4, "little")
    if kind == "Single":
        return out + bytes(body["root"]) + bytes(body["leaf"]) + _path(body["path"])
    for part in ("base_proof", "sub_proof", "top_proof")[: 2 if kind == "Sub" else 3]:
        out += _path(body[part])
    return out + bytes(body["root"]) + bytes(body["leaf"])


def encode(doc: dict) -> bytes:
    """An independent bincode encoder of a FallbackPoStSectorProof's serde layout."""
    out = doc["sector_id"].to_bytes(8, "little") + bytes(doc["comm_r"])
    sectors = doc["vanilla_proof"]["sectors"]
    out += len(sectors).to_bytes(8, "little")
    for s in sectors:
        out += len(s["inclusion_proofs"]).to_bytes(8, "little")
        out += b"".join(encode_merkle(m) for m in s["inclusion_proofs"])
        out += bytes(s["comm_c"]) + bytes(s["comm_r_last"])
    return out


def _docs(params: PoStParams, rng, sectors: int = 1) -> list[dict]:
    chosen = [random_sector(params, int(rng.integers(1 << 62)), rng) for _ in range(sectors)]
    randomness = fr.to_int(fr.random(1, rng)[0])
    return [sector_vanilla_json(s, params) for s in generate(params, chosen, randomness)]


@pytest.mark.parametrize("tree", [TreeShape(64, 8), TreeShape(256, 8, 4), TreeShape(512, 8, 4, 2)])
def test_bincode_decodes_to_the_json_dict_for_every_tree_kind(tree, rng):
    params = PoStParams("window", tree.leaves * 32, tree, 2, 3, "1.2.0")
    for doc in _docs(params, rng, sectors=2):
        raw = encode(doc)
        assert sector_proof_from_bincode(raw, "proof") == doc
        assert read_sector_proof(raw, "proof") == doc
        assert read_sector_proof(json.dumps(doc).encode(), "proof") == doc
        loads(json.dumps(read_sector_proof(raw, "proof")), params)  # and it checks


def test_bincode_starting_with_a_brace_is_still_bincode(rng):
    params = post_params("winning-2k")
    sector = random_sector(params, 256 * int(rng.integers(1 << 30)) + ord("{"), rng)
    doc = sector_vanilla_json(generate(params, [sector], 3)[0], params)
    raw = encode(doc)
    assert raw[:1] == b"{" and read_sector_proof(raw, "proof") == doc


def test_hostile_bincode_is_refused_with_a_reason(rng):
    doc = _docs(post_params("winning-2k"), rng)[0]
    good = encode(doc)
    huge = good[:40] + (1 << 62).to_bytes(8, "little") + good[48:]  # a sequence length
    bad_variant = bytearray(good)
    bad_variant[56:60] = (7).to_bytes(4, "little")  # the first Merkle proof's variant
    cases = {
        good[: len(good) // 2]: "truncated bincode",
        good + b"\0": "left over",
        huge: "longer than the data",
        bytes(bad_variant): "unknown Merkle proof variant 7",
        b'{"sector_id": ': "neither JSON",
        b"{}"[:1]: "neither JSON",
        b"[1, 2]": "truncated bincode",
    }
    for raw, reason in cases.items():
        with pytest.raises(BadInput, match=reason):
            read_sector_proof(raw, "vanilla_proofs[3]")


def test_prover_id_is_the_id_address_payload():
    # f01000's address payload is the uvarint of 1000: e8 07 (Filecoin address spec).
    assert prover_id(1000) == int.from_bytes(bytes([0xE8, 0x07]), "little")
    assert prover_id(0) == 0 and prover_id(127) == 127
    assert prover_id(128) == int.from_bytes(bytes([0x80, 0x01]), "little")
