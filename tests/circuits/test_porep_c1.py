"""PoRep C1 parser: hand-made consistent sectors (real SDR parents, random data, labels
recomputed for the challenged nodes, real TreeD/TreeC/TreeR over them) parse into witnesses with
the right public inputs, and every kind of corruption is refused with a reason naming where.

The hand-made sector is not a sealed sector (unchallenged labels are random), but nothing a C1
output carries can tell: every check upstream's verifier makes holds. Sectors sealed by
:mod:`cuzk.circuits.filecoin.seal` are used too once that module provides ``generate_c1``.
"""

from __future__ import annotations

import base64
import copy
import json
from dataclasses import dataclass

import numpy as np
import pytest

from cuzk.circuits.filecoin.merkle_json import leaf_index
from cuzk.circuits.filecoin.porep import (
    ChallengeProof,
    ColumnOpening,
    PoRepWitness,
    porep_params,
)
from cuzk.circuits.filecoin.porep_c1 import (
    GRAPH_MAX_NODES,
    c1_json,
    open_statement,
    parse_c1,
    registered_porep,
    wrap_for_curio,
)
from cuzk.circuits.filecoin.porep_challenges import (
    expected_label_parents,
    interactive_challenges,
    label,
    ni_challenges,
    synthetic_challenges,
)
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.gadgets.merkle import MerklePath
from cuzk.gadgets.poseidon.native import hash_many, hash_one
from cuzk.gadgets.sha256.node import node_hash


def _fe254(rng: np.random.Generator) -> int:
    return int.from_bytes(rng.bytes(32), "little") & ((1 << 254) - 1)


