"""Deferred witnesses made on the GPU (:mod:`cuzk.backend.cuda.witness`) equal the CPU
executor's value for value on real Filecoin partitions, satisfy the circuit on the device, and
a program the device is not trusted with is made on the host instead.

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


def _payload(cid: str, seed: int) -> bytes:
    if cid.startswith("porep"):
        from cuzk.circuits.filecoin.seal import generate_c1

        return generate_c1(2048, seed).encode()
    from cuzk.circuits.filecoin.snap_vanilla import generate_update

    return generate_update(2048, seed).encode()


@pytest.mark.parametrize("cid", ["porep-2k", "snap-2k"])
def test_device_witness_equals_cpu(cid, cuda_backend, cpu_backend, seed):
    circuit = open_statement(cid, payload=_payload(cid, seed % 2**32)).circuit(0)
    cs = synthesize_witness(circuit, DEFER)
    aux = cs.aux_vector()
    assert isinstance(aux, DeferredAux) and aux.deferred > 0
    inputs = fr.from_ints(cs.inputs)
    want = cpu_backend.upload_witness(inputs, aux)
    z = cuda_backend.upload_witness(inputs, aux)
    assert np.array_equal(cuda_backend.download(z), want), f"seed {seed}"
    # the witness satisfies the circuit where it lives
    shape = synthesize_shape(circuit, cid)
    a, b, c = cuda_backend.evaluate_abc(shape, z)
    assert len(cuda_backend.unsatisfied_rows(a, b, c)) == 0
    # gathers by the shape's z rows
    for rows in (shape.a_z_rows, shape.b_z_rows):
        assert np.array_equal(cuda_backend.download(cuda_backend.take(z, rows)), want[rows])


def test_refused_program_is_made_on_the_host(cuda_backend, cpu_backend, seed):
    from cuzk.backend.cuda.backend import CudaBackend

    circuit = open_statement("porep-2k", payload=_payload("porep-2k", seed % 2**32)).circuit(0)
    cs = synthesize_witness(circuit, DEFER)
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
