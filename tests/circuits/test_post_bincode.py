"""The bulk reader of a PoSt partition's bincode sector proofs: the same sectors as the general
reader for every tree kind, and anything outside the layout handed back to the general reader
(which then names what is wrong) instead of being read differently."""

from __future__ import annotations

import json

import pytest

from cuzk.circuits.filecoin.post import post_params
from cuzk.circuits.filecoin.post_bincode import layout, read_sector_proofs
from cuzk.circuits.filecoin.post_params import PoStParams
from cuzk.circuits.filecoin.vanilla import random_sector
from cuzk.circuits.filecoin.vanilla_bincode import read_sector_proof
from cuzk.circuits.filecoin.vanilla_json import generate, read_sectors, sector_vanilla_json
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.gadgets.merkle import TreeShape

from .test_vanilla_bincode import _docs, encode

TREES = [TreeShape(64, 8), TreeShape(256, 8, 4), TreeShape(512, 8, 4, 2)]


def _general(raws: list[bytes], params: PoStParams):
    docs = [
        read_sector_proof(raw, f"vanilla_proofs[{k}]", raw32=True) for k, raw in enumerate(raws)
    ]
    return read_sectors(docs, params)


@pytest.mark.parametrize("tree", TREES)
def test_bulk_reads_the_same_sectors_as_the_general_reader(tree, rng):
    params = PoStParams("window", tree.leaves * 32, tree, 3, 3, "1.2.0")
    raws = [encode(doc) for doc in _docs(params, rng, sectors=3)]
    bulk = read_sector_proofs(raws, tree)
    assert bulk is not None and len(bulk) == 3
    general = _general(raws, params)
    assert [(sv.sector_id, sv.proof) for sv in general] == bulk
    assert all(len(p.inclusion_proofs) == 3 for _, p in bulk)
    assert layout(tree).size == len(encode_merkle_of(raws[0], tree))


def encode_merkle_of(raw: bytes, tree: TreeShape) -> bytes:
    """The first Merkle proof's bytes, found from the header (one proof's share of the body)."""
    n = int.from_bytes(raw[48:56], "little")
    return raw[56 : 56 + (len(raw) - 56 - 64) // n]


def test_a_brace_first_byte_is_still_read_in_bulk(rng):
    params = post_params("winning-2k")
    sector = random_sector(params, 256 * int(rng.integers(1 << 30)) + ord("{"), rng)
    raw = encode(sector_vanilla_json(generate(params, [sector], 3)[0], params))
    assert raw[:1] == b"{"
    general = [(sv.sector_id, sv.proof) for sv in _general([raw], params)]
    assert read_sector_proofs([raw], params.tree) == general


def test_anything_outside_the_layout_goes_to_the_general_reader(rng):
    params = post_params("winning-2k")
    doc = _docs(params, rng)[0]
    good = encode(doc)
    lay = layout(params.tree)
    sib = 56 + lay.siblings[0][0]  # the first sibling of the first path
    not_canonical = bytearray(good)
    not_canonical[sib : sib + 32] = R.to_bytes(32, "little")
    bad_index = bytearray(good)
    off = 56 + lay.positions[0][0]
    bad_index[off : off + 8] = (8).to_bytes(8, "little")
    bad_variant = bytearray(good)
    bad_variant[56:60] = (1).to_bytes(4, "little")
    cases = {
        "JSON text": json.dumps(doc).encode(),
        "truncated": good[:-1],
        "left over": good + b"\0",
        "a value of r": bytes(not_canonical),
        "an index out of range": bytes(bad_index),
        "another Merkle variant": bytes(bad_variant),
        "two sectors in one proof": good[:40] + (2).to_bytes(8, "little") + good[48:],
    }
    for what, raw in cases.items():
        assert read_sector_proofs([good, raw], params.tree) is None, what
    # the general reader reads the JSON one and refuses the others, naming why
    assert _general([good, cases["JSON text"]], params)[1].sector_id == doc["sector_id"]
    for what in ("a value of r", "an index out of range", "another Merkle variant"):
        with pytest.raises(BadInput, match=r"vanilla_proofs\[1\]|sector proof 1"):
            _general([good, cases[what]], params)


def test_a_wrong_hash_is_still_refused(rng):
    """The bulk reader checks layout, not hashes: the caller's hash check refuses a changed
    sibling that is still a field element."""
    from cuzk.circuits.filecoin.vanilla_json import SectorVanilla, check_hashes

    params = post_params("winning-2k")
    good = encode(_docs(params, rng)[0])
    lay = layout(params.tree)
    sib = 56 + lay.siblings[0][0]
    changed = bytearray(good)
    changed[sib : sib + 32] = fr.to_int(fr.random(1, rng)[0]).to_bytes(32, "little")
    ((sid, proof),) = read_sector_proofs([bytes(changed)], params.tree)
    with pytest.raises(BadInput, match="does not hash to its root"):
        check_hashes([SectorVanilla(sid, proof)], params)
