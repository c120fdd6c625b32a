"""Whole proofs with the CUDA backend: they verify, and the GPU kernels agree with the CPU
backend on the prover's real inputs (a/b/c, H and every MSM of one witness).

Skipped without CuPy or a CUDA device."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.backend.cuda.device import cuda_available
from cuzk.circuits.synthetic import SyntheticCircuit
from cuzk.groth16 import prove, verify
from cuzk.groth16.prover import synthesize
from cuzk.groth16.setup import generate_parameters
from cuzk.poly import Domain
from cuzk.r1cs import synthesize_shape
from tests.backend.hostcall import on_host

_OK, _WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _OK, reason=_WHY)]

N = 5000  # domain 8192


@pytest.fixture(scope="module")
def keys(tmp_path_factory, pool):
    shape = synthesize_shape(SyntheticCircuit(N), f"synthetic:{N}")
    params = generate_parameters(shape, tmp_path_factory.mktemp("k"), "syn", seed=7, pool=pool)
    return shape, params


def test_cuda_proof_verifies(keys, cuda_backend, seed):
    shape, params = keys
    proof, inputs = prove(SyntheticCircuit(N, seed=seed), shape, params, cuda_backend)
    assert verify(params.vk, inputs, proof), f"seed {seed}"


def test_cuda_agrees_with_cpu_on_prover_inputs(keys, cuda_backend, cpu_backend, seed):
    shape, params = keys
    assignment = synthesize(SyntheticCircuit(N, seed=seed))
    z = assignment.z
    abc_gpu = on_host(cuda_backend, "evaluate_abc", shape, z)
    abc_cpu = cpu_backend.evaluate_abc(shape, z)
    for got, want in zip(abc_gpu, abc_cpu, strict=True):
        assert np.array_equal(got, want), f"seed {seed}"
    domain = Domain.for_size(shape.num_constraints)
    h_gpu = on_host(cuda_backend, "h_quotient", *abc_gpu, domain)
    assert np.array_equal(h_gpu, cpu_backend.h_quotient(*abc_cpu, domain)), f"seed {seed}"
    aux = assignment.aux
    for bases, scalars in ((params.l, aux), (params.h, h_gpu)):
        for method in ("msm", "split_msm"):
            got = getattr(cuda_backend, method)(bases, cuda_backend.upload(scalars)).result()
            want = getattr(cpu_backend, method)(bases, scalars).result()
            assert got == want, f"{method} over {bases.count} points, seed {seed}"
    b_scalars = np.concatenate([assignment.inputs[shape.b_input_density], aux[shape.b_aux_density]])
    got = cuda_backend.split_msm(params.b_g2, cuda_backend.upload(b_scalars)).result()
    assert got == cpu_backend.split_msm(params.b_g2, b_scalars).result(), f"seed {seed}"


@pytest.fixture(scope="module")
def capped_backend(cuda_backend):
    """A CUDA backend under a memory cap (the device's whole memory: the capped kernels' path
    — c made where it is read, h in two buffers, MSMs in passes — without a tight limit)."""
    from cuzk.backend.cuda.backend import CudaBackend

    with CudaBackend(0, memory_limit=cuda_backend.memory().total) as b:
        yield b


@pytest.mark.parametrize("streamed", [False, True], ids=["resident", "streamed-matrices"])
def test_capped_path_agrees_with_cpu_and_proves(keys, capped_backend, cpu_backend, seed, streamed):
    """Under a cap a and b head zero-padded domain buffers and c is a RowProduct: the check
    finds a wrong row in a later slice than the first, h matches the CPU's and is made in b's
    buffer, and a whole proof verifies — with the matrices on the device, and streamed from
    host memory in blocks of a few KB."""
    shape, params = keys
    # Under a cap the split MSMs' lane goes first, the compute stream next (where the device
    # has more than two levels), the dense MSM's lane (the default, 0) last.
    first, dense = (lane.stream.priority for lane in capped_backend.msms._lanes)
    compute = capped_backend.gpu.stream.priority
    assert first <= compute < dense == 0 and (compute > first or first == -1)
    if streamed:
        capped_backend.stream_shape(shape, 1 << 13)
    try:
        _check_capped_path(shape, params, capped_backend, cpu_backend, seed)
    finally:
        capped_backend.forget_shape(shape)


def _check_capped_path(shape, params, capped_backend, cpu_backend, seed):
    from cuzk.backend.cuda import backend as cuda_module
    from cuzk.backend.cuda.abc import RowProduct

    z = synthesize(SyntheticCircuit(N, seed=seed)).z
    domain = Domain.for_size(shape.num_constraints)
    a, b, c = capped_backend.evaluate_abc(shape, capped_backend.upload(z))
    assert isinstance(c, RowProduct)
    want = cpu_backend.evaluate_abc(shape, z)
    assert np.array_equal(capped_backend.download(a), want[0]), f"seed {seed}"
    assert np.array_equal(capped_backend.download(b), want[1]), f"seed {seed}"
    slice_rows, cuda_module.CHECK_ROWS = cuda_module.CHECK_ROWS, 1000  # several slices
    try:
        assert len(capped_backend.unsatisfied_rows(a, b, c)) == 0
        # a row past the first slice whose b is not zero (else a wrong a would still fit)
        rows_b = np.flatnonzero(want[1][1000:].any(axis=1)) + 1000
        bad_row = int(np.random.default_rng(seed).choice(rows_b))
        wrong = capped_backend.download(a)
        wrong[bad_row, 0] ^= np.uint64(1)
        padded = capped_backend.gpu.zeros(domain.m)
        padded[: shape.num_constraints] = capped_backend.upload(wrong)
        rows = capped_backend.unsatisfied_rows(padded[: shape.num_constraints], b, c)
        assert list(rows) == [bad_row], f"seed {seed}"
    finally:
        cuda_module.CHECK_ROWS = slice_rows
    h = capped_backend.h_quotient(a, b, c, domain)
    assert h.data.ptr == b.data.ptr  # in b's buffer
    assert np.array_equal(capped_backend.download(h), cpu_backend.h_quotient(*want, domain))
    proof, inputs = prove(SyntheticCircuit(N, seed=seed), shape, params, capped_backend)
    assert verify(params.vk, inputs, proof), f"seed {seed}"


N20 = (1 << 20) - 64  # domain 2^20


@pytest.fixture(scope="module")
def keys20(tmp_path_factory, cuda_backend):
    shape = synthesize_shape(SyntheticCircuit(N20), f"synthetic:{N20}")
    out = tmp_path_factory.mktemp("k20")
    return shape, generate_parameters(shape, out, "syn20", seed=11, backend=cuda_backend)


def test_streamed_keys_give_the_resident_sums(
    keys20, cuda_backend, capped_backend, seed, monkeypatch
):
    """Synthetic 2^20 with every key vector streamed from host memory through 16 MiB buffers
    (several passes an MSM, buckets carried across them) gives the resident path's five MSM
    sums for the same witness — so, for the same r and s, the same proof — and its own proof
    verifies. The H MSM's lane carves its requests from a workspace (its 32 MiB of scalars'
    class: the two pass buffers; the scratch falls back)."""
    from cuzk.backend.cuda import msm as cuda_msm
    from cuzk.groth16.prover import finalize, start, wait_kernels

    monkeypatch.setattr(cuda_msm, "WORKSPACE_MIN_BYTES", 0)
    before = capped_backend.msms.workspaces

    shape, params = keys20
    vectors = (params.h, params.l, params.a, params.b_g1, params.b_g2)
    for v in vectors:
        capped_backend.preload(v, stream_bytes=16 << 20)
    try:
        assert all(capped_backend.msms.streamed(v) for v in vectors)
        assignment = synthesize(SyntheticCircuit(N20, seed=seed))
        resident = wait_kernels(start(assignment, shape, params, cuda_backend))
        uploaded = capped_backend.memory().uploaded
        streamed = wait_kernels(start(assignment, shape, params, capped_backend))
        assert streamed == resident, f"seed {seed}"
        # Every streamed point (an affine point: 96 bytes at least) crossed the bus once.
        assert capped_backend.memory().uploaded - uploaded >= 96 * sum(v.count for v in vectors)
        proof = finalize(start(assignment, shape, params, capped_backend))
        assert verify(params.vk, assignment.public_inputs, proof), f"seed {seed}"
        assert capped_backend.msms.workspaces == before + 2
    finally:
        for v in vectors:
            capped_backend.evict(v)


def test_combined_check_sums_agree_with_the_cpu(capped_backend, seed):
    """The a·b = c combination's kernels: the partial sums of Σ ρ^i·a_i·b_i add up to the
    CPU's, and the verdict is True for c = a·b and False with one row of c changed."""
    from cuzk.backend.cuda.abc_check import CombinedCheck
    from cuzk.field import fr
    from cuzk.field.constants import R

    rng = np.random.default_rng(seed)
    n = 3001 + int(rng.integers(0, 5000))  # not a multiple of the block count
    a, b = fr.random(n, rng), fr.random(n, rng)
    c = fr.mul(a, b)
    up = capped_backend.upload
    rho = capped_backend._rho
    powers = capped_backend.fr.pow_table(rho, 1, n)
    check = CombinedCheck(capped_backend.fr, powers, up(a), up(b))
    check.count_c(up(c))
    assert check.satisfied(), f"seed {seed}"
    want = sum(x * p for x, p in zip(fr.to_ints(c), fr.to_ints(fr.powers(rho, n)), strict=True)) % R
    for partials in (check._s, check._t):
        assert sum(fr.to_ints(capped_backend.download(partials))) % R == want, f"seed {seed}"
    row = int(rng.integers(n))
    c[row] = fr.add(c[row : row + 1], fr.ones(1))[0]
    check = CombinedCheck(capped_backend.fr, powers, up(a), up(b))
    check.count_c(up(c))
    assert not check.satisfied(), f"seed {seed}, row {row}"


