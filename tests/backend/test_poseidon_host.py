"""The device Poseidon schedule (``backend/cuda/poseidon.cuh``, the body of the
``poseidon_witness`` kernel) built for the host through fr.cuh's portable carry model, and
compared value for value with the numba kernel the CPU backend expands deferred hashes with
(:class:`cuzk.gadgets.poseidon.program.PoseidonProgram`), for every arity Filecoin uses, both
strengths and random tags and preimages. The GPU tests compare the device build."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from cuzk.backend.cuda.loader import KERNEL_DIR
from cuzk.field import fr
from cuzk.gadgets.poseidon import Strength, custom_tag, merkle_tree_tag
from cuzk.gadgets.poseidon.native import kernel_args
from cuzk.gadgets.poseidon.program import poseidon_program

HERE = Path(__file__).resolve().parent
CXX = shutil.which("g++") or shutil.which("c++")
pytestmark = pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on this machine")
CUDA_KEYWORDS = ["-D__host__=", "-D__device__=", "-D__forceinline__=inline", "-D__noinline__="]


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    exe = tmp_path_factory.mktemp("poseidon") / "poseidon_check"
    cmd = [CXX, "-O1", "-std=c++17", *CUDA_KEYWORDS, f"-I{KERNEL_DIR}",
           str(HERE / "host" / "poseidon_check.cpp"), "-o", str(exe)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return exe


def _device_model(exe: Path, arity: int, strength: Strength, tag: int, pre: np.ndarray):
    """The harness's values, (m, count, 4), for m preimages (m, arity, 4)."""
    _, tag_t, crc, pre_sparse, w_hat, v_rest, mds, half, partial = kernel_args(arity, strength, tag)
    m = len(pre)
    head = np.array([arity + 1, half, partial, len(crc), len(w_hat), len(v_rest), m], np.uint64)
    tables = [crc, pre_sparse, w_hat, v_rest, mds, np.array([tag_t], np.uint64), pre]
    data = head.tobytes() + b"".join(np.ascontiguousarray(a, np.uint64).tobytes() for a in tables)
    done = subprocess.run([str(exe)], input=data, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
    out = np.frombuffer(done.stdout, np.uint64)
    count = int(out[0])
    return out[1:].reshape(m, count, 4)


@pytest.mark.parametrize("arity", [2, 4, 8, 11, 16])
@pytest.mark.parametrize("strength", list(Strength))
def test_device_schedule_equals_the_cpu_model(harness, rng, arity, strength):
    tag = merkle_tree_tag(arity) if rng.integers(2) else custom_tag(int(rng.integers(1, 257)))
    program = poseidon_program(arity, strength, tag)
    m = 5
    pre = fr.random(m * arity, rng).reshape(m, arity, 4)
    pre[0, 0] = 0  # edge values: zero and r − 1 in the first preimage
    pre[0, -1] = fr.from_ints([-1])[0]
    got = _device_model(harness, arity, strength, tag, pre)
    assert got.shape == (m, program.n_aux, 4)
    want = np.empty((m * program.n_aux, 4), np.uint64)
    program.expand(pre, np.arange(m, dtype=np.int64) * program.n_aux, want)
    assert np.array_equal(got.reshape(-1, 4), want)
