"""NTT family against naive evaluation, round trips, padding and in-place contracts."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.poly import (
    Domain,
    coset_intt,
    coset_intt_inplace,
    coset_ntt,
    coset_ntt_inplace,
    intt,
    intt_inplace,
    ntt,
    ntt_inplace,
)


def _horner(coeffs: list[int], x: int) -> int:
    acc = 0
    for c in reversed(coeffs):
        acc = (acc * x + c) % R
    return acc


def _random_ints(rng: np.random.Generator, n: int) -> list[int]:
    return [int.from_bytes(rng.bytes(32), "little") % R for _ in range(n)]


@pytest.mark.parametrize("m", [1, 2, 8, 64])
def test_ntt_matches_naive_evaluation(seeded, m: int) -> None:
    d = Domain(m)
    coeffs = _random_ints(seeded.rng, m)
    v = fr.from_ints(coeffs)
    points = [pow(d.omega, i, R) for i in range(m)]
    assert fr.to_ints(ntt(v, d)) == [_horner(coeffs, x) for x in points], seeded.msg
    coset = [7 * x % R for x in points]
    assert fr.to_ints(coset_ntt(v, d)) == [_horner(coeffs, x) for x in coset], seeded.msg


@pytest.mark.parametrize("m", [2, 8, 64])
def test_intt_matches_naive_interpolation(seeded, m: int) -> None:
    d = Domain(m)
    evals = _random_ints(seeded.rng, m)
    m_inv = pow(m, -1, R)
    expect = [
        m_inv * sum(e * pow(d.omega_inv, i * k, R) for i, e in enumerate(evals)) % R
        for k in range(m)
    ]
    assert fr.to_ints(intt(fr.from_ints(evals), d)) == expect, seeded.msg
    g_inv = pow(7, -1, R)
    assert fr.to_ints(coset_intt(fr.from_ints(evals), d)) == [
        c * pow(g_inv, k, R) % R for k, c in enumerate(expect)
    ], seeded.msg


@pytest.mark.parametrize("log_m", [1, 3, 10, 13, 14, 16])
def test_round_trips(seeded, log_m: int) -> None:
    """Sizes on both sides of the block/stage split (2^13) exercise every kernel path."""
    d = Domain(1 << log_m)
    v = fr.random(d.m, seeded.rng)
    assert fr.equal(intt(ntt(v, d), d), v), seeded.msg
    assert fr.equal(ntt(intt(v, d), d), v), seeded.msg
    assert fr.equal(coset_intt(coset_ntt(v, d), d), v), seeded.msg


@pytest.mark.parametrize("log_m", [14, 15])
def test_large_ntt_at_sampled_points(seeded, log_m: int) -> None:
    """Beyond naive sizes, check a few outputs by Horner evaluation (O(m) each)."""
    d = Domain(1 << log_m)
    coeffs = _random_ints(seeded.rng, d.m)
    v = fr.from_ints(coeffs)
    evals, coset_evals = fr.to_ints(ntt(v, d)), fr.to_ints(coset_ntt(v, d))
    for i in [0, 1, d.m // 2, d.m - 1, *seeded.rng.integers(0, d.m, size=3).tolist()]:
        x = pow(d.omega, i, R)
        assert evals[i] == _horner(coeffs, x), (i, seeded.msg)
        assert coset_evals[i] == _horner(coeffs, 7 * x % R), (i, seeded.msg)


def test_short_input_is_zero_padded(seeded) -> None:
    d = Domain(16)
    coeffs = _random_ints(seeded.rng, 5)
    got = fr.to_ints(ntt(fr.from_ints(coeffs), d))
    assert got == [_horner(coeffs, pow(d.omega, i, R)) for i in range(16)], seeded.msg
    assert fr.equal(ntt(fr.from_ints(coeffs), d), ntt(fr.from_ints(coeffs + [0] * 11), d))


def test_out_of_place_leaves_input_alone(seeded) -> None:
    d = Domain(1 << 14)
    v = fr.random(d.m, seeded.rng)
    keep = v.copy()
    for f in (ntt, intt, coset_ntt, coset_intt):
        out = f(v, d)
        assert out.shape == (d.m, 4) and out is not v
    assert np.array_equal(v, keep)


def test_inplace_variants_match(seeded) -> None:
    d = Domain(1 << 14)
    v = fr.random(d.m, seeded.rng)
    for f_in, f_out in (
        (ntt_inplace, ntt),
        (intt_inplace, intt),
        (coset_ntt_inplace, coset_ntt),
        (coset_intt_inplace, coset_intt),
    ):
        w = v.copy()
        assert f_in(w, d) is w
        assert fr.equal(w, f_out(v, d)), (f_in.__name__, seeded.msg)


def test_linearity_large(seeded) -> None:
    d = Domain(1 << 15)
    a, b = fr.random(d.m, seeded.rng), fr.random(d.m, seeded.rng)
    assert fr.equal(ntt(fr.add(a, b), d), fr.add(ntt(a, d), ntt(b, d))), seeded.msg


def test_bad_inputs() -> None:
    d = Domain(8)
    with pytest.raises(BadInput):
        ntt(fr.zeros(9), d)
    with pytest.raises(BadInput):
        ntt_inplace(fr.zeros(4), d)
    with pytest.raises(BadInput):
        ntt_inplace(fr.zeros(16)[::2], d)
    with pytest.raises(BadInput):
        ntt(np.zeros((8, 4), dtype=np.int64), d)
