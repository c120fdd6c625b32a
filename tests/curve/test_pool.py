"""MsmPool against the single-process MSM, and its failure modes (dead workers, close, exit).

Most tests share the session pool from tests/conftest.py (2 workers); the lifecycle tests start
their own so killing or closing them does not disturb anyone else.
"""

from __future__ import annotations

import os
import random
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from cuzk.curve import R, g1_generator, g1_identity, g1_mul, g2_generator, g2_identity
from cuzk.curve.encoding import g1_array_to_uncompressed, g2_array_to_uncompressed
from cuzk.curve.msm import g1_fixed_base_batch, g1_msm, g1_sum, g2_fixed_base_batch, g2_msm, g2_sum
from cuzk.curve.pool import MsmPool
from cuzk.errors import BadInput, DeviceFault, ResourceExhausted

from ._oracle import random_points, scalar_rows

TIMEOUT = 60


@dataclass
class Vectors:
    seed: int
    path: str
    g1: list
    g2: list
    g1_offset: int
    g2_offset: int


@pytest.fixture(scope="module")
def vectors(tmp_path_factory: pytest.TempPathFactory) -> Vectors:
    """A file with junk, 301 G1 points (odd, so chunks differ in size), then 41 G2 points."""
    seed = secrets.randbits(32)
    print(f"vectors seed: {seed}")
    prng = random.Random(seed)
    g1 = random_points(prng, 301, "g1")
    g2 = random_points(prng, 41, "g2")
    path = tmp_path_factory.mktemp("pool") / "points.bin"
    junk = b"header!"
    g1_raw = g1_array_to_uncompressed(g1)
    path.write_bytes(junk + g1_raw + g2_array_to_uncompressed(g2))
    return Vectors(seed, str(path), g1, g2, len(junk), len(junk) + len(g1_raw))


@pytest.fixture(scope="module")
def loaded(pool: MsmPool, vectors: Vectors) -> MsmPool:
    pool.register("curve-test:g1", "g1", vectors.path, vectors.g1_offset, len(vectors.g1))
    pool.register("curve-test:g2", "g2", vectors.path, vectors.g2_offset, len(vectors.g2))
    return pool


def _pick(pts: list, idx: np.ndarray) -> list:
    return [pts[i] for i in idx]


def test_msm_without_indices(loaded: MsmPool, vectors: Vectors, prng: random.Random) -> None:
    ks = scalar_rows([prng.randrange(R) for _ in vectors.g1])
    assert loaded.msm("curve-test:g1", ks).result(TIMEOUT) == g1_msm(vectors.g1, ks), vectors.seed
    ks2 = scalar_rows([0, 1, R - 1] + [prng.randrange(R) for _ in vectors.g2[3:]])
    assert loaded.msm("curve-test:g2", ks2.tobytes()).result(TIMEOUT) == g2_msm(vectors.g2, ks2)


def test_msm_with_indices(loaded: MsmPool, vectors: Vectors, prng: random.Random) -> None:
    n = len(vectors.g1)
    cases = {
        "spread": np.array(sorted(prng.sample(range(n), 120)), dtype=np.int64),
        "first chunk only": np.arange(0, 40, 3, dtype=np.int64),
        "last chunk only": np.array([n - 1], dtype=np.int64),
        "unsorted": np.array(prng.sample(range(n), 50), dtype=np.int64),
        "duplicates": np.array([0, 0, 5, 5, 5, n - 1], dtype=np.int64),
        "empty": np.zeros(0, dtype=np.int64),
    }
    for name, idx in cases.items():
        ks = scalar_rows([prng.randrange(R) for _ in idx])
        got = loaded.msm("curve-test:g1", ks, idx).result(TIMEOUT)
        assert got == g1_msm(_pick(vectors.g1, idx), ks), f"{name}, seed {vectors.seed}"
    idx = np.array([1, 7, 20, 40], dtype=np.int64)
    ks = scalar_rows([prng.randrange(R) for _ in idx])
    got = loaded.msm("curve-test:g2", ks, idx).result(TIMEOUT)
    assert got == g2_msm(_pick(vectors.g2, idx), ks)