class _SparseTree:
    """The part of a Merkle tree that proofs of some leaves need: those leaves, random
    siblings, and their ancestors hashed in bulk level by level (so sectors of any size can be
    faked: C1 outputs only ever open a few hundred leaves)."""

    def __init__(self, known: dict[int, int], arities: list[int], kind: str,
                 rng: np.random.Generator) -> None:  # fmt: skip
        self.arities = arities
        self.levels = [dict(known)]
        for a in arities:
            cur = self.levels[-1]
            groups = sorted({i // a for i in cur})
            pre = []
            for g in groups:
                for j in range(g * a, g * a + a):
                    if j not in cur:
                        cur[j] = _fe254(rng)
                    pre.append(cur[j])
            if kind == "sha256":
                hashes = [node_hash(pre[i : i + a]) for i in range(0, len(pre), a)]
            else:
                hashes = fr.to_ints(hash_many(fr.from_ints(pre), a))
            self.levels.append(dict(zip(groups, hashes, strict=True)))
        self.root = self.levels[-1][0]

    def prove(self, index: int) -> MerklePath:
        sibs, pos, node = [], [], index
        for level, a in zip(self.levels, self.arities, strict=False):
            g, q = divmod(node, a)
            sibs.append([level[g * a + j] for j in range(a) if j != q])
            pos.append(q)
            node = g
        return MerklePath(self.levels[0][index], sibs, pos, self.root)


@dataclass
class FakeSector:
    text: str  # the C1 JSON
    doc: dict  # the same, parsed
    witnesses: list[PoRepWitness]
    challenges: list[list[int]]


def fake_c1(
    rng: np.random.Generator, proof_name: str = "StackedDrg2KiBV1_1", graph_parents: bool = True
) -> FakeSector:
    """A consistent C1 output of a hand-made sector (see the module docstring); interactive
    challenges only (V1, V1_1). Parents come from the SDR graph, as the parser checks them
    (the whole table up to ``GRAPH_MAX_NODES`` nodes, the challenged rows above)."""
    from cuzk.circuits.filecoin.seal.graph import ParentRows, build_graph

    proof = registered_porep(proof_name)
    p = proof.params
    n = p.nodes
    graph = (build_graph(n, proof.porep_id, proof.api_version) if n <= GRAPH_MAX_NODES
             else ParentRows(n, proof.porep_id, proof.api_version))  # fmt: skip

    def parents_of(c: int) -> list[int]:
        if graph_parents:
            return graph.base(c) + graph.expander(c)
        return [int(x) for x in rng.choice(n, size=14, replace=False)]  # not the SDR graph's

    for _ in range(1000):
        replica_id = _fe254(rng)
        seed = rng.bytes(32)
        chal = [interactive_challenges(replica_id, seed, n, p.challenge_count, k)
                for k in range(proof.partitions)]  # fmt: skip
        flat = {c for part in chal for c in part}
        parents = {c: parents_of(c) for c in flat}
        if not flat & {q for ps in parents.values() for q in ps}:
            break
    else:  # pragma: no cover - astronomically unlikely
        raise AssertionError("no conflict-free challenge set found")
    data = {c: _fe254(rng) for c in flat}
    columns: dict[int, list[int]] = {}
    for ps in parents.values():
        for q in ps:
            columns.setdefault(q, [_fe254(rng) for _ in range(p.layers)])
    for c in flat:
        drg = [columns[q] for q in parents[c][:6]]
        exp = [columns[q] for q in parents[c][6:]]
        rows: list[int] = []
        for layer in range(1, p.layers + 1):
            rows.append(label(replica_id, layer, c, expected_label_parents(drg, exp, layer)))
        columns[c] = rows
    keys = sorted(columns)
    hashes = fr.to_ints(hash_many(fr.from_ints([x for k in keys for x in columns[k]]), p.layers))
    tree_c = _SparseTree(dict(zip(keys, hashes, strict=True)), p.tree.arities, "poseidon", rng)
    r_leaves = {c: (columns[c][-1] + data[c]) % R for c in flat}
    tree_r = _SparseTree(r_leaves, p.tree.arities, "poseidon", rng)
    tree_d = _SparseTree(data, p.tree_d.arities, "sha256", rng)
    comm_c, comm_r_last, comm_d = tree_c.root, tree_r.root, tree_d.root
    comm_r = hash_one([comm_c, comm_r_last])
    witnesses, cx_rows = [], []
    for part in chal:
        proofs = []
        for c in part:
            proofs.append(ChallengeProof(
                challenge=c,
                comm_d_path=tree_d.prove(c),
                comm_r_last_path=tree_r.prove(c),
                comm_c_path=tree_c.prove(c),
                drg_parents=tuple(ColumnOpening(tuple(columns[q]), tree_c.prove(q))
                                  for q in parents[c][:6]),
                exp_parents=tuple(ColumnOpening(tuple(columns[q]), tree_c.prove(q))
                                  for q in parents[c][6:]),
            ))  # fmt: skip
        witnesses.append(PoRepWitness(replica_id, comm_d, comm_r, comm_r_last, comm_c,
                                      tuple(proofs)))  # fmt: skip
        cx_rows.append([columns[c] for c in part])
    doc = c1_json(proof_name, witnesses, cx_rows, seed, rng.bytes(32))
    return FakeSector(json.dumps(doc), doc, witnesses, chal)


def _sealed_c1(seed: int) -> str | None:
    try:
        from cuzk.circuits.filecoin.seal import generate_c1
    except ImportError:
        return None
    return generate_c1(2048, seed)


@pytest.fixture(params=["hand-made", "sealed"])
def sector(request: pytest.FixtureRequest, rng: np.random.Generator, seed: int) -> FakeSector:
    """A 2 KiB C1 output: hand-made, or sealed by cuzk.circuits.filecoin.seal (its witnesses
    and challenges are then left empty: the tests using those take hand-made ones)."""
    if request.param == "hand-made":
        return fake_c1(rng)
    text = _sealed_c1(seed)
    if text is None:
        pytest.skip("cuzk.circuits.filecoin.seal.generate_c1 is not available")
    return FakeSector(text, json.loads(text), [], [])


# -- accepting ------------------------------------------------------------------------------


def test_parse_hand_made_sector(rng: np.random.Generator) -> None:
    sector = fake_c1(rng)
    c1 = parse_c1(sector.text)
    assert c1.proof.name == "StackedDrg2KiBV1_1"
    assert c1.graph_checked
    assert len(c1.witnesses) == 1
    w, want = c1.witnesses[0], sector.witnesses[0]
    assert (w.replica_id, w.comm_d, w.comm_r, w.comm_c, w.comm_r_last) == (
        want.replica_id,
        want.comm_d,
        want.comm_r,
        want.comm_c,
        want.comm_r_last,
    )
    assert [cp.challenge for cp in w.proofs] == sector.challenges[0]
    inputs = c1.public_inputs(0)
    assert len(inputs) == 39
    assert inputs[:3] == [want.replica_id, want.comm_d, want.comm_r]
    p = porep_params("porep-2k")
    for j, cp in enumerate(want.proofs):
        chunk = inputs[3 + 18 * j : 3 + 18 * (j + 1)]
        parents = [leaf_index(o.path, p.tree) for o in (*cp.drg_parents, *cp.exp_parents)]
        assert chunk == [cp.challenge, *parents, cp.challenge, cp.challenge, cp.challenge]


def test_curio_wrapper_and_statement(sector: FakeSector) -> None:
    wrapped = wrap_for_curio(sector.text, 17, 2048).encode()
    c1 = parse_c1(wrapped)
    assert c1.sector_num == 17
    st = open_statement("porep-2k", wrapped)
    assert st.partitions == 1 and st.circuit_id == "porep-2k"
    assert st.expected(0) == tuple(c1.public_inputs(0))
    circuit = st.circuit(0)
    assert circuit.witness == c1.witnesses[0]
    with pytest.raises(BadInput, match="SectorSize"):
        parse_c1(wrap_for_curio(sector.text, 17, 8 << 20))
    with pytest.raises(BadInput, match="porep-8m"):
        open_statement("porep-8m", sector.text.encode())


def test_v1_variant_uses_its_own_graph(rng: np.random.Generator) -> None:
    s = fake_c1(rng, "StackedDrg2KiBV1")
    assert parse_c1(s.text).proof.api_version == "1.0.0"


def test_known_variants() -> None:
    assert registered_porep("StackedDrg32GiBV1_1").porep_id[:8] == (8).to_bytes(8, "little")
    assert registered_porep("StackedDrg2KiBV1_2_Feat_NonInteractivePoRep").partitions == 13
    assert registered_porep("StackedDrg64GiBV1_1_Feat_SyntheticPoRep").partitions == 10
    with pytest.raises(BadInput, match="registered_proof"):
        registered_porep("StackedDrg4KiBV1")


def test_challenge_derivation_bounds(rng: np.random.Generator) -> None:
    rid, seed = _fe254(rng), rng.bytes(32)
    ch = interactive_challenges(rid, seed, 64, 2, 0) + ni_challenges(rid, 5, 64, 2, 3)
    assert all(1 <= c < 64 for c in ch)
    # partition k's challenges continue partition 0's sequence of j
    assert interactive_challenges(rid, seed, 64, 4, 0)[2:] == interactive_challenges(
        rid, seed, 64, 2, 1
    )


def test_synthetic_challenges_known_answer() -> None:
    """storage-proofs-porep challenges.rs ``test_synth_challenges_against_hardcoded``: 2^10
    nodes, replica_id 55, comm_r 101, 21 synthetic challenges, randomness [1; 32]."""
    got = synthetic_challenges(55, 101, bytes([1] * 32), 1 << 10, 10, 0, num_synth=21)
    assert got == [176, 781, 801, 986, 290, 211, 692, 856, 986, 332]
    # partition k continues the selection stream
    assert synthetic_challenges(55, 101, bytes([1] * 32), 1 << 10, 5, 1, num_synth=21) == got[5:]


# -- refusing -------------------------------------------------------------------------------


def _challenge(doc: dict) -> dict:
    return doc["vanilla_proofs"]["StackedDrg2KiBV1"][0][0]


def _bump(v: list[int]) -> None:
    v[0] ^= 1


def _refuse(doc: dict, pattern: str) -> None:
    with pytest.raises(BadInput, match=pattern):
        parse_c1(json.dumps(doc))


def test_wrong_sibling_hash(sector: FakeSector) -> None:
    d = copy.deepcopy(sector.doc)
    _bump(_challenge(d)["comm_r_last_proof"]["data"]["Single"]["path"]["path"][1]["hashes"][3])
    _refuse(d, r"partition 0 challenge 0 comm_r_last_proof: path does not hash to its root")
    d = copy.deepcopy(sector.doc)
    _bump(_challenge(d)["comm_d_proofs"]["data"]["Single"]["path"]["path"][2]["hashes"][0])
    _refuse(d, r"partition 0 challenge 0 comm_d_proofs: path does not hash")


def test_wrong_leaf(sector: FakeSector) -> None:
    d = copy.deepcopy(sector.doc)
    _bump(_challenge(d)["comm_d_proofs"]["data"]["Single"]["leaf"])
    _refuse(d, r"challenge 0 comm_d_proofs: path does not hash")
    d = copy.deepcopy(sector.doc)
    col = _challenge(d)["replica_column_proofs"]["exp_parents"][4]["column"]["rows"][1]
    _bump(col)
    _refuse(d, r"exp_parents\[4\]: inclusion_proof leaf is not the column's hash")


def test_wrong_root(sector: FakeSector) -> None:
    d = copy.deepcopy(sector.doc)
    _bump(d["comm_d"])
    _refuse(d, r"comm_d_proofs: root differs from comm_d")
    d = copy.deepcopy(sector.doc)
    _bump(d["comm_r"])
    _refuse(d, r"comm_r is not Poseidon")
    d = copy.deepcopy(sector.doc)
    ch1 = d["vanilla_proofs"]["StackedDrg2KiBV1"][0][1]
    _bump(ch1["comm_r_last_proof"]["data"]["Single"]["root"])
    _refuse(d, r"challenge 1 comm_r_last_proof: root differs from comm_r_last")


def test_wrong_label_parent(sector: FakeSector) -> None:
    d = copy.deepcopy(sector.doc)
    _bump(_challenge(d)["labeling_proofs"][1]["parents"][20])
    _refuse(d, r"labeling_proofs\[1\]: parents differ")
    d = copy.deepcopy(sector.doc)
    rows = _challenge(d)["replica_column_proofs"]["c_x"]["column"]["rows"]
    _bump(rows[0])
    _refuse(d, r"c_x: inclusion_proof leaf is not the column's hash")


def test_wrong_parent_index(sector: FakeSector) -> None:
    d = copy.deepcopy(sector.doc)
    col = _challenge(d)["replica_column_proofs"]["drg_parents"][2]["column"]
    col["index"] = (col["index"] + 1) % 64
    _refuse(d, r"drg_parents\[2\]: inclusion_proof proves leaf")


def test_wrong_counts(sector: FakeSector) -> None:
    d = copy.deepcopy(sector.doc)
    d["vanilla_proofs"]["StackedDrg2KiBV1"][0].pop()
    _refuse(d, r"partition 0 challenges: expected 2 entries, got 1")
    d = copy.deepcopy(sector.doc)
    d["vanilla_proofs"]["StackedDrg2KiBV1"].append([])
    _refuse(d, r"vanilla_proofs partitions: expected 1 entries")
    d = copy.deepcopy(sector.doc)
    _challenge(d)["labeling_proofs"].pop()
    _refuse(d, r"challenge 0 labeling_proofs: expected 2 entries")
    d = copy.deepcopy(sector.doc)
    _challenge(d)["replica_column_proofs"]["exp_parents"].pop()
    _refuse(d, r"exp_parents: expected 8 entries")


def test_wrong_challenge(sector: FakeSector) -> None:
    d = copy.deepcopy(sector.doc)
    d["seed"][5] ^= 0x10
    _refuse(d, r"partition 0 challenge \d: proves node \d+, the derived challenge is")


def test_malformed(sector: FakeSector) -> None:
    with pytest.raises(BadInput, match="not valid JSON"):
        parse_c1(sector.text[: len(sector.text) // 2])
    with pytest.raises(BadInput, match="Phase1Out: not valid JSON"):
        parse_c1(json.dumps({"SectorNum": 1, "SectorSize": 2048,
                             "Phase1Out": base64.b64encode(b"{").decode()}))  # fmt: skip
    d = copy.deepcopy(sector.doc)
    d["replica_id"] = [255] * 32
    _refuse(d, r"replica_id: not a canonical field element")
    d = copy.deepcopy(sector.doc)
    d["registered_proof"] = "StackedDrg2KiBV9"
    _refuse(d, r"registered_proof 'StackedDrg2KiBV9'")
    d = copy.deepcopy(sector.doc)
    del _challenge(d)["encoding_proof"]
    _refuse(d, r"partition 0 challenge 0: missing 'encoding_proof'")
    d = copy.deepcopy(sector.doc)
    d["vanilla_proofs"] = {"StackedDrg8MiBV1": []}
    _refuse(d, r"vanilla_proofs: expected one 'StackedDrg2KiBV1' entry")


def test_sealed_sector_parses(seed: int) -> None:
    """A sealed sector's public inputs equal upstream's ``generate_public_inputs`` computed from
    the sealer's own graph and challenge derivation."""
    text = _sealed_c1(seed)
    if text is None:
        pytest.skip("cuzk.circuits.filecoin.seal.generate_c1 is not available yet")
    from cuzk.circuits.filecoin.seal import challenges, proof_graph, seal_proof

    c1 = parse_c1(text)
    doc = json.loads(text)
    rid = bytes(doc["replica_id"])
    graph = proof_graph(seal_proof(2048))
    want = [c1.replica_id, c1.comm_d, c1.comm_r]
    for c in challenges(64, rid, bytes(doc["seed"]), 2, 0):
        want += [c, *graph.base(c), *graph.expander(c), c, c, c]
    assert c1.public_inputs(0) == want


@pytest.mark.slow
def test_large_sector_layouts(rng: np.random.Generator) -> None:
    """A hand-made 64 GiB C1 (TreeR/TreeC 8-8-2: "Top" proofs, 10 partitions × 18 challenges,
    11 layers, 31-level TreeD): parsed and checked whole, and a wrong top-level sibling is
    named."""
    s = fake_c1(rng, "StackedDrg64GiBV1_1")
    c1 = parse_c1(s.text)
    assert c1.graph_checked  # the challenged nodes' rows of the SDR graph, not its whole table
    assert len(c1.witnesses) == 10 and all(len(w.proofs) == 18 for w in c1.witnesses)
    assert list(c1.witnesses) == s.witnesses
    assert len(c1.public_inputs(9)) == 327
    d = copy.deepcopy(s.doc)
    top = d["vanilla_proofs"]["StackedDrg64GiBV1"][7][11]["comm_r_last_proof"]["data"]["Top"]
    _bump(top["top_proof"]["path"][0]["hashes"][0])
    _refuse(d, r"partition 7 challenge 11 comm_r_last_proof: path does not hash")
    # a sector whose parents are not the SDR graph's is refused at this size too
    with pytest.raises(BadInput, match=r"is not parent \d+ of node \d+ in the SDR graph"):
        parse_c1(fake_c1(rng, "StackedDrg64GiBV1_1", graph_parents=False).text)
