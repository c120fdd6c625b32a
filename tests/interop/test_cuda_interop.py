"""The snarkjs prover's device path on a GPU: its H on the odd 2m-domain points against the CPU
kernel on fresh random a and b, and whole proofs of the fixture key that verify (and agree
with the host path's public signals).

Skipped without CuPy or a CUDA device."""

from __future__ import annotations

import pytest

from cuzk.backend.cuda.device import cuda_available
from cuzk.field import fr
from cuzk.interop import prepare, prove, read_wtns, read_zkey
from cuzk.poly import Domain
from cuzk.poly.snarkjs_h import snarkjs_h

_OK, _WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _OK, reason=_WHY)]


@pytest.mark.parametrize("log_m,n", [(1, 1), (4, 16), (10, 1000), (14, 9000)])
def test_odd_coset_h_matches_cpu(cuda_backend, rng, seed, log_m, n):
    domain = Domain(1 << log_m)
    a, b = fr.random(n, rng), fr.random(n, rng)
    want = snarkjs_h(a, b, domain)
    got = cuda_backend.odd_coset_h(cuda_backend.upload(a), cuda_backend.upload(b), domain)
    assert (cuda_backend.download(got) == want).all(), f"seed {seed}"


def test_fixture_proofs_on_the_device_path(cuda_backend, cpu_backend, fixtures):
    key = prepare(read_zkey(fixtures / "fixture.zkey"))
    witness = read_wtns(fixtures / "fixture.wtns")
    try:
        for _ in range(2):  # prove() verifies before returning; twice: fresh r, s each time
            proof, public = prove(key, witness, cuda_backend)
            _, cpu_public = prove(key, witness, cpu_backend)
            assert public == cpu_public
            assert proof.a != prove(key, witness, cuda_backend)[0].a  # randomised
    finally:
        key.evict_from(cuda_backend)
        key.evict_from(cpu_backend)
        key.close()
