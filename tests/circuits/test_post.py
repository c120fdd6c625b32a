"""WinningPoSt / WindowPoSt (the FallbackPoSt circuit): counts pinned against FILECOIN.md and
upstream, structural counts against real shapes, official parameter file names, and witnesses
from random native sectors that satisfy every constraint (and wrong ones that do not).

Count sources: FILECOIN.md's per-partition table (upstream asserts WinningPoSt 32 GiB with 132
inputs, WindowPoSt 32/64 GiB in filecoin-proofs constants.rs); the FallbackPoSt test trees of
storage-proofs-post tests (3 sectors × 5 challenges); file names from rust-fil-proofs'
parameters.json; 2 KiB .vk sizes from FILECOIN.md.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from cuzk.circuits import circuit_ids, get_circuit
from cuzk.circuits.filecoin.post import (
    FallbackPoStCircuit,
    SectorProof,
    pad_sectors,
    param_file_stem,
    post_circuit_ids,
    post_params,
    sector_constraint_count,
    shape_counts,
    structural_counts,
)
from cuzk.circuits.filecoin.post_params import PoStParams
from cuzk.circuits.filecoin.vanilla import (
    leaf_challenge,
    public_inputs,
    random_sector,
    random_vanilla,
    window_vanilla,
)
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.gadgets.merkle import MerklePath, TreeShape
from cuzk.r1cs import check_circuit, synthesize_shape, synthesize_witness

# id -> (constraints without input rows, public inputs without ONE): FILECOIN.md.
PINNED = {
    "winning-2k": (90_750, 132),
    "winning-8m": (230_670, 132),
    "winning-512m": (300_630, 132),
    "winning-32g": (370_590, 132),
    "winning-64g": (391_314, 132),
    "wpost-2k": (21_866, 22),
    "wpost-8m": (64_266, 22),
    "wpost-512m": (85_466, 22),
    "wpost-32g": (125_279_217, 2349 * 11),
    "wpost-64g": (129_887_900, 2300 * 11),
}

# parameters.json: the SHA-256 part of each official file name.
OFFICIAL_DIGESTS = {
    "winning-2k": "8-0-0-3ea05428c9d11689f23529cde32fd30aabd50f7d2c93657c1d3650bca3e8ea9e",
    "winning-8m": "8-0-0-50c7368dea9593ed0989e70974d28024efa9d156d585b7eea1be22b2e753f331",
    "winning-512m": "8-0-0-7d739b8cf60f1b0709eeebee7730e297683552e4b69cab6984ec0285663c5781",
    "winning-32g": "8-8-0-559e581f022bb4e4ec6e719e563bf0e026ad6de42e56c18714a2c692b1b88d7e",
    "winning-64g": "8-8-2-b62098629d07946e9028127e70295ed996fe3ed25b0f9f88eb610a0ab4385a3c",
    "wpost-2k": "8-0-0-0170db1f394b35d995252228ee359194b13199d259380541dc529fb0099096b0",
    "wpost-8m": "8-0-0-5294475db5237a2e83c3e52fd6c2b03859a1831d45ed08c4f35dbf9a803165a9",
    "wpost-512m": "8-0-0-0cfb4f178bbb71cf2ecfcd42accce558b27199ab4fb59cb78f2483fe21ef36d9",
    "wpost-32g": "8-8-0-0377ded656c6f524f1618760bffe4e0a1c51d5a70c4509eedae8a27555733edc",
    "wpost-64g": "8-8-2-2627e4006b67f99cef990c0a47d5426cb7ab0a0ad58fc1061547bf2d28b09def",
}


def _test_tree_params(tree: TreeShape) -> PoStParams:
    """storage-proofs-post's fallback circuit tests: 3 sectors × 5 challenges."""
    return PoStParams("window", tree.leaves * 32, tree, 3, 5)


