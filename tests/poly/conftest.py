"""Shared fixtures for the poly tests: a fresh random generator per test, seed recorded."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest


@dataclass
class Seeded:
    """A generator plus the seed that made it, so a failing assertion can be replayed."""

    rng: np.random.Generator
    seed: int

    @property
    def msg(self) -> str:
        return f"(replay with np.random.default_rng({self.seed}))"


@pytest.fixture
def seeded() -> Seeded:
    seed = int(np.random.SeedSequence().entropy)
    return Seeded(np.random.default_rng(seed), seed)
