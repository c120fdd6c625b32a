"""Deferred witnesses made on the GPU (:mod:`cuzk.backend.cuda.witness`) equal the CPU
executor's value for value on real Filecoin partitions — SHA-256 bit programs and Poseidon
hashes — satisfy the circuit on the device, and a program the device is not trusted with is
made on the host instead.

Skipped without CuPy or a CUDA device."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.backend.cuda.device import cuda_available
from cuzk.circuits import open_statement
from cuzk.field import fr
from cuzk.r1cs import SynthesisOptions, synthesize_shape, synthesize_witness
from cuzk.r1cs.deferred import DeferredAux

_OK, _WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _OK, reason=_WHY)]

DEFER = SynthesisOptions(defer_bit_programs=True)
#: Both program kinds deferred.
BOTH = SynthesisOptions(defer_bit_programs=True, defer_poseidon=True)


def _payload(cid: str, seed: int) -> bytes:
    if cid.startswith("porep"):
        from cuzk.circuits.filecoin.seal import generate_c1

        return generate_c1(2048, seed).encode()
    from cuzk.circuits.filecoin.snap_vanilla import generate_update

    return generate_update(8 << 20 if cid == "snap-8m" else 2048, seed).encode()


def _circuit(cid: str, seed: int):  # a Filecoin partition circuit
    if cid.startswith(("porep", "snap")):
        return open_statement(cid, payload=_payload(cid, seed % 2**32)).circuit(0)
    from cuzk.circuits.filecoin.post import post_params
    from cuzk.circuits.filecoin.vanilla_json import random_request

    text, _ = random_request(post_params(cid), np.random.default_rng(seed))
    return open_statement(cid, payload=text.encode()).circuit(0)


@pytest.mark.parametrize(
    "cid, options",
    [
        ("porep-2k", DEFER),
        ("snap-2k", DEFER),
        ("porep-2k", BOTH),
        ("snap-2k", BOTH),
        ("wpost-2k", BOTH),
        ("winning-2k", BOTH),
        ("snap-8m", BOTH),  # a 10.0M-constraint partition: about a minute on the GPU host
    ],
)
def test_device_witness_equals_cpu(cid, options, cuda_backend, cpu_backend, seed):
    circuit = _circuit(cid, seed)
    cs = synthesize_witness(circuit, options)
    aux = cs.aux_vector()
    assert isinstance(aux, DeferredAux) and aux.deferred > 0
    if options.defer_poseidon:
        assert any(g.program.key.startswith(b"poseidon:") for g in aux.groups)
    inputs = fr.from_ints(cs.inputs)
    want = cpu_backend.upload_witness(inputs, aux)
    z = cuda_backend.upload_witness(inputs, aux)
    assert np.array_equal(cuda_backend.download(z), want), f"seed {seed}"
    # made by the device kernels: no key refused by the first-use check (host fallback)
    assert not {g.program.key for g in aux.groups} & cuda_backend.witness._refused
    # the witness satisfies the circuit where it lives
    shape = synthesize_shape(circuit, cid)
    a, b, c = cuda_backend.evaluate_abc(shape, z)
    assert len(cuda_backend.unsatisfied_rows(a, b, c)) == 0
    # gathers by the shape's z rows
    for rows in (shape.a_z_rows, shape.b_z_rows):
        assert np.array_equal(cuda_backend.download(cuda_backend.take(z, rows)), want[rows])


@pytest.mark.parametrize("cid", ["porep-2k", "wpost-2k"])
def test_refused_program_is_made_on_the_host(cid, cuda_backend, cpu_backend, seed):
    """Every key refused (SHA-256 and Poseidon): z made on the host and placed."""
    from cuzk.backend.cuda.backend import CudaBackend

    circuit = _circuit(cid, seed)
    cs = synthesize_witness(circuit, BOTH)
    aux = cs.aux_vector()
    assert isinstance(aux, DeferredAux)
    inputs = fr.from_ints(cs.inputs)
    fresh = CudaBackend(cuda_backend.device)
    try:
        for g in aux.groups:
            fresh.witness.refuse(g.program.key)
        z = fresh.upload_witness(inputs, aux)
        assert np.array_equal(fresh.download(z), cpu_backend.upload_witness(inputs, aux))
    finally:
        fresh.close()
