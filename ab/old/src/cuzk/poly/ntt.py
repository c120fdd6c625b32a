"""Number-theoretic transforms over radix-2 domains: plain, inverse and coset, natural order.

Layout of the forward transform (decimation in time):

1. bit-reversal permutation, in place;
2. the first log2(BLOCK) stages one cache-sized block at a time (every block independent, so
   blocks run in parallel and each stays in L2 for all of its stages);
3. the remaining stages over the whole array, parallel across tiles of TILE butterflies that
   share a run of twiddles. Twiddles come from a strided table plus a running product, so the
   table is m/(2·TILE) entries rather than m/2.

The inverse transform reuses the forward one: NTT_{ω⁻¹}(x)[k] = NTT_ω(x)[−k mod m], i.e. reverse
x[1:] first. The 1/m scale is folded into whatever scaling the caller does next (coset shift,
the H quotient's (g^m − 1)⁻¹), so each transform touches memory as few times as possible.
"""

from __future__ import annotations

from functools import cache

import numpy as np
from numba import njit, prange

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field._arith import add, load, mul, store, sub
from cuzk.field.constants import FR_GENERATOR, R
from cuzk.poly.domain import Domain, root_of_unity

#: Points per independently transformed block in the early stages (2^13·32 B = 256 KiB: L2).
BLOCK = 1 << 13
#: Butterflies per task in the late stages; also the stride of the twiddle table.
TILE = 1 << 6


_G_INV = pow(FR_GENERATOR, -1, R)


# --- kernels ----------------------------------------------------------------------------------

# Byte-reversal lookup for the bit-reversal permutation.
_REV8 = np.array([int(f"{i:08b}"[::-1], 2) for i in range(256)], dtype=np.int64)


@njit(cache=True, nogil=True, parallel=True)
def _bit_reverse(v, log_m):
    """In-place permutation x[i] ↔ x[rev(i)]; each pair is swapped by its smaller index only,
    so threads never touch the same rows."""
    m = v.shape[0]
    shift = 32 - log_m
    for i in prange(m):
        rev = (
            (_REV8[i & 0xFF] << 24)
            | (_REV8[(i >> 8) & 0xFF] << 16)
            | (_REV8[(i >> 16) & 0xFF] << 8)
            | _REV8[(i >> 24) & 0xFF]
        )
        j = rev >> shift
        if i < j:
            a = load(v, i)
            store(v, i, load(v, j))
            store(v, j, a)


