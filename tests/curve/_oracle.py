"""Test helpers. py_ecc is the independent oracle: zcash bytes computed from its affine
coordinates, and points arkworks would never produce (off the curve, outside the subgroup)."""

from __future__ import annotations

import random

import numpy as np
from py_ecc.bls.point_compression import compress_G1, compress_G2, modular_squareroot_in_FQ2
from py_ecc.optimized_bls12_381 import FQ2, G1, G2, Z1, Z2, b2, is_inf, multiply, normalize

from cuzk.curve import g1_generator, g1_identity, g1_mul, g2_generator, g2_identity, g2_mul
from cuzk.curve.points import P, R


def scalar_rows(values: list[int]) -> np.ndarray:
    """(n, 32) canonical little-endian rows, packed by hand (no field module involved)."""
    raw = b"".join((v % R).to_bytes(32, "little") for v in values)
    return np.frombuffer(raw, dtype=np.uint8).reshape(len(values), 32)


def fp(v: int) -> bytes:
    return int(v).to_bytes(48, "big")


def ecc_g1(k: int):
    return multiply(G1, k % R) if k % R else Z1


def ecc_g2(k: int):
    return multiply(G2, k % R) if k % R else Z2


def zcash_g1(pt, compressed: bool) -> bytes:
    if compressed:
        return int(compress_G1(pt)).to_bytes(48, "big")
    if is_inf(pt):
        return bytes([0x40]) + bytes(95)
    x, y = normalize(pt)
    return fp(x.n) + fp(y.n)


def zcash_g2(pt, compressed: bool) -> bytes:
    if compressed:
        z1, z2 = compress_G2(pt)
        return int(z1).to_bytes(48, "big") + int(z2).to_bytes(48, "big")
    if is_inf(pt):
        return bytes([0x40]) + bytes(191)
    x, y = normalize(pt)
    (x0, x1), (y0, y1) = x.coeffs, y.coeffs
    return fp(x1) + fp(x0) + fp(y1) + fp(y0)


def _sqrt_fp(a: int) -> int | None:
    y = pow(a, (P + 1) // 4, P)  # p ≡ 3 mod 4
    return y if y * y % P == a % P else None


def g1_off_subgroup(rng: random.Random) -> tuple[int, int]:
    """Affine (x, y) on y² = x³ + 4 over Fp; a random one lies outside the r-torsion with
    probability 1 − 1/h (h ≈ 2^126)."""
    while True:
        x = rng.randrange(P)
        y = _sqrt_fp(x**3 + 4)
        if y is not None:
            return x, y


def g1_off_curve(rng: random.Random) -> tuple[int, int]:
    while True:
        x, y = rng.randrange(P), rng.randrange(P)
        if (y * y - x**3 - 4) % P:
            return x, y


def g1_x_without_y(rng: random.Random) -> int:
    while True:
        x = rng.randrange(P)
        if _sqrt_fp(x**3 + 4) is None:
            return x


def g2_off_subgroup(rng: random.Random) -> tuple[tuple[int, int], tuple[int, int]]:
    """((x0, x1), (y0, y1)) on the twist y² = x³ + 4(1 + u), almost surely not in G2."""
    while True:
        x = FQ2([rng.randrange(P), rng.randrange(P)])
        y = modular_squareroot_in_FQ2(x**3 + b2)
        if y is not None:
            (x0, x1), (y0, y1) = x.coeffs, y.coeffs
            return (int(x0), int(x1)), (int(y0), int(y1))


def g2_uncompressed_from_coords(x: tuple[int, int], y: tuple[int, int]) -> bytes:
    return fp(x[1]) + fp(x[0]) + fp(y[1]) + fp(y[0])


def random_points(prng: random.Random, n: int, group: str) -> list:
    """n points including repeats and identities (cheap: sums of three random multiples)."""
    if group == "g1":
        mul, gen, ident = g1_mul, g1_generator, g1_identity
    else:
        mul, gen, ident = g2_mul, g2_generator, g2_identity
    seeds = [mul(gen(), prng.randrange(1, R)) for _ in range(3)]
    pts = list(seeds)
    while len(pts) < n:
        pts.append(pts[-1] + pts[-2] + pts[-3])
    pts = pts[:n]
    if n >= 3:
        pts[1] = ident()
        pts[-1] = pts[0]
    return pts
