"""CUDA NTTs and the H quotient against cuzk.poly (bellperson's conventions).

Skipped without CuPy or a CUDA device. Sizes cover one pass (≤ 2^11), two passes (2^12–2^18)
and three (2^19); the largest runs first so the smaller ones read its twiddle table with a
stride. Seeds are printed and in every assertion message.
"""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.backend.cuda.device import cuda_available
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.poly import Domain, coset_ntt, h_quotient
from tests.backend.hostcall import on_host

_OK, _WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _OK, reason=_WHY)]


@pytest.fixture(scope="module", params=["twiddle-table", "compact-twiddles"])
def backend(request):
    """Each test on both twiddle forms: one table of half the largest domain, and the two
    small tables a capped backend uses (ω^j = lo[j mod 2^b]·hi[j >> b]), here with a high
    table of 8 entries so that domains from 2^5 take them: the stages whose exponents are
    multiples of 2^b read the high table alone, the others multiply."""
    from cuzk.backend.cuda.backend import CudaBackend
    from cuzk.backend.cuda.ntt import GpuNtt

    with CudaBackend(0) as b:
        if request.param == "compact-twiddles":
            b.fr = GpuNtt(b.gpu, compact_twiddles=True, twiddle_hi_log=3)
        yield b


@pytest.mark.parametrize("log_m", [4, 12, 16])
def test_round_trips(backend, rng, seed, log_m):
    d = Domain(1 << log_m)
    v = fr.random(d.m, rng)
    dv = backend.upload(v)
    back = backend.intt(backend.ntt(dv, d), d)
    assert np.array_equal(backend.download(back), v), f"intt∘ntt m=2^{log_m} seed={seed}"
    back = backend.coset_intt(backend.coset_ntt(dv, d), d)
    assert np.array_equal(backend.download(back), v), f"coset m=2^{log_m} seed={seed}"


@pytest.mark.parametrize("log_m", [4, 12])
def test_coset_ntt_matches_cpu(backend, rng, seed, log_m):
    d = Domain(1 << log_m)
    v = fr.random(d.m - 3, rng)  # shorter than the domain: zero-padded on both sides
    got = on_host(backend, "coset_ntt", np.concatenate([v, np.zeros((3, 4), np.uint64)]), d)
    assert np.array_equal(got, coset_ntt(v, d)), f"m=2^{log_m} seed={seed}"


@pytest.mark.parametrize("log_m", [19, 0, 1, 2, 5, 11, 12, 14])
def test_h_quotient_matches_cpu(backend, rng, seed, log_m):
    d = Domain(1 << log_m)
    n = max(1, d.m - 7)
    a, b, c = (fr.random(n, rng) for _ in range(3))
    got = on_host(backend, "h_quotient", a, b, c, d)
    want = h_quotient(a, b, c, d)
    assert got.shape == (d.m - 1, 4)
    assert np.array_equal(got, want), f"h m=2^{log_m} n={n} seed={seed}"


def test_h_quotient_of_a_satisfied_system_is_a_polynomial(backend, rng, seed):
    # c = a·b on the domain: A·B − C vanishes there, so h·Z reproduces it exactly; the CPU and
    # GPU agree and h is non-trivial.
    d = Domain(1 << 10)
    a, b = fr.random(d.m, rng), fr.random(d.m, rng)
    c = fr.mul(a, b)
    got = on_host(backend, "h_quotient", a, b, c, d)
    assert np.array_equal(got, h_quotient(a, b, c, d)), seed
    assert got.any()


@pytest.mark.parametrize("log_m", [1, 5, 11, 12, 19])
def test_h_quotient_in_place(backend, rng, seed, log_m):
    """a, b, c heading zero-padded buffers of the domain's size (what evaluate_abc returns):
    h is made in those buffers, nothing of the domain's size is allocated, same result."""
    import cupy

    d = Domain(1 << log_m)
    n = max(1, d.m - 5)
    a, b, c = (fr.random(n, rng) for _ in range(3))
    views = []
    for x in (a, b, c):
        full = backend.gpu.zeros(d.m)
        full[:n] = backend.upload(x)
        views.append(full[:n])
    h = backend.h_quotient(*views, d)
    assert isinstance(h, cupy.ndarray) and h.shape == (d.m - 1, 4)
    assert h.data.ptr == views[1].data.ptr  # in b's buffer
    assert np.array_equal(backend.download(h), h_quotient(a, b, c, d)), f"m=2^{log_m} {seed}"


def test_results_stay_on_device(backend, rng, seed):
    import cupy

    d = Domain(1 << 9)
    a, b, c = (fr.random(300, rng) for _ in range(3))
    h = backend.h_quotient(*(backend.upload(x) for x in (a, b, c)), d)
    assert isinstance(h, cupy.ndarray) and h.shape == (d.m - 1, 4)
    assert np.array_equal(backend.download(h), h_quotient(a, b, c, d)), seed


def test_bad_inputs(backend, rng):
    d = Domain(8)
    with pytest.raises(BadInput):
        backend.ntt(backend.upload(fr.random(9, rng)), d)
    four, five = backend.upload(fr.random(4, rng)), backend.upload(fr.random(5, rng))
    with pytest.raises(BadInput):
        backend.h_quotient(four, four, five, d)
    with pytest.raises(BadInput):
        backend.ntt(fr.random(4, rng), d)  # a host array: not a handle of this backend
