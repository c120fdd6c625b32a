"""Which curve a circom/snarkjs file was made for, told from the primes it stores.

snarkjs identifies curves by prime only (``getCurveFromQ``/``getCurveFromR``); cuzk proves
BLS12-381 alone, so the readers turn any other prime into an error that says what the file is.
"""

from __future__ import annotations

from cuzk.field.constants import P, R

#: snarkjs's name for BLS12-381: what proof.json and vk.json carry in "curve".
CURVE_NAME = "bls12381"

_BN254_R = 21888242871839275222246405745257275088548364400416034343698204186575808495617
_BN254_Q = 21888242871839275222246405745257275088696311157297823662689037894645226208583

_KNOWN = {
    R: "BLS12-381's scalar field r",
    P: "BLS12-381's base field p",
    _BN254_R: "BN254's (bn128's) scalar field",
    _BN254_Q: "BN254's (bn128's) base field",
}


def describe_prime(prime: int) -> str:
    """A human name for a prime found in a file, e.g. "BN254's (bn128's) scalar field"."""
    known = _KNOWN.get(prime)
    return known if known else f"the unknown prime {prime:#x}"
