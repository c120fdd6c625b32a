"""The QAP reduction: how a prover turns the constraint evaluations a, b, c into the H MSM's
scalars. It is the one place where Groth16 provers for different key formats differ (the role
ark-groth16's ``R1CSToQAP`` and ark-circom's ``CircomReduction`` play there).

* :data:`COSET` — bellperson's: h = coefficients of (a·b − c)/Z, computed on the coset g·⟨ω⟩,
  m − 1 of them; the key's H points are [τ^i·Z(τ)/δ]₁. Keys carry a C matrix, so the prover
  checks a·b = c row by row first and names the first violated constraint.
* :data:`ODD_COSET` — snarkjs's: the values of A·B − C on the odd points of the 2m-domain, m of
  them, with c = a∘b (a snarkjs key has no C matrix); the key's H points are the matching
  Lagrange basis over δ. Nothing can be checked before the proof; an unsatisfying witness shows
  as a proof that does not verify.
"""

from __future__ import annotations

from typing import ClassVar

from cuzk.backend.base import Backend, Vec
from cuzk.poly import Domain


class QapReduction:
    """One way from (a, b, c) to the H MSM's scalars; see the module docstring."""

    name: ClassVar[str]
    checks_constraints: ClassVar[bool]  # the key has C: a·b = c is checked before any MSM
    h_shortfall: ClassVar[int]  # the H query has m − h_shortfall points

    def h_length(self, domain: Domain) -> int:
        return domain.m - self.h_shortfall

    def h(self, backend: Backend, a: Vec, b: Vec, c: Vec, domain: Domain) -> Vec:
        """The H MSM's scalars as a handle of ``backend``."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<QAP reduction {self.name}>"


class CosetReduction(QapReduction):
    name = "coset"
    checks_constraints = True
    h_shortfall = 1

    def h(self, backend: Backend, a: Vec, b: Vec, c: Vec, domain: Domain) -> Vec:
        return backend.h_quotient(a, b, c, domain)


class OddCosetReduction(QapReduction):
    name = "odd-coset"
    checks_constraints = False
    h_shortfall = 0

    def h(self, backend: Backend, a: Vec, b: Vec, c: Vec, domain: Domain) -> Vec:
        return backend.odd_coset_h(a, b, domain)


COSET = CosetReduction()
ODD_COSET = OddCosetReduction()
