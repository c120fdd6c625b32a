"""The host side of the CUDA deferred witness (:mod:`cuzk.backend.cuda.witness`) without a
GPU: which kernel each program names, the launch arguments in the kernels' order, the
per-key tables, launch chunking, the first-use check and the host fallback — through a
stand-in device that runs each launch with the kernel's CPU model reading the same arguments.
The kernels themselves are compared on the GPU in ``test_cuda_witness.py`` and, for Poseidon,
on the host in ``test_poseidon_host.py``."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.backend.cuda import witness as gw
from cuzk.field import fr
from cuzk.gadgets.poseidon import Strength, _kernels
from cuzk.gadgets.poseidon.program import PoseidonProgram, poseidon_program
from cuzk.r1cs.bitprog import expand_runs
from cuzk.r1cs.deferred import DeferredAux, RunGroup
from tests.r1cs.test_deferred import BOTH, _circuit

_ONE = fr.ones(1)[0]


class FakeGpu:
    """Device arrays are host arrays; a launch runs the kernel's CPU model on its arguments
    (``wrong``: Poseidon launches flip a bit of every value, as a faulty kernel would)."""

    sm_count = 4

    def __init__(self, wrong: bool = False) -> None:
        self.wrong = wrong
        self.launches: list[str] = []
        self.uploads = 0

    def empty(self, n: int, dtype=np.uint64, width: int = 4) -> np.ndarray:
        return np.full((n, width) if width else (n,), 7, dtype=dtype)

    def upload(self, a: np.ndarray, out=None) -> np.ndarray:
        self.uploads += 1
        if out is None:
            return np.array(a, copy=True)
        out[...] = a
        return out

    def download(self, d: np.ndarray) -> np.ndarray:
        return np.array(d, copy=True)

    def launch(self, src, name, grid, block, args) -> None:
        self.launches.append(name)
        if name == "witness_place":
            z, vals, count, dst, srcs, segments = args
            ends = np.append(srcs[1:], int(count))
            for d, s, e in zip(dst[: int(segments)], srcs, ends, strict=True):
                z[d : d + (e - s)] = vals[s:e]
        elif name == "witness_bitprog":
            assert src == gw.SRC
            z, ops, n_ops, words, n_in, inputs, starts, m, scratch = args
            n_aux = len(scratch) // int(m) - 1 - int(n_in)
            expand_runs(ops[: int(n_ops)], words, n_aux, inputs, starts, _ONE, z)
        else:
            assert (src, name) == (gw.POSEIDON_SRC, "poseidon_witness")
            z, pre, starts, m, t, tag, crc, pre_sparse, w_hat, v_rest, mds, half, partial = args
            assert len(starts) == int(m) and pre.shape == (int(m) * (int(t) - 1), 4)
            assert all(isinstance(a, np.int32) for a in (t, half, partial))
            tag_t = tuple(np.uint64(x) for x in tag[0])
            _kernels.k_poseidon(pre, starts, z, True, int(t) - 1, tag_t, crc, pre_sparse, w_hat,
                                v_rest, mds, int(half), int(partial))  # fmt: skip
            if self.wrong:
                for s in starts:
                    z[s, 0] ^= 1


@pytest.fixture(scope="module")
def deferred():
    """(inputs, DeferredAux with both program kinds) of a WindowPoSt and a PoRep partition."""
    made = {}
    for cid in ("wpost-2k", "porep-2k"):
        from cuzk.r1cs import synthesize_witness

        cs = synthesize_witness(_circuit(cid, 1234), BOTH)
        made[cid] = (fr.from_ints(cs.inputs), cs.aux_vector())
    return made


def _want(inputs: np.ndarray, aux: DeferredAux) -> np.ndarray:
    return np.concatenate([inputs, aux.expand()])


@pytest.mark.parametrize("cid", ["wpost-2k", "porep-2k"])
def test_each_kind_runs_its_kernel(deferred, cid, monkeypatch):
    monkeypatch.setattr(gw, "MAX_HASHES", 3)  # several launches per Poseidon group
    inputs, aux = deferred[cid]
    gpu = FakeGpu()
    w = gw.GpuWitness(gpu)
    z = w.assemble(inputs, aux)
    assert np.array_equal(z, _want(inputs, aux))
    keys = {g.program.key for g in aux.groups}
    assert w._checked == keys and not w._refused
    assert "poseidon_witness" in gpu.launches
    assert ("witness_bitprog" in gpu.launches) == (cid == "porep-2k")
    poseidon_groups = [g for g in aux.groups if isinstance(g.program, PoseidonProgram)]
    launches = sum(-(-len(g.starts) // 3) for g in poseidon_groups)
    assert gpu.launches.count("poseidon_witness") == launches
    uploads = gpu.uploads
    assert np.array_equal(w.assemble(inputs, aux), z)  # tables come from the per-key cache
    assert gpu.uploads - uploads < uploads


def test_a_disagreeing_kernel_is_refused_and_made_on_the_host(deferred):
    inputs, aux = deferred["wpost-2k"]
    gpu = FakeGpu(wrong=True)
    w = gw.GpuWitness(gpu)
    assert np.array_equal(w.assemble(inputs, aux), _want(inputs, aux))
    poseidon = {g.program.key for g in aux.groups if g.program.key.startswith(b"poseidon:")}
    assert poseidon and w._refused == poseidon
    before = gpu.launches.count("poseidon_witness")
    assert np.array_equal(w.assemble(inputs, aux), _want(inputs, aux))
    assert gpu.launches.count("poseidon_witness") == before  # never launched again


def _hashes(program: PoseidonProgram) -> RunGroup:
    """One run of ``program`` (zero preimage)."""
    return RunGroup(program, np.zeros(1, np.int64), np.zeros((1, program.arity, 4), np.uint64))


def test_refused_keys_and_wide_states_never_launch(deferred):
    inputs, aux = deferred["porep-2k"]
    gpu = FakeGpu()
    w = gw.GpuWitness(gpu)
    for g in aux.groups:
        w.refuse(g.program.key)
    assert np.array_equal(w.assemble(inputs, aux), _want(inputs, aux))
    assert set(gpu.launches) == {"witness_place"}
    assert gw._has_kernel(_hashes(poseidon_program(16, Strength.STANDARD, 1)))
    wide = PoseidonProgram(b"poseidon:wide", 17, Strength.STANDARD, 1, 1)
    assert not gw._has_kernel(_hashes(wide))


class PinningGpu(FakeGpu):
    def __init__(self) -> None:
        super().__init__()
        self.pinned = 0

    def pinned_copy(self, a: np.ndarray) -> np.ndarray:
        self.pinned += 1
        return np.array(a, copy=True)


def test_row_indices_are_kept_once_per_shape_on_each_side():
    """A shape's row indices are uploaded (or copied to page-locked memory, what a capped MSM
    uploads pass by pass) once while the shape keeps them, for the few most recent shapes,
    and checked against the vector they index."""
    gpu = PinningGpu()
    w = gw.GpuWitness(gpu)
    rng = np.random.default_rng()
    shapes = [np.sort(rng.choice(1000, size=300, replace=False)).astype(np.uint32)
              for _ in range(gw.KEEP_ROWS + 1)]  # fmt: skip
    pinned = w.pinned_rows(shapes[0], 1000)
    assert np.array_equal(pinned, shapes[0]) and pinned is not shapes[0]
    assert w.pinned_rows(shapes[0], 1000) is pinned and gpu.pinned == 1
    on_device = w.device_rows(shapes[0], 1000)
    assert w.device_rows(shapes[0], 1000) is on_device and gpu.uploads == 1
    for rows in shapes[1:]:  # the oldest goes: it is made again
        w.pinned_rows(rows, 1000)
    assert gpu.pinned == gw.KEEP_ROWS + 1
    assert w.pinned_rows(shapes[0], 1000) is not pinned and gpu.pinned == gw.KEEP_ROWS + 2
    copy = shapes[1].copy()  # equal values, another array: not the kept one
    assert w.pinned_rows(copy, 1000) is not w.pinned_rows(shapes[1], 1000)
    with pytest.raises(gw.InternalError, match="row"):
        w.pinned_rows(shapes[2], int(shapes[2][-1]))  # a vector too short for its last row
