"""Virtual sealing (cuzk.circuits.filecoin.seal.virtual) and its parts: sparse trees against
fully built trees, per-node parents against the whole table, virtual inputs against the real
sealer's and updater's files (equal where every node is derived, same format otherwise), the
parsers accepting them and refusing tampered ones, 32 GiB openings re-hashed natively, and
the bincode writer against a real 32 GiB WindowPoSt vanilla proof from Curio."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cuzk.circuits.filecoin.bincode_write import (
    merkle_proof,
    post_sector_proof,
    snap_partition_proof,
)
from cuzk.circuits.filecoin.merkle_json import leaf_index, path_root, read_merkle_proof
from cuzk.circuits.filecoin.porep_c1 import parse_c1
from cuzk.circuits.filecoin.porep_challenges import label
from cuzk.circuits.filecoin.post import post_params
from cuzk.circuits.filecoin.seal import commit_phase1, seal_proof, seal_sector
from cuzk.circuits.filecoin.seal.graph import build_graph, parents_of
from cuzk.circuits.filecoin.seal.sdr import tree_d
from cuzk.circuits.filecoin.seal.sparse_tree import (
    Background,
    SparseTree,
    constant,
    periodic,
    poseidon_groups,
    sha256_pairs,
)
from cuzk.circuits.filecoin.seal.virtual import (
    Draws,
    label_sector,
    seal_proof_name,
    virtual_post,
    virtual_seal,
    virtual_update,
)
from cuzk.circuits.filecoin.snap_vanilla import (
    SectorUpdate,
    generate_update,
    phi,
    read_update,
    request_json,
    rho,
    sha_tree,
)
from cuzk.circuits.filecoin.vanilla_bincode import sector_proof_from_bincode
from cuzk.circuits.filecoin.vanilla_json import (
    challenged_leaves,
    random_request,
    read_request,
    sector_vanilla_json,
)
from cuzk.circuits.filecoin.vanilla_json import (
    request_json as post_request_json,
)
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.gadgets.merkle import TreeShape, build_tree, prove
from cuzk.gadgets.poseidon.native import hash_one
from cuzk.gadgets.sha256.node import node_hash

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30

# filecoin-project/curio @ e0294b0f948132d41e8f42f59fa949495d5fd3af,
# lib/proof/testgolden/post.vproof: a real 32 GiB FallbackPoStSectorProof (bincode) for sector 1
# of miner 1000, randomness 0^32, as Curio sends it.
CURIO_VPROOF = Path(__file__).parent / "fixtures" / "curio-wpost-32g.vproof"


def _shape(x: Any) -> Any:
    """A JSON tree's structure: keys, list lengths, types; 32-byte values as ("b32",)."""
    if isinstance(x, dict):
        return {k: _shape(v) for k, v in x.items()}
    if isinstance(x, list):
        if len(x) == 32 and all(type(b) is int for b in x):
            return ("b32",)
        return [_shape(v) for v in x]
    return type(x).__name__


def _rand(rng: random.Random) -> int:
    return rng.randrange(R)


