"""Scalar multiplication, MSM, batch sums, fixed-base batches and pairings."""

from __future__ import annotations

import operator
import random
from functools import reduce

import numpy as np
import pytest

from cuzk.curve import (
    R,
    g1_generator,
    g1_identity,
    g1_mul,
    g2_generator,
    g2_identity,
    g2_mul,
)
from cuzk.curve.encoding import g1_to_bytes, g2_to_bytes
from cuzk.curve.fixed_base import FixedBaseTable, choose_window
from cuzk.curve.msm import (
    g1_fixed_base_batch,
    g1_msm,
    g1_sum,
    g2_fixed_base_batch,
    g2_msm,
    g2_sum,
)
from cuzk.curve.pairing import pairing_check
from cuzk.errors import BadInput

from ._oracle import ecc_g1, ecc_g2, random_points, scalar_rows, zcash_g1, zcash_g2

GROUPS = {
    "g1": (g1_mul, g1_generator, g1_identity, g1_msm, g1_sum, g1_fixed_base_batch, g1_to_bytes),
    "g2": (g2_mul, g2_generator, g2_identity, g2_msm, g2_sum, g2_fixed_base_batch, g2_to_bytes),
}


def special_scalars(prng: random.Random, n: int) -> list[int]:
    ks = [prng.randrange(R) for _ in range(n)]
    for i, k in enumerate([0, 1, R - 1, 2]):
        if i < n:
            ks[(i * 7) % n] = k
    return ks


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_mul_matches_py_ecc(group: str, prng: random.Random) -> None:
    mul, gen, ident, *_, to_bytes = GROUPS[group]
    ecc, zcash = (ecc_g1, zcash_g1) if group == "g1" else (ecc_g2, zcash_g2)
    for k in [prng.randrange(R), prng.randrange(R), -prng.randrange(R), R + 5, 0, R]:
        got = to_bytes(mul(gen(), k), compressed=True)
        assert got == zcash(ecc(k), True), f"k={k}"
    assert mul(gen(), 0) == ident() and mul(gen(), R) == ident()
    assert mul(gen(), -1) == -gen()


@pytest.mark.parametrize(
    "group,n", [(g, n) for g in ("g1", "g2") for n in (0, 1, 2, 3, 5, 17)] + [("g1", 100)]
)
def test_msm_matches_naive_sum(group: str, n: int, prng: random.Random) -> None:
    mul, gen, ident, msm, *_ = GROUPS[group]
    pts = random_points(prng, n, group)
    ks = special_scalars(prng, n)
    expected = reduce(operator.add, (mul(p, k) for p, k in zip(pts, ks, strict=True)), ident())
    assert msm(pts, scalar_rows(ks)) == expected
    assert msm(tuple(pts), scalar_rows(ks).tobytes()) == expected  # any sequence, any buffer


def test_msm_rejects_bad_input(prng: random.Random) -> None:
    pts = random_points(prng, 6, "g1")
    with pytest.raises(BadInput, match="6 points with 5 scalars"):
        g1_msm(pts, scalar_rows([1] * 5))
    bad = bytearray(scalar_rows([1] * 6).tobytes())
    bad[3 * 32 : 4 * 32] = R.to_bytes(32, "little")
    with pytest.raises(BadInput, match="scalar 3 is not canonical"):
        g1_msm(pts, bytes(bad))
    with pytest.raises(BadInput, match="multiple of 32"):
        g1_msm(pts, b"\0" * 33)
    with pytest.raises(BadInput, match="shape"):
        g1_msm(pts, np.zeros((6, 31), dtype=np.uint8))
    with pytest.raises(BadInput, match="G2Point points"):
        g2_msm(pts, scalar_rows([1] * 6))


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_sum(group: str, prng: random.Random) -> None:
    mul, gen, ident, msm, total, *_ = GROUPS[group]
    pts = random_points(prng, 12, group)
    assert total([]) == ident()
    assert total(pts[:1]) == pts[0]
    assert total(pts) == msm(pts, scalar_rows([1] * 12))


@pytest.mark.parametrize("group,n", [("g1", 40), ("g2", 8)])
def test_fixed_base_batch_matches_per_point_mul(group: str, n: int, prng: random.Random) -> None:
    mul, gen, _, _, _, batch, to_bytes = GROUPS[group]
    base = mul(gen(), prng.randrange(1, R))
    ks = special_scalars(prng, n)
    out = batch(base, scalar_rows(ks))
    expected = b"".join(to_bytes(mul(base, k), compressed=False) for k in ks)
    assert out == expected
    assert batch(base, scalar_rows([])) == b""


def test_fixed_base_table_handles_every_window_width(prng: random.Random) -> None:
    base = g1_mul(g1_generator(), prng.randrange(1, R))
    ks = [0, 1, R - 1, (1 << 256) - 1, prng.randrange(R)]
    expected = [g1_mul(base, k) for k in ks]  # g1_mul reduces mod r, as k·B does
    rows = np.frombuffer(b"".join(k.to_bytes(32, "little") for k in ks), np.uint8).reshape(-1, 32)
    for window in (1, 3, 7, 8, 9):
        assert FixedBaseTable(base, window).multiply(rows) == expected, f"window {window}"
    assert choose_window(1, "g1") <= choose_window(1 << 20, "g1") <= 16
    assert choose_window(1 << 20, "g2") <= choose_window(1 << 20, "g1")


def test_pairing_check(prng: random.Random) -> None:
    a, b = prng.randrange(1, R), prng.randrange(1, R)
    p, q = g1_generator(), g2_generator()
    ap, bq = g1_mul(p, a), g2_mul(q, b)
    abp = g1_mul(p, a * b)
    assert pairing_check([(ap, bq), (-abp, q)])
    assert not pairing_check([(ap, bq), (-(abp + p), q)])
    assert not pairing_check([(ap, bq), (-abp, q + q)])
    assert pairing_check([(ap, bq), (-ap, bq), (g1_identity(), q), (p, g2_identity())])
    assert pairing_check([])
    with pytest.raises(BadInput):
        pairing_check([(q, p)])  # type: ignore[list-item]


def test_pairing_agrees_with_py_ecc(prng: random.Random) -> None:
    """py_ecc decides e(P1, Q1) = e(P2, Q2) with its own pairing (~0.7 s each); our check on the
    same points, imported through their zcash bytes, must agree for a true and a false case."""
    from py_ecc.optimized_bls12_381 import pairing

    from cuzk.curve.encoding import g1_from_bytes, g2_from_bytes

    a, b = prng.randrange(1, R), prng.randrange(1, R)
    p1, q1 = ecc_g1(a), ecc_g2(b)
    p2, q2 = ecc_g1(a * b), ecc_g2(1)
    p3 = ecc_g1(a * b + 1)
    e1 = pairing(q1, p1)
    ours = [g1_from_bytes(zcash_g1(x, True), compressed=True) for x in (p1, p2, p3)]
    q1_, q2_ = (g2_from_bytes(zcash_g2(y, True), compressed=True) for y in (q1, q2))
    assert (e1 == pairing(q2, p2)) is pairing_check([(ours[0], q1_), (-ours[1], q2_)]) is True
    assert (e1 == pairing(q2, p3)) is pairing_check([(ours[0], q1_), (-ours[2], q2_)]) is False
