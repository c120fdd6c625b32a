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
from cuzk.field.constants import R as FR

HERE = Path(__file__).resolve().parent
CXX = shutil.which("g++") or shutil.which("c++")
pytestmark = pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on this machine")
CUDA_KEYWORDS = ["-D__host__=", "-D__device__=", "-D__forceinline__=inline", "-D__noinline__="]
R_INV = pow(1 << 384, -1, P)
CHAIN = 24


def _build(tmp_path_factory, name: str) -> Path:
    """tests/backend/host/NAME.cpp built with g++ (the CUDA keywords defined away)."""
    exe = tmp_path_factory.mktemp(name) / name
    cmd = [CXX, "-O1", "-std=c++17", "-ffp-contract=off", *CUDA_KEYWORDS, f"-I{KERNEL_DIR}",
           str(HERE / "host" / f"{name}.cpp"), "-o", str(exe)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return exe


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    return _build(tmp_path_factory, "fp64_check")


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


@pytest.fixture(scope="module")
def curve_harness(tmp_path_factory):
    return _build(tmp_path_factory, "curve_fp64_check")


def _affine(point) -> tuple[int, int] | None:
    from cuzk.curve.encoding import g1_to_bytes

    raw = g1_to_bytes(point, compressed=False)
    if raw[0] & 0x40:
        return None
    return int.from_bytes(raw[:48], "big") & ((1 << 381) - 1), int.from_bytes(raw[48:], "big")


def test_fp64_mixed_addition_matches_the_integer_one(curve_harness, seed):
    """Running sums of random G1 points (with a point added to itself, a point and its
    negation, and infinity among them): both additions give the same XYZZ words, and that
    accumulator is the arkworks sum."""
    from cuzk.curve import g1_generator, g1_identity
    from cuzk.curve.points import g1_mul

    rng = random.Random(seed)
    g = g1_generator()
    ks = [rng.randrange(1, 1 << 255) for _ in range(300)]
    seq = []
    for i, k in enumerate(ks):
        seq.append(k)
        if i % 50 == 7:
            seq += [None, k]  # infinity, then the same point again
    # doubling (the sum P meets P), then cancelling (the sum 2P meets -2P), then the rest
    seq = [ks[0], ks[0], -2 * ks[0] % FR, *seq]
    points = [g1_identity() if k is None else g1_mul(g, k % FR) for k in seq]
    r = 1 << 384
    lines = []
    for pt in points:
        xy = _affine(pt)
        x, y = (0, 0) if xy is None else (xy[0] * r % P, xy[1] * r % P)
        lines.append(f"{words(x)} {words(y)}")
    done = subprocess.run([str(curve_harness)], input="\n".join(lines), capture_output=True,
                          text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert len(out) == len(points)
    acc = g1_identity()
    for pt, line in zip(points, out, strict=True):
        acc = acc + pt
        tokens = line.split()
        assert tokens[:48] == tokens[48:], f"additions differ (seed {seed})"
        X, Y, ZZ, ZZZ = (value(tokens[12 * i : 12 * i + 12]) * R_INV % P for i in range(4))
        want = _affine(acc)
        if want is None:
            assert ZZ == 0, f"expected infinity (seed {seed})"
            continue
        assert (X * pow(ZZ, -1, P) % P, Y * pow(ZZZ, -1, P) % P) == want, f"seed {seed}"


@pytest.fixture(scope="module")
def fp2_harness(tmp_path_factory):
    return _build(tmp_path_factory, "fp2_fp64_check")


def test_fp2_products_with_one_fp64_product_match_python(fp2_harness, seed):
    """FP2_FP64=1's Fp2 product and square (Karatsuba, one Fp product on the FP64 pipe) against
    Python: (a0 + a1 u)(b0 + b1 u) with u² = −1, each component times R⁻¹."""
    rng = random.Random(seed)
    edge = [0, 1, P - 1, (1 << 384) % P, P >> 1]
    pairs = [tuple(rng.randrange(P) for _ in range(4)) for _ in range(1000)]
    pairs += [(a, b, c, d) for a in edge for b in edge for c, d in [(P - 1, 1), (0, P - 1)]]
    text = "\n".join(" ".join(words(v) for v in q) for q in pairs)
    done = subprocess.run([str(fp2_harness)], input=text, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(pairs)
    for (a0, a1, b0, b1), line in zip(pairs, lines, strict=True):
        got = [value(line.split()[12 * i : 12 * i + 12]) for i in range(4)]
        prod = ((a0 * b0 - a1 * b1) * R_INV % P, (a0 * b1 + a1 * b0) * R_INV % P)
        square = ((a0 * a0 - a1 * a1) * R_INV % P, 2 * a0 * a1 * R_INV % P)
        assert tuple(got[:2]) == prod and tuple(got[2:]) == square, f"seed {seed}"
