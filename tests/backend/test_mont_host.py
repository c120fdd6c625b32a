"""The device Montgomery products (fr.cuh, fp.cuh, mont.cuh) built for the host through their
portable carry model and checked against Python integers, so a product implementation is
verified on every machine, not only where a GPU runs it (the GPU tests check the device build)."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from cuzk.backend.cuda.loader import KERNEL_DIR
from cuzk.field.constants import P as FP_MODULUS
from cuzk.field.constants import R as FR_MODULUS

HERE = Path(__file__).resolve().parent
CXX = shutil.which("g++") or shutil.which("c++")
pytestmark = pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on this machine")

CASES = {  # field: (modulus, 32-bit words, product implementations in the harness)
    "fr": (FR_MODULUS, 8, ["eo", "paired"]),
    "fp": (FP_MODULUS, 12, ["chains", "paired"]),
}
CUDA_KEYWORDS = ["-D__host__=", "-D__device__=", "-D__forceinline__=inline", "-D__noinline__="]


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    out = tmp_path_factory.mktemp("mont")
    built = {}
    for field in CASES:
        exe = out / f"mont_{field}"
        cmd = [
            CXX,
            "-O1",
            "-std=c++17",
            *CUDA_KEYWORDS,
            f"-I{KERNEL_DIR}",
            f"-DCHECK_FP={int(field == 'fp')}",
            str(HERE / "host" / "mont_check.cpp"),
            "-o",
            str(exe),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        built[field] = exe
    return built


def to_words(x: int, n: int) -> list[int]:
    return [(x >> (32 * i)) & 0xFFFFFFFF for i in range(n)]


@pytest.mark.parametrize("field", list(CASES))
def test_every_product_matches_python(harness, field, seed):
    modulus, n, impls = CASES[field]
    rng = random.Random(seed)
    r_inv = pow(1 << (32 * n), -1, modulus)
    edge = [
        0,
        1,
        2,
        modulus - 1,
        modulus - 2,
        (1 << (32 * n)) % modulus,
        modulus >> 1,
        0xFFFFFFFF,
        (1 << (32 * (n - 1))) - 1,
        modulus - (1 << 32),
    ]
    pairs = [(rng.randrange(modulus), rng.randrange(modulus)) for _ in range(3000)]
    pairs += [(a, b) for a in edge for b in edge]
    pairs += [(a, rng.randrange(modulus)) for a in edge for _ in range(20)]
    text = "\n".join(" ".join(f"{w:x}" for w in to_words(a, n) + to_words(b, n)) for a, b in pairs)
    done = subprocess.run([str(harness[field])], input=text, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(pairs)
    for (a, b), line in zip(pairs, lines, strict=True):
        got = [int(t, 16) for t in line.split()]
        want = a * b * r_inv % modulus
        for k, impl in enumerate(impls):
            value = sum(w << (32 * i) for i, w in enumerate(got[k * n : (k + 1) * n]))
            assert value == want, f"{field} {impl}: {a:#x} * {b:#x} (seed {seed})"
