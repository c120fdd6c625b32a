"""Precomputed bases (``GpuMsm.precompute``) replayed on integers: an additive group where a
point is a number, copy j of point P is 2^(c·j)·P, and ``msm_digits`` files window w's digit
into bucket row w div K from copy w mod K. The rows' bucket sums, reduced per row and weighed
by ``window_rows``'s exponents, must give Σ sᵢ·Pᵢ for every window and copy count the driver
can choose; ``choose_window`` must not change its choices for bases without copies."""

from __future__ import annotations

import pytest

from cuzk.backend.cuda.msm_bases import MAX_WINDOW, choose_window, window_rows
from cuzk.field.constants import R
from tests.backend.test_msm_ba_host import signed_digits


def msm_like_the_kernels(scalars: list[int], points: list[int], c: int, copies: int) -> int:
    """msm_digits' keys and point indices, the buckets' sums, Σ_b (b+1)·V_b per row and the
    host's Horner weights, with the copies made as msm_shift_copy makes them."""
    n = len(points)
    nwin, rows, exponents = window_rows(c, copies)
    k = min(copies, nwin)  # the copies precompute makes, and the most windows in a row
    table = [p << (c * j) for j in range(k) for p in points]  # copy j = 2^(c·j)·P
    nb = 1 << (c - 1)
    buckets = [0] * (rows * nb)
    most = [0] * (rows * nb)
    for i, s in enumerate(scalars):
        for w, d in enumerate(signed_digits(s, c, nwin)):
            if d == 0:
                continue
            key = (w // k) * nb + abs(d) - 1  # msm_digits with copies = K
            point = table[i + (w % k) * n]
            buckets[key] += point if d > 0 else -point
            most[key] += 1
    assert max(most) <= len(scalars) * k  # the segment tree's bound in enqueue_windows
    row_sums = [sum((b + 1) * buckets[r * nb + b] for b in range(nb)) for r in range(rows)]
    assert len(exponents) == rows
    return sum(v << e for v, e in zip(row_sums, exponents, strict=True))


@pytest.mark.parametrize("c", [5, 7, 8, 11, 16])
@pytest.mark.parametrize("copies", [1, 2, 3, 5, 64])
def test_copies_give_the_same_sum(rng, c, copies):
    n = 12
    scalars = [int.from_bytes(rng.bytes(32), "little") % R for _ in range(n)]
    scalars[:4] = [0, 1, R - 1, scalars[5]]  # zero, one, the top digits, a repeat
    points = [int(x) for x in rng.integers(-(1 << 30), 1 << 30, n)]
    want = sum(s * p for s, p in zip(scalars, points, strict=True))
    assert msm_like_the_kernels(scalars, points, c, copies) == want


def test_window_rows():
    assert window_rows(16) == (16, 16, [16 * w for w in range(16)])
    assert window_rows(20, 13) == (13, 1, [0])
    assert window_rows(20, 99) == (13, 1, [0])  # more copies than windows: one row
    assert window_rows(20, 2) == (13, 7, [40 * r for r in range(7)])
    assert window_rows(22, 4) == (12, 3, [0, 88, 176])


def test_window_choice_without_copies_is_unchanged():
    # The model's choices the window sweeps confirmed (bench/NOTES.md), and its range.
    assert choose_window(1 << 20) == 16 and choose_window(1 << 24) == 20
    assert all(choose_window(1 << lg) <= MAX_WINDOW for lg in range(8, 31))
    # With a copy per window the reduction is paid once, and a wider window pays, up to
    # MAX_WINDOW (wider ones measured slower, session 12).
    assert choose_window(1 << 20) < choose_window(1 << 20, copies=13) == MAX_WINDOW
    assert choose_window(1 << 24, copies=64) == MAX_WINDOW
    assert choose_window(1 << 24, copies=2) >= choose_window(1 << 24)
