"""Groth16 keys as plain data (the notation of Groth16 §3.2, bellperson's field names).

τ is the secret evaluation point, α, β, γ, δ the setup's secret scalars; [x]₁ = x·G₁ and
[x]₂ = x·G₂. Proving keys are big, so :class:`Parameters` holds only where each vector lies in
its file; backends load the points themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuzk.backend.base import PointSet
from cuzk.curve import G1, G2
from cuzk.groth16.qap import COSET, QapReduction


@dataclass(frozen=True)
class VerifyingKey:
    alpha_g1: G1  # [α]₁
    beta_g1: G1  # [β]₁ (used by the prover only)
    beta_g2: G2  # [β]₂
    gamma_g2: G2  # [γ]₂
    delta_g1: G1  # [δ]₁ (used by the prover only)
    delta_g2: G2  # [δ]₂
    ic: tuple[G1, ...]  # [(β·A_i(τ) + α·B_i(τ) + C_i(τ))/γ]₁ per input, ONE first

    @property
    def num_inputs(self) -> int:
        """Public inputs including ONE."""
        return len(self.ic)


@dataclass(frozen=True)
class Parameters:
    """A proving key: the verifying key plus five point vectors inside a ``.params`` file."""

    vk: VerifyingKey
    path: str  # the .params file
    h: PointSet  # [τ^i·t(τ)/δ]₁ for i < m − 1
    l: PointSet  # [(β·A_j(τ) + α·B_j(τ) + C_j(τ))/δ]₁ per aux variable  # noqa: E741
    a: PointSet  # [A_j(τ)]₁ for inputs, then A-dense aux
    b_g1: PointSet  # [B_j(τ)]₁ for B-dense inputs, then B-dense aux
    b_g2: PointSet  # [B_j(τ)]₂, same variables as b_g1
    #: How the prover makes h (bellperson's coset quotient; snarkjs keys use the odd coset,
    #: and their h points are the matching basis, their l points snarkjs's C query).
    reduction: QapReduction = COSET

    @property
    def vectors(self) -> tuple[PointSet, ...]:
        return (self.h, self.l, self.a, self.b_g1, self.b_g2)

    @property
    def domain_size(self) -> int:
        """m, the radix-2 domain the h query was made for."""
        return self.h.count + self.reduction.h_shortfall
