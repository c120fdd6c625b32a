"""The StackedDRG PoRep circuit: counts pinned against FILECOIN.md and upstream tests, the
matrix-free and structural counts against real shapes, official parameter file names, and
witnesses from hand-made consistent sectors (see test_porep_c1) that satisfy every constraint
while corrupted ones do not.

Count sources: FILECOIN.md's per-partition table (upstream asserts the 32 GiB circuit);
storage-proofs-porep tests/stacked_circuit.rs (test trees: 22 inputs with ONE and 1,199,620 /
1,206,212 / 1,296,576 / 1,346,982 constraints); create_label.rs's test (532,025 constraints);
file names from rust-fil-proofs' parameters.json.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest

from cuzk.circuits.filecoin.porep import (
    StackedCircuit,
    blank_circuit,
    counted,
    create_label,
    param_file_stem,
    porep_circuit_ids,
    porep_params,
    public_inputs,
    reverse_bit_numbering,
    shape_counts,
    small_params,
    structural_counts,
)
from cuzk.circuits.filecoin.porep_c1 import SeededPoRepCircuit, parse_c1
from cuzk.circuits.filecoin.porep_challenges import label
from cuzk.errors import BadInput
from cuzk.gadgets.boolean import AllocatedBit, Boolean
from cuzk.gadgets.merkle import MerklePath
from cuzk.r1cs import CheckCS, check_circuit, synthesize_witness
from tests.circuits.test_porep_c1 import _sealed_c1, fake_c1

# id -> (constraints without input rows, public inputs without ONE): FILECOIN.md.
PINNED = {
    "porep-2k": (2_687_921, 39),
    "porep-8m": (3_844_929, 39),
    "porep-512m": (4_423_433, 39),
    "porep-32g": (130_278_541, 327),
    "porep-64g": (131_185_849, 327),
}

# rust-fil-proofs parameters.json: the tree shape and SHA-256 part of each official name.
OFFICIAL = {
    "porep-2k": ("8-0-0", "032d3138d22506ec0082ed72b2dcba18df18477904e35bafee82b3793b06832f"),
    "porep-8m": ("8-0-0", "ecd683648512ab1765faa2a5f14bab48f676e633467f0aa8aad4b55dcb0652bb"),
    "porep-512m": ("8-0-0", "6babf46ce344ae495d558e7770a585b2382d54f225af8ed0397b8be7c3fcd472"),
    "porep-32g": ("8-8-0", "82a357d2f2ca81dc61bb45f4a762807aedee1b0a53fd6c4e77b46a01bfef7820"),
    "porep-64g": ("8-8-2", "96f1b4a04c5c51e4759bbf224bbc2ef5a42c7100f16ec0637123f16a845ddfb2"),
}

# storage-proofs-porep tests/stacked_circuit.rs: (nodes, TreeR arities) -> constraints, for 2
# layers and 1 challenge (TreeD binary over the same nodes).
UPSTREAM_TREES = {
    (8, (8, 0, 0)): 1_199_620,
    (8, (2, 0, 0)): 1_206_212,
    (32, (8, 4, 0)): 1_296_576,
    (64, (8, 4, 2)): 1_346_982,
}


def test_official_param_file_names() -> None:
    for cid, (tree, digest) in OFFICIAL.items():
        stem = param_file_stem(porep_params(cid))
        assert stem == (
            f"v28-stacked-proof-of-replication-merkletree-poseidon_hasher-{tree}-sha256_hasher-"
            f"{digest}"
        )


def test_params_and_ids() -> None:
    assert porep_circuit_ids() == list(PINNED)
    for cid, (_, inputs) in PINNED.items():
        p = porep_params(cid)
        assert p.circuit_id == cid and p.num_inputs == inputs
        assert blank_circuit(cid).witness is None
    big = porep_params("porep-64g")
    assert (big.layers, big.challenge_count, big.partitions) == (11, 18, 10)
    assert big.tree.arities == [8] * 9 + [8, 2] and big.tree_d.arities == [2] * 31
    for bad in ("porep-4k", "porep", "wpost-2k"):
        with pytest.raises(BadInput, match="PoRep circuits are"):
            porep_params(bad)


@pytest.mark.slow
def test_create_label_matches_native_and_upstream_count(rng: np.random.Generator) -> None:
    """create_label.rs's test: allocated id and parent bits (byte-wise big-endian), constant
    layer and node: 532,025 constraints, and the label equals the native one."""
    rid = int.from_bytes(rng.bytes(32), "little") & ((1 << 254) - 1)
    parents = [int.from_bytes(rng.bytes(32), "little") & ((1 << 254) - 1) for _ in range(14)]
    expanded = parents + parents + parents[:9]
    layer, node = 3, 22

    def be_bits(cs: CheckCS, x: int) -> list[Boolean]:
        data = x.to_bytes(32, "little")
        return [Boolean(AllocatedBit.alloc(cs, bool((b >> (7 - i)) & 1)))
                for b in data for i in range(8)]  # fmt: skip

    cs = CheckCS()
    parent_bits = [be_bits(cs, x) for x in expanded]
    id_bits = be_bits(cs, rid)
    node_bits = [Boolean.const(bool((node >> i) & 1)) for i in range(64)]
    out = create_label(cs, id_bits, parent_bits, layer, node_bits)
    assert cs.is_satisfied(), cs.first_failure
    assert cs.num_constraints == 532_025
    assert out.value == label(rid, layer, node, expanded)


def test_reverse_bit_numbering() -> None:
    bits = [Boolean.const(bool(i % 3 == 0)) for i in range(13)]
    out = reverse_bit_numbering(bits)
    assert len(out) == 16
    assert [b.value for b in out[:8]] == [b.value for b in bits[7::-1]]
    assert [b.value for b in out[8:]] == [False, False, False] + [b.value for b in bits[12:7:-1]]


@pytest.mark.slow
@pytest.mark.parametrize(("nodes", "arities"), list(UPSTREAM_TREES))
def test_upstream_test_tree_counts(nodes: int, arities: tuple[int, int, int]) -> None:
    c = counted(small_params(nodes, arities))
    assert (c.num_constraints, c.num_inputs) == (UPSTREAM_TREES[nodes, arities], 21)


@pytest.mark.slow
@pytest.mark.parametrize(
    "cid",
    [  # the production size in the default run; the other sizes (same path) with -m heavy
        c if c == "porep-32g" else pytest.param(c, marks=pytest.mark.heavy)
        for c in PINNED
        if c != "porep-2k"
    ],
)
def test_sector_counts(cid: str) -> None:
    """Every size from the structural counter (2 KiB is counted in full by the witness test,
    and the structural counter is checked against full counts in the test below)."""
    c = structural_counts(porep_params(cid))
    assert (c.num_constraints, c.num_inputs) == PINNED[cid]


@pytest.mark.heavy
def test_counters_agree_with_a_real_shape() -> None:
    """The matrix-free counter equals a real ShapeCS shape (densities included), and the
    structural count (one challenge, label layers after the second replayed) equals a fully
    counted circuit with two challenges and three layers."""
    p1 = small_params(8, (8, 0, 0), challenge_count=1)
    assert dataclasses.replace(counted(p1), method="shape") == shape_counts(p1)
    p3 = small_params(8, (8, 0, 0), layers=3, challenge_count=2)
    assert dataclasses.replace(structural_counts(p3), method="counted") == counted(p3)


@pytest.mark.slow
def test_witness_from_c1_satisfies(rng: np.random.Generator) -> None:
    c1 = parse_c1(fake_c1(rng).text)
    circuit = c1.circuit(0)
    t = time.perf_counter()
    w = synthesize_witness(circuit)
    print(f"2 KiB witness: {time.perf_counter() - t:.1f} s")
    assert w.inputs[1:] == c1.public_inputs(0) == public_inputs(circuit.params, circuit.witness)
    cs = check_circuit(circuit)
    assert cs.first_failure is None
    assert (cs.num_constraints, len(cs.inputs) - 1) == PINNED["porep-2k"]


@pytest.mark.slow
def test_sealed_sector_witness_satisfies(seed: int) -> None:
    """A 2 KiB sector sealed by cuzk.circuits.filecoin.seal (when that module is there)."""
    text = _sealed_c1(seed)
    if text is None:
        pytest.skip("cuzk.circuits.filecoin.seal.generate_c1 is not available yet")
    c1 = parse_c1(text)
    cs = check_circuit(c1.circuit(0))
    assert cs.first_failure is None
    assert cs.inputs[1:] == c1.public_inputs(0)
    # the registry's seeded circuit is that same sector
    circuit, inputs = SeededPoRepCircuit(porep_params("porep-2k"), seed).with_witness()
    assert circuit.witness == c1.witnesses[0] and inputs == c1.public_inputs(0)


@pytest.mark.slow
def test_corrupt_witness_fails(rng: np.random.Generator) -> None:
    """A witness whose data leaf is not the one the comm_d path commits to (what a parser
    without checks would let through) fails inside the TreeD inclusion."""
    c1 = parse_c1(fake_c1(rng).text)
    w = c1.witnesses[0]
    cp = w.proofs[1]
    d = cp.comm_d_path
    bad_d = MerklePath((d.leaf + 1) % (1 << 254), d.siblings, d.positions, d.root)
    bad = dataclasses.replace(w, proofs=(w.proofs[0], dataclasses.replace(cp, comm_d_path=bad_d)))
    cs = check_circuit(StackedCircuit(c1.params, bad))
    assert cs.first_failure is not None
    assert "challenge_1/comm_d_inclusion" in cs.first_failure[1]


def test_witness_count_checks(rng: np.random.Generator) -> None:
    c1 = parse_c1(fake_c1(rng).text)
    w = c1.witnesses[0]
    with pytest.raises(BadInput, match="2 challenge proofs|1 challenge proofs"):
        StackedCircuit(c1.params, dataclasses.replace(w, proofs=w.proofs[:1]))
    cp = w.proofs[0]
    short = dataclasses.replace(cp, drg_parents=cp.drg_parents[:5])
    with pytest.raises(BadInput, match="6 DRG and 8 expander"):
        StackedCircuit(c1.params, dataclasses.replace(w, proofs=(short, w.proofs[1])))
