"""Bulk conversion of snarkjs's Montgomery-form Fp coordinates to canonical integers.

snarkjs stores every curve point as little-endian Fp elements in Montgomery form
(x·2^384 mod p). Our curve layer speaks zcash bytes (canonical, big-endian), so each coordinate
needs one Montgomery reduction x_m·2^-384 mod p. A 2^20-constraint key holds ~10^7 coordinates,
far too many for Python integers (~1 µs each), so the reduction is a numba kernel over 32-bit
words (numba has no 128-bit product; 32×32-bit products plus carries fit a uint64 exactly).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from cuzk.errors import BadInput
from cuzk.field.constants import FP_BYTES, P

_WORDS = FP_BYTES // 4  # 12 32-bit words per coordinate
_P32 = np.array([(P >> (32 * i)) & 0xFFFFFFFF for i in range(_WORDS)], dtype=np.uint64)
_PINV = np.uint64((-pow(P, -1, 2**32)) % 2**32)  # −p⁻¹ mod 2^32
_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_CHUNK = 1024  # coordinates per parallel task (one scratch buffer each)


@njit(cache=True, nogil=True)
def _reduce(t):  # pragma: no cover - compiled
    """Word-by-word Montgomery reduction of the 25-word scratch ``t`` in place: afterwards
    t[12..24] holds t·2^-384 mod p (possibly + p; callers know when it can be)."""
    for i in range(_WORDS):
        m = (t[i] * _PINV) & _M32
        carry = np.uint64(0)
        for j in range(_WORDS):
            s = t[i + j] + m * _P32[j] + carry
            t[i + j] = s & _M32
            carry = s >> _S32
        k = i + _WORDS
        while carry:
            s = t[k] + carry
            t[k] = s & _M32
            carry = s >> _S32
            k += 1


@njit(cache=True, nogil=True, parallel=True)
def _k_redc(x, out):  # pragma: no cover - compiled
    """out[i] = x[i]·2^-384 mod p for canonical x[i] < p (uint32 words, little-endian).

    Word-by-word Montgomery reduction. For x < p the result (x + m·p)/2^384 is < p + 1 and
    equals p only for x = 0 (which yields 0), so no final subtraction is needed.
    """
    n = x.shape[0]
    for c in prange((n + _CHUNK - 1) // _CHUNK):
        t = np.zeros(2 * _WORDS + 1, dtype=np.uint64)
        for e in range(c * _CHUNK, min(n, (c + 1) * _CHUNK)):
            for j in range(_WORDS):
                t[j] = np.uint64(x[e, j])
                t[_WORDS + j] = np.uint64(0)
            t[2 * _WORDS] = np.uint64(0)
            _reduce(t)
            for j in range(_WORDS):
                out[e, j] = np.uint32(t[_WORDS + j])


_R2 = np.array([((2**768 % P) >> (32 * i)) & 0xFFFFFFFF for i in range(_WORDS)], dtype=np.uint64)


@njit(cache=True, nogil=True, parallel=True)
def _k_to_mont(x, out):  # pragma: no cover - compiled
    """out[i] = x[i]·2^384 mod p for x[i] < p: the Montgomery product of x and 2^768 mod p
    (schoolbook 12×12-word product, then the reduction of :func:`_k_redc`, then one
    conditional subtraction since the result is < 2p)."""
    n = x.shape[0]
    for c in prange((n + _CHUNK - 1) // _CHUNK):
        t = np.zeros(2 * _WORDS + 1, dtype=np.uint64)
        for e in range(c * _CHUNK, min(n, (c + 1) * _CHUNK)):
            for j in range(2 * _WORDS + 1):
                t[j] = np.uint64(0)
            for i in range(_WORDS):
                xi = np.uint64(x[e, i])
                carry = np.uint64(0)
                for j in range(_WORDS):
                    s = t[i + j] + xi * _R2[j] + carry
                    t[i + j] = s & _M32
                    carry = s >> _S32
                t[i + _WORDS] = carry
            _reduce(t)
            # t[12..24] < 2p: subtract p once if it is not below p.
            geq = t[2 * _WORDS] != 0
            if not geq:
                geq = True
                for j in range(_WORDS - 1, -1, -1):
                    if t[_WORDS + j] != _P32[j]:
                        geq = t[_WORDS + j] > _P32[j]
                        break
            if geq:
                borrow = np.uint64(0)
                for j in range(_WORDS):
                    d = t[_WORDS + j] - _P32[j] - borrow
                    borrow = np.uint64(1) if t[_WORDS + j] < _P32[j] + borrow else np.uint64(0)
                    t[_WORDS + j] = d & _M32
            for j in range(_WORDS):
                out[e, j] = np.uint32(t[_WORDS + j])


@njit(cache=True, nogil=True)
def _k_first_not_below_p(x):  # pragma: no cover - compiled
    """Index of the first coordinate ≥ p (uint32 words, little-endian), or −1. Most elements
    are decided by their top word, so a scalar loop beats vectorised limb comparisons."""
    for e in range(x.shape[0]):
        for k in range(_WORDS - 1, -1, -1):
            w = np.uint64(x[e, k])
            if w < _P32[k]:
                break
            if w > _P32[k]:
                return e
        else:
            return e  # equal to p
    return -1


def mont_le_to_canonical_be(
    coords: np.ndarray, what: str = "coordinate", per_item: int = 1, first_index: int = 0
) -> np.ndarray:
    """(n, 48) uint8 little-endian Montgomery Fp elements → (n, 48) canonical big-endian.

    Raises:
        BadInput: an element is not reduced (≥ p), naming ``what`` and its index (elements
        are counted in groups of ``per_item``, e.g. 2 per G1 point, from ``first_index``).
    """
    if coords.dtype != np.uint8 or coords.ndim != 2 or coords.shape[1] != FP_BYTES:
        raise BadInput(f"Fp elements must be (n, {FP_BYTES}) uint8, got {coords.shape}")
    words = np.ascontiguousarray(coords).view(np.uint32)
    bad = int(_k_first_not_below_p(words))
    if bad >= 0:
        index = first_index + bad // per_item
        raise BadInput(f"{what} {index}: a coordinate is not a reduced field element (≥ p)")
    out = np.empty_like(words)
    if len(words):
        _k_redc(words, out)
    return out.view(np.uint8)[:, ::-1]


def canonical_be_to_mont_le(coords: np.ndarray, what: str = "coordinate") -> np.ndarray:
    """(n, 48) uint8 canonical big-endian Fp elements → (n, 48) little-endian Montgomery form
    (the inverse of :func:`mont_le_to_canonical_be`; used to write snarkjs keys).

    Raises:
        BadInput: an element is ≥ p, naming its index.
    """
    if coords.dtype != np.uint8 or coords.ndim != 2 or coords.shape[1] != FP_BYTES:
        raise BadInput(f"Fp elements must be (n, {FP_BYTES}) uint8, got {coords.shape}")
    words = np.ascontiguousarray(coords[:, ::-1]).view(np.uint32)
    bad = int(_k_first_not_below_p(words))
    if bad >= 0:
        raise BadInput(f"{what} {bad} is not a reduced field element (≥ p)")
    out = np.empty_like(words)
    if len(words):
        _k_to_mont(words, out)
    return out.view(np.uint8)


def canonical_to_mont_le(values: list[int]) -> bytes:
    """Canonical Fp integers → concatenated 48-byte little-endian Montgomery forms (tests:
    small counts, plain Python, independent of the kernels)."""
    out = bytearray()
    for v in values:
        if not 0 <= v < P:
            raise BadInput("Fp element out of range")
        out += (v * 2**384 % P).to_bytes(FP_BYTES, "little")
    return bytes(out)
