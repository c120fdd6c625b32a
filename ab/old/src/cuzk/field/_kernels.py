"""The bulk Fr kernels behind :mod:`cuzk.field.fr`.

Each kernel takes its output array(s) as arguments so callers choose between fresh and in-place
results, and trusts its caller on shapes (the public wrappers validate): the row loads are
unchecked. Every kernel is ``nogil`` so the GIL is free while it runs; the bulk ones are
``prange`` loops over all numba threads. Kernels that carry state along the vector (batch
inverse, runs of powers, dot products) work in fixed-size blocks, so their parallel split and
their results do not depend on the thread count.

Each parallel kernel costs about a second of compile on first use per machine (then numba's disk
cache serves it), so rarely used operations reuse these kernels rather than adding their own.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from cuzk.field._arith import (
    ONE_T,
    ZERO_T,
    add,
    from_mont,
    geq_modulus,
    is_one,
    is_zero,
    load,
    mont_inv,
    mont_pow,
    mul,
    reduce_once,
    store,
    sub,
    to_mont,
)
from cuzk.field.constants import R

#: Block length for chunked kernels: long enough to amortise one inversion or one power, short
#: enough to give both threads balanced work on small vectors.
CHUNK = 1 << 12

_NEG_ONE_T = tuple(np.uint64(((R - 1) * 2**256 % R) >> (64 * k) & (2**64 - 1)) for k in range(4))


# --- conversions ---------------------------------------------------------------------------------


@njit(cache=True, nogil=True, parallel=True)
def k_to_mont(src, out):
    """Any 256-bit limbs → Montgomery form; reduces first (2^256 < 3r, so two steps suffice)."""
    for i in prange(src.shape[0]):
        store(out, i, to_mont(reduce_once(reduce_once(load(src, i)))))


@njit(cache=True, nogil=True, parallel=True)
def k_from_mont(src, out):
    for i in prange(src.shape[0]):
        store(out, i, from_mont(load(src, i)))


@njit(cache=True, nogil=True)
def k_first_non_canonical(src):
    """Index of the first row whose integer value is ≥ r, or −1.

    Serial on purpose: a validation scan that stops at the first hit and is memory-bound; a
    parallel kernel would cost another second of first-use compile for no gain.
    """
    for i in range(src.shape[0]):
        if geq_modulus(load(src, i)):
            return i
    return -1


@njit(cache=True, nogil=True)
def k_first_zero(src):
    """Index of the first zero row, or −1 (serial, like :func:`k_first_non_canonical`)."""
    for i in range(src.shape[0]):
        if is_zero(load(src, i)):
            return i
    return -1


@njit(cache=True, nogil=True, parallel=True)
def k_take_rows(src, idx, out, offset):
    """out[offset + i] = src[idx[i]]: the prover's scalar gathers, on every core, GIL-free."""
    for i in prange(idx.shape[0]):
        store(out, offset + i, load(src, idx[i]))


@njit(cache=True, nogil=True, parallel=True)
def k_copy_rows(src, out, offset):
    """out[offset + i] = src[i], on every core (one numpy copy of 2^24 rows is one core's
    memory bandwidth, ≈ 50 ms)."""
    for i in prange(src.shape[0]):
        store(out, offset + i, load(src, i))


@njit(cache=True, nogil=True, parallel=True)
def k_index_bounds(idx):
    """(min, max) of a non-empty index array in one parallel pass."""
    lo = idx[0]
    hi = idx[0]
    for i in prange(idx.shape[0]):
        lo = min(lo, idx[i])
        hi = max(hi, idx[i])
    return lo, hi


@njit(cache=True, nogil=True, parallel=True)
def k_classify(src, out):
    for i in prange(src.shape[0]):
        x = load(src, i)
        out[i] = 0 if is_zero(x) else (1 if is_one(x) else 2)


# --- elementwise ---------------------------------------------------------------------------------


@njit(cache=True, nogil=True, parallel=True)
def k_add(a, b, out):
    for i in prange(a.shape[0]):
        store(out, i, add(load(a, i), load(b, i)))


@njit(cache=True, nogil=True, parallel=True)
def k_sub(a, b, out):
    for i in prange(a.shape[0]):
        store(out, i, sub(load(a, i), load(b, i)))