def test_sum(loaded: MsmPool, vectors: Vectors, prng: random.Random) -> None:
    idx = np.array(sorted(prng.sample(range(len(vectors.g1)), 90)), dtype=np.int64)
    assert loaded.sum("curve-test:g1", idx).result(TIMEOUT) == g1_sum(_pick(vectors.g1, idx))
    assert loaded.sum("curve-test:g1").result(TIMEOUT) == g1_sum(vectors.g1)
    assert loaded.sum("curve-test:g2").result(TIMEOUT) == g2_sum(vectors.g2)
    empty = np.zeros(0, dtype=np.int64)
    assert loaded.sum("curve-test:g2", empty).result(TIMEOUT) == g2_identity()


def test_concurrent_futures(loaded: MsmPool, vectors: Vectors, prng: random.Random) -> None:
    n1, n2 = len(vectors.g1), len(vectors.g2)
    jobs = []
    for _ in range(3):
        ks = scalar_rows([prng.randrange(R) for _ in range(n1)])
        jobs.append((loaded.msm("curve-test:g1", ks), g1_msm(vectors.g1, ks)))
        ks2 = scalar_rows([prng.randrange(R) for _ in range(n2)])
        jobs.append((loaded.msm("curve-test:g2", ks2), g2_msm(vectors.g2, ks2)))
        idx = np.array(sorted(prng.sample(range(n1), 30)), dtype=np.int64)
        jobs.append((loaded.sum("curve-test:g1", idx), g1_sum(_pick(vectors.g1, idx))))
    base = g1_mul(g1_generator(), prng.randrange(1, R))
    fb_ks = scalar_rows([prng.randrange(R) for _ in range(9)])
    jobs.append((loaded.fixed_base("g1", base, fb_ks), g1_fixed_base_batch(base, fb_ks)))
    for k, (fut, expected) in enumerate(jobs):
        assert fut.result(TIMEOUT) == expected, f"job {k}, seed {vectors.seed}"


def test_fixed_base(pool: MsmPool, prng: random.Random) -> None:
    ks = [0, 1, R - 1] + [prng.randrange(R) for _ in range(12)]
    base = g1_mul(g1_generator(), prng.randrange(1, R))
    assert pool.fixed_base("g1", base, scalar_rows(ks)).result(TIMEOUT) == g1_fixed_base_batch(
        base, scalar_rows(ks)
    )
    ks2 = scalar_rows(ks[:5])
    got = pool.fixed_base("g2", g2_generator(), ks2).result(TIMEOUT)
    assert got == g2_fixed_base_batch(g2_generator(), ks2)
    assert pool.fixed_base("g1", base, scalar_rows([])).result(TIMEOUT) == b""
    with pytest.raises(BadInput):
        pool.fixed_base("g2", base, ks2)


def test_register_is_idempotent_and_replaceable(loaded: MsmPool, vectors: Vectors) -> None:
    again = loaded.register("curve-test:g1", "g1", vectors.path, vectors.g1_offset, len(vectors.g1))
    assert again.result(TIMEOUT) is None
    key = "curve-test:g1-prefix"
    loaded.register(key, "g1", vectors.path, vectors.g1_offset, 10).result(TIMEOUT)
    ones = scalar_rows([1] * 10)
    assert loaded.msm(key, ones).result(TIMEOUT) == g1_sum(vectors.g1[:10])
    loaded.register(key, "g1", vectors.path, vectors.g1_offset + 96, 4)  # replaces
    assert loaded.msm(key, ones[:4]).result(TIMEOUT) == g1_sum(vectors.g1[1:5])
    loaded.unregister(key)
    loaded.unregister(key)  # unknown keys are fine
    with pytest.raises(BadInput, match="no point vector"):
        loaded.msm(key, ones[:4])


