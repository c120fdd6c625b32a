"""numba kernels for sealing: SHA-256 (TreeD nodes, SDR labels), BLAKE2b of 16 bytes (the
expander's Feistel round function) and ChaCha8 (the DRG's bucket sampling).

Sealing an 8 MiB sector hashes ~0.5M labels of 1,248 bytes, ~0.26M TreeD nodes and ~12M
Feistel rounds; a Python call per hash would dominate everything, so each loop lives here and
runs over a whole layer or level at once. Each primitive is checked against hashlib (or the
upstream parent-cache digests) in the tests.

SHA-256's compression is :mod:`cuzk.gadgets.sha256.native`'s; ChaCha8 holds its words in
uint64 masked to 32 bits.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from cuzk.gadgets.sha256.native import H256 as _H256
from cuzk.gadgets.sha256.native import compress as _compress

_M32 = np.uint64(0xFFFFFFFF)


@njit(cache=True, nogil=True)
def _sha256_padded(buf, nbytes, out, out_off, h, w):
    """SHA-256 of buf[:nbytes] into out[out_off:out_off+32], with the top two bits of the last
    byte cleared (Filecoin's fr32 trim). ``buf`` must have room for the padding."""
    total = ((nbytes + 8) // 64 + 1) * 64
    buf[nbytes] = 0x80
    for i in range(nbytes + 1, total - 8):
        buf[i] = 0
    bits = nbytes * 8
    for i in range(8):
        buf[total - 1 - i] = (bits >> (8 * i)) & 0xFF
    for i in range(8):
        h[i] = _H256[i]
    for blk in range(total // 64):
        _compress(h, buf, blk * 64, w)
    for i in range(8):
        for k in range(4):
            out[out_off + 4 * i + k] = (h[i] >> (24 - 8 * k)) & 0xFF
    out[out_off + 31] &= 0x3F


@njit(cache=True, nogil=True, parallel=True)
def k_sha256_pairs(children, out):
    """out[i] = trim(SHA-256(children[2i] ‖ children[2i+1])): one binary TreeD level."""
    n = out.shape[0]
    nblk = (n + 255) // 256
    for blk in prange(nblk):
        buf = np.zeros(128, dtype=np.uint8)
        flat = np.zeros(32 * 256, dtype=np.uint8)
        h = np.zeros(8, dtype=np.uint32)
        w = np.zeros(64, dtype=np.uint32)
        lo, hi = blk * 256, min(n, (blk + 1) * 256)
        for i in range(lo, hi):
            for k in range(32):
                buf[k] = children[2 * i, k]
                buf[32 + k] = children[2 * i + 1, k]
            _sha256_padded(buf, 64, flat, 32 * (i - lo), h, w)
            for k in range(32):
                out[i, k] = flat[32 * (i - lo) + k]


@njit(cache=True, nogil=True)
def k_label_layer(replica_id, layer, parents, cur, prev, with_exp):
    """SDR labels of one layer, in node order (each node reads its predecessor's label).

    label(v) = trim(SHA-256(replica_id ‖ layer u32 BE ‖ v u64 BE ‖ 20 zero bytes ‖ 37 parent
    labels)), the 37 being the node's parents cycled: the 6 base parents (labels of this layer)
    for layer 1, the 6 base then 8 expander parents (labels of the previous layer) after. Node 0
    hashes the 64-byte header only.
    """
    n = cur.shape[0]
    deg = 14 if with_exp else 6
    buf = np.zeros(64 + 37 * 32 + 72, dtype=np.uint8)
    h = np.zeros(8, dtype=np.uint32)
    w = np.zeros(64, dtype=np.uint32)
    out = np.zeros(32, dtype=np.uint8)
    for k in range(32):
        buf[k] = replica_id[k]
    for k in range(4):
        buf[32 + k] = (layer >> (8 * (3 - k))) & 0xFF
    for v in range(n):
        for k in range(8):
            buf[36 + k] = (v >> (8 * (7 - k))) & 0xFF
        for k in range(44, 64):
            buf[k] = 0
        if v == 0:
            _sha256_padded(buf, 64, out, 0, h, w)
        else:
            for j in range(37):
                idx = j % deg
                p = parents[v, idx]
                off = 64 + 32 * j
                if idx < 6:
                    for k in range(32):
                        buf[off + k] = cur[p, k]
                else:
                    for k in range(32):
                        buf[off + k] = prev[p, k]
            _sha256_padded(buf, 64 + 37 * 32, out, 0, h, w)
        for k in range(32):
            cur[v, k] = out[k]


# -- BLAKE2b-512 of a 16-byte message (the Feistel round function) ---------------------------

_B2_IV = np.array([
    0x6A09E667F3BCC908, 0xBB67AE8584CAA73B, 0x3C6EF372FE94F82B, 0xA54FF53A5F1D36F1,
    0x510E527FADE682D1, 0x9B05688C2B3E6C1F, 0x1F83D9ABFB41BD6B, 0x5BE0CD19137E2179,
], dtype=np.uint64)  # fmt: skip

_B2_SIGMA = np.array([
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
    [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
    [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
    [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
    [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
    [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
    [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
    [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
    [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
], dtype=np.int64)  # fmt: skip


@njit(cache=True, inline="always")
def _rotr64(x, n):
    return (x >> np.uint64(n)) | (x << np.uint64(64 - n))


@njit(cache=True, inline="always")
def _bswap64(x):
    x = ((x & np.uint64(0x00FF00FF00FF00FF)) << np.uint64(8)) | (
        (x >> np.uint64(8)) & np.uint64(0x00FF00FF00FF00FF)
    )
    x = ((x & np.uint64(0x0000FFFF0000FFFF)) << np.uint64(16)) | (
        (x >> np.uint64(16)) & np.uint64(0x0000FFFF0000FFFF)
    )
    return (x << np.uint64(32)) | (x >> np.uint64(32))


@njit(cache=True, inline="always")
def _g(a, b, c, d, x, y):
    a = a + b + x
    d = _rotr64(d ^ a, 32)
    c = c + d
    b = _rotr64(b ^ c, 24)
    a = a + b + y
    d = _rotr64(d ^ a, 16)
    c = c + d
    b = _rotr64(b ^ c, 63)
    return a, b, c, d


@njit(cache=True, nogil=True)
def _blake2b16_first8(m0, m1, v, m):
    """The first 8 digest bytes, read little-endian, of BLAKE2b-512 (unkeyed) of the 16-byte
    message whose two little-endian words are m0, m1. (``v`` is unused scratch.)"""
    m[0], m[1] = m0, m1
    for i in range(2, 16):
        m[i] = np.uint64(0)
    h0 = _B2_IV[0] ^ np.uint64(0x01010040)  # parameter block: 64-byte digest, fanout/depth 1
    v0, v1, v2, v3 = h0, _B2_IV[1], _B2_IV[2], _B2_IV[3]
    v4, v5, v6, v7 = _B2_IV[4], _B2_IV[5], _B2_IV[6], _B2_IV[7]
    v8, v9, v10, v11 = _B2_IV[0], _B2_IV[1], _B2_IV[2], _B2_IV[3]
    v12 = _B2_IV[4] ^ np.uint64(16)  # bytes compressed
    v13, v14, v15 = _B2_IV[5], ~_B2_IV[6], _B2_IV[7]  # v14 inverted: last block
    S = _B2_SIGMA
    for r in range(12):
        q = r % 10
        v0, v4, v8, v12 = _g(v0, v4, v8, v12, m[S[q, 0]], m[S[q, 1]])
        v1, v5, v9, v13 = _g(v1, v5, v9, v13, m[S[q, 2]], m[S[q, 3]])
        v2, v6, v10, v14 = _g(v2, v6, v10, v14, m[S[q, 4]], m[S[q, 5]])
        v3, v7, v11, v15 = _g(v3, v7, v11, v15, m[S[q, 6]], m[S[q, 7]])
        v0, v5, v10, v15 = _g(v0, v5, v10, v15, m[S[q, 8]], m[S[q, 9]])
        v1, v6, v11, v12 = _g(v1, v6, v11, v12, m[S[q, 10]], m[S[q, 11]])
        v2, v7, v8, v13 = _g(v2, v7, v8, v13, m[S[q, 12]], m[S[q, 13]])
        v3, v4, v9, v14 = _g(v3, v4, v9, v14, m[S[q, 14]], m[S[q, 15]])
    return h0 ^ v0 ^ v8


@njit(cache=True, nogil=True)
def _feistel_encode(index, keys, left_mask, right_mask, half_bits, v, m):
    left = (index & left_mask) >> half_bits
    right = index & right_mask
    for r in range(3):
        f = _bswap64(_blake2b16_first8(_bswap64(right), _bswap64(keys[r]), v, m))
        left, right = right, left ^ (f & right_mask)
    return (left << half_bits) | right


@njit(cache=True, nogil=True)
def _expander_row(node, keys, total, degree, left_mask, right_mask, half_bits, truncate_u32, out,
                  row, v16, m16):  # fmt: skip
    """out[row, i] = permute(node·degree + i) // degree for i < degree (Feistel over
    [0, total), cycle-walking back into range); api 1.0.0 truncated the permuted index to
    u32 before dividing (``truncate_u32``), which matters only past 2^29 nodes."""
    for i in range(degree):
        u = np.uint64(node * degree + i)
        u = _feistel_encode(u, keys, left_mask, right_mask, half_bits, v16, m16)
        while u >= total:
            u = _feistel_encode(u, keys, left_mask, right_mask, half_bits, v16, m16)
        if truncate_u32:
            u = u & _M32
        out[row, i] = u // np.uint64(degree)


@njit(cache=True, nogil=True, parallel=True)
def k_expander_parents(keys, n, degree, left_mask, right_mask, half_bits, truncate_u32, out):
    """The expander parents of every node of an n-node graph (:func:`_expander_row`)."""
    total = np.uint64(n * degree)
    nblk = (n + 1023) // 1024
    for blk in prange(nblk):
        v16 = np.zeros(16, dtype=np.uint64)
        m16 = np.zeros(16, dtype=np.uint64)
        for node in range(blk * 1024, min(n, (blk + 1) * 1024)):
            _expander_row(node, keys, total, degree, left_mask, right_mask, half_bits,
                          truncate_u32, out, node, v16, m16)  # fmt: skip


@njit(cache=True, nogil=True)
def k_expander_parents_of(keys, n, nodes, degree, left_mask, right_mask, half_bits,
                          truncate_u32, out):  # fmt: skip
    """out[r] = the expander parents of nodes[r] in an n-node graph: rows of the table
    without building it (a 32 GiB sector has 2^30 nodes)."""
    total = np.uint64(n * degree)
    v16 = np.zeros(16, dtype=np.uint64)
    m16 = np.zeros(16, dtype=np.uint64)
    for r in range(nodes.shape[0]):
        _expander_row(nodes[r], keys, total, degree, left_mask, right_mask, half_bits,
                      truncate_u32, out, r, v16, m16)  # fmt: skip


@njit(cache=True, inline="always")
def _rotl32(x, n):
    return ((x << np.uint64(n)) | (x >> np.uint64(32 - n))) & _M32


@njit(cache=True, nogil=True)
def _chacha8_block(key, counter, out, off, x):
    """rand_chacha's ChaCha8 block ``counter`` (64-bit counter, stream 0) as 16 words."""
    x[0], x[1], x[2], x[3] = (np.uint64(0x61707865), np.uint64(0x3320646E),
                              np.uint64(0x79622D32), np.uint64(0x6B206574))  # fmt: skip
    for i in range(8):
        x[4 + i] = key[i]
    x[12] = np.uint64(counter) & _M32
    x[13] = np.uint64(counter) >> np.uint64(32)
    x[14] = np.uint64(0)
    x[15] = np.uint64(0)
    init = x.copy()
    for _ in range(4):
        for a, b, c, d in (
            (0, 4, 8, 12),
            (1, 5, 9, 13),
            (2, 6, 10, 14),
            (3, 7, 11, 15),
            (0, 5, 10, 15),
            (1, 6, 11, 12),
            (2, 7, 8, 13),
            (3, 4, 9, 14),
        ):
            x[a] = (x[a] + x[b]) & _M32
            x[d] = _rotl32(x[d] ^ x[a], 16)
            x[c] = (x[c] + x[d]) & _M32
            x[b] = _rotl32(x[b] ^ x[c], 12)
            x[a] = (x[a] + x[b]) & _M32
            x[d] = _rotl32(x[d] ^ x[a], 8)
            x[c] = (x[c] + x[d]) & _M32
            x[b] = _rotl32(x[b] ^ x[c], 7)
    for i in range(16):
        out[off + i] = (x[i] + init[i]) & _M32


@njit(cache=True, nogil=True)
def _bucket_row(key, node, degree, predecessor_first, out, row, stream, x):
    """out[row] = the DRG's bucket-sampled parents of ``node`` (upstream
    ``BucketGraph::parents``); ``key[:7]`` holds the seed words, ``key[7]`` is set here."""
    if node < 2:
        for j in range(degree):
            out[row, j] = 0
        return
    m_prime = degree - 1
    key[7] = np.uint64(node)
    _chacha8_block(key, 0, stream, 0, x)
    _chacha8_block(key, 1, stream, 16, x)
    meta = np.uint64(node * m_prime)
    n_buckets = np.uint64(math.ceil(math.log2(float(meta))))
    first = 1 if predecessor_first else 0
    for k in range(m_prime):
        r0 = stream[4 * k] | (stream[4 * k + 1] << np.uint64(32))
        r1 = stream[4 * k + 2] | (stream[4 * k + 3] << np.uint64(32))
        bucket = r0 % n_buckets + np.uint64(1)
        largest = min(meta, np.uint64(1) << bucket)
        smallest = max(np.uint64(2), largest >> np.uint64(1))
        dist = smallest + r1 % (largest - smallest + np.uint64(1))
        mapped = (meta - dist) // np.uint64(m_prime)
        if mapped == np.uint64(node):
            mapped = np.uint64(node - 1)
        out[row, first + k] = mapped
    out[row, 0 if predecessor_first else m_prime] = np.uint64(node - 1)


@njit(cache=True, nogil=True, parallel=True)
def k_bucket_parents(seed_words, n, degree, predecessor_first, out):
    """The DRG parents of every node (:func:`_bucket_row`).

    ``seed_words`` are the 7 little-endian words of the 28-byte DRG seed; node v's ChaCha8 key
    appends v as the eighth word. Each of the ``degree − 1`` sampled parents takes two u64
    draws (bucket, distance). The immediate predecessor goes first (api ≥ 1.1) or last (1.0).
    """
    nblk = (n + 1023) // 1024
    for blk in prange(nblk):
        key = np.zeros(8, dtype=np.uint64)
        stream = np.zeros(32, dtype=np.uint64)
        x = np.zeros(16, dtype=np.uint64)
        for i in range(7):
            key[i] = seed_words[i]
        for node in range(blk * 1024, min(n, (blk + 1) * 1024)):
            _bucket_row(key, node, degree, predecessor_first, out, node, stream, x)


@njit(cache=True, nogil=True)
def k_bucket_parents_of(seed_words, nodes, degree, predecessor_first, out):
    """out[r] = the DRG parents of nodes[r] (the rows of :func:`k_bucket_parents` alone)."""
    key = np.zeros(8, dtype=np.uint64)
    stream = np.zeros(32, dtype=np.uint64)
    x = np.zeros(16, dtype=np.uint64)
    for i in range(7):
        key[i] = seed_words[i]
    for r in range(nodes.shape[0]):
        _bucket_row(key, nodes[r], degree, predecessor_first, out, r, stream, x)