@njit(cache=True, nogil=True, parallel=True)
def k_mul(a, b, out):
    for i in prange(a.shape[0]):
        store(out, i, mul(load(a, i), load(b, i)))


@njit(cache=True, nogil=True, parallel=True)
def k_scale(a, k, out):
    """out = a · k for one Montgomery constant k given as a limb tuple."""
    for i in prange(a.shape[0]):
        store(out, i, mul(load(a, i), k))


@njit(cache=True, nogil=True, parallel=True)
def k_inverse(a, out):
    for i in prange(a.shape[0]):
        store(out, i, mont_inv(load(a, i)))


@njit(cache=True, nogil=True, parallel=True)
def k_batch_inverse(a, out):
    """Montgomery's trick per block: 3 multiplications per element and one inversion per block.

    ``a`` must not contain zeros (the caller checks); ``out`` may alias ``a``.
    """
    n = a.shape[0]
    nchunks = (n + CHUNK - 1) // CHUNK
    for c in prange(nchunks):
        lo = c * CHUNK
        hi = min(n, lo + CHUNK)
        # Prefix products first into a private buffer so out may alias a.
        pref = np.empty((hi - lo, 4), dtype=np.uint64)
        acc = ONE_T
        for i in range(lo, hi):
            store(pref, i - lo, acc)
            acc = mul(acc, load(a, i))
        inv = mont_inv(acc)  # (a_lo ⋯ a_{hi−1})⁻¹
        for i in range(hi - 1, lo - 1, -1):
            x = load(a, i)
            store(out, i, mul(inv, load(pref, i - lo)))
            inv = mul(inv, x)


@njit(cache=True, nogil=True, parallel=True)
def k_scale_by_powers(v, base, start, out):
    """out[i] = v[i] · start · base^i without materialising the powers (coset shifts; with
    v = ones, the powers themselves). Each block starts from its own power, so blocks run in
    parallel."""
    n = v.shape[0]
    nchunks = (n + CHUNK - 1) // CHUNK
    step = mont_pow(base, (np.uint64(CHUNK), np.uint64(0), np.uint64(0), np.uint64(0)))
    heads = np.empty((max(nchunks, 1), 4), dtype=np.uint64)
    acc = start
    for c in range(nchunks):
        store(heads, c, acc)
        acc = mul(acc, step)
    for c in prange(nchunks):
        x = load(heads, c)
        for i in range(c * CHUNK, min(n, (c + 1) * CHUNK)):
            store(out, i, mul(load(v, i), x))
            x = mul(x, base)


# --- reductions ----------------------------------------------------------------------------------


@njit(cache=True, nogil=True, parallel=True)
def k_dot(a, b):
    n = a.shape[0]
    nchunks = (n + CHUNK - 1) // CHUNK
    part = np.zeros((max(nchunks, 1), 4), dtype=np.uint64)
    for c in prange(nchunks):
        acc = ZERO_T
        for i in range(c * CHUNK, min(n, (c + 1) * CHUNK)):
            acc = add(acc, mul(load(a, i), load(b, i)))
        store(part, c, acc)
    total = ZERO_T
    for c in range(nchunks):
        total = add(total, load(part, c))
    return total


# --- sparse matrix × vector ----------------------------------------------------------------------


@njit(cache=True, nogil=True, parallel=True)
def k_spmv(indptr, indices, ids, table, x, out):
    """out[r] = Σ table[ids[k]]·x[indices[k]] over row r's CSR range.

    Coefficients come from a small table of distinct values (a circuit has a few thousand), so
    the matrix stores an id per entry rather than 32 bytes. Most R1CS coefficients are ±1, so
    those skip the multiplication (a branch on a few limbs is far cheaper than a Montgomery
    product).
    """
    for row in prange(out.shape[0]):
        acc = ZERO_T
        for k in range(indptr[row], indptr[row + 1]):
            c = load(table, ids[k])
            v = load(x, indices[k])
            if is_one(c):
                acc = add(acc, v)
            elif c == _NEG_ONE_T:
                acc = sub(acc, v)
            else:
                acc = add(acc, mul(c, v))
        store(out, row, acc)
