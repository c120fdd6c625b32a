"""Point formats between the host and the curve kernels, shared by the MSM and fixed-base code.

Files hold zcash-uncompressed points (big-endian Fp, flags in the top bits of the first byte,
G2 coordinates c1 before c0); the kernels hold little-endian 32-bit limbs x‖y (G2 c0‖c1) with
the point at infinity as all zeros, and return XYZZ results (Montgomery form) that the host
turns back into zcash bytes.
"""

from __future__ import annotations

import numpy as np

from cuzk.errors import BadInput
from cuzk.field.constants import P

FP_WORDS = 12  # 32-bit limbs per Fp element
FLAG_MASK = 0xE0
FLAG_INFINITY = 0x40

# Fp elements per coordinate and bytes per zcash-uncompressed point.
GROUPS = {"g1": (1, 96), "g2": (2, 192)}


def zcash_to_limbs(group: str, rows: np.ndarray) -> np.ndarray:
    """(m, 96|192) zcash-uncompressed rows → (m, 24|48) uint32 little-endian limbs (canonical,
    not Montgomery) in the device layout x‖y, G2 coordinates c0‖c1; infinity → zeros."""
    nfp, size = GROUPS[group]
    m = rows.shape[0]
    flags = rows[:, 0] & FLAG_MASK
    bad = (flags != 0) & (flags != FLAG_INFINITY)
    if bad.any():
        i = int(np.argmax(bad))
        raise BadInput(
            f"{group} point {i}: flags 0x{int(flags[i]):02x} are invalid for an "
            "uncompressed encoding"
        )
    fps = rows.reshape(m, 2 * nfp, 48)[:, :, ::-1]  # each Fp big-endian → little-endian
    if nfp == 2:
        fps = fps[:, [1, 0, 3, 2], :]  # zcash writes c1 first
    le = np.ascontiguousarray(fps)
    flag_fp = 1 if nfp == 2 else 0  # where x (x.c1 for G2) went; its top byte carries the flags
    le[:, flag_fp, 47] &= np.uint8(0x1F)
    inf = flags == FLAG_INFINITY
    if inf.any():
        le[inf] = 0
    return le.view(np.uint32).reshape(m, 2 * nfp * FP_WORDS)


def _fp_ints(words: np.ndarray) -> list[int]:
    """(k, 12) uint32 limbs → ints."""
    raw = np.ascontiguousarray(words, dtype=np.uint32).tobytes()
    return [int.from_bytes(raw[i : i + 48], "little") for i in range(0, len(raw), 48)]


def _batch_inverse(values: list[int]) -> list[int]:
    """Inverses mod P of non-zero ints with one exponentiation (Montgomery's trick)."""
    prefix, acc = [], 1
    for v in values:
        prefix.append(acc)
        acc = acc * v % P
    inv = pow(acc, -1, P) if values else 1
    out = [0] * len(values)
    for i in range(len(values) - 1, -1, -1):
        out[i] = prefix[i] * inv % P
        inv = inv * values[i] % P
    return out


def xyzz_to_zcash(group: str, rows: np.ndarray) -> list[bytes]:
    """(k, 48|96) uint32 XYZZ points (Montgomery) → zcash-uncompressed bytes.

    x = X/ZZ and y = Y/ZZZ: the Montgomery factors cancel in the quotients. G2 divides by
    b = b0 + b1·u as a·conj(b)/(b0² + b1²)."""
    nfp, size = GROUPS[group]
    k = rows.shape[0]
    vals = _fp_ints(rows.reshape(k * 4 * nfp, FP_WORDS))
    coords = [[vals[(i * 4 + j) * nfp : (i * 4 + j + 1) * nfp] for j in range(4)] for i in range(k)]
    live = [i for i in range(k) if any(coords[i][2])]
    # Denominators in Fp: ZZ and ZZZ (G1) or their norms (G2).
    dens = [
        (d[0] if nfp == 1 else (d[0] * d[0] + d[1] * d[1]) % P)
        for i in live
        for d in (coords[i][2], coords[i][3])
    ]
    invs = iter(_batch_inverse(dens))
    out = [bytes([FLAG_INFINITY]) + bytes(size - 1)] * k
    for i in live:
        X, Y, ZZ, ZZZ = coords[i]
        if nfp == 1:
            x = X[0] * next(invs) % P
            y = Y[0] * next(invs) % P
            out[i] = x.to_bytes(48, "big") + y.to_bytes(48, "big")
        else:
            x0, x1 = _fp2_mul_conj(X, ZZ, next(invs))
            y0, y1 = _fp2_mul_conj(Y, ZZZ, next(invs))
            out[i] = b"".join(v.to_bytes(48, "big") for v in (x1, x0, y1, y0))
    return out


def _fp2_mul_conj(a: list[int], b: list[int], n: int) -> tuple[int, int]:
    """a·conj(b)·n in Fp2 = Fp[u]/(u²+1); a/b when n = 1/(b0² + b1²)."""
    i0, i1 = b[0] * n % P, -b[1] * n % P
    return (a[0] * i0 - a[1] * i1) % P, (a[0] * i1 + a[1] * i0) % P
