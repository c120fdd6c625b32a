"""The Poseidon kernels: neptune's optimised schedule over many preimages, and over one
preimage recording every value the legacy circuit allocates.

Both run one schedule, :func:`_permute`, so the bulk hash and the witness cannot drift apart.
One kernel serves every arity (the width is a runtime value), so it compiles once per machine
(numba's disk cache). Bulk work is split into fixed blocks of preimages across numba threads;
each block keeps its state and scratch rows in two small (t, 4) arrays.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from cuzk.field._arith import ZERO_T, add, load, mul, square, store

_BLOCK = 256


@njit(cache=True, nogil=True)
def _permute(st, nx, t, crc, pre_sparse, w_hat, v_rest, mds, half, partial, rec, record):
    """The permutation on ``st`` (its pre-adds already applied), in place.

    Rounds: ``half`` full rounds (S-box + post-add, then MDS, the last of them through
    ``pre_sparse``); ``partial`` rounds (one S-box + post-add, sparse matrix); ``half − 1`` full
    rounds; a final full round without constants. With ``record``, the values the circuit
    allocates are written to ``rec`` in its order — per S-box the input (not in the first
    round, whose inputs are the preimage), x², x⁴ and the output; the domain tag's first S-box
    is a constant and allocates nothing — then the digest. Returns how many were written.
    """
    off = t
    k = 0
    nrounds = 2 * half + partial
    for rnd in range(nrounds):
        full = rnd < half or rnd >= half + partial
        last = rnd == nrounds - 1
        width = t if full else 1
        for i in range(width):
            x = load(st, i)
            x2 = square(x)
            x4 = square(x2)
            y = mul(x4, x)
            if not last:
                y = add(y, load(crc, off + i))
            if record and (rnd > 0 or i > 0):
                if rnd > 0:
                    store(rec, k, x)
                    k += 1
                store(rec, k, x2)
                store(rec, k + 1, x4)
                store(rec, k + 2, y)
                k += 3
            store(st, i, y)
        if not last:
            off += width
        # Linear layer.
        if rnd == half - 1:
            for j in range(t):
                acc = ZERO_T
                for i in range(t):
                    acc = add(acc, mul(load(pre_sparse, i * t + j), load(st, i)))
                store(nx, j, acc)
        elif rnd >= half and rnd < half + partial:
            s = rnd - half
            x0 = load(st, 0)
            acc = ZERO_T
            for i in range(t):
                acc = add(acc, mul(load(w_hat, s * t + i), load(st, i)))
            store(nx, 0, acc)
            for j in range(1, t):
                store(nx, j, add(load(st, j), mul(load(v_rest, s * (t - 1) + j - 1), x0)))
        else:
            for i in range(t):
                acc = ZERO_T
                for j in range(t):
                    acc = add(acc, mul(load(mds, i * t + j), load(st, j)))
                store(nx, i, acc)
        for i in range(t):
            store(st, i, load(nx, i))
    if record:
        store(rec, k, load(st, 1))
        k += 1
    return k


@njit(cache=True, nogil=True)
def _start(st, pre, first, t, tag, crc):
    """The state [tag, m_1, …] with the first round's pre-adds (preimage rows from ``first``)."""
    store(st, 0, add(tag, load(crc, 0)))
    for i in range(1, t):
        store(st, i, add(load(pre, first + i - 1), load(crc, i)))


@njit(cache=True, nogil=True, parallel=True)
def k_poseidon(pre, starts, out, record, arity, tag, crc, pre_sparse, w_hat, v_rest, mds, half,
               partial):  # fmt: skip
    """Hash h is Poseidon(tag, pre[h·arity], …, pre[h·arity + arity − 1]), all elements in
    Montgomery form. Without ``record``: out[h] = its digest, for every row of ``out``. With
    it: the values the legacy circuit allocates for it (as :func:`k_poseidon_witness`) at
    ``out[starts[h]:]``, for every entry of ``starts`` (runs that must not overlap: blocks of
    hashes go to different threads) — the CPU model of the device's ``poseidon_witness``."""
    n = starts.shape[0] if record else out.shape[0]
    t = arity + 1
    nblocks = (n + _BLOCK - 1) // _BLOCK
    for blk in prange(nblocks):
        st = np.empty((t, 4), dtype=np.uint64)
        nx = np.empty((t, 4), dtype=np.uint64)
        rec = np.empty((0, 4), dtype=np.uint64)
        for h in range(blk * _BLOCK, min(n, (blk + 1) * _BLOCK)):
            _start(st, pre, h * arity, t, tag, crc)
            if record:
                rec = out[starts[h] :]
            _permute(st, nx, t, crc, pre_sparse, w_hat, v_rest, mds, half, partial, rec, record)
            if not record:
                store(out, h, load(st, 1))


@njit(cache=True, nogil=True)
def k_poseidon_digest(pre, arity, tag, crc, pre_sparse, w_hat, v_rest, mds, half, partial):
    """The digest of one preimage (``arity`` rows of ``pre``) as a Montgomery tuple: what a
    deferred hash still needs on the host, without recording the values."""
    t = arity + 1
    st = np.empty((t, 4), dtype=np.uint64)
    nx = np.empty((t, 4), dtype=np.uint64)
    rec = np.empty((0, 4), dtype=np.uint64)
    _start(st, pre, 0, t, tag, crc)
    _permute(st, nx, t, crc, pre_sparse, w_hat, v_rest, mds, half, partial, rec, False)
    return load(st, 1)


@njit(cache=True, nogil=True)
def k_poseidon_witness(pre, arity, tag, crc, pre_sparse, w_hat, v_rest, mds, half, partial, rec):
    """The legacy circuit's allocated values for one preimage (``arity`` rows of ``pre``), in
    allocation order, into ``rec``; returns their count (the last is the digest)."""
    t = arity + 1
    st = np.empty((t, 4), dtype=np.uint64)
    nx = np.empty((t, 4), dtype=np.uint64)
    _start(st, pre, 0, t, tag, crc)
    return _permute(st, nx, t, crc, pre_sparse, w_hat, v_rest, mds, half, partial, rec, True)
