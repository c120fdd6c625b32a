"""GpuMsm with batch-affine bucket accumulation (msm_ba.cu) against the CPU reference and the
existing XYZZ path, on fresh random inputs (the helpers of test_cuda_msm: identities, repeated
and negated bases; scalars 0, 1, r − 1 among uniform ones). Every test prints its seed."""

from __future__ import annotations

import pytest

from cuzk.backend.base import PointSet
from cuzk.field import fr
from tests.backend.test_cuda_msm import (
    _NDEV,
    _WHY,
    encoded,
    make_bases,
    make_scalars,
    reference,
    skewed_scalars,
)

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_NDEV == 0, reason=_WHY)]


@pytest.fixture(scope="module")
def msms():
    """(batch-affine GpuMsm, XYZZ GpuMsm) on device 0."""
    from cuzk.backend.cuda.device import Gpu
    from cuzk.backend.cuda.msm import GpuMsm

    gpu = Gpu(0)
    with GpuMsm(gpu, batch_affine=True) as new, GpuMsm(gpu) as old:
        yield new, old


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 100, 1000, (1 << 12) + 5])
def test_batch_affine_msm(msms, rng, seed, tmp_path, group, n):
    bases, points = make_bases(group, n, rng, tmp_path)
    scalars = make_scalars(n, rng)
    got = msms[0].msm(bases, scalars).result()
    assert encoded(group, got) == reference(group, points, scalars), f"seed {seed}, n {n}"


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("window", [2, 3, 7, 13, 16, 20])
def test_batch_affine_windows(msms, rng, seed, tmp_path, group, window):
    n = 257
    bases, points = make_bases(group, n, rng, tmp_path)
    scalars = make_scalars(n, rng)
    got = msms[0].msm(bases, scalars, window=window).result()
    assert encoded(group, got) == reference(group, points, scalars), f"seed {seed}, c {window}"


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_batch_affine_skewed_buckets(msms, rng, seed, tmp_path, group):
    """All scalars equal (one bucket of n points per window: a dozen rounds, repeated and
    negated bases meeting as doublings and cancellations), all r − 1, scalars below 2^16, and
    the split path (ones by batch addition)."""
    n = 3000
    bases, points = make_bases(group, n, rng, tmp_path)
    for scalars in skewed_scalars(n, rng):
        got = msms[0].msm(bases, scalars).result()
        assert encoded(group, got) == reference(group, points, scalars), f"seed {seed}"
    scalars = make_scalars(n, rng)
    scalars[rng.choice(n, n // 2, replace=False)] = fr.from_int(1)
    got = msms[0].split_msm(bases, scalars).result()
    assert encoded(group, got) == reference(group, points, scalars), f"seed {seed}"


@pytest.mark.parametrize("group,logs", [("g1", [10, 14, 17, 20]), ("g2", [10, 14, 17])])
def test_batch_affine_matches_the_xyzz_path(msms, rng, seed, tmp_path, group, logs):
    """Distinct random bases (GPU fixed-base) up to 2^20: full-width scalars and bit-heavy ones
    (below 2^20, a tenth equal to one) give the same points by both accumulations, and the
    smallest size equals the CPU."""
    from cuzk.backend.cuda.fixed_base import GpuFixedBase
    from tests.backend.test_cuda_msm import GROUPS

    new, old = msms
    n = 1 << max(logs)
    raw = GpuFixedBase(new.gpu).multiply(group, fr.random(n, rng))
    path = tmp_path / f"{group}.bin"
    raw.tofile(path)
    for lg in logs:
        m = 1 << lg
        bases = PointSet(group, str(path), 0, m)
        heavy = fr.from_ints(rng.integers(0, 1 << 20, m))
        heavy[rng.choice(m, m // 10, replace=False)] = fr.from_int(1)
        for scalars in (fr.random(m, rng), heavy):
            got = encoded(group, new.msm(bases, scalars).result())
            assert got == encoded(group, old.msm(bases, scalars).result()), f"seed {seed} 2^{lg}"
            if lg == min(logs):
                points = GROUPS[group][3](raw[:m].tobytes())
                assert got == reference(group, points, scalars), f"seed {seed} 2^{lg}"
        new.evict(bases)
        old.evict(bases)