@njit(cache=True, nogil=True, parallel=True)
def _reverse_tail(v):
    """v[i] ↔ v[m − i] for 0 < i < m/2: turns a forward transform into an inverse one."""
    m = v.shape[0]
    for i in prange(1, (m + 1) // 2):
        a = load(v, i)
        store(v, i, load(v, m - i))
        store(v, m - i, a)


@njit(cache=True, nogil=True, parallel=True)
def _dit_blocks(v, stage_tw, block):
    """All stages with half-width h < block, each block of ``block`` points on its own.

    stage_tw[h + j] = ω_{2h}^j for h < block, j < h (index 0 unused).
    """
    m = v.shape[0]
    for b in prange(m // block):
        base = b * block
        if block >= 2:  # h = 1: the only twiddle is 1
            for i in range(base, base + block, 2):
                x = load(v, i)
                y = load(v, i + 1)
                store(v, i, add(x, y))
                store(v, i + 1, sub(x, y))
        h = 2
        while h < block:
            for start in range(base, base + block, 2 * h):
                for j in range(h):
                    i0 = start + j
                    x = load(v, i0)
                    t = mul(load(v, i0 + h), load(stage_tw, h + j))
                    store(v, i0, add(x, t))
                    store(v, i0 + h, sub(x, t))
            h *= 2


@njit(cache=True, nogil=True, parallel=True)
def _dit_stage(v, coarse, h, step):
    """One stage of half-width h ≥ TILE over the whole array.

    coarse[k] = ω^(k·TILE) (ω the domain generator); step = ω_{2h}. The tile of butterflies
    j0 … j0 + TILE − 1 starts at ω_{2h}^j0 = coarse[(j0 / TILE)·(m / 2h)].
    """
    m = v.shape[0]
    stride = m // (2 * h)
    for t in prange(h // TILE):
        tw = np.empty((TILE, 4), dtype=np.uint64)
        w = load(coarse, t * stride)
        for j in range(TILE):
            store(tw, j, w)
            w = mul(w, step)
        j0 = t * TILE
        for start in range(0, m, 2 * h):
            for j in range(TILE):
                i0 = start + j0 + j
                x = load(v, i0)
                y = mul(load(v, i0 + h), load(tw, j))
                store(v, i0, add(x, y))
                store(v, i0 + h, sub(x, y))


# --- twiddle tables ---------------------------------------------------------------------------


@cache
def _stage_table(block: int) -> fr.FrVec:
    """stage_tw[h + j] = ω_{2h}^j for every h < block: independent of the domain size, since
    ω_{2h} is the same canonical root for every domain."""
    table = fr.zeros(max(block, 2))
    h = 1
    while h < block:
        table[h : 2 * h] = fr.powers(root_of_unity(h.bit_length()), h)
        h *= 2
    table.setflags(write=False)
    return table


# --- public transforms ------------------------------------------------------------------------


def _forward_inplace(v: fr.FrVec, domain: Domain) -> None:
    m = domain.m
    if m == 1:
        return
    _bit_reverse(v, domain.log_m)
    block = min(m, BLOCK)
    _dit_blocks(v, _stage_table(block), block)
    if m > block:
        coarse = domain.omega_powers(TILE)
        h = block
        while h < m:
            step = fr.from_int(root_of_unity((2 * h).bit_length() - 1))
            _dit_stage(v, coarse, h, tuple(step))
            h *= 2


def _inverse_unscaled_inplace(v: fr.FrVec, domain: Domain) -> None:
    """m · iNTT(v): the forward transform of v with v[1:] reversed."""
    _reverse_tail(v)
    _forward_inplace(v, domain)


def _check_exact(v: fr.FrVec, domain: Domain) -> fr.FrVec:
    if not (
        isinstance(v, np.ndarray)
        and v.dtype == np.uint64
        and v.ndim == 2
        and v.shape[1] == 4
        and v.flags.c_contiguous
        and v.flags.writeable
    ):
        raise BadInput("in-place NTT needs a writable C-contiguous (m, 4) uint64 FrVec")
    if v.shape[0] != domain.m:
        raise BadInput(f"in-place NTT needs exactly {domain.m} elements, got {v.shape[0]}")
    return v


def _padded(v: fr.FrVec, domain: Domain) -> fr.FrVec:
    """A fresh length-m copy of v, zero-padded (the copy is the output buffer)."""
    if not (isinstance(v, np.ndarray) and v.dtype == np.uint64 and v.ndim == 2 and v.shape[1] == 4):
        raise BadInput(f"expected an (n, 4) uint64 FrVec, got {getattr(v, 'shape', type(v))}")
    n = v.shape[0]
    if n > domain.m:
        raise BadInput(f"{n} values do not fit a domain of {domain.m}")
    out = np.empty((domain.m, 4), dtype=np.uint64)
    out[:n] = v
    out[n:] = 0
    return out


def ntt_inplace(v: fr.FrVec, domain: Domain) -> fr.FrVec:
    """Coefficients → evaluations at ω^i, in place; returns v."""
    _forward_inplace(_check_exact(v, domain), domain)
    return v


def intt_inplace(v: fr.FrVec, domain: Domain) -> fr.FrVec:
    """Evaluations at ω^i → coefficients, in place; returns v."""
    _inverse_unscaled_inplace(_check_exact(v, domain), domain)
    fr.scale_inplace(v, domain.m_inv)
    return v


def coset_ntt_inplace(v: fr.FrVec, domain: Domain) -> fr.FrVec:
    """Coefficients → evaluations at g·ω^i (g = 7), in place; returns v."""
    fr.scale_by_powers_inplace(_check_exact(v, domain), domain.coset_shift)
    _forward_inplace(v, domain)
    return v


def coset_intt_inplace(v: fr.FrVec, domain: Domain) -> fr.FrVec:
    """Evaluations at g·ω^i → coefficients, in place; returns v.

    One scaling pass does both the 1/m and the g^−i.
    """
    _inverse_unscaled_inplace(_check_exact(v, domain), domain)
    fr.scale_by_powers_inplace(v, _G_INV, domain.m_inv)
    return v


def ntt(v: fr.FrVec, domain: Domain) -> fr.FrVec:
    """NTT of v (length ≤ m, zero-padded) into a new length-m FrVec."""
    return ntt_inplace(_padded(v, domain), domain)


def intt(v: fr.FrVec, domain: Domain) -> fr.FrVec:
    return intt_inplace(_padded(v, domain), domain)


def coset_ntt(v: fr.FrVec, domain: Domain) -> fr.FrVec:
    return coset_ntt_inplace(_padded(v, domain), domain)


def coset_intt(v: fr.FrVec, domain: Domain) -> fr.FrVec:
    return coset_intt_inplace(_padded(v, domain), domain)
