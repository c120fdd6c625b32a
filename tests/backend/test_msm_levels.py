"""The bucket reduction's level plan (``msm.reduction_levels``) against its definition: the
kernel's arithmetic replayed on integers (an additive group where a point is a number), so
Σ_b (b+1)·V_b must come out exactly for every plan the driver can choose."""

from __future__ import annotations

import pytest

from cuzk.backend.cuda.msm import (
    DENSE_CARRIED_BYTES,
    GROUP_SIZE,
    MIN_GROUP,
    carried_window,
    reduction_levels,
)
from cuzk.backend.cuda.msm_bases import choose_window, window_rows


def reduce_like_the_kernel(rows: list[list[int]], levels: list[tuple[int, int, int]]) -> list[int]:
    """msm_reduce_level then msm_sum_rows, on integers: per level and group g, running sums
    from the top bucket give A = Σ (b − g·gs + 1)·V_b and T = Σ V_b; A is scaled by 2^shift
    (the product of the earlier group sizes) and the next level's buckets are T_1, T_2, …"""
    out = []
    for values in rows:
        total, shift, v = 0, 0, list(values)
        for width, gs, ngroups in levels:
            assert len(v) == width
            t_out = []
            for g in range(ngroups):
                t = r = 0
                for b in range(min((g + 1) * gs, width) - 1, g * gs - 1, -1):
                    t += v[b]
                    r += t
                total += r << shift
                t_out.append(t)
            v = t_out[1:]
            shift += gs.bit_length() - 1
        assert v == []
        out.append(total)
    return out


@pytest.mark.parametrize("nb", [1, 2, 3, 7, 8, 9, 31, 32, 33, 100, 512, 1000, 4096])
@pytest.mark.parametrize("rows", [1, 13, 26])
@pytest.mark.parametrize("min_threads", [0, 64, 1 << 15])
def test_levels_reduce_to_the_weighted_sum(rng, nb, rows, min_threads):
    levels = reduction_levels(nb, rows, min_threads)
    values = [[int(x) for x in rng.integers(-(1 << 40), 1 << 40, nb)] for _ in range(rows)]
    want = [sum((b + 1) * x for b, x in enumerate(row)) for row in values]
    assert reduce_like_the_kernel(values, levels) == want
    for i, (width, gs, ngroups) in enumerate(levels):
        assert 1 <= gs <= GROUP_SIZE and ngroups == -(-width // gs)
        if i + 1 < len(levels):  # the kernel scales by doublings: a power of two
            assert gs & (gs - 1) == 0 and gs >= MIN_GROUP


def test_group_sizes_follow_the_thread_target():
    # Big reductions keep 32-bucket groups; fewer buckets than the target shrink the groups,
    # never below MIN_GROUP; a target of 0 is the fixed plan.
    assert reduction_levels(1 << 19, 13)[0][1] == GROUP_SIZE
    assert [gs for _, gs, _ in reduction_levels(1 << 15, 16, 0)] == [32, 32, 31]
    plan = reduction_levels(1 << 15, 16)
    assert plan[0] == (1 << 15, 16, 2048)
    assert all(gs >= MIN_GROUP or ng == 1 for _, gs, ng in plan)
    assert len(plan) > 3


def test_carried_window_widens_to_the_whole_msm_within_its_room(rng):
    """H under a cap: 2^27 scalars in passes of 2^23 carry at the whole MSM's window when the
    buckets fit, at the widest that fits otherwise, and never below the first pass's."""
    first = choose_window(1 << 23)
    assert carried_window(first, 1 << 27, "g1", DENSE_CARRIED_BYTES) == choose_window(1 << 27) == 20
    assert first == 19
    for _ in range(20):
        whole = int(rng.integers(1 << 10, 1 << 30))
        group = ["g1", "g2"][int(rng.integers(2))]
        first = choose_window(max(1, whole >> int(rng.integers(0, 8))), group)
        room = int(rng.integers(1 << 20, 1 << 33))
        c = carried_window(first, whole, group, room)
        assert first <= c <= max(first, choose_window(whole, group))
        assert c == first or bucket_bytes(c, group) <= room
        assert c == choose_window(whole, group) or bucket_bytes(c + 1, group) > room


def bucket_bytes(c: int, group: str) -> int:
    """All windows' buckets at window c: XYZZ points of 192 (G1) or 384 (G2) bytes."""
    return (window_rows(c)[1] << (c - 1)) * (384 if group == "g2" else 192)