@pytest.mark.parametrize("streamed", [False, True], ids=["resident", "streamed-matrices"])
def test_capped_check_is_deferred_and_names_the_first_bad_row(
    keys, capped_backend, cpu_backend, seed, streamed
):
    """Under a cap the prover checks a·b = c where the H pipeline makes c: start() queues
    every MSM, a good witness proves, and a bad one is refused by wait_kernels with the
    first row the CPU's exact check finds."""
    from cuzk.errors import UnsatisfiedConstraint
    from cuzk.field import fr
    from cuzk.groth16.prover import Assignment, finalize, start, wait_kernels

    shape, params = keys
    if streamed:
        capped_backend.stream_shape(shape, 1 << 13)
    try:
        assignment = synthesize(SyntheticCircuit(N, seed=seed))
        pending = start(assignment, shape, params, capped_backend)
        assert pending.abc_check is not None
        proof = finalize(pending)
        assert verify(params.vk, assignment.public_inputs, proof), f"seed {seed}"
        rng = np.random.default_rng(seed)
        z = assignment.z.copy()
        bad: np.ndarray = np.zeros(0, dtype=np.int64)
        while not len(bad):  # a new value for an aux variable that some constraint reads
            var = int(rng.integers(shape.num_inputs, shape.num_variables))
            z[var] = fr.random(1, rng)[0]
            bad = cpu_backend.unsatisfied_rows(*cpu_backend.evaluate_abc(shape, z))
        wrong = Assignment.split(z, shape.num_inputs, assignment.public_inputs)
        pending = start(wrong, shape, params, capped_backend)
        with pytest.raises(UnsatisfiedConstraint) as info:
            wait_kernels(pending)
        assert info.value.index == int(bad[0]), f"seed {seed}, variable {var}"
    finally:
        capped_backend.forget_shape(shape)
