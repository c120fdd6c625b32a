"""circom / snarkjs interoperability: their files in, proofs snarkjs accepts out.

Readers for circom's ``.r1cs`` and ``.wtns`` and snarkjs's Groth16 ``.zkey``; a prover that
computes H the way snarkjs does (odd points of the 2m-domain, :mod:`cuzk.poly.snarkjs_h`) over
the key as it is; snarkjs's JSON files; verification against ``verification_key.json``; and,
for tests and benchmarks only, an insecure key generator (:mod:`.zkey_setup`) that spares
snarkjs's slow powers-of-tau ceremony.
This package sits at the groth16 layer: it uses field, curve, poly, r1cs, backend and groth16,
and nothing above them.
"""

from cuzk.interop.prover import PreparedKey, finalize, prepare, prove, start
from cuzk.interop.r1cs import CircomR1cs, read_r1cs
from cuzk.interop.snarkjs_json import (
    proof_from_json,
    proof_to_json,
    public_from_json,
    public_to_json,
    vk_from_json,
    write_json,
)
from cuzk.interop.verify import verify_files, verify_json
from cuzk.interop.wtns import Witness, read_wtns
from cuzk.interop.zkey import Zkey, read_zkey

__all__ = [
    "CircomR1cs",
    "PreparedKey",
    "Witness",
    "Zkey",
    "finalize",
    "prepare",
    "proof_from_json",
    "proof_to_json",
    "prove",
    "public_from_json",
    "public_to_json",
    "read_r1cs",
    "read_wtns",
    "read_zkey",
    "start",
    "verify_files",
    "verify_json",
    "vk_from_json",
    "write_json",
]
