"""Groth16 verification: e(A, B) = e(α, β) · e(Σ xᵢ·ICᵢ, γ) · e(C, δ).

``verify`` returns False for a well-formed proof that does not check and raises BadInput for
input that is not a statement of this key (wrong number of inputs, inputs ≥ r).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

import numpy as np

from cuzk.curve import G1
from cuzk.curve.msm import g1_msm
from cuzk.curve.pairing import pairing_check
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.groth16.keys import VerifyingKey
from cuzk.groth16.proof import Proof


def _scalars_le(values: Sequence[int]) -> np.ndarray:
    return fr.to_bytes_le(fr.from_ints(list(values)))


def _check_inputs(vk: VerifyingKey, inputs: Sequence[int]) -> None:
    if len(inputs) + 1 != len(vk.ic):
        raise BadInput(f"the key takes {len(vk.ic) - 1} public inputs, {len(inputs)} were given")
    for i, x in enumerate(inputs):
        if not 0 <= x < R:
            raise BadInput(f"public input {i} is not a field element (0 ≤ x < r)")


def input_commitment(vk: VerifyingKey, inputs: Sequence[int]) -> G1:
    """IC₀ + Σ xᵢ·ICᵢ: the public inputs folded into one G1 point."""
    _check_inputs(vk, inputs)
    return g1_msm(list(vk.ic), _scalars_le([1, *inputs]))


def verify(vk: VerifyingKey, inputs: Sequence[int], proof: Proof) -> bool:
    acc = input_commitment(vk, inputs)
    return pairing_check(
        [
            (proof.a, proof.b),
            (-vk.alpha_g1, vk.beta_g2),
            (-acc, vk.gamma_g2),
            (-proof.c, vk.delta_g2),
        ]
    )


def verify_batch(vk: VerifyingKey, statements: Sequence[tuple[Sequence[int], Proof]]) -> bool:
    """All proofs at once with random 128-bit weights ρₖ:
    Π e(ρₖ·Aₖ, Bₖ) = e(α, β)^Σρ · e(Σ ρₖ·ICₖ, γ) · e(Σ ρₖ·Cₖ, δ); k + 3 pairings instead of 4k.
    A forged proof passes only with probability ≈ 2⁻¹²⁸."""
    if not statements:
        return True
    rhos = [secrets.randbits(128) | 1 for _ in statements]
    weights = _scalars_le(rhos)
    ics = [input_commitment(vk, inputs) for inputs, _ in statements]
    proofs = [p for _, p in statements]
    pairs = [(g1_msm([p.a], weights[k : k + 1]), p.b) for k, p in enumerate(proofs)]
    pairs.append((-g1_msm([vk.alpha_g1], _scalars_le([sum(rhos) % R])), vk.beta_g2))
    pairs.append((-g1_msm(ics, weights), vk.gamma_g2))
    pairs.append((-g1_msm([p.c for p in proofs], weights), vk.delta_g2))
    return pairing_check(pairs)
