"""Vanilla proofs in filecoin-proofs' JSON layout: round trips through the circuit for all tree
kinds (Single / Sub / Top), and every corruption the issue lists is refused with a reason."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cuzk.circuits.filecoin.post import post_params
from cuzk.circuits.filecoin.post_params import PoStParams
from cuzk.circuits.filecoin.vanilla import random_sector
from cuzk.circuits.filecoin.vanilla_json import dumps, generate, loads, partition_circuit
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.gadgets.merkle import TreeShape
from cuzk.r1cs import check_circuit


def _randomness(rng) -> int:
    return fr.to_int(fr.random(1, rng)[0])


def test_winning_2k_json_round_trip_satisfies(rng):
    p = post_params("winning-2k")
    sector = random_sector(p, int(rng.integers(1 << 62)), rng)
    randomness = _randomness(rng)
    text = dumps(generate(p, [sector], randomness), p)
    doc = json.loads(text)
    assert list(doc[0]) == ["sector_id", "comm_r", "vanilla_proof"]
    first = doc[0]["vanilla_proof"]["sectors"][0]["inclusion_proofs"][0]["data"]["Single"]
    assert len(first["path"]["path"]) == 2 and len(first["path"]["path"][0]["hashes"]) == 7
    assert len(first["root"]) == 32
    circuit, inputs = partition_circuit(p, loads(text, p), randomness)
    cs = check_circuit(circuit)
    assert cs.is_satisfied(), cs.first_failure
    assert cs.inputs == [1, *inputs] and len(inputs) == 132


@pytest.mark.parametrize("tree", [TreeShape(64, 8), TreeShape(256, 8, 4), TreeShape(512, 8, 4, 2)])
def test_window_json_all_tree_kinds(tree, rng):
    p = PoStParams("window", tree.leaves * 32, tree, 2, 3, "1.2.0")
    sectors = [random_sector(p, int(rng.integers(1 << 62)), rng) for _ in range(2)]
    randomness = _randomness(rng)
    vanilla = loads(dumps(generate(p, sectors, randomness), p), p)
    circuit, inputs = partition_circuit(p, vanilla, randomness)
    cs = check_circuit(circuit)
    assert cs.is_satisfied(), cs.first_failure
    assert cs.inputs == [1, *inputs]
    # One sector only: the partition repeats it.
    circuit, inputs = partition_circuit(p, vanilla[:1], randomness)
    assert check_circuit(circuit).is_satisfied() and inputs[:4] == inputs[4:]


def test_corrupted_json_is_refused_with_reason(rng):
    p = post_params("wpost-2k")
    sectors = [random_sector(p, int(rng.integers(1 << 62)), rng) for _ in range(2)]
    randomness = _randomness(rng)
    text = dumps(generate(p, sectors, randomness), p)

    def corrupt(edit):
        doc = json.loads(text)
        edit(doc)
        return json.dumps(doc)

    def proof0(doc):
        return doc[1]["vanilla_proof"]["sectors"][0]["inclusion_proofs"][3]["data"]["Single"]

    def bump(v):
        v[0] ^= 1

    cases = {
        "sibling": (lambda d: bump(proof0(d)["path"]["path"][1]["hashes"][2]), "does not hash"),
        "leaf": (lambda d: bump(proof0(d)["leaf"]), "does not hash"),
        "root": (lambda d: bump(proof0(d)["root"]), "does not hash"),
        "comm_r": (lambda d: bump(d[0]["comm_r"]), "comm_r is not Poseidon"),
        "short hash": (lambda d: proof0(d)["leaf"].pop(), "32 bytes"),
        "index": (lambda d: proof0(d)["path"]["path"][0].update(index=9), "out of range"),
        "missing": (lambda d: d[0].pop("vanilla_proof"), "missing 'vanilla_proof'"),
    }
    for what, (edit, reason) in cases.items():
        with pytest.raises(BadInput, match=reason):
            loads(corrupt(edit), p)
        print(f"{what}: refused")
    with pytest.raises(BadInput, match="not valid JSON"):
        loads(text[: len(text) // 2], p)
    # Well-formed proofs for other randomness prove unchallenged leaves.
    with pytest.raises(BadInput, match="the challenge is leaf"):
        partition_circuit(p, loads(text, p), randomness ^ 1)
    # Another sector's proof under this sector's id: every path checks, the challenges do not.
    doc = json.loads(text)
    doc[0]["sector_id"], doc[1]["sector_id"] = doc[1]["sector_id"], doc[0]["sector_id"]
    with pytest.raises(BadInput, match="the challenge is leaf"):
        partition_circuit(p, loads(json.dumps(doc), p), randomness)
    assert np.all(np.asarray(json.loads(text)[0]["comm_r"]) < 256)


@pytest.mark.parametrize(
    "argv",
    [["winning-post"], ["window-post"], ["window-post", "--sectors", "1", "--partition", "2"]],
)
def test_gen_vanilla_request_reads_back_into_a_satisfied_circuit(argv, tmp_path, seed):
    import argparse

    from cuzk.circuits.filecoin.vanilla_json import read_request
    from cuzk.cli import filecoin_cmd

    parser = argparse.ArgumentParser(prog="cuzk")
    filecoin_cmd.add_parsers(parser.add_subparsers(dest="command", required=True))
    out = tmp_path / "req.json"
    args = parser.parse_args(["gen-vanilla", *argv, "--out", str(out), "--seed", str(seed)])
    assert filecoin_cmd.COMMANDS[args.command](args) == 0
    text = out.read_text()
    cid, circuit, inputs = read_request(text)
    assert cid == ("winning-2k" if argv[0] == "winning-post" else "wpost-2k")
    cs = check_circuit(circuit)
    assert cs.is_satisfied(), cs.first_failure
    assert cs.inputs == [1, *inputs]
    with pytest.raises(BadInput, match="not valid JSON"):
        read_request(text[:-100])
    doc = json.loads(text)
    doc["circuit"] = "wpost-3k"
    with pytest.raises(BadInput, match="unknown circuit"):
        read_request(json.dumps(doc))