def test_every_size_counts_as_pinned():
    assert set(post_circuit_ids()) == set(PINNED)
    for cid, (constraints, inputs) in PINNED.items():
        p = post_params(cid)
        t = time.perf_counter()
        c = structural_counts(p)
        print(f"{cid}: {c.num_constraints:,} constraints, {c.num_inputs} inputs, "
              f"{c.num_aux:,} aux in {time.perf_counter() - t:.2f} s")  # fmt: skip
        assert (c.num_constraints, c.num_inputs) == (constraints, inputs)
        assert sector_constraint_count(p.tree, p.challenge_count) * p.sector_count == constraints
        assert p.circuit_id == cid


@pytest.mark.parametrize(
    "tree,expected",
    [(TreeShape(64, 8), 16_869), (TreeShape(256, 8, 4), 22_674), (TreeShape(512, 8, 4, 2), 27_384)],
)
def test_upstream_test_trees_and_structural_equals_shape(tree, expected):
    p = _test_tree_params(tree)
    real = shape_counts(p)
    assert real.num_constraints == expected
    assert real.num_inputs == 3 * (1 + 5)
    structural = structural_counts(p)
    assert {**structural.as_dict(), "method": "shape"} == real.as_dict()


@pytest.mark.parametrize("cid", ["wpost-2k", "winning-2k"])
def test_structural_equals_real_shape_2k(cid):
    p = post_params(cid)
    real, structural = shape_counts(p), structural_counts(p)
    assert {**structural.as_dict(), "method": "shape"} == real.as_dict()
    assert real.b_input_density == 1  # only ONE is in B; every other input sits in A


def test_official_parameter_file_names_and_vk_sizes():
    for cid, digest in OFFICIAL_DIGESTS.items():
        stem = param_file_stem(post_params(cid))
        assert stem == f"v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-{digest}"
    # A .vk holds 6 fixed points (3 G1 + 3 G2 uncompressed: 864 bytes), a u32 count and one
    # 96-byte IC point per input with ONE: FILECOIN.md's 2 KiB sizes.
    for cid, size in (("wpost-2k", 3_076), ("winning-2k", 13_636)):
        assert 864 + 4 + 96 * (PINNED[cid][1] + 1) == size


def _window_2k(seed: int):
    p = post_params("wpost-2k")
    proofs, public, randomness = random_vanilla(p, seed)
    return p, proofs, public, randomness


def test_wpost_2k_witness_satisfies_shape_and_inputs(seed):
    p, proofs, public, randomness = _window_2k(seed)
    circuit = FallbackPoStCircuit(p, proofs)
    t = time.perf_counter()
    w = synthesize_witness(circuit)
    print(f"wpost-2k witness in {time.perf_counter() - t:.2f} s")
    check = check_circuit(circuit)
    assert check.is_satisfied(), check.first_failure
    assert check.aux == w.aux_ints() and check.inputs == w.inputs
    expected = public_inputs(p, randomness, public)
    assert w.inputs == [1, *expected]
    # The recorded matrices (built without values) hold on the witness too.
    shape = synthesize_shape(FallbackPoStCircuit(p), "wpost-2k")
    assert shape.num_aux == w.num_aux and shape.num_inputs == len(w.inputs)
    assert shape.first_unsatisfied(fr.from_ints(w.inputs + w.aux_ints())) is None
    # Public inputs: comm_r then 10 leaf indices per sector, in challenge order.
    for i, s in enumerate(public):
        chunk = expected[11 * i : 11 * (i + 1)]
        assert chunk[0] == s.comm_r
        assert chunk[1:] == [leaf_challenge(p, randomness, s.sector_id, n) for n in range(10)]


