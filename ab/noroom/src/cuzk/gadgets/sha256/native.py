"""SHA-256's compression function in numba: one copy for every native caller.

Sealing hashes whole layers of labels and TreeD nodes with it
(:mod:`cuzk.circuits.filecoin.seal`), and a replayed compression in witness mode
(:mod:`~cuzk.gadgets.sha256.tape`) takes its output words from it: the circuit's output bits
are those words' bits, so computing them natively (~1 µs) spares running the compression's
whole bit program (~26,000 steps) on the host when the program itself is left to the backend.

Words are uint32 and every sum is truncated with ``uint32()`` (numba widens mixed-width
integer arithmetic).
"""

from __future__ import annotations

import numpy as np
from numba import njit, uint32

from cuzk.gadgets.sha256.constants import IV, ROUND_CONSTANTS

K256 = np.array(ROUND_CONSTANTS, dtype=np.uint32)
H256 = np.array(IV, dtype=np.uint32)


@njit(cache=True, inline="always")
def rotr32(x, n):  # pragma: no cover - numba
    # Bits above 31 may be left set; every value is truncated with uint32() before reuse.
    return (x >> n) | (x << (32 - n))


@njit(cache=True, nogil=True)
def compress(h, buf, off, w):  # pragma: no cover - numba
    """One SHA-256 compression of the 64 bytes buf[off:off+64] into state h (8 uint32);
    ``w`` is scratch for the 64-word schedule."""
    for i in range(16):
        j = off + 4 * i
        w[i] = ((uint32(buf[j]) << 24) | (uint32(buf[j + 1]) << 16)
                | (uint32(buf[j + 2]) << 8) | uint32(buf[j + 3]))  # fmt: skip
    for i in range(16, 64):
        x, y = w[i - 15], w[i - 2]
        s0 = rotr32(x, uint32(7)) ^ rotr32(x, uint32(18)) ^ (x >> uint32(3))
        s1 = rotr32(y, uint32(17)) ^ rotr32(y, uint32(19)) ^ (y >> uint32(10))
        w[i] = uint32(w[i - 16] + s0 + w[i - 7] + s1)
    a, b, c, d, e, f, g, hh = h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]
    for i in range(64):
        s1 = rotr32(e, uint32(6)) ^ rotr32(e, uint32(11)) ^ rotr32(e, uint32(25))
        ch = (e & f) ^ (~e & g)
        t1 = uint32(hh + s1 + ch + K256[i] + w[i])
        s0 = rotr32(a, uint32(2)) ^ rotr32(a, uint32(13)) ^ rotr32(a, uint32(22))
        t2 = uint32(s0 + ((a & b) ^ (a & c) ^ (b & c)))
        hh, g, f, e = g, f, e, uint32(d + t1)
        d, c, b, a = c, b, a, uint32(t1 + t2)
    h[0] += a
    h[1] += b
    h[2] += c
    h[3] += d
    h[4] += e
    h[5] += f
    h[6] += g
    h[7] += hh


@njit(cache=True, nogil=True)
def compress_slots(codes, vals):  # pragma: no cover - numba
    """The eight output words of a compression given as the tapes' 768 input slots: the 512
    block bits (big-endian within each word) then the eight state words' bits (least
    significant first); slot i's value is ``codes[i]`` for constants (0, 1), else
    ``vals[i]`` (code 2) or its negation (code 3)."""
    bit = np.empty(768, dtype=np.uint8)
    for i in range(768):
        c = codes[i]
        bit[i] = c if c < 2 else vals[i] ^ (c & 1)
    buf = np.zeros(64, dtype=np.uint8)
    for i in range(512):
        buf[i >> 3] |= bit[i] << (7 - (i & 7))
    h = np.zeros(8, dtype=np.uint32)
    for j in range(8):
        x = uint32(0)
        for k in range(32):
            x |= uint32(bit[512 + 32 * j + k]) << uint32(k)
        h[j] = x
    compress(h, buf, 0, np.empty(64, dtype=np.uint32))
    return h
