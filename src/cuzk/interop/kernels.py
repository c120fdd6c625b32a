"""The one kernel the snarkjs prover needs beyond the :class:`~cuzk.backend.base.Backend`
protocol: H on the odd points of the 2m-domain.

Until the protocol grows a method for it (``odd_coset_h(a, b, domain)``), :func:`odd_coset_h`
picks the fused CPU kernel for the CPU backend and composes any other backend's iNTT/NTT with
the shift and index permutation done on the host; :func:`odd_coset_h_device` composes the CUDA
backend's device transforms, so a and b never leave the GPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

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


def odd_coset_h_device(backend: Any, a: Any, b: Any, domain: Domain) -> Any:
    """:func:`odd_coset_h` on device arrays of a CUDA backend (``backend.fr`` its transforms);
    the result is a device array of length m, queued on the backend's stream."""
    gpu = backend.gpu
    with gpu.context():
        cp = gpu.cp
        perm = cp.asarray(snarkjs_order(domain.m).astype(np.int64))
        shift = snarkjs_odd_shift(domain.log_m)
        c = backend.fr.mul(a, b)
        out = None
        for v in (a, b, c):
            buf = cp.zeros((domain.m, 4), dtype=cp.uint64)
            buf[perm[: v.shape[0]]] = v
            coeffs = backend.fr.intt(buf, domain)
            values = backend.fr.ntt(backend.fr.scale_by_powers(coeffs, shift), domain)
            if out is None:
                out = values
            elif v is b:
                out = backend.fr.mul(out, values)
            else:
                out = backend.fr.sub(out, values)
        assert out is not None
        return out[perm]
