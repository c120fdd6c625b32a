"""Setup through Backend.fixed_base: the CPU backend's fixed-base products are the generator's
multiples (checked one by one with arkworks), and a backend-made parameter set is byte for byte
the pool-made one of the same seed, then proves and verifies."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.circuits.synthetic import SyntheticCircuit
from cuzk.curve import g1_generator, g1_mul, g2_generator, g2_mul
from cuzk.curve.encoding import g1_array_from_uncompressed, g2_array_from_uncompressed
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.groth16 import prove, verify
from cuzk.groth16.setup import generate_parameters
from cuzk.r1cs import synthesize_shape

N = 300


def _scalars(rng: np.random.Generator, n: int) -> list[int]:
    ks = [int.from_bytes(rng.bytes(32), "little") % R for _ in range(n)]
    return [0, 1, R - 1, 2, *ks]


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_cpu_fixed_base_is_the_generators_multiples(cpu_backend, rng, group):
    ks = _scalars(rng, 20)
    rows = cpu_backend.fixed_base(group, fr.from_ints(ks))
    size = 96 if group == "g1" else 192
    assert rows.shape == (len(ks), size) and rows.dtype == np.uint8
    decode = g1_array_from_uncompressed if group == "g1" else g2_array_from_uncompressed
    gen, mul = (g1_generator(), g1_mul) if group == "g1" else (g2_generator(), g2_mul)
    got = decode(rows.tobytes())
    assert got == [mul(gen, k) for k in ks]
    assert cpu_backend.fixed_base(group, fr.zeros(0)).shape == (0, size)


def test_backend_setup_matches_pool_setup_and_proves(tmp_path, pool, cpu_backend, seed):
    shape = synthesize_shape(SyntheticCircuit(N), f"synthetic:{N}")
    via_pool = generate_parameters(shape, tmp_path / "pool", "syn", seed=seed, pool=pool)
    seen: list[tuple[int, int]] = []
    via_backend = generate_parameters(
        shape,
        tmp_path / "backend",
        "syn",
        seed=seed,
        backend=cpu_backend,
        progress=lambda d, t: seen.append((d, t)),
    )
    for ext in ("params", "vk"):
        a = (tmp_path / "pool" / f"syn.{ext}").read_bytes()
        assert a == (tmp_path / "backend" / f"syn.{ext}").read_bytes(), f"{ext}, seed {seed}"
    assert seen[0][0] == 0 and seen[-1][0] == seen[-1][1]
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    proof, inputs = prove(SyntheticCircuit(N, seed=seed), shape, via_backend, cpu_backend)
    assert verify(via_pool.vk, inputs, proof)


def test_setup_needs_a_backend_or_a_pool(tmp_path):
    shape = synthesize_shape(SyntheticCircuit(120), "synthetic:120")
    with pytest.raises(BadInput, match="backend or a worker pool"):
        generate_parameters(shape, tmp_path, "syn", seed=1)
