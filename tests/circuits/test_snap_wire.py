"""SnapDeals as Curio sends it: one bincode ``PartitionProof`` per partition (decoded to exactly
the serde tree, checked against an independent encoder written here from the bincode rules) and
the three commitments raw or as binary CIDs, assembled into the document the SnapDeals reader
checks; the statement it opens equals the one the JSON request of the same update opens, and
hostile or mismatched parts are refused with a reason naming the field."""

from __future__ import annotations

import json

import pytest

from cuzk.circuits.catalogue import payload_from_parts
from cuzk.circuits.filecoin.bincode_write import snap_partition_proof
from cuzk.circuits.filecoin.post_params import KIB
from cuzk.circuits.filecoin.snap_vanilla import generate_update, open_statement
from cuzk.circuits.filecoin.vanilla_bincode import (
    partition_proof_from_bincode,
    read_partition_proof,
)
from cuzk.circuits.filecoin.wire import ClientParts, commitment
from cuzk.errors import BadInput
from cuzk.r1cs import check_circuit

from .test_vanilla_bincode import encode_merkle

# go-fil-commcid binary CID prefixes, spelled out from the multicodec table: version 1, codec
# (varint), multihash code (varint), digest length 32.
SEALED = bytes([0x01, 0x82, 0xE2, 0x03, 0x81, 0xE8, 0x02, 0x20])  # 0xf102, poseidon 0xb401
UNSEALED = bytes([0x01, 0x81, 0xE2, 0x03, 0x92, 0x20, 0x20])  # 0xf101, sha2-trunc254 0x1012


def encode_partition(doc: dict) -> bytes:
    """An independent bincode encoder of a PartitionProof's serde layout."""
    out = bytes(doc["comm_c"]) + len(doc["apex_leafs"]).to_bytes(8, "little")
    out += b"".join(bytes(a) for a in doc["apex_leafs"])
    out += len(doc["challenge_proofs"]).to_bytes(8, "little")
    for c in doc["challenge_proofs"]:
        out += b"".join(encode_merkle(c[k]) for k in ("proof_r_old", "proof_d_new", "proof_r_new"))
    return out


@pytest.fixture(scope="module")
def update_2k() -> dict:
    return json.loads(generate_update(2 * KIB, 20250117))


def _parts(doc: dict, **change: object) -> ClientParts:
    fields: dict = {
        "vanilla_proofs": tuple(encode_partition(p) for p in doc["partition_proofs"]),
        "comm_r_old": bytes(doc["comm_r_old"]),
        "comm_d_new": bytes(doc["comm_d_new"]),
        "comm_r_new": bytes(doc["comm_r_new"]),
    }
    return ClientParts(**{**fields, **change})


def test_bincode_partition_proof_is_the_serde_tree(update_2k) -> None:
    for part in update_2k["partition_proofs"]:
        raw = encode_partition(part)
        assert snap_partition_proof(part) == raw  # the project's writer agrees
        assert partition_proof_from_bincode(raw, "p") == part
        assert read_partition_proof(raw, "p") == part
        assert read_partition_proof(json.dumps(part).encode(), "p") == part


@pytest.mark.parametrize("cids", [False, True])
def test_curio_parts_open_the_same_statement_as_the_json_request(update_2k, cids) -> None:
    doc = update_2k
    change = {}
    if cids:  # what Curio's ProveUpdateCuzk sends: cid.Bytes()
        change = {"comm_r_old": SEALED + bytes(doc["comm_r_old"]),
                  "comm_d_new": UNSEALED + bytes(doc["comm_d_new"]),
                  "comm_r_new": SEALED + bytes(doc["comm_r_new"])}  # fmt: skip
    payload = payload_from_parts("snap-2k", _parts(doc, **change))
    got = open_statement("snap-2k", payload)
    want = open_statement("snap-2k", json.dumps(doc).encode())
    assert got.partitions == want.partitions == 1
    assert got.expected(0) == want.expected(0)
    assert json.loads(payload)["h"] == doc["h"]  # filecoin-proofs' default h for 2 KiB


@pytest.mark.slow
def test_curio_parts_satisfy_the_circuit(update_2k) -> None:
    st = open_statement("snap-2k", payload_from_parts("snap-2k", _parts(update_2k)))
    cs = check_circuit(st.circuit(0))
    assert cs.first_failure is None and tuple(cs.inputs[1:]) == st.expected(0)


def test_commitment_forms() -> None:
    digest = bytes(range(32))
    assert commitment(digest, "c", sealed=True) == digest
    assert commitment(SEALED + digest, "c", sealed=True) == digest
    assert commitment(UNSEALED + digest, "c", sealed=False) == digest
    with pytest.raises(BadInput, match="comm_d_new: expected .* unsealed-sector CID"):
        commitment(SEALED + digest, "comm_d_new", sealed=False)
    with pytest.raises(BadInput, match="comm_r_old: .*got 31 bytes"):
        commitment(digest[:31], "comm_r_old", sealed=True)
    with pytest.raises(BadInput, match="got 0 bytes"):
        commitment(b"", "comm_r_new", sealed=True)


def test_bad_parts_are_refused_with_the_field(update_2k) -> None:
    doc = update_2k
    good = encode_partition(doc["partition_proofs"][0])
    bumped = bytearray(doc["comm_r_new"])
    bumped[0] ^= 1
    huge = good[:32] + (1 << 62).to_bytes(8, "little") + good[40:]  # apex_leafs length
    cases = {
        "one PartitionProof per partition .1., got 2": {"vanilla_proofs": (good, good)},
        "got 0": {"vanilla_proofs": ()},
        "takes vanilla_proofs": {"vanilla_proof": b"{}"},
        r"vanilla_proofs\[0\]: truncated bincode": {"vanilla_proofs": (good[:-5],)},
        r"vanilla_proofs\[0\]: 1 bytes left over": {"vanilla_proofs": (good + b"\0",)},
        r"vanilla_proofs\[0\]: .*longer than the data": {"vanilla_proofs": (huge,)},
        r"vanilla_proofs\[0\]: neither JSON": {"vanilla_proofs": (b'{"comm_c": ',)},
        "comm_r_old: expected the 32-byte": {"comm_r_old": b""},
        "partition 0 challenge 0": {"comm_r_new": bytes(bumped)},  # challenges move
    }
    for reason, change in cases.items():
        with pytest.raises(BadInput, match=reason):
            payload = payload_from_parts("snap-2k", _parts(doc, **change))
            open_statement("snap-2k", payload)
