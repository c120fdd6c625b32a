"""Virtual inputs in the circuits: the satisfiability check accepts partitions built from
virtual PoRep, WindowPoSt and SnapDeals inputs and refuses a virtual C1 with one label changed
(trees committing to the changed label) or one path sibling changed; proofs from virtual
inputs verify under keys from setup.

PoSt partitions (≤ 91k constraints) run in the default suite; porep-2k (2.7M), snap-2k
(1.7M) and one challenge of a 32 GiB PoRep partition (~7M) take minutes on two cores and are
``heavy`` (``pytest -m heavy``).
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from cuzk.circuits import get_circuit, key_file_stem, open_statement
from cuzk.circuits.filecoin.porep import StackedCircuit
from cuzk.circuits.filecoin.porep_c1 import parse_c1
from cuzk.circuits.filecoin.post import post_params
from cuzk.circuits.filecoin.seal.virtual import (
    Draws,
    label_sector,
    seal_proof_name,
    virtual_post,
    virtual_seal,
    virtual_update,
)
from cuzk.circuits.filecoin.vanilla_json import read_request, request_json
from cuzk.gadgets.merkle import MerklePath
from cuzk.r1cs import check_circuit, synthesize_shape

KIB = 1 << 10
PINNED = {"porep-2k": 2_687_921, "snap-2k": 1_705_039, "wpost-2k": 21_866, "wpost-8m": 64_266,
          "winning-2k": 90_750}  # fmt: skip


def _wpost_request(seed: int, circuit_id: str = "wpost-2k") -> str:
    params = post_params(circuit_id)
    vanilla, randomness = virtual_post(params, seed)
    return request_json(params, vanilla, randomness, 11)


@pytest.mark.parametrize("circuit_id", ["wpost-2k", "wpost-8m", "winning-2k"])
def test_post_virtual_partition_satisfies(circuit_id: str, seed: int) -> None:
    _, circuit, inputs = read_request(_wpost_request(seed, circuit_id))
    cs = check_circuit(circuit)
    assert cs.first_failure is None
    assert cs.num_constraints == PINNED[circuit_id] and cs.inputs[1:] == inputs


@pytest.mark.slow
def test_wpost_2k_virtual_proof_verifies(tmp_path, pool, cpu_backend, seed: int) -> None:
    from cuzk.groth16 import prove, verify
    from cuzk.groth16.setup import generate_parameters

    shape = synthesize_shape(get_circuit("wpost-2k"), "wpost-2k")
    params = generate_parameters(shape, tmp_path, key_file_stem("wpost-2k"), seed=seed, pool=pool)
    _, circuit, inputs = read_request(_wpost_request(seed))
    proof, got = prove(circuit, shape, params, cpu_backend)
    assert list(got) == inputs and verify(params.vk, inputs, proof)
    other = [inputs[0] ^ 1, *inputs[1:]]
    assert not verify(params.vk, other, proof)


@pytest.mark.heavy
def test_snap_2k_virtual_partition_satisfies(seed: int) -> None:
    text = json.dumps(virtual_update(2 * KIB, seed).document())
    st = open_statement("snap-2k", payload=text.encode())
    cs = check_circuit(st.circuit(0))
    assert cs.first_failure is None
    assert cs.num_constraints == PINNED["snap-2k"] and tuple(cs.inputs[1:]) == st.expected(0)


@pytest.mark.heavy
def test_porep_2k_virtual_partition_satisfies(seed: int) -> None:
    c1 = parse_c1(json.dumps(virtual_seal(2 * KIB, seed).c1_document()))
    cs = check_circuit(c1.circuit(0))
    assert cs.first_failure is None
    assert cs.num_constraints == PINNED["porep-2k"] and cs.inputs[1:] == c1.public_inputs(0)


@pytest.mark.heavy
def test_porep_2k_circuit_refuses_changed_label_and_sibling(seed: int) -> None:
    """The parser would refuse both (test_virtual), so the witnesses go to the circuit
    directly. A parent-only node's label changed after derivation, with TreeC rebuilt over
    it: every path checks, but the column the circuit hashes from the challenged node's
    recomputed labels is not in TreeC. And a TreeR sibling changed: the inclusion fails."""
    d = Draws(seed)
    inputs = dict(prover_id=d.bytes32("p"), sector_id=seed, ticket=d.bytes32("t"),
                  seed=d.bytes32("s"))  # fmt: skip
    lab = label_sector(seal_proof_name(2 * KIB), data_block=d.block("data", 64), draws=d,
                       **inputs)  # fmt: skip
    c = lab.challenges[0][0]
    parent = next(q for q in lab.parents[c][:6] if q not in lab.parents)
    lab.columns[parent][0] ^= 1 << 9
    vs = lab.commit()
    (w,) = vs.witnesses()
    cs = check_circuit(StackedCircuit(lab.proof.params, w))
    assert cs.first_failure is not None
    assert cs.first_failure[1].startswith("challenge_0/c_x_inclusion/")

    (w,) = virtual_seal(2 * KIB, seed).witnesses()
    cp = w.proofs[1]
    r = cp.comm_r_last_path
    sibs = [list(s) for s in r.siblings]
    sibs[1][5] = (sibs[1][5] + 1) % (1 << 254)
    bad = dataclasses.replace(cp, comm_r_last_path=MerklePath(r.leaf, sibs, r.positions, r.root))
    tampered = dataclasses.replace(w, proofs=(w.proofs[0], bad))
    cs = check_circuit(StackedCircuit(lab.proof.params, tampered))
    assert cs.first_failure is not None
    assert cs.first_failure[1].startswith("challenge_1/comm_r_last_data_inclusion/")


@pytest.mark.heavy
def test_one_challenge_of_a_32g_partition_satisfies(seed: int) -> None:
    """A whole 32 GiB partition is 130M constraints; one of its 18 challenges (11 labels,
    30-level TreeD, 8-8-0 TreeC/TreeR paths, the 32 GiB replica_id and roots) is ~7M and is
    checked here as the partition circuit's one-challenge view (minutes)."""
    vs = virtual_seal(32 << 30, seed)
    w = vs.witnesses()[seed % 10]
    one = StackedCircuit(vs.labels.proof.params, w).view([seed % 18])
    assert one.params.challenge_count == 1
    cs = check_circuit(one)
    assert cs.first_failure is None
    # porep.structural_counts of the one-challenge parameters (the full partition's
    # 130,278,541 is the same header plus 18 such challenges)
    assert cs.num_constraints == 7_238_236
    assert len(cs.inputs) - 1 == 3 + 18
    assert cs.inputs[1:4] == [vs.labels.replica_id, vs.comm_d, vs.comm_r]
    assert cs.inputs[4] == w.proofs[seed % 18].challenge


@pytest.mark.heavy
@pytest.mark.parametrize("circuit_id", ["porep-2k", "snap-2k"])
def test_virtual_payload_proved_through_the_engine(circuit_id, tmp_path, pool, seed) -> None:
    """As tests/engine/test_filecoin_engine.py, from virtual inputs."""
    from cuzk.groth16.setup import generate_parameters
    from tests.engine.helpers import prove_payload

    shape = synthesize_shape(get_circuit(circuit_id), circuit_id)
    generate_parameters(shape, tmp_path, key_file_stem(circuit_id), seed=seed, pool=pool)
    if circuit_id == "porep-2k":
        payload = json.dumps(virtual_seal(2 * KIB, seed).c1_document()).encode()
    else:
        payload = json.dumps(virtual_update(2 * KIB, seed).document()).encode()
    prove_payload(circuit_id, payload, tmp_path)
