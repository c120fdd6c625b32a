"""Shared fixtures: a fresh random generator per test (seed shown on failure), one worker pool
per session, since starting processes is the slowest part of small tests, and one CUDA backend
per GPU test module."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

import numpy as np
import pytest

from cuzk.openmp import configure_openmp

configure_openmp()  # as the ``cuzk`` command does, before any test runs a parallel kernel


@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    s = secrets.randbits(32)
    request.node.user_properties.append(("seed", s))
    print(f"random seed: {s}")
    return s


@pytest.fixture
def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


@pytest.fixture(scope="session")
def pool():
    from cuzk.curve.pool import MsmPool

    with MsmPool(2) as p:
        yield p


@pytest.fixture(scope="session")
def cpu_backend():
    from cuzk.backend.cpu import CpuBackend

    with CpuBackend(2) as b:
        yield b


@pytest.fixture(scope="module")
def cuda_backend():
    """A CUDA backend on device 0 for one GPU test module (the modules skip themselves, with
    the reason, where no GPU exists; this skips too, should one forget)."""
    from cuzk.backend.cuda.device import cuda_available

    ok, why = cuda_available()
    if not ok:
        pytest.skip(why)
    from cuzk.backend.cuda.backend import CudaBackend

    with CudaBackend(0) as b:
        yield b


@dataclass
class Seeded:
    """A generator plus the seed that made it, so a failing assertion can be replayed."""

    rng: np.random.Generator
    seed: int

    @property
    def msg(self) -> str:
        return f"(replay with np.random.default_rng({self.seed}))"


@pytest.fixture
def seeded(seed: int) -> Seeded:
    return Seeded(np.random.default_rng(seed), seed)
