"""The split MSM's plan (ones by batch addition, the rest by an MSM) and the CPU backend's
split MSM on both of its branches, against a plain sum of k·P."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.backend.base import MIN_ONES_SHARE_FOR_SPLIT, MsmPlan, PointSet
from cuzk.curve import g1_generator, g1_mul
from cuzk.curve.encoding import g1_to_bytes
from cuzk.field import fr
from cuzk.field.constants import R


def _mixed(n: int, rng: np.random.Generator, p_zero: float, p_one: float) -> np.ndarray:
    s = fr.random(n, rng)
    u = rng.random(n)
    s[u < p_zero] = fr.from_int(0)
    s[(u >= p_zero) & (u < p_zero + p_one)] = fr.from_int(1)
    return s


@pytest.mark.parametrize(
    "p_zero,p_one", [(0.0, 0.0), (0.3, 0.01), (0.3, 0.5), (1.0, 0.0), (0.0, 1.0)]
)
def test_plan_partitions_the_nonzero_scalars(rng, seed, p_zero, p_one):
    s = _mixed(5000, rng, p_zero, p_one)
    plan = MsmPlan.of(s)
    ints = fr.to_ints(s)
    assert plan.ones.tolist() == [i for i, v in enumerate(ints) if v == 1], f"seed {seed}"
    assert plan.tail.tolist() == [i for i, v in enumerate(ints) if v > 1], f"seed {seed}"
    assert plan.nonzero().tolist() == [i for i, v in enumerate(ints) if v], f"seed {seed}"


@pytest.mark.parametrize("p_one", [0.0, MIN_ONES_SHARE_FOR_SPLIT / 4, 0.6])
def test_cpu_split_msm_both_branches(cpu_backend, rng, seed, tmp_path, p_one):
    n = 300
    ks = [int(k) % R for k in rng.integers(1, 2**62, n)]
    g = g1_generator()
    points = [g1_mul(g, k) for k in ks]
    path = tmp_path / "bases.bin"
    path.write_bytes(b"".join(g1_to_bytes(p, compressed=False) for p in points))
    bases = PointSet("g1", str(path), 0, n)
    s = _mixed(n, rng, 0.2, p_one)
    want = sum(k * v for k, v in zip(ks, fr.to_ints(s), strict=True)) % R
    got = cpu_backend.split_msm(bases, s).result()
    assert got == g1_mul(g, want), f"seed {seed}"
