"""Keys for two tiny circuits (made once per session) and an engine factory.

Engines in these tests use real per-device CPU backends (one MSM process each) so that the
concurrency under test is the real one; circuits stay tiny (synthetic:300/400, ~50 ms a proof).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cuzk.circuits import get_circuit, key_file_stem
from cuzk.engine import Engine, EngineConfig
from cuzk.groth16.setup import generate_parameters
from cuzk.r1cs import synthesize_shape

SMALL, LARGER = "synthetic:300", "synthetic:400"


@pytest.fixture(scope="session")
def param_dir(tmp_path_factory, pool) -> Path:
    d = tmp_path_factory.mktemp("engine-keys")
    for i, cid in enumerate((SMALL, LARGER)):
        shape = synthesize_shape(get_circuit(cid), cid)
        generate_parameters(shape, d, key_file_stem(cid), seed=100 + i, pool=pool)
    return d


@pytest.fixture
def make_engine(param_dir) -> Iterator:
    """``make_engine(**config)``; every engine made is shut down (not gracefully) at the end."""
    engines: list[Engine] = []

    def make(**overrides) -> Engine:
        cfg = {
            "param_dir": param_dir,
            "devices": 1,
            "workers_per_device": 2,
            "msm_workers": 1,
            "memory_budget": 1 << 30,
            "join_timeout_s": 10.0,
        }
        cfg.update(overrides)
        engine = Engine(EngineConfig(**cfg))
        engines.append(engine)
        return engine

    yield make
    for e in engines:
        e.shutdown(graceful=False)
