"""The small-sector sealer and its C1 output: upstream known answers (parent graph digests,
label vectors, empty comm_d, porep ids) and an independent verifier of the C1 JSON written
with hashlib and the textbook Poseidon, mirroring storage-proofs-porep ``Proof::verify``."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np
import pytest

from cuzk.circuits.filecoin.merkle_json import leaf_index, path_root, read_merkle_proof
from cuzk.circuits.filecoin.post_params import PoStParams
from cuzk.circuits.filecoin.seal import (
    by_name,
    c1_json,
    commit_phase1,
    generate_c1,
    proof_graph,
    seal_proof,
    seal_sector,
)
from cuzk.circuits.filecoin.seal.graph import build_graph
from cuzk.circuits.filecoin.seal.sdr import label_layers, tree_d
from cuzk.errors import BadInput
from cuzk.field.constants import R
from cuzk.gadgets.merkle import TreeShape
from cuzk.gadgets.poseidon.native import hash_reference
from cuzk.gadgets.sha256.node import node_hash

KIB, MIB = 1 << 10, 1 << 20

# storage-proofs-porep/parent_cache.json (rust-fil-proofs): SHA-256 of the parent-cache file
# (14 u32 LE parents per node) keyed by the cache file stem, per registered proof's graph.
PARENT_CACHE = {
    (2 * KIB, "1.0.0"): ("v28-sdr-parent-3f0eef38bb48af1f48ad65e14eb85b4ebfc167cec18cd81764f6d998836c9899",  # noqa: E501
                         "3da49221e2ed55371b86d0bf3d6526fcf128af61bed904f966428db1b531750d"),
    (2 * KIB, "1.1.0"): ("v28-sdr-parent-494d91dc80f2df5272c4b9e129bc7ade9405225993af9fe34e6542a39a47554b",  # noqa: E501
                         "840057702eea7652cf97e04306c30fe57174714d90de156a25eddd6075c25b97"),
    (8 * MIB, "1.0.0"): ("v28-sdr-parent-dcdabb0fbe4364bf0ac28b6a18c66de246409fa1a9020a00f33fb3e3053da6dc",  # noqa: E501
                         "a76604f2f59f2744c7151653bbb1d8596b6b57d295e6fa6c1f0c41d725b502ce"),
    (8 * MIB, "1.1.0"): ("v28-sdr-parent-5eed212119fd91aa6220a27f31a8966444a9381842bceb3a1ea61525bd47a5b5",  # noqa: E501
                         "03cd13565ded97c240a5f52e54295ad127bd0461b57904cb3a4d79b097bbecab"),
}  # fmt: skip


def _trim(d: bytes) -> bytes:
    return d[:31] + bytes([d[31] & 0x3F])


# -- known answers ---------------------------------------------------------------------------


@pytest.mark.parametrize("api", ["1.0.0", "1.1.0"])
def test_parent_graph_matches_upstream_cache_digest_2k(api):
    stem, digest = PARENT_CACHE[(2 * KIB, api)]
    g = proof_graph(seal_proof(2 * KIB, api))
    assert g.cache_id() == stem  # porep_id → Feistel keys, graph identifier
    assert g.cache_digest() == digest  # every DRG and expander parent of every node


@pytest.mark.heavy
@pytest.mark.parametrize("api", ["1.0.0", "1.1.0"])
def test_parent_graph_matches_upstream_cache_digest_8m(api):
    stem, digest = PARENT_CACHE[(8 * MIB, api)]
    g = proof_graph(seal_proof(8 * MIB, api))
    assert (g.cache_id(), g.cache_digest()) == (stem, digest)


# storage-proofs-porep/src/stacked/vanilla/create_label/multi.rs, test_create_labels: the last
# label of layer 11 for replica_id [9; 32]; "sector_size" 2048 / 4096 bytes (64 / 128 nodes).
@pytest.mark.parametrize(
    "size,porep_id,api,limbs",
    [
        (2048, bytes(32), "1.0.0",
         [0xD3FAA96B9A0FBA04, 0xEA81A283D106485E, 0xE3D51B9AFA5AC2B3, 0x0462F4F4F1A68D37]),
        (4096, bytes(32), "1.0.0",
         [0x7E191E52C4A8DA86, 0x5AE8A1C9E6FAC148, 0xCE239F3B88A894B8, 0x234C00D1DC1D53BE]),
        (2048, bytes([123]) * 32, "1.1.0",
         [0xABB3F38BB70DEFCF, 0x777A2E4D7769119F, 0x3448959D495490BC, 0x06021188C7A71CB5]),
        (4096, bytes([123]) * 32, "1.1.0",
         [0x22AB81CF68C4676D, 0x7A77A82FC7C9C189, 0xC6C03D32C1E42D23, 0x0F777C18CC2C55BD]),
    ],
)  # fmt: skip
def test_create_labels_known_answers(size, porep_id, api, limbs):
    g = build_graph(size // 32, porep_id, api)
    labels = label_layers(g, bytes([9]) * 32, 11)
    want = sum(w << (64 * i) for i, w in enumerate(limbs))
    assert int.from_bytes(labels[-1, -1].tobytes(), "little") == want


def test_empty_2k_comm_d_known_answer():
    # FILECOIN.md: comm_d of an all-zero 2 KiB sector.
    root = tree_d(np.zeros((64, 32), dtype=np.uint8))[-1][0].tobytes().hex()
    assert root == "fc7e928296e516faade986b28f92d44a4f24b935485223376a799027bc18f833"


def test_porep_ids_and_names():
    # filecoin-proofs-api registry.rs REGISTERED_PROOF_IDS; the porep_config.porep_id of the
    # 2 KiB records in filecoin-proofs/tests/seal_regression_records-v18.json is [5, 0, …] for
    # V1_1 and [0, …] for V1.
    assert seal_proof(2 * KIB).porep_id == bytes([5]) + bytes(31)
    assert seal_proof(2 * KIB, "1.0.0").porep_id == bytes(32)
    assert seal_proof(8 * MIB).porep_id == bytes([6]) + bytes(31)
    assert seal_proof(512 * MIB, "1.0.0").porep_id == bytes([2]) + bytes(31)
    p = by_name("StackedDrg8MiBV1_1")
    assert (p.sector_size, p.api_version, p.vanilla_key) == (8 * MIB, "1.1.0", "StackedDrg8MiBV1")
    for bad in ("StackedDrg32GiBV1_1", "StackedDrg2KiBV1_1_Feat_SyntheticPoRep"):
        with pytest.raises(BadInput):
            by_name(bad)
    with pytest.raises(BadInput, match="sector sizes"):
        seal_proof(4096)
    with pytest.raises(BadInput, match="api version"):
        seal_proof(2 * KIB, "1.2.0")


# -- an independent verifier of the C1 output -------------------------------------------------


def _fe(v: list[int]) -> int:
    assert len(v) == 32 and all(0 <= b < 256 for b in v)
    x = int.from_bytes(bytes(v), "little")
    assert x < R
    return x


def _sha_path_root(body: dict[str, Any]) -> tuple[int, int]:
    """(root, leaf index) a TreeD Single proof hashes to."""
    cur, index = _fe(body["leaf"]), 0
    for k, e in enumerate(body["path"]["path"]):
        (sib,) = e["hashes"]
        cur = node_hash([_fe(sib), cur] if e["index"] else [cur, _fe(sib)])
        index |= e["index"] << k
    return cur, index


def _label(rid: bytes, layer: int, node: int, parents: list[bytes]) -> bytes:
    head = rid + layer.to_bytes(4, "big") + node.to_bytes(8, "big") + bytes(20)
    return _trim(hashlib.sha256(head + b"".join(parents)).digest())


def verify_c1(doc: dict[str, Any], nodes: int, layers: int, graph) -> None:
    """Every check upstream's verifier makes on the vanilla proofs, from the JSON alone (plus
    the parent graph, which the tests check against upstream separately)."""
    params = PoStParams("window", nodes * 32, TreeShape(nodes, 8), 1, 1)
    rid = bytes(doc["replica_id"])
    seed = bytes(doc["seed"])
    comm_d, comm_r = _fe(doc["comm_d"]), _fe(doc["comm_r"])
    (key,) = doc["vanilla_proofs"]
    partitions = doc["vanilla_proofs"][key]
    assert len(partitions) == 1 and len(partitions[0]) == 2
    roots = set()
    for i, p in enumerate(partitions[0]):
        h = hashlib.sha256(rid + seed + i.to_bytes(4, "little")).digest()
        c = int.from_bytes(h, "little") % (nodes - 1) + 1
        assert 1 <= c < nodes
        assert list(p) == ["comm_d_proofs", "comm_r_last_proof", "replica_column_proofs",
                           "labeling_proofs", "encoding_proof"]  # fmt: skip
        d = p["comm_d_proofs"]["data"]["Single"]
        assert _sha_path_root(d) == (comm_d, c) and _fe(d["root"]) == comm_d
        r = read_merkle_proof(p["comm_r_last_proof"], params.tree, "comm_r_last")
        assert path_root(r) == r.root
        assert leaf_index(r, params.tree) == c
        rcp = p["replica_column_proofs"]
        cols = [rcp["c_x"], *rcp["drg_parents"], *rcp["exp_parents"]]
        want_nodes = [c, *graph.base(c), *graph.expander(c)]
        assert len(rcp["drg_parents"]) == 6 and len(rcp["exp_parents"]) == 8
        comm_c = None
        for col, q in zip(cols, want_nodes, strict=True):
            assert col["column"]["index"] == q and col["column"]["_h"] is None
            rows = [_fe(x) for x in col["column"]["rows"]]
            assert len(rows) == layers
            m = read_merkle_proof(col["inclusion_proof"], params.tree, "column")
            assert path_root(m) == m.root
            assert m.leaf == hash_reference(rows) and leaf_index(m, params.tree) == q
            comm_c = m.root if comm_c is None else comm_c
            assert m.root == comm_c
        assert hash_reference([comm_c, r.root]) == comm_r
        roots.add((comm_c, r.root))
        c_rows = [bytes(x) for x in rcp["c_x"]["column"]["rows"]]
        drg = [[bytes(x) for x in col["column"]["rows"]] for col in rcp["drg_parents"]]
        exp = [[bytes(x) for x in col["column"]["rows"]] for col in rcp["exp_parents"]]
        assert len(p["labeling_proofs"]) == layers
        for layer, lp in enumerate(p["labeling_proofs"], start=1):
            assert (lp["layer_index"], lp["node"]) == (layer, c)
            parents = [bytes(x) for x in lp["parents"]]
            row = [col[layer - 1] for col in drg]
            if layer > 1:
                row += [col[layer - 2] for col in exp]
            assert parents == [row[j % len(row)] for j in range(37)]
            assert _label(rid, layer, c, parents) == c_rows[layer - 1]
        ep = p["encoding_proof"]
        assert (ep["layer_index"], ep["node"]) == (layers, c)
        key_label = _label(rid, layers, c, [bytes(x) for x in ep["parents"]])
        data = _fe(d["leaf"])
        assert (data + int.from_bytes(key_label, "little")) % R == r.leaf
    assert len(roots) == 1


def _random_bytes(rng, n=32) -> bytes:
    b = bytearray(rng.integers(0, 256, size=n, dtype=np.uint8).tobytes())
    b[-1] &= 0x3F
    return bytes(b)


@pytest.mark.parametrize("api", ["1.1.0", "1.0.0"])
def test_seal_2k_c1_verifies_independently(api, rng):
    prover, ticket, seed = (_random_bytes(rng) for _ in range(3))
    sector_id = int(rng.integers(0, 1 << 63))
    s = seal_sector(2 * KIB, prover_id=prover, sector_id=sector_id, ticket=ticket, api=api,
                    rng=rng)  # fmt: skip
    doc = json.loads(c1_json(s, seed))
    assert list(doc) == ["registered_proof", "vanilla_proofs", "comm_r", "comm_d",
                         "replica_id", "seed", "ticket"]  # fmt: skip
    assert doc["registered_proof"] == ("StackedDrg2KiBV1_1" if api == "1.1.0" else
                                       "StackedDrg2KiBV1")  # fmt: skip
    assert list(doc["vanilla_proofs"]) == ["StackedDrg2KiBV1"]
    assert bytes(doc["ticket"]) == ticket and bytes(doc["seed"]) == seed
    # replica_id from its definition (storage-proofs-porep generate_replica_id).
    rid = _trim(hashlib.sha256(prover + sector_id.to_bytes(8, "big") + ticket
                               + bytes(doc["comm_d"]) + s.proof.porep_id).digest())  # fmt: skip
    assert bytes(doc["replica_id"]) == rid
    verify_c1(doc, 64, 2, s.graph)


def test_seal_2k_commitments_recomputed_by_hand(rng):
    """Labels, TreeD, TreeC and TreeR of a 2 KiB sector recomputed one hash at a time with
    hashlib and the textbook Poseidon (no numba kernels, no bulk hashing)."""
    data = bytes(_random_bytes(rng, 2048))
    arr = bytearray(data)
    for i in range(31, 2048, 32):
        arr[i] &= 0x3F
    data = bytes(arr)
    s = seal_sector(2 * KIB, data=data, prover_id=7, sector_id=3, ticket=bytes(32))
    leaves = [int.from_bytes(data[i : i + 32], "little") for i in range(0, 2048, 32)]
    level = leaves
    while len(level) > 1:
        level = [node_hash(level[i : i + 2]) for i in range(0, len(level), 2)]
    assert level[0] == s.comm_d
    rid = s.replica_id
    labels: list[list[bytes]] = []
    for layer in (1, 2):
        cur: list[bytes] = []
        for v in range(64):
            if v == 0:
                head = rid + layer.to_bytes(4, "big") + bytes(8) + bytes(20)
                cur.append(_trim(hashlib.sha256(head).digest()))
                continue
            row = [cur[q] for q in s.graph.base(v)]
            if layer == 2:
                row += [labels[0][q] for q in s.graph.expander(v)]
            cur.append(_label(rid, layer, v, [row[j % len(row)] for j in range(37)]))
        labels.append(cur)
    assert [s.labels[1, v].tobytes() for v in range(64)] == labels[1]

    def oct_root(xs: list[int]) -> int:
        while len(xs) > 1:
            xs = [hash_reference(xs[i : i + 8]) for i in range(0, len(xs), 8)]
        return xs[0]

    lab = [[int.from_bytes(x, "little") for x in layer] for layer in labels]
    cols = [hash_reference([lab[0][v], lab[1][v]]) for v in range(64)]
    replica = [(d + lab[1][v]) % R for v, d in enumerate(leaves)]
    assert (oct_root(cols), oct_root(replica)) == (s.comm_c, s.comm_r_last)
    assert s.comm_r == hash_reference([s.comm_c, s.comm_r_last])


def test_generate_c1_is_deterministic_and_sized():
    a = generate_c1(2 * KIB, 11)
    assert a == generate_c1(2 * KIB, 11) and a != generate_c1(2 * KIB, 12)
    assert 50_000 < len(a) < 200_000  # FILECOIN.md: about 0.1 MB for 2 KiB
    doc = json.loads(a)
    verify_c1(doc, 64, 2, proof_graph(seal_proof(2 * KIB)))


def test_bad_inputs_are_refused(rng):
    kw: dict[str, Any] = {"prover_id": 1, "sector_id": 2, "ticket": bytes(32)}
    bad = bytearray(2048)
    bad[32 * 5 + 31] = 0xFF  # node 5 ≥ r
    with pytest.raises(BadInput, match="node 5 "):
        seal_sector(2 * KIB, data=bytes(bad), **kw)
    with pytest.raises(BadInput, match="2048 bytes"):
        seal_sector(2 * KIB, data=bytes(1024), **kw)
    with pytest.raises(BadInput, match="rng"):
        seal_sector(2 * KIB, **kw)
    with pytest.raises(BadInput, match="ticket"):
        seal_sector(2 * KIB, prover_id=1, sector_id=2, ticket=bytes(31), rng=rng)
    with pytest.raises(BadInput, match="sector_id"):
        seal_sector(2 * KIB, prover_id=1, sector_id=1 << 64, ticket=bytes(32), rng=rng)
    s = seal_sector(2 * KIB, rng=rng, **kw)
    with pytest.raises(BadInput, match="seed"):
        commit_phase1(s, bytes(16))


@pytest.mark.heavy
def test_seal_8m_c1_verifies_independently(rng):
    s = seal_sector(8 * MIB, prover_id=5, sector_id=9, ticket=_random_bytes(rng), rng=rng)
    doc = json.loads(c1_json(s, _random_bytes(rng)))
    assert doc["registered_proof"] == "StackedDrg8MiBV1_1"
    verify_c1(doc, s.nodes, 2, s.graph)
