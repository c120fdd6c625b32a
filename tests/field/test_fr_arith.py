"""Elementwise arithmetic, inverses, powers and reductions against Python ints mod r."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import MONT_R, R

EDGES = [0, 1, 2, R - 1, R - 2, (R - 1) // 2, (R + 1) // 2, 2**64 - 1, 2**128, 2**254, MONT_R]


def _operands(seeded, n: int = 300) -> tuple[list[int], list[int]]:
    """Random operands with every pair of edge values included."""
    rnd = [int.from_bytes(seeded.rng.bytes(32), "little") % R for _ in range(2 * n)]
    xs = [x for x in EDGES for _ in EDGES] + rnd[:n]
    ys = [y for _ in EDGES for y in EDGES] + rnd[n:]
    return xs, ys


@pytest.mark.parametrize(
    ("name", "op"),
    [
        ("add", lambda x, y: x + y),
        ("sub", lambda x, y: x - y),
        ("mul", lambda x, y: x * y),
    ],
)
def test_binary_ops(seeded, name: str, op) -> None:
    xs, ys = _operands(seeded)
    got = getattr(fr, name)(fr.from_ints(xs), fr.from_ints(ys))
    assert fr.to_ints(got) == [op(x, y) % R for x, y in zip(xs, ys, strict=True)], seeded.msg


def test_inplace_ops_match(seeded) -> None:
    xs, ys = _operands(seeded, 100)
    a, b = fr.from_ints(xs), fr.from_ints(ys)
    for name in ("add", "sub", "mul"):
        target = a.copy()
        assert getattr(fr, f"{name}_inplace")(target, b) is target
        assert fr.equal(target, getattr(fr, name)(a, b)), (name, seeded.msg)


def test_unary_ops(seeded) -> None:
    xs, _ = _operands(seeded)
    a = fr.from_ints(xs)
    assert fr.to_ints(fr.neg(a)) == [(-x) % R for x in xs], seeded.msg
    assert fr.to_ints(fr.square(a)) == [x * x % R for x in xs], seeded.msg
    for k in (0, 1, -1, 7, R - 1, 2**300 + 5, int(seeded.rng.integers(2**62))):
        assert fr.to_ints(fr.scale(a, k)) == [x * k % R for x in xs], (k, seeded.msg)
    t = a.copy()
    fr.scale_inplace(t, 11)
    assert fr.to_ints(t) == [x * 11 % R for x in xs]


def test_inputs_are_not_modified(seeded) -> None:
    a, b = fr.random(50, seeded.rng), fr.random(50, seeded.rng)
    a0, b0 = a.copy(), b.copy()
    for f in (fr.add, fr.sub, fr.mul, fr.dot):
        f(a, b)
    for f in (fr.neg, fr.square, fr.inverse, fr.batch_inverse, fr.classify, fr.sum):
        f(a)
    assert np.array_equal(a, a0) and np.array_equal(b, b0)


@pytest.mark.parametrize("n", [1, 2, 37, 4096, 4097, 9000])
def test_inverses(seeded, n: int) -> None:
    """Sizes straddle the 4096-element block of the batch inversion."""
    rnd = [int.from_bytes(seeded.rng.bytes(32), "little") % R or 1 for _ in range(n)]
    xs = (EDGES[1:] + rnd)[:n]
    a = fr.from_ints(xs)
    expect = [pow(x, R - 2, R) for x in xs]
    assert fr.to_ints(fr.batch_inverse(a)) == expect, seeded.msg
    if n <= 4097:
        assert fr.to_ints(fr.inverse(a)) == expect, seeded.msg


@pytest.mark.parametrize("fn", [fr.inverse, fr.batch_inverse])
def test_inverse_of_zero_raises_naming_index(seeded, fn) -> None:
    a = fr.random(5000, seeded.rng)
    a[4321] = 0
    a[4500] = 0
    with pytest.raises(ZeroDivisionError, match="4321"):
        fn(a)
    with pytest.raises(ZeroDivisionError):
        fn(fr.zeros(1))


@pytest.mark.parametrize("n", [0, 1, 5, 4096, 10_000])
def test_powers(seeded, n: int) -> None:
    base = int.from_bytes(seeded.rng.bytes(32), "little") % R
    start = int.from_bytes(seeded.rng.bytes(32), "little") % R
    assert fr.to_ints(fr.powers(base, n, start)) == [
        start * pow(base, i, R) % R for i in range(n)
    ], seeded.msg
    assert fr.to_ints(fr.powers(7, min(n, 3))) == [pow(7, i, R) for i in range(min(n, 3))]
    assert fr.to_ints(fr.powers(0, min(n, 3))) == [1, 0, 0][: min(n, 3)]


def test_scale_by_powers(seeded) -> None:
    xs, _ = _operands(seeded)
    a = fr.from_ints(xs)
    got = fr.to_ints(fr.scale_by_powers(a, 7, 3))
    assert got == [x * 3 * pow(7, i, R) % R for i, x in enumerate(xs)], seeded.msg
    fr.scale_by_powers_inplace(a, 7, 3)
    assert fr.to_ints(a) == got


def test_equal_is_zero_classify(seeded) -> None:
    xs = [0, 1, 2, R - 1, 0, 1, MONT_R, 1 + R] + [
        int.from_bytes(seeded.rng.bytes(32), "little") % R for _ in range(50)
    ]
    a = fr.from_ints(xs)
    assert fr.equal(a, fr.from_ints(xs))
    assert not fr.equal(a, fr.add(a, fr.ones(len(xs))))
    assert not fr.equal(a, a[:-1])
    assert fr.is_zero(a).tolist() == [x % R == 0 for x in xs]
    cls = fr.classify(a)
    assert cls.dtype == np.int8
    assert cls.tolist() == [0 if x % R == 0 else 1 if x % R == 1 else 2 for x in xs], seeded.msg


def test_dot_and_sum(seeded) -> None:
    for n in (0, 1, 100, 5000):
        xs = [int.from_bytes(seeded.rng.bytes(32), "little") % R for _ in range(n)]
        ys = [int.from_bytes(seeded.rng.bytes(32), "little") % R for _ in range(n)]
        a, b = fr.from_ints(xs), fr.from_ints(ys)
        d, s = fr.dot(a, b), fr.sum(a)
        assert d.shape == (4,) and s.shape == (4,)
        assert fr.to_int(d) == sum(x * y for x, y in zip(xs, ys, strict=True)) % R, seeded.msg
        assert fr.to_int(s) == sum(xs) % R, seeded.msg


def test_powers_rejects_negative_length() -> None:
    with pytest.raises(BadInput):
        fr.powers(2, -1)
