"""The one kernel the snarkjs prover needs beyond the :class:`~cuzk.backend.base.Backend`
protocol: H on the odd points of the 2m-domain.

Until the protocol grows a method for it (``odd_coset_h(a, b, domain)``), this function picks
the fused CPU kernel for the CPU backend and composes any other backend's iNTT/NTT with the
shift and index permutation done on the host, so a CUDA backend works unchanged (with extra
transfers).
"""

from __future__ import annotations

from cuzk.backend.base import Backend
from cuzk.field import fr
from cuzk.poly import Domain
from cuzk.poly.snarkjs_h import snarkjs_h, snarkjs_odd_shift, snarkjs_order


def odd_coset_h(backend: Backend, a: fr.FrVec, b: fr.FrVec, domain: Domain) -> fr.FrVec:
    """A·B − C at snarkjs's odd 2m-domain points (C = a∘b); see :mod:`cuzk.poly.snarkjs_h`."""
    if backend.name == "cpu":
        return snarkjs_h(a, b, domain)
    perm = snarkjs_order(domain.m)
    shift = snarkjs_odd_shift(domain.log_m)
    c = fr.mul(a, b)
    out = None
    for v in (a, b, c):
        buf = fr.zeros(domain.m)
        buf[perm[: v.shape[0]]] = v
        coeffs = backend.intt(buf, domain)
        values = backend.ntt(fr.scale_by_powers(coeffs, shift), domain)
        if out is None:
            out = values
        elif v is b:
            out = fr.mul(out, values)
        else:
            out = fr.sub(out, values)
    assert out is not None
    return out[perm]