def test_winning_2k_witness_satisfies(seed):
    p = post_params("winning-2k")
    proofs, public, randomness = random_vanilla(p, seed)
    assert len({id(x) for x in public}) == 1 and len(proofs) == 66
    t = time.perf_counter()
    w = synthesize_witness(FallbackPoStCircuit(p, proofs))
    print(f"winning-2k witness in {time.perf_counter() - t:.2f} s")
    check = check_circuit(FallbackPoStCircuit(p, proofs))
    assert check.is_satisfied(), check.first_failure
    assert check.num_constraints == 90_750
    expected = public_inputs(p, randomness, public)
    assert w.inputs == [1, *expected]
    # 66 × (comm_r, challenge i of the one sector): api 1.0.0 indexes challenges by sector slot.
    sid = public[0].sector_id
    assert expected[1::2] == [leaf_challenge(p, randomness, sid, i) for i in range(66)]
    assert set(expected[0::2]) == {public[0].comm_r}


def _bad_sibling(mp: MerklePath) -> MerklePath:
    s = [list(level) for level in mp.siblings]
    s[1][3] = (s[1][3] + 1) % R
    return MerklePath(mp.leaf, s, mp.positions, mp.root)


def _replace(proofs, sector, **kw):
    out = list(proofs)
    out[sector] = SectorProof(**{**proofs[sector].__dict__, **kw})
    return tuple(out)


def test_wrong_witnesses_are_caught(seed):
    p, proofs, public, randomness = _window_2k(seed)
    root_eq = "outer namespace/sector_1/challenge_inclusion_4/enforce root is correct"
    s1 = proofs[1]
    cases = {
        "sibling": (_replace(proofs, 1, inclusion_proofs=tuple(
            _bad_sibling(m) if j == 4 else m for j, m in enumerate(s1.inclusion_proofs))),
            root_eq),
        "leaf": (_replace(proofs, 1, inclusion_proofs=tuple(
            MerklePath(m.leaf + 1, m.siblings, m.positions, m.root) if j == 4 else m
            for j, m in enumerate(s1.inclusion_proofs))), root_eq),
        "comm_r": (_replace(proofs, 0, comm_r=proofs[0].comm_r + 1),
                   "outer namespace/sector_0/enforce_comm_c_comm_r_last_hash_comm_r"),
        "comm_c": (_replace(proofs, 1, comm_c=s1.comm_c + 1),
                   "outer namespace/sector_1/enforce_comm_c_comm_r_last_hash_comm_r"),
        "comm_r_last": (_replace(proofs, 0, comm_r_last=proofs[0].comm_r_last + 1),
                        "outer namespace/sector_0/enforce_comm_c_comm_r_last_hash_comm_r"),
    }  # fmt: skip
    for what, (bad, name) in cases.items():
        cs = check_circuit(FallbackPoStCircuit(p, bad))
        assert cs.first_failure is not None, f"wrong {what} went unnoticed"
        assert cs.first_failure[1] == name, (what, cs.first_failure)
    # A proof for another leaf satisfies the circuit but not the verifier's public inputs.
    other = random_sector(p, public[0].sector_id, np.random.default_rng(seed + 1))
    from cuzk.circuits.filecoin.vanilla import sector_proof

    moved = sector_proof(p, other, [(c + 1) % p.leaves for c in
                                    (m.positions[0] + 8 * m.positions[1]
                                     for m in proofs[0].inclusion_proofs)])  # fmt: skip
    w = synthesize_witness(FallbackPoStCircuit(p, (moved, proofs[1])))
    assert w.inputs[1:] != public_inputs(p, randomness, public)


def test_short_partition_repeats_last_sector(seed):
    p = post_params("wpost-2k")
    rng = np.random.default_rng(seed)
    sector = random_sector(p, 1234, rng)
    randomness = fr.to_int(fr.random(1, rng)[0])
    proofs, public = window_vanilla(p, [sector], randomness)
    assert proofs[0] == proofs[1] and len(public) == 1
    w = synthesize_witness(FallbackPoStCircuit(p, proofs))
    inputs = public_inputs(p, randomness, public)
    assert inputs[:11] == inputs[11:] and w.inputs == [1, *inputs]
    assert pad_sectors(proofs[:1], p) == proofs
    with pytest.raises(BadInput):
        pad_sectors([], p)
    with pytest.raises(BadInput):
        pad_sectors(proofs * 2, p)
    with pytest.raises(BadInput):
        FallbackPoStCircuit(p, proofs[:1])