# -- sparse trees ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape", [TreeShape(64, 8), TreeShape(512, 8, 8), TreeShape(1024, 8, 8, 2), TreeShape(64, 2)]
)
def test_sparse_tree_equals_the_built_tree(shape: TreeShape, seed: int) -> None:
    rng = random.Random(seed)
    n = shape.leaves
    block = [_rand(rng) for _ in range(8)]
    regional = [_rand(rng) for _ in range(8)]
    backgrounds = [
        constant(_rand(rng)),
        periodic(block),
        Background(lambda j: (block[j % 4] + regional[j // (n // 8)]) % R, period=4,
                   region=n // 8),
    ]  # fmt: skip
    for bg in backgrounds:
        touched = {rng.randrange(n): _rand(rng) for _ in range(5)}
        leaves = [touched.get(j, bg.leaf(j) % R) for j in range(n)]
        levels = build_tree(fr.from_ints(leaves), shape)
        t = SparseTree(n, shape.arities, poseidon_groups, bg, touched)
        assert t.root == fr.to_int(levels[-1][0])
        picks = [0, n - 1, *touched, *(rng.randrange(n) for _ in range(6))]
        assert t.paths(picks) == [prove(levels, shape, i) for i in picks]
        for level, row in enumerate(levels):
            i = rng.randrange(row.shape[0])
            assert t.node(level, i) == fr.to_int(row[i])


def test_sparse_forest_and_sha_tree(seed: int) -> None:
    rng = random.Random(seed)
    shape, trees = TreeShape(64, 8), 5
    defaults = [_rand(rng) for _ in range(trees)]
    touched = {s * 64 + rng.randrange(64): _rand(rng) for s in range(trees) for _ in range(3)}
    forest = SparseTree(trees * 64, shape.arities, poseidon_groups,
                        Background(lambda j: defaults[j // 64], region=64), touched)  # fmt: skip
    for s in range(trees):
        levels = build_tree(fr.from_ints([touched.get(s * 64 + j, defaults[s])
                                          for j in range(64)]), shape)  # fmt: skip
        assert forest.node(forest.height, s) == fr.to_int(levels[-1][0])
        for j in (0, 9, 63):
            assert forest.path(s * 64 + j) == prove(levels, shape, j)
    with pytest.raises(BadInput, match="forest"):
        _ = forest.root
    # TreeD: SHA-256 over periodic data against the sealer's numba TreeD
    data = np.random.default_rng(seed).integers(0, 256, (16, 32), dtype=np.uint8)
    data[:, 31] &= 0x3F
    block = [int.from_bytes(r.tobytes(), "little") for r in data]
    levels = tree_d(np.tile(data, (8, 1)))
    t = SparseTree(128, [2] * 7, sha256_pairs, periodic(block))
    assert t.root == int.from_bytes(levels[-1][0].tobytes(), "little")
    assert t.hashes < 32  # 15 for the block's tree, one per level above it
    mp = t.path(77)
    assert mp.leaf == block[77 % 16] and leaf_index(mp, TreeShape(128, 2)) == 77


def test_sparse_tree_bad_input() -> None:
    with pytest.raises(BadInput, match="do not fit"):
        SparseTree(100, [8, 8], poseidon_groups, constant(1))
    with pytest.raises(BadInput, match="out of range"):
        SparseTree(64, [8, 8], poseidon_groups, constant(1), {64: 1})
    with pytest.raises(BadInput, match="power of two"):
        periodic([1, 2, 3])
    with pytest.raises(BadInput, match="binary"):
        SparseTree(64, [8, 8], sha256_pairs, constant(1))
    t = SparseTree(64, [8, 8], poseidon_groups, constant(1))
    with pytest.raises(BadInput, match="no node"):
        t.node(1, 8)
    with pytest.raises(BadInput, match="out of range"):
        t.path(64)


# -- parents of single nodes -----------------------------------------------------------------


@pytest.mark.parametrize("api", ["1.0.0", "1.1.0"])
def test_parents_of_equals_the_table(api: str, seed: int) -> None:
    p = seal_proof(2 * KIB, api)
    g = build_graph(p.nodes, p.porep_id, api)
    assert (parents_of(range(p.nodes), p.nodes, p.porep_id, api) == g.parents).all()
    big = build_graph(1 << 16, p.porep_id, api)
    pick = np.random.default_rng(seed).integers(0, 1 << 16, 300)
    assert (parents_of(pick, 1 << 16, p.porep_id, api) == big.parents[pick]).all()
    with pytest.raises(BadInput, match="lie in"):
        parents_of([p.nodes], p.nodes, p.porep_id, api)


def test_parent_rows_equal_the_table(seed: int) -> None:
    """The C1 check's rows-on-demand graph (sectors too big to tabulate) gives the table's
    rows, prefetched or not."""
    from cuzk.circuits.filecoin.seal.graph import ParentRows

    p = seal_proof(8 * MIB, "1.1.0")
    g = build_graph(p.nodes, p.porep_id, "1.1.0")
    rows = ParentRows(p.nodes, p.porep_id, "1.1.0")
    pick = np.random.default_rng(seed).choice(p.nodes, 40, replace=False)
    rows.prefetch(pick[:20])
    for v in pick.tolist():
        assert rows.base(v) + rows.expander(v) == g.base(v) + g.expander(v)


def test_parents_of_32g_versions(seed: int) -> None:
    """At 2^30 nodes api 1.0.0 truncated the permuted expander index to u32 before dividing
    by 8, i.e. its expander parents are 1.1.0's modulo 2^29; the DRG predecessor moves from
    first to last. Both are checked on random nodes."""
    n = 1 << 30
    nodes = np.random.default_rng(seed).integers(2, n, 200)
    v10 = parents_of(nodes, n, (3).to_bytes(8, "little") + bytes(24), "1.0.0")
    v11 = parents_of(nodes, n, (3).to_bytes(8, "little") + bytes(24), "1.1.0")
    assert (v10[:, 6:] == v11[:, 6:] % (1 << 29)).all()
    assert (v11[:, 6:] >= 1 << 29).any()
    assert (v10[:, 5] == nodes - 1).all() and (v11[:, 0] == nodes - 1).all()
    assert (v10[:, :5] == v11[:, 1:6]).all()
    assert (v11[:, :6] < nodes[:, None]).all()


# -- PoRep -----------------------------------------------------------------------------------


def _c1_inputs(seed: int) -> dict[str, Any]:
    d = Draws(seed)
    return dict(prover_id=d.bytes32("p"), sector_id=seed % (1 << 40), ticket=d.bytes32("t"),
                seed=d.bytes32("s"))  # fmt: skip


@pytest.mark.parametrize("api", ["1.0.0", "1.1.0"])
def test_fully_derived_2k_equals_the_real_sealer(api: str, seed: int) -> None:
    """Deriving every node's labels makes the virtual sector the real one: the C1 document
    equals the sealer's (sparse trees, per-node parents and label order all checked)."""
    d = Draws(seed)
    block = d.block("data", 64)
    kw = _c1_inputs(seed)
    vs = label_sector(seal_proof_name(2 * KIB, api), data_block=block, draws=d,
                      derive=range(64), **kw).commit()  # fmt: skip
    data = b"".join(x.to_bytes(32, "little") for x in block)
    sealed = seal_sector(2 * KIB, data=data, prover_id=kw["prover_id"],
                         sector_id=kw["sector_id"], ticket=kw["ticket"], api=api)  # fmt: skip
    assert (vs.comm_d, vs.comm_c, vs.comm_r_last, vs.comm_r) == (
        sealed.comm_d, sealed.comm_c, sealed.comm_r_last, sealed.comm_r)  # fmt: skip
    real = json.loads(json.dumps(commit_phase1(sealed, kw["seed"])))
    assert json.loads(json.dumps(vs.c1_document())) == real


@pytest.mark.parametrize("size", [2 * KIB, 8 * MIB])
def test_virtual_c1_has_the_sealers_format_and_parses(size: int, seed: int) -> None:
    vs = virtual_seal(size, seed)
    text = json.dumps(vs.c1_document(), separators=(",", ":"))
    c1 = parse_c1(text)
    assert c1.graph_checked  # parents checked against the whole SDR table
    assert c1.comm_r == vs.comm_r and c1.comm_d == vs.comm_d
    lab = vs.labels
    opened = {c for part in lab.challenges for c in part}
    opened |= {q for c in opened for q in lab.parents[c]}
    assert set(lab.columns) == opened  # nothing beyond the opened columns was labelled
    if size == 2 * KIB:
        real = commit_phase1(seal_sector(size, prover_id=7, sector_id=9, ticket=bytes(32),
                                         rng=np.random.default_rng(seed)), bytes(32))  # fmt: skip
        assert _shape(json.loads(text)) == _shape(json.loads(json.dumps(real)))
    assert virtual_seal(size, seed).c1_document() == json.loads(text)  # deterministic


@pytest.mark.heavy
def test_virtual_8m_c1_has_the_sealers_format(seed: int) -> None:
    """Sealing 8 MiB for real takes tens of seconds and ~1 GB."""
    real = commit_phase1(seal_sector(8 * MIB, prover_id=7, sector_id=9, ticket=bytes(32),
                                     rng=np.random.default_rng(seed)), bytes(32))  # fmt: skip
    virtual = virtual_seal(8 * MIB, seed).c1_document()
    assert _shape(json.loads(json.dumps(virtual))) == _shape(json.loads(json.dumps(real)))


def test_parser_refuses_tampered_virtual_c1(seed: int) -> None:
    kw = _c1_inputs(seed)
    d = Draws(seed)
    lab = label_sector(seal_proof_name(2 * KIB), data_block=d.block("data", 64), draws=d, **kw)
    c = lab.challenges[0][0]
    parent = next(q for q in lab.parents[c] if q not in lab.parents)  # a parent-only node
    lab.columns[parent][0] ^= 1 << 7  # one label changed; the trees then commit to it
    with pytest.raises(BadInput, match="recomputed label differs"):
        parse_c1(json.dumps(lab.commit().c1_document()))
    doc = virtual_seal(2 * KIB, seed).c1_document()
    proof = doc["vanilla_proofs"]["StackedDrg2KiBV1"][0][1]
    proof["comm_r_last_proof"]["data"]["Single"]["path"]["path"][1]["hashes"][3][0] ^= 1
    with pytest.raises(BadInput, match="does not hash to its root"):
        parse_c1(json.dumps(doc))
    with pytest.raises(BadInput, match="interactive"):
        label_sector("StackedDrg2KiBV1_2_Feat_NonInteractivePoRep", data_block=[0], draws=d, **kw)
    with pytest.raises(BadInput, match="misses challenged"):
        label_sector(seal_proof_name(2 * KIB), data_block=[0], draws=d, derive=[1], **kw)
    for block in ([], [1, 2, 3], [0] * 128, [1 << 254]):
        with pytest.raises(BadInput, match="data"):
            label_sector(seal_proof_name(2 * KIB), data_block=block, draws=d, **kw)


def test_virtual_32g_c1_openings_rehashed(seed: int) -> None:
    """A 32 GiB C1 (10 partitions × 18 challenges, 11 layers, 8-8-0 trees): the document has
    the layout the parser expects and, for a few challenges, every path hashes to the stated
    roots with the native hashes (Poseidon's Python schedule, hashlib SHA-256), the labels
    recompute from the parent columns and the encoding holds."""
    vs = virtual_seal(32 * GIB, seed)
    doc = vs.c1_document()
    assert doc["registered_proof"] == "StackedDrg32GiBV1_1"
    parts = doc["vanilla_proofs"]["StackedDrg32GiBV1"]
    assert [len(p) for p in parts] == [18] * 10
    rid = vs.labels.replica_id
    assert hash_one([vs.comm_c, vs.comm_r_last]) == vs.comm_r
    for w in vs.witnesses()[::4]:
        for cp in w.proofs[:2]:
            c = cp.challenge
            d = cp.comm_d_path
            cur = d.leaf
            for s, q in zip(d.siblings, d.positions, strict=True):
                cur = node_hash([cur, s[0]] if q == 0 else [s[0], cur])
            assert cur == vs.comm_d and len(d.siblings) == 30
            assert path_root(cp.comm_r_last_path) == vs.comm_r_last
            for o in (*cp.drg_parents, *cp.exp_parents):
                assert path_root(o.path) == vs.comm_c
                assert o.path.leaf == hash_one(list(o.rows))
            rows = vs.labels.columns[c]
            assert hash_one(rows) == cp.comm_c_path.leaf and path_root(cp.comm_c_path) == vs.comm_c
            for layer in range(1, 12):
                base = [o.rows[layer - 1] for o in cp.drg_parents]
                exp = [o.rows[layer - 2] for o in cp.exp_parents] if layer > 1 else []
                pre = [(base + exp)[i % len(base + exp)] for i in range(37)]
                assert label(rid, layer, c, pre) == rows[layer - 1]
            assert (rows[-1] + d.leaf) % R == cp.comm_r_last_path.leaf


# -- SnapDeals -------------------------------------------------------------------------------


def test_virtual_2k_update_equals_a_built_update(seed: int) -> None:
    """At 2 KiB the block is the whole sector: building the same update with whole trees
    (rho per node from the Python Poseidon) gives the identical document."""
    vu = virtual_update(2 * KIB, seed)
    p, n = vu.params, vu.params.sector_nodes
    old = [vu.tree_r_old.background.leaf(j) for j in range(n)]
    data = [vu.tree_d_new.background.leaf(j) for j in range(n)]
    tree_r_old = build_tree(fr.from_ints(old), p.tree)
    tree_d = sha_tree([x.to_bytes(32, "little") for x in data])
    comm_r_old = hash_one([vu.comm_c, fr.to_int(tree_r_old[-1][0])])
    phi_v = phi(int.from_bytes(tree_d[-1][0], "little"), comm_r_old)
    shift = p.challenge_bit_len - vu.h
    pairs = enumerate(zip(old, data, strict=True))
    new = [(o + x * rho(phi_v, j >> shift)) % R for j, (o, x) in pairs]
    built = SectorUpdate(p, vu.h, vu.comm_c, tree_r_old, tree_d,
                         build_tree(fr.from_ints(new), p.tree))  # fmt: skip
    assert json.dumps(vu.document()) == request_json(built)


@pytest.mark.parametrize("size", [8 * MIB, pytest.param(32 * GIB, marks=pytest.mark.heavy)])
def test_virtual_update_parses(size: int, seed: int) -> None:
    vu = virtual_update(size, seed)
    text = json.dumps(vu.document())
    req = read_update(text)
    assert (req.comm_r_old, req.comm_d_new, req.comm_r_new) == (
        vu.comm_r_old, vu.comm_d_new, vu.comm_r_new)  # fmt: skip
    assert len(req.partitions) == vu.params.partition_count
    assert vu.comm_r_new != vu.comm_r_old


def test_virtual_32g_update_openings_rehashed(seed: int) -> None:
    """Two of the sixteen 32 GiB partitions: TreeD paths (SHA-256) and TreeR paths (Python
    Poseidon) of a few challenges hash to the stated roots, the apex leaf the path passes is
    the partition's, and new = old + data · rho (h = 12: 4,096 rho regions)."""
    vu = virtual_update(32 * GIB, seed, h=12)
    p = vu.params
    assert (p.challenge_count, p.partition_count) == (86, 16)
    phi_v = phi(vu.comm_d_new, vu.comm_r_old)
    for k in (0, 15):
        part = vu.partition(k)
        assert len(part["challenge_proofs"]) == 86 and len(part["apex_leafs"]) == 128
        apex = [int.from_bytes(bytes(a), "little") for a in part["apex_leafs"]]
        for cp in part["challenge_proofs"][:3]:
            d = read_merkle_proof(cp["proof_d_new"], TreeShape(p.sector_nodes, 2), "d")
            c = leaf_index(d, TreeShape(p.sector_nodes, 2))
            assert c >> 26 == k
            cur = d.leaf
            for level, (s, q) in enumerate(zip(d.siblings, d.positions, strict=True)):
                if level == p.apex_height:
                    assert cur == apex[(c >> p.apex_height) % 128]
                cur = node_hash([cur, s[0]] if q == 0 else [s[0], cur])
            assert cur == d.root == vu.comm_d_new
            old = read_merkle_proof(cp["proof_r_old"], p.tree, "old")
            new = read_merkle_proof(cp["proof_r_new"], p.tree, "new")
            assert path_root(old) == old.root and path_root(new) == new.root
            assert hash_one([vu.comm_c, old.root]) == vu.comm_r_old
            assert hash_one([vu.comm_c, new.root]) == vu.comm_r_new
            assert new.leaf == (old.leaf + d.leaf * rho(phi_v, c >> (30 - 12))) % R


@pytest.mark.parametrize("size", [2 * KIB, 8 * MIB])
def test_virtual_update_has_the_updaters_format(size: int, seed: int) -> None:
    virtual = json.loads(json.dumps(virtual_update(size, seed).document()))
    assert _shape(virtual) == _shape(json.loads(generate_update(size, seed)))


# -- PoSt and bincode ------------------------------------------------------------------------


@pytest.mark.parametrize("cid", ["wpost-2k", "winning-2k", "wpost-8m", "wpost-32g",
                                 "winning-32g"])  # fmt: skip
def test_virtual_post_reads_back(cid: str, seed: int) -> None:
    params = post_params(cid)
    sectors = None if params.kind == "winning" else min(params.sector_count, 3)
    vanilla, randomness = virtual_post(params, seed, sectors)
    text = post_request_json(params, vanilla, randomness, 5)
    got_cid, _, inputs = read_request(text)
    assert got_cid == cid
    want = challenged_leaves(params, [v.sector_id for v in vanilla], randomness)
    assert [[leaf_index(m, params.tree) for m in v.proof.inclusion_proofs]
            for v in vanilla] == want  # fmt: skip
    assert inputs[0] == vanilla[0].proof.comm_r
    assert len({v.proof.comm_r for v in vanilla}) == len(vanilla)


@pytest.mark.parametrize("cid", ["wpost-2k", "wpost-8m", "winning-2k"])
def test_virtual_post_has_the_random_sectors_format(cid: str, seed: int) -> None:
    params = post_params(cid)
    real, _ = random_request(params, np.random.default_rng(seed))
    count = len(json.loads(real)["vanilla_proofs"])
    vanilla, randomness = virtual_post(params, seed, None if params.kind == "winning" else count)
    virtual = post_request_json(params, vanilla, randomness, 5)
    assert _shape(json.loads(virtual)) == _shape(json.loads(real))


def test_bincode_writer_round_trips_curios_vproof() -> None:
    raw = CURIO_VPROOF.read_bytes()
    doc = sector_proof_from_bincode(raw, "curio")
    assert post_sector_proof(doc) == raw
    first = doc["vanilla_proof"]["sectors"][0]["inclusion_proofs"][0]
    assert raw.find(merkle_proof(first)) == 8 + 32 + 8 + 8


def test_virtual_32g_sector_proof_is_shaped_like_curios(seed: int) -> None:
    params = post_params("wpost-32g")
    (sv,), _ = virtual_post(params, seed, 1)
    doc = sector_vanilla_json(sv, params)
    raw = post_sector_proof(doc)
    real = sector_proof_from_bincode(CURIO_VPROOF.read_bytes(), "curio")
    assert len(raw) == CURIO_VPROOF.stat().st_size == 24_960
    assert _shape(sector_proof_from_bincode(raw, "virtual")) == _shape(real)
    assert sector_proof_from_bincode(raw, "virtual") == json.loads(json.dumps(doc))


def test_snap_partition_bincode_layout(seed: int) -> None:
    """PartitionProof in bincode: comm_c, apex_leafs (u64 length + 32-byte values), then per
    challenge three MerkleProofs (TreeR Sub/Single, TreeD Single), nothing left over."""
    doc = virtual_update(8 * MIB, seed).document()["partition_proofs"][1]
    raw = snap_partition_proof(doc)
    assert raw[:32] == bytes(doc["comm_c"])
    assert int.from_bytes(raw[32:40], "little") == 128
    off = 40 + 128 * 32
    assert raw[off - 32 : off] == bytes(doc["apex_leafs"][-1])
    assert int.from_bytes(raw[off : off + 8], "little") == 10
    off += 8
    for cp in doc["challenge_proofs"]:
        for name in ("proof_r_old", "proof_d_new", "proof_r_new"):
            mp = merkle_proof(cp[name])
            assert raw[off : off + len(mp)] == mp
            off += len(mp)
    assert off == len(raw)


def test_draws_are_addressed_not_sequential(seed: int) -> None:
    a, b = Draws(seed), Draws(seed)
    assert [a.fe("x", i) for i in range(4)] == [b.fe("x", i) for i in reversed(range(4))][::-1]
    assert a.fe("x", 1) != Draws(seed + 1).fe("x", 1) and a.fe("x", 1) < 1 << 254
    with pytest.raises(BadInput, match="u64"):
        Draws(-1)
