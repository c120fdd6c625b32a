"""GPU fixed-base multiplication (key generation) against the CPU backend, and a GPU-made
parameter set that is byte for byte the CPU-made one and proves with the CPU backend.

Skipped without CuPy or a CUDA device."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.backend.cuda.device import cuda_available
from cuzk.circuits.synthetic import SyntheticCircuit
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.groth16 import prove, verify
from cuzk.groth16.setup import generate_parameters
from cuzk.r1cs import synthesize_shape

_OK, _WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _OK, reason=_WHY)]


def _scalars(rng: np.random.Generator, n: int) -> fr.FrVec:
    """n scalars: 0, 1, 2, r − 1, r − 2, 2^c-ish digit edges, then uniform."""
    edge = [0, 1, 2, R - 1, R - 2, (1 << 254) + 1, (1 << 128) - 1, 1 << 15, (1 << 16) - 1]
    edge = edge[:n]
    rest = fr.random(n - len(edge), rng)
    return np.concatenate([fr.from_ints(edge), rest]) if edge else rest


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("n", [0, 1, 5, 1000 + 37])
def test_fixed_base_matches_cpu(cuda_backend, cpu_backend, rng, seed, group, n):
    s = _scalars(rng, n)
    got = cuda_backend.fixed_base(group, s)
    want = cpu_backend.fixed_base(group, s)
    assert got.shape == want.shape and np.array_equal(got, want), f"seed {seed}"


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("window", [4, 7, 13])
def test_fixed_base_windows_and_passes(
    cuda_backend, cpu_backend, rng, seed, group, window, monkeypatch
):
    """Explicit windows (digits that carry, top windows that are almost empty) and several
    passes over one call (PASS shrunk so 300 scalars take three)."""
    from cuzk.backend.cuda import fixed_base as fb

    monkeypatch.setattr(fb, "PASS", 128)
    s = _scalars(rng, 300)
    got = fb.GpuFixedBase(cuda_backend.gpu).multiply(group, s, window=window)
    assert np.array_equal(got, cpu_backend.fixed_base(group, s)), f"window {window}, seed {seed}"


def test_gpu_setup_is_the_cpu_setup_and_proves(tmp_path, pool, cuda_backend, cpu_backend, seed):
    n = 3000
    shape = synthesize_shape(SyntheticCircuit(n), f"synthetic:{n}")
    params = generate_parameters(shape, tmp_path / "gpu", "syn", seed=seed, backend=cuda_backend)
    generate_parameters(shape, tmp_path / "cpu", "syn", seed=seed, pool=pool)
    for ext in ("params", "vk"):
        a = (tmp_path / "gpu" / f"syn.{ext}").read_bytes()
        assert a == (tmp_path / "cpu" / f"syn.{ext}").read_bytes(), f"{ext}, seed {seed}"
    proof, inputs = prove(SyntheticCircuit(n, seed=seed), shape, params, cpu_backend)
    assert verify(params.vk, inputs, proof), f"seed {seed}"
