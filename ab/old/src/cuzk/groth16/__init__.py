"""Groth16 over BLS12-381 with bellperson's conventions: keys, files, setup, prover, verifier."""

from cuzk.groth16.keys import Parameters, VerifyingKey
from cuzk.groth16.params_io import (
    read_header,
    read_params,
    read_params_unchecked,
    read_vk,
    write_vk,
)
from cuzk.groth16.proof import PROOF_SIZE, Proof, proofs_from_bytes, proofs_to_bytes
from cuzk.groth16.prover import Timings, finalize, prove, start, synthesize
from cuzk.groth16.verifier import verify, verify_batch

__all__ = [
    "PROOF_SIZE",
    "Parameters",
    "Proof",
    "Timings",
    "VerifyingKey",
    "finalize",
    "proofs_from_bytes",
    "proofs_to_bytes",
    "prove",
    "read_header",
    "read_params",
    "read_params_unchecked",
    "read_vk",
    "start",
    "synthesize",
    "verify",
    "verify_batch",
    "write_vk",
]
