"""The bulk Poseidon kernel: neptune's optimised schedule over many preimages.

One kernel serves every arity (the width is a runtime value), so it compiles once per machine
(numba's disk cache). Work is split into fixed blocks of preimages across numba threads; each
block keeps its state and scratch rows in two small (t, 4) arrays.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from cuzk.field._arith import ZERO_T, add, load, mul, square, store

_BLOCK = 256


@njit(cache=True, nogil=True, parallel=True)
def k_poseidon(pre, arity, tag, crc, pre_sparse, w_hat, v_rest, mds, half, partial, out):
    """out[h] = Poseidon(tag, pre[h·arity], …, pre[h·arity + arity − 1]).

    Rounds: t pre-adds; ``half`` full rounds (S-box + post-add, then MDS, the last of them
    through ``pre_sparse``); ``partial`` rounds (one S-box + post-add, sparse matrix); ``half − 1``
    full rounds; a final full round without constants. All elements in Montgomery form.
    """
    n = out.shape[0]
    t = arity + 1
    nblocks = (n + _BLOCK - 1) // _BLOCK
    for blk in prange(nblocks):
        st = np.empty((t, 4), dtype=np.uint64)
        nx = np.empty((t, 4), dtype=np.uint64)
        for h in range(blk * _BLOCK, min(n, (blk + 1) * _BLOCK)):
            store(st, 0, add(tag, load(crc, 0)))
            for i in range(1, t):
                store(st, i, add(load(pre, h * arity + i - 1), load(crc, i)))
            off = t
            rnd = 0
            for fr_ in range(2 * half + partial):
                full = fr_ < half or fr_ >= half + partial
                last = fr_ == 2 * half + partial - 1
                # S-boxes (all for a full round, the first for a partial one) and post-adds.
                width = t if full else 1
                for i in range(width):
                    x = load(st, i)
                    x4 = square(square(x))
                    y = mul(x4, x)
                    if not last:
                        y = add(y, load(crc, off + i))
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
                rnd += 1
            store(out, h, load(st, 1))
