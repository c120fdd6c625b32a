"""The whole npm toolchain, fresh: circom2 compiles a circuit for BLS12-381, snarkjs computes
the witness, runs a small powers of tau and the Groth16 setup; cuzk proves through its CLI;
``snarkjs groth16 verify`` says OK and rejects a tampered proof. (~20 s: the 2^8 ceremony
dominates.)"""

from __future__ import annotations

import json

import pytest

from cuzk.cli.main import main
from tests.interop import toolchain

CIRCUIT = """
pragma circom 2.0.0;

template Chain(n) {
    signal input a;
    signal input b;
    signal output out;
    signal acc[n + 1];
    acc[0] <== a;
    for (var i = 0; i < n; i++) {
        acc[i + 1] <== acc[i] * acc[i] + b;
    }
    out <== acc[n] * a;
}

component main {public [b]} = Chain(40);
"""


@pytest.mark.slow
def test_circom_snarkjs_cuzk_round_trip(npm_bin, tmp_path):
    (tmp_path / "chain.circom").write_text(CIRCUIT)
    circuit = toolchain.compile_circuit(tmp_path / "chain.circom", tmp_path / "build")
    wtns = toolchain.witness(circuit, {"a": 7, "b": 3}, tmp_path / "chain.wtns")
    ptau = toolchain.powers_of_tau(8, tmp_path / "pot8.ptau")
    zkey, vk = toolchain.groth16_setup(
        circuit.r1cs, ptau, tmp_path / "chain.zkey", tmp_path / "vk.json"
    )
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"

    assert (
        main(
            [
                "snarkjs",
                "prove",
                str(zkey),
                str(wtns),
                str(proof),
                str(public),
                "--workers",
                "2",
                "--r1cs",
                str(circuit.r1cs),
            ]
        )
        == 0
    )
    assert toolchain.snarkjs_verifies(vk, public, proof)

    tampered = json.loads(public.read_text())
    tampered[-1] = str(int(tampered[-1]) + 1)
    bad_public = tmp_path / "bad_public.json"
    bad_public.write_text(json.dumps(tampered))
    assert not toolchain.snarkjs_verifies(vk, bad_public, proof)

    # And the other way round: snarkjs's proof of the same statement passes our verifier.
    theirs = tmp_path / "theirs.json"
    toolchain.snarkjs(
        "groth16", "prove", zkey, wtns, theirs, tmp_path / "their_public.json", cwd=tmp_path
    )
    assert (tmp_path / "their_public.json").read_text() == public.read_text()
    assert main(["snarkjs", "verify", str(vk), str(public), str(theirs)]) == 0
