"""The FP64-pipe Fp product (fp64.cuh, issue 19's experiment) built for the host with g++ and
checked against Python integers: exact results below 2p for fully reduced inputs, and for a
chain of products that keeps its values unreduced (below 2p), as the device probe does."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from cuzk.backend.cuda.loader import KERNEL_DIR
from cuzk.field.constants import P

HERE = Path(__file__).resolve().parent
CXX = shutil.which("g++") or shutil.which("c++")
pytestmark = pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on this machine")
CUDA_KEYWORDS = ["-D__host__=", "-D__device__=", "-D__forceinline__=inline", "-D__noinline__="]
R_INV = pow(1 << 384, -1, P)
CHAIN = 24


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    exe = tmp_path_factory.mktemp("fp64") / "fp64_check"
    cmd = [CXX, "-O1", "-std=c++17", "-ffp-contract=off", *CUDA_KEYWORDS, f"-I{KERNEL_DIR}",
           str(HERE / "host" / "fp64_check.cpp"), "-o", str(exe)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return exe


def words(x: int) -> str:
    return " ".join(f"{(x >> (32 * i)) & 0xFFFFFFFF:x}" for i in range(12))


def value(tokens: list[str]) -> int:
    return sum(int(t, 16) << (32 * i) for i, t in enumerate(tokens))


def test_fp64_product_matches_python(harness, seed):
    rng = random.Random(seed)
    edge = [0, 1, 2, P - 1, P - 2, (1 << 384) % P, P >> 1, (1 << 24) - 1, (1 << 360) - 1,
            P - (1 << 24), ((1 << 381) - 1) % P]  # fmt: skip
    pairs = [(rng.randrange(P), rng.randrange(P)) for _ in range(2000)]
    pairs += [(a, b) for a in edge for b in edge]
    pairs += [(a, rng.randrange(P)) for a in edge for _ in range(10)]
    text = "\n".join(f"{words(a)} {words(b)}" for a, b in pairs)
    done = subprocess.run([str(harness)], input=text, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(pairs)
    for (a, b), line in zip(pairs, lines, strict=True):
        tokens = line.split()
        one, chain = value(tokens[:12]), value(tokens[12:])
        want = a * b * R_INV % P
        assert one < 2 * P and one % P == want, f"{a:#x} * {b:#x} (seed {seed})"
        want_chain = a * pow(b * R_INV, CHAIN + 1, P) % P
        assert chain < 2 * P and chain % P == want_chain, f"chain of {a:#x}, {b:#x} (seed {seed})"