def test_a_circuit_pickles_its_sectors_paths_as_one_batch(seed):
    """The payload opener sends a PoSt circuit between processes: with its sectors' paths as
    one batch it must come back equal, digests included, and with the general readers' paths
    (lists of MerklePath) the ordinary way."""
    import pickle

    from cuzk.circuits import open_statement
    from cuzk.circuits.filecoin.vanilla_json import random_request
    from cuzk.gadgets.merkle import PathBatch

    p = post_params("wpost-2k")
    text, _ = random_request(p, np.random.default_rng(seed))
    circuit = open_statement("wpost-2k", (), text.encode()).circuit(0)
    assert all(isinstance(s.inclusion_proofs, PathBatch) for s in circuit.sectors)
    back = pickle.loads(pickle.dumps(circuit))  # made just above
    assert back == circuit and back.params == p
    for a, b in zip(back.sectors, circuit.sectors, strict=True):
        assert (a.comm_r, a.comm_c, a.comm_r_last) == (b.comm_r, b.comm_c, b.comm_r_last)
        assert b.inclusion_proofs.digests is not None
        for x, y in zip(a.inclusion_proofs.digests, b.inclusion_proofs.digests, strict=True):
            assert np.array_equal(x, y)
    assert synthesize_witness(back).inputs == synthesize_witness(circuit).inputs

    listed = FallbackPoStCircuit(p, tuple(
        SectorProof(s.comm_r, s.comm_c, s.comm_r_last, list(s.inclusion_proofs))
        for s in circuit.sectors
    ))  # fmt: skip
    again = pickle.loads(pickle.dumps(listed))  # made just above
    assert again == listed and isinstance(again.sectors[0].inclusion_proofs, list)
    for blocks in ([], [1]):  # the synthesis pool's views of a circuit's sectors
        view = circuit.view(blocks)
        assert pickle.loads(pickle.dumps(view)) == view  # made just above


def test_registry_ids(seed):
    assert set(PINNED) <= set(circuit_ids())
    c = get_circuit("wpost-2k", seed)
    shape = synthesize_shape(c, "wpost-2k")
    assert shape.num_constraints == 21_866 + 23  # the prover's input rows included
    w = synthesize_witness(c)
    assert shape.first_unsatisfied(fr.from_ints(w.inputs + w.aux_ints())) is None
    circuit, inputs = c.with_witness()
    assert w.inputs == [1, *inputs]
    with pytest.raises(BadInput):
        get_circuit("wpost-1g")
    with pytest.raises(BadInput):
        synthesize_witness(get_circuit("winning-32g"))  # needs real vanilla proofs


def test_circuit_info_cli(capsys):
    import argparse
    import json

    from cuzk.cli import filecoin_cmd

    parser = argparse.ArgumentParser(prog="cuzk")
    filecoin_cmd.add_parsers(parser.add_subparsers(dest="command", required=True))
    for argv, method in ((["circuit-info", "wpost-2k", "--json"], "shape"),
                         (["circuit-info", "wpost-32g", "--json"], "structural")):  # fmt: skip
        args = parser.parse_args(argv)
        assert filecoin_cmd.COMMANDS[args.command](args) == 0
        info = json.loads(capsys.readouterr().out)
        assert info["method"] == method
        assert (info["num_constraints"], info["num_inputs"]) == PINNED[argv[1]]
    args = parser.parse_args(["circuit-info", "winning-2k", "--method", "structural"])
    assert filecoin_cmd.COMMANDS[args.command](args) == 0
    assert "90,750" in capsys.readouterr().out
    with pytest.raises(BadInput):
        filecoin_cmd.circuit_info("synthetic:1000", "structural")
