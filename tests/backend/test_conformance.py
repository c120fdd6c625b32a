"""Every backend against the protocol (:class:`cuzk.backend.base.Backend`) on fresh random
inputs: the CPU backend always, CUDA where a GPU exists (skipped with the reason otherwise).

References are independent of the backend under test: the polynomial functions of
:mod:`cuzk.poly`, the shape's own CSR evaluation, and for MSMs points k_i·G whose sum
Σ s_i·k_i·G is one scalar multiplication of the generator. Errors must be the same
exception type on every backend for the same bad input."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.backend.base import Backend, PointSet
from cuzk.backend.cuda.device import cuda_available
from cuzk.curve import R, g1_generator, g1_mul, g2_generator, g2_mul
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.poly import Domain, coset_intt, coset_ntt, h_quotient, intt, ntt
from cuzk.poly.snarkjs_h import snarkjs_h
from cuzk.r1cs import synthesize_shape, synthesize_witness
from tests.backend.hostcall import on_host
from tests.r1cs.circuits import RandomCircuit

_CUDA_OK, _CUDA_WHY = cuda_available()
BACKENDS = [
    "cpu",
    pytest.param(
        "cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not _CUDA_OK, reason=_CUDA_WHY)]
    ),
]


@pytest.fixture(params=BACKENDS)
def backend(request) -> Backend:
    return request.getfixturevalue(f"{request.param}_backend")


def test_is_a_backend_and_round_trips(backend, rng, seed):
    assert isinstance(backend, Backend)
    v = fr.random(1000, rng)
    assert np.array_equal(backend.download(backend.upload(v)), v), f"seed {seed}"
    host = backend.host_vector(17)
    assert host.shape == (17, 4) and host.dtype == np.uint64
    memory = backend.memory()
    assert memory is None or 0 < memory.free <= memory.total


#: One pass (≤ 2^11 points per tile), the pass boundaries, and three passes (2^19).
TRANSFORM_LOGS = [0, 1, 2, 3, 5, 8, 11, 12, 13, 19]


@pytest.mark.parametrize("log_m", TRANSFORM_LOGS)
def test_transforms(backend, rng, seed, log_m):
    d = Domain(1 << log_m)
    lengths = sorted({1, max(1, d.m - 3), max(1, d.m // 2 + 1), d.m}) if log_m < 19 else [d.m - 5]
    for n in lengths:
        v = fr.random(n, rng)
        for name, want in (
            ("ntt", ntt),
            ("intt", intt),
            ("coset_ntt", coset_ntt),
            ("coset_intt", coset_intt),
        ):
            got = on_host(backend, name, v, d)
            assert np.array_equal(got, want(v, d)), f"{name} m=2^{log_m} n={n} seed {seed}"


@pytest.mark.parametrize("log_m", [1, 4, 11])
def test_quotients(backend, rng, seed, log_m):
    d = Domain(1 << log_m)
    n = max(1, d.m - 3)
    a, b, c = (fr.random(n, rng) for _ in range(3))
    got = on_host(backend, "h_quotient", a, b, c, d)
    assert got.shape == (d.m - 1, 4)
    assert np.array_equal(got, h_quotient(a, b, c, d)), f"seed {seed}"
    got = on_host(backend, "odd_coset_h", a, b, d)
    assert np.array_equal(got, snarkjs_h(a, b, d)), f"seed {seed}"


def test_constraint_evaluation_and_check(backend, rng, seed):
    circuit = RandomCircuit(seed, num_constraints=300, num_aux=120)
    shape = synthesize_shape(circuit, f"test:random-{seed}")
    cs = synthesize_witness(circuit)
    z = np.concatenate([fr.from_ints(cs.inputs), fr.from_ints(cs.aux)])
    got = on_host(backend, "evaluate_abc", shape, z)
    for g, w in zip(got, shape.evaluate(z), strict=True):
        assert np.array_equal(g, w), f"seed {seed}"
    a, b, _ = got
    c = fr.mul(a, b)  # satisfied everywhere ...
    handles = [backend.upload(x) for x in (a, b, c)]
    assert len(backend.unsatisfied_rows(*handles)) == 0
    rows = np.sort(rng.choice(len(c), 3, replace=False))
    c[rows] = fr.random(3, rng)  # ... but in three rows
    bad = backend.unsatisfied_rows(*(backend.upload(x) for x in (a, b, c)))
    assert list(bad) == list(rows), f"seed {seed}"


def _bases(backend, tmp_path, group, k: list[int]) -> PointSet:
    """k_i·G written as zcash-uncompressed points, as a PointSet."""
    rows = backend.fixed_base(group, fr.from_ints(k))
    path = tmp_path / f"{group}.bin"
    path.write_bytes(b"\0" * 7 + rows.tobytes())  # a non-zero offset, as in a .params file
    return PointSet(group, str(path), 7, len(k))


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_msms_against_one_scalar_multiplication(backend, rng, seed, tmp_path, group):
    n = 300
    k = [int(x) for x in rng.integers(0, 2**62, n)] + [0]  # one point at infinity
    bases = _bases(backend, tmp_path, group, k)
    # zeros, ones and full-width values: the split MSM's three kinds
    s = [int(rng.choice([0, 1, int(rng.integers(2, 2**62)) * int(rng.integers(1, 2**62))]))
         for _ in range(n + 1)]  # fmt: skip
    mul, gen = (g1_mul, g1_generator()) if group == "g1" else (g2_mul, g2_generator())
    want = mul(gen, sum(a * b for a, b in zip(s, k, strict=True)) % R)
    scalars = backend.upload(fr.from_ints(s))
    # the same scalars among others, picked by sorted row indices (how the prover passes A's
    # and B's scalars: rows of z)
    rows = np.sort(rng.choice(3 * (n + 1), size=n + 1, replace=False)).astype(np.uint32)
    z = fr.random(3 * (n + 1), rng)
    z[rows] = fr.from_ints(s)
    try:
        assert backend.msm(bases, scalars).result() == want, f"msm seed {seed}"
        assert backend.split_msm(bases, scalars).result() == want, f"split_msm seed {seed}"
        got = backend.split_msm(bases, backend.upload(z), rows).result()
        assert got == want, f"split_msm over rows, seed {seed}"
    finally:
        backend.evict(bases)


def test_same_errors_for_the_same_bad_input(backend, rng, tmp_path):
    d = Domain(8)
    too_long = backend.upload(fr.random(9, rng))
    with pytest.raises(BadInput):
        backend.ntt(too_long, d)
    a4, a5 = backend.upload(fr.random(4, rng)), backend.upload(fr.random(5, rng))
    with pytest.raises(BadInput):
        backend.h_quotient(a4, a4, a5, d)
    with pytest.raises(BadInput):
        backend.odd_coset_h(a4, a5, d)
    with pytest.raises(BadInput):
        backend.upload(np.zeros((4, 3), dtype=np.uint64))
    bases = _bases(backend, tmp_path, "g1", [3, 5, 7])
    with pytest.raises(BadInput):
        backend.msm(bases, a4)
    with pytest.raises(BadInput):
        backend.split_msm(bases, a4)
    circuit = RandomCircuit(1)
    shape = synthesize_shape(circuit, "test:random-1")
    with pytest.raises(BadInput):
        backend.evaluate_abc(shape, backend.upload(fr.random(shape.num_variables - 1, rng)))
