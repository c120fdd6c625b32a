"""snarkjs's H variant: its roots of unity, the index permutation onto ours, and the H values
against a direct evaluation with Python integers."""

from __future__ import annotations

import pytest

from cuzk.field import fr
from cuzk.field.constants import FR_ROOT_OF_UNITY, R
from cuzk.poly import Domain
from cuzk.poly.snarkjs_h import (
    root_exponent,
    snarkjs_h,
    snarkjs_nonresidue,
    snarkjs_odd_shift,
    snarkjs_order,
    snarkjs_root,
)


def test_roots():
    assert snarkjs_nonresidue() == 5  # as the issue and ffjavascript's search find it
    w = snarkjs_root(32)
    assert pow(w, 2**32, R) == 1 and pow(w, 2**31, R) != 1
    assert snarkjs_root(4) == pow(w, 2**28, R)
    k = root_exponent()
    assert k % 2 == 1 and pow(FR_ROOT_OF_UNITY, k, R) == w
    assert snarkjs_odd_shift(3) == snarkjs_root(4)
    assert snarkjs_odd_shift(32) == 25


def test_order_is_a_permutation():
    perm = snarkjs_order(64)
    assert sorted(perm.tolist()) == list(range(64))
    assert perm[0] == 0


def _interpolate_eval(values: list[int], points: list[int], at: int) -> int:
    """The polynomial through (points[i], values[i]) evaluated at ``at`` (Lagrange form)."""
    total = 0
    for i, (xi, yi) in enumerate(zip(points, values, strict=True)):
        num, den = 1, 1
        for j, xj in enumerate(points):
            if j != i:
                num = num * (at - xj) % R
                den = den * (xi - xj) % R
        total = (total + yi * num * pow(den, -1, R)) % R
    return total


@pytest.mark.parametrize("log_m, n", [(3, 8), (4, 11), (2, 1)])
def test_matches_direct_evaluation(rng, log_m, n):
    m = 1 << log_m
    a_ints = [int(x) for x in rng.integers(0, 2**62, n)]
    b_ints = [int(x) for x in rng.integers(0, 2**62, n)]
    got = fr.to_ints(snarkjs_h(fr.from_ints(a_ints), fr.from_ints(b_ints), Domain(m)))
    w, s = snarkjs_root(log_m), snarkjs_odd_shift(log_m)
    pts = [pow(w, i, R) for i in range(m)]
    a_full = a_ints + [0] * (m - n)
    b_full = b_ints + [0] * (m - n)
    c_full = [x * y % R for x, y in zip(a_full, b_full, strict=True)]
    for i in (0, 1, m - 1):
        x = s * pts[i] % R
        want = (
            _interpolate_eval(a_full, pts, x) * _interpolate_eval(b_full, pts, x)
            - _interpolate_eval(c_full, pts, x)
        ) % R
        assert got[i] == want, i
