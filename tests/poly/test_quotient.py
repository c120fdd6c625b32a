"""The H quotient against exact polynomial division with Python ints."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.poly import Domain, h_quotient, intt


def _interpolate(evals: list[int], d: Domain) -> list[int]:
    """Naive inverse DFT: coefficients of the polynomial taking evals[i] at ω^i."""
    m_inv = pow(d.m, -1, R)
    return [
        m_inv * sum(e * pow(d.omega_inv, i * k, R) for i, e in enumerate(evals)) % R
        for k in range(d.m)
    ]


def _poly_mul(p: list[int], q: list[int]) -> list[int]:
    out = [0] * (len(p) + len(q) - 1)
    for i, x in enumerate(p):
        for j, y in enumerate(q):
            out[i + j] = (out[i + j] + x * y) % R
    return out


def _poly_divmod(num: list[int], den: list[int]) -> tuple[list[int], list[int]]:
    """Schoolbook long division over Fr."""
    num = num[:]
    lead_inv = pow(den[-1], -1, R)
    q = [0] * max(1, len(num) - len(den) + 1)
    for k in range(len(num) - len(den), -1, -1):
        c = num[k + len(den) - 1] * lead_inv % R
        q[k] = c
        for j, dj in enumerate(den):
            num[k + j] = (num[k + j] - c * dj) % R
    return q, num[: len(den) - 1]


def _random_ints(rng: np.random.Generator, n: int) -> list[int]:
    return [int.from_bytes(rng.bytes(32), "little") % R for _ in range(n)]


@pytest.mark.parametrize(("m", "n"), [(4, 4), (8, 8), (16, 16), (16, 11), (8, 5)])
def test_h_matches_exact_division(seeded, m: int, n: int) -> None:
    d = Domain(m)
    a = _random_ints(seeded.rng, n)
    b = _random_ints(seeded.rng, n)
    c = [x * y % R for x, y in zip(a, b, strict=True)]  # a satisfied system: a·b = c on ⟨ω⟩
    pad = [0] * (m - n)
    A, B, C = (_interpolate(v + pad, d) for v in (a, b, c))
    num = [(x - y) % R for x, y in zip(_poly_mul(A, B), C + [0] * (m - 1), strict=True)]
    z = [R - 1] + [0] * (m - 1) + [1]  # X^m − 1
    quotient, remainder = _poly_divmod(num, z)
    assert all(r == 0 for r in remainder), seeded.msg
    assert len(quotient) == m - 1
    h = h_quotient(fr.from_ints(a), fr.from_ints(b), fr.from_ints(c), d)
    assert h.shape == (m - 1, 4)
    assert fr.to_ints(h) == quotient, seeded.msg


@pytest.mark.parametrize("log_m", [14, 15])
def test_h_identity_at_random_point_large(seeded, log_m: int) -> None:
    """h(x)·(x^m − 1) = A(x)·B(x) − C(x) at a random x, for sizes past the NTT block split."""
    d = Domain(1 << log_m)
    n = d.m - 3
    a, b = fr.random(n, seeded.rng), fr.random(n, seeded.rng)
    c = fr.mul(a, b)
    h = fr.to_ints(h_quotient(a, b, c, d))
    A, B, C = (fr.to_ints(intt(v, d)) for v in (a, b, c))
    x = _random_ints(seeded.rng, 1)[0]

    def ev(p: list[int]) -> int:
        acc = 0
        for coef in reversed(p):
            acc = (acc * x + coef) % R
        return acc

    assert ev(h) * (pow(x, d.m, R) - 1) % R == (ev(A) * ev(B) - ev(C)) % R, seeded.msg


def test_h_overwrite_reuses_buffers(seeded) -> None:
    d = Domain(1 << 10)
    a, b = fr.random(d.m, seeded.rng), fr.random(d.m, seeded.rng)
    c = fr.mul(a, b)
    expect = h_quotient(a, b, c, d)
    assert fr.equal(h_quotient(a.copy(), b.copy(), c.copy(), d, overwrite=True), expect)
    keep = a.copy()
    h_quotient(a, b, c, d)
    assert np.array_equal(a, keep)  # default: inputs untouched


def test_h_rejects_mismatched_lengths() -> None:
    d = Domain(8)
    with pytest.raises(BadInput):
        h_quotient(fr.zeros(8), fr.zeros(7), fr.zeros(8), d)
    with pytest.raises(BadInput):
        h_quotient(fr.zeros(9), fr.zeros(9), fr.zeros(9), d)
