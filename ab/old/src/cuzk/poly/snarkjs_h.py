"""snarkjs's H: A·B − C on the odd points of the 2m-domain, with snarkjs's roots of unity.

bellperson divides (A·B − C) by Z on the coset 7·⟨ω⟩ and interpolates h (:mod:`.quotient`).
snarkjs instead evaluates A, B, C on the odd points ω'_{2m}·ω'^i of the 2m-domain and stops
there: Z is the constant −2 on those points and the key's H query (the odd Lagrange basis of
the 2m-domain over δ) absorbs it. So the H scalars are just

    h'[i] = A(s·ω'^i)·B(s·ω'^i) − C(s·ω'^i),   s = ω'_{2m},

where A, B, C interpolate a, b, c = a∘b given over ⟨ω'⟩ in snarkjs's index order.

snarkjs's roots are not ours. ffjavascript takes the smallest quadratic non-residue of Fr (5
for BLS12-381) and ω'_{2^32} = 5^t, where bellperson (and our NTTs) use 7^t. Both generate the
same cyclic group of order 2^32, so ω' = ω^k for one odd k, and for every domain size
ω'_m = ω_m^k. Index i of snarkjs's order is therefore index k·i mod m of ours: a permutation.
We permute the inputs into our order, run our transforms with coset shift s, and permute back —
no second NTT implementation, and the same trick serves any backend's NTT.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import FR_ROOT_OF_UNITY, FR_TWO_ADICITY, R
from cuzk.poly.domain import Domain
from cuzk.poly.ntt import _forward_inplace, _inverse_unscaled_inplace


@cache
def snarkjs_nonresidue() -> int:
    """The smallest quadratic non-residue of Fr, found as ffjavascript finds it (from 2 up)."""
    q = 2
    while pow(q, (R - 1) // 2, R) != R - 1:
        q += 1
    return q


@cache
def snarkjs_root(log_m: int) -> int:
    """ffjavascript's ``Fr.w[log_m]``: the primitive 2^log_m-th root of unity snarkjs uses."""
    if not 0 <= log_m <= FR_TWO_ADICITY:
        raise BadInput(f"Fr has no 2^{log_m}-th roots of unity")
    w = pow(snarkjs_nonresidue(), (R - 1) >> FR_TWO_ADICITY, R)
    return pow(w, 1 << (FR_TWO_ADICITY - log_m), R)


@cache
def root_exponent() -> int:
    """The odd k with snarkjs's ω'_{2^32} = (our ω_{2^32})^k (Pohlig–Hellman in a 2-group)."""
    target, base = snarkjs_root(FR_TWO_ADICITY), FR_ROOT_OF_UNITY
    k = 0
    for bit in range(FR_TWO_ADICITY):
        # (target·base^−k)^(2^(31−bit)) is 1 exactly when bit `bit` of the log is 0.
        probe = target * pow(base, -k, R) % R
        if pow(probe, 1 << (FR_TWO_ADICITY - 1 - bit), R) != 1:
            k |= 1 << bit
    if pow(base, k, R) != target:  # pragma: no cover - would mean a broken constant
        raise AssertionError("snarkjs's root of unity is not a power of ours")
    return k


def snarkjs_odd_shift(log_m: int) -> int:
    """s, the shift snarkjs applies: ω'_{2m}, or Fr.shift = 25 when m = 2^32 (no ω'_{2m})."""
    if log_m == FR_TWO_ADICITY:
        return snarkjs_nonresidue() ** 2 % R
    return snarkjs_root(log_m + 1)


def snarkjs_order(m: int) -> np.ndarray:
    """perm with perm[i] = k·i mod m: snarkjs's index i is our index perm[i]."""
    return (np.arange(m, dtype=np.uint64) * np.uint64(root_exponent() % m)) % np.uint64(m)


def snarkjs_h(a: fr.FrVec, b: fr.FrVec, domain: Domain) -> fr.FrVec:
    """The H MSM's scalars for a snarkjs key (Montgomery form; canonicalise for the MSM).

    Args:
        a, b: A·z and B·z per QAP row in snarkjs's order, length ≤ m (zero-padded); c = a∘b.
        domain: the key's domain (m = domainSize).
    Returns:
        FrVec of length m: A·B − C at s·ω'^i for i < m.
    Raises:
        BadInput: a and b differ in length or exceed m.
    """
    n = getattr(a, "shape", (None,))[0]
    if getattr(b, "shape", (None,))[0] != n:
        raise BadInput("a and b must have the same length")
    if n is None or n > domain.m:
        raise BadInput(f"{n} values do not fit a domain of {domain.m}")
    perm = snarkjs_order(domain.m)
    shift = snarkjs_odd_shift(domain.log_m)
    c = fr.mul(a, b)
    # Three length-m buffers in our order; b's and c's odd values fold into a's one by one.
    h = _odd_values(a, perm, shift, domain)
    fr.mul_inplace(h, _odd_values(b, perm, shift, domain))
    fr.sub_inplace(h, _odd_values(c, perm, shift, domain))
    return h[perm]


def _odd_values(v: fr.FrVec, perm: np.ndarray, shift: int, domain: Domain) -> fr.FrVec:
    """Values over ⟨ω'⟩ (snarkjs order) → values at shift·ω^j (our order), length m."""
    buf = fr.zeros(domain.m)
    buf[perm[: v.shape[0]]] = v
    _inverse_unscaled_inplace(buf, domain)
    fr.scale_by_powers_inplace(buf, shift, domain.m_inv)
    _forward_inplace(buf, domain)
    return buf