def test_argument_errors(loaded: MsmPool, vectors: Vectors, tmp_path: Path) -> None:
    n = len(vectors.g1)
    with pytest.raises(BadInput, match="no point vector"):
        loaded.sum("curve-test:nope")
    with pytest.raises(BadInput, match="scalars for the"):
        loaded.msm("curve-test:g1", scalar_rows([1] * (n - 1)))
    with pytest.raises(BadInput, match=r"indices must lie in \[0, 301\)"):
        loaded.msm("curve-test:g1", scalar_rows([1]), np.array([n], dtype=np.int64))
    with pytest.raises(BadInput, match="scalars for 2 indices"):
        loaded.msm("curve-test:g1", scalar_rows([1]), np.array([0, 1], dtype=np.int64))
    with pytest.raises(BadInput, match="need"):
        loaded.register("curve-test:big", "g1", vectors.path, 0, 10_000)
    with pytest.raises(BadInput, match="cannot read"):
        loaded.register("curve-test:missing", "g1", str(tmp_path / "missing"), 0, 1)
    ks = bytearray(scalar_rows([1] * n).tobytes())
    ks[-32:] = (R + 1).to_bytes(32, "little")
    with pytest.raises(BadInput, match="not canonical"):
        loaded.msm("curve-test:g1", bytes(ks)).result(TIMEOUT)

    bad = tmp_path / "bad.bin"
    raw = bytearray(g1_array_to_uncompressed(vectors.g1[:20]))
    raw[17 * 96] |= 0x80  # compressed flag inside an uncompressed vector
    bad.write_bytes(raw)
    fut = loaded.register("curve-test:bad", "g1", str(bad), 0, 20)
    with pytest.raises(BadInput, match="G1 point 17: flags 0x"):
        fut.result(TIMEOUT)
    with pytest.raises(BadInput, match="failed to load"):
        loaded.sum("curve-test:bad").result(TIMEOUT)
    loaded.unregister("curve-test:bad")


def _wait_for_pids(pool: MsmPool) -> list[int]:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        pids = pool.worker_pids()
        if all(pids):
            return pids  # type: ignore[return-value]
        time.sleep(0.05)
    raise AssertionError("workers did not start")


def test_dead_worker_fails_pending_futures_then_recovers(vectors: Vectors) -> None:
    with MsmPool(2) as pool:
        pool.register("k", "g1", vectors.path, vectors.g1_offset, len(vectors.g1))
        pool._ping().result(TIMEOUT)  # both workers up and loaded
        busy = pool._ping(sleep_s=2.0)
        queued = pool.sum("k")
        # A registration queued behind the crash fails too, but the surviving worker must still
        # load its chunk (and the restarted one replays it), or "k2" would stay half-loaded.
        loading = pool.register("k2", "g1", vectors.path, vectors.g1_offset, 20)
        time.sleep(0.3)
        victim = pool.worker_pids()[0]
        os.kill(victim, signal.SIGKILL)
        with pytest.raises(DeviceFault, match="died"):
            busy.result(TIMEOUT)
        for fut in (queued, loading):
            with pytest.raises(DeviceFault):
                fut.result(TIMEOUT)
        assert pool.sum("k2").result(TIMEOUT) == g1_sum(vectors.g1[:20])
        # The next request starts a fresh worker, which reloads its chunk of "k".
        ones = scalar_rows([1] * len(vectors.g1))
        assert pool.msm("k", ones).result(TIMEOUT) == g1_sum(vectors.g1)
        new_pids = _wait_for_pids(pool)
        assert victim not in new_pids
        # A worker that dies while idle is replaced without failing anything.
        os.kill(new_pids[1], signal.SIGKILL)
        time.sleep(0.2)
        assert pool.sum("k").result(TIMEOUT) == g1_sum(vectors.g1)


def test_close_is_prompt_and_idempotent() -> None:
    pool = MsmPool(2)
    busy = pool._ping(sleep_s=30.0)
    _wait_for_pids(pool)
    time.sleep(0.2)
    t0 = time.monotonic()
    pool.close()
    assert time.monotonic() - t0 < 10
    with pytest.raises(ResourceExhausted):
        busy.result(TIMEOUT)
    pool.close()
    assert pool.worker_pids() == [None, None]
    with pytest.raises(ResourceExhausted):
        pool.fixed_base("g1", g1_generator(), scalar_rows([1]))
    MsmPool(1).close()  # never started


def test_interpreter_exit_does_not_hang() -> None:
    code = (
        "from cuzk.curve.pool import MsmPool\n"
        "import time\n"
        "p = MsmPool(2)\n"
        "f = p._ping(sleep_s=120)\n"
        "time.sleep(1.5)\n"
        "print('leaving', p.worker_pids(), flush=True)\n"
    )
    t0 = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT
    )
    assert out.returncode == 0, out.stderr
    assert "leaving" in out.stdout
    assert time.monotonic() - t0 < 30


def test_identity_helpers_cross_process(loaded: MsmPool) -> None:
    """A vector of identities sums to the identity through the xy wire format."""
    assert loaded.msm("curve-test:g1", scalar_rows([0] * 301)).result(TIMEOUT) == g1_identity()
