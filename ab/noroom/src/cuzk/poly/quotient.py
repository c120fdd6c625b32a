"""The Groth16 H quotient: h(X) = (A(X)·B(X) − C(X)) / (X^m − 1), bellperson's way.

The prover holds a, b, c as evaluations over ⟨ω⟩. Dividing by Z(X) = X^m − 1 is exact but Z
vanishes on ⟨ω⟩, so the product is evaluated on the coset g·⟨ω⟩ (g = 7), where Z is the
constant g^m − 1. Steps (FORMATS.md, "The H quotient"), with the scalings fused:

1. a, b, c ← iNTT, then coefficient i × g^i (one pass carries both 1/m and g^i);
2. NTT each (now evaluations on the coset);
3. a ← a·b − c (b and c are folded in as soon as each is ready);
4. iNTT, then coefficient i × g^−i · m⁻¹ · (g^m − 1)⁻¹ (one pass again);
5. the first m − 1 coefficients are h (deg h ≤ m − 2).

Peak memory is two length-m vectors (2·32·m bytes) beyond the inputs, less when the caller
lets us reuse its buffers.
"""

from __future__ import annotations

import numpy as np

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.poly.domain import Domain
from cuzk.poly.ntt import _forward_inplace, _inverse_unscaled_inplace, _padded


def _work_buffer(v: fr.FrVec, domain: Domain, overwrite: bool) -> fr.FrVec:
    """The caller's array when it may be clobbered and already has length m, else a padded copy."""
    if (
        overwrite
        and isinstance(v, np.ndarray)
        and v.dtype == np.uint64
        and v.shape == (domain.m, 4)
        and v.flags.c_contiguous
        and v.flags.writeable
    ):
        return v
    return _padded(v, domain)


def h_quotient(
    a: fr.FrVec, b: fr.FrVec, c: fr.FrVec, domain: Domain, *, overwrite: bool = False
) -> fr.FrVec:
    """Coefficients of h = (A·B − C)/Z, the scalars of the h MSM.

    Args:
        a, b, c: per-constraint values ⟨A_row, z⟩ etc., length n ≤ m (zero-padded to m).
        domain: the radix-2 domain of size m ≥ n.
        overwrite: allow a, b, c to be used as scratch when they already have length m
            (saves up to 2·32·m bytes; their contents are destroyed).
    Returns:
        FrVec of length m − 1 (a view of a length-m buffer).
    Raises:
        BadInput: mismatched lengths or more values than the domain holds.
    """
    n = getattr(a, "shape", (None,))[0]
    if getattr(b, "shape", (None,))[0] != n or getattr(c, "shape", (None,))[0] != n:
        raise BadInput("a, b and c must have the same length")
    g, m_inv = domain.coset_shift, domain.m_inv
    # Two length-m buffers at a time, not three: b's coset values are folded into a's before c
    # gets a buffer (at m = 2^27 that is 4 GiB less).
    h = _coset_values(a, domain, overwrite)
    fr.mul_inplace(h, _coset_values(b, domain, overwrite))
    fr.sub_inplace(h, _coset_values(c, domain, overwrite))
    _inverse_unscaled_inplace(h, domain)
    z_inv = domain.vanishing_on_coset_inv()
    fr.scale_by_powers_inplace(h, pow(g, -1, R), m_inv * z_inv % R)
    return h[: domain.m - 1]


def _coset_values(v: fr.FrVec, domain: Domain, overwrite: bool) -> fr.FrVec:
    """Evaluations over ⟨ω⟩ → evaluations over g·⟨ω⟩ (steps 1–2), in a length-m buffer."""
    buf = _work_buffer(v, domain, overwrite)
    _inverse_unscaled_inplace(buf, domain)
    fr.scale_by_powers_inplace(buf, domain.coset_shift, domain.m_inv)
    _forward_inplace(buf, domain)
    return buf
