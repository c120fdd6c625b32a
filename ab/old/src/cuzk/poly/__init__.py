"""Polynomials over Fr: radix-2 domains, NTTs and the Groth16 H quotient."""

from cuzk.poly.domain import Domain, root_of_unity
from cuzk.poly.ntt import (
    coset_intt,
    coset_intt_inplace,
    coset_ntt,
    coset_ntt_inplace,
    intt,
    intt_inplace,
    ntt,
    ntt_inplace,
)
from cuzk.poly.quotient import h_quotient

__all__ = [
    "Domain",
    "coset_intt",
    "coset_intt_inplace",
    "coset_ntt",
    "coset_ntt_inplace",
    "h_quotient",
    "intt",
    "intt_inplace",
    "ntt",
    "ntt_inplace",
    "root_of_unity",
]
