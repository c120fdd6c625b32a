"""Regenerate the committed snarkjs fixtures in tests/interop/fixtures (run by hand).

    .venv/bin/python tests/interop/make_fixtures.py

Compiles fixtures/fixture.circom with circom2 for BLS12-381, computes a witness, runs a
one-contribution powers of tau (2^9) and Groth16 setup with snarkjs, and stores the key, the
verification key, the witness and a snarkjs-made proof. The test suite only reads these files,
so CI needs no powers-of-tau ceremony (the slow part: ~20 s here).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import toolchain

HERE = Path(__file__).resolve().parent / "fixtures"
POWER = 9
INPUTS = {"x": 3, "y": 11, "secret": 0x0123456789ABCDEF, "other": 0xF0E1D2C3B4A59687}


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="cuzk-fixtures-") as tmp:
        work = Path(tmp)
        circuit = toolchain.compile_circuit(HERE / "fixture.circom", work)
        wtns = toolchain.witness(circuit, INPUTS, work / "fixture.wtns")
        ptau = toolchain.powers_of_tau(POWER, work / f"pot{POWER}.ptau")
        zkey, vk = toolchain.groth16_setup(
            circuit.r1cs, ptau, work / "fixture.zkey", work / "fixture_vk.json"
        )
        toolchain.snarkjs(
            "groth16",
            "prove",
            zkey,
            wtns,
            work / "snarkjs_proof.json",
            work / "snarkjs_public.json",
            cwd=work,
        )
        for f in (
            circuit.r1cs,
            wtns,
            zkey,
            vk,
            work / "snarkjs_proof.json",
            work / "snarkjs_public.json",
        ):
            shutil.copy(f, HERE / f.name)
    for f in sorted(HERE.iterdir()):
        print(f"{f.name:24s} {f.stat().st_size:>8,} bytes")


if __name__ == "__main__":
    main()
