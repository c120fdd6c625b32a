"""The engine on a real GPU under a tight memory cap: a key that does not fit streams from
page-locked host memory, four device workers take turns at many partitions, and nothing
deadlocks, runs out of memory or returns a proof that does not verify. This is the GPU side
of the CPU virtual-device tests in test_key_budget.py and test_staging.py. It exercises the
capped kernels as they run on a card of that size: MSMs in two lanes, each partition's z
given back while its H MSM runs, and the next partition staged in its place.

Skipped without CuPy or a CUDA device."""

from __future__ import annotations

import pytest

from cuzk.backend.cuda.device import cuda_available
from cuzk.circuits import get_circuit, key_file_stem
from cuzk.engine import ProofRequest
from cuzk.engine.family import circuit_info
from cuzk.engine.srs_entry import device_bytes
from cuzk.engine.workers import staged_bytes_for
from cuzk.groth16.setup import generate_parameters
from cuzk.r1cs import synthesize_shape

from .helpers import assert_verifies, idle_budget, wait_until

_OK, _WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _OK, reason=_WHY)]

CIRCUIT = "synthetic:200000"  # domain 2^18: a key of ≈ 0.13 GB, a partition in ≈ 0.1 s


@pytest.fixture(scope="module")
def gpu_param_dir(tmp_path_factory):
    """The key, made on the GPU by a backend closed afterwards, so that it holds nothing on
    the device while the engine plans its cap around what is in use."""
    from cuzk.backend.cuda.backend import CudaBackend

    d = tmp_path_factory.mktemp("gpu-engine-keys")
    shape = synthesize_shape(get_circuit(CIRCUIT), CIRCUIT)
    with CudaBackend(0) as backend:
        generate_parameters(shape, d, key_file_stem(CIRCUIT), seed=5, backend=backend)
    return d


def _device_in_use() -> int:
    """What device 0 holds once this process's pools have given their cached blocks back."""
    from cuzk.backend.cuda import loader
    from cuzk.backend.cuda.memory import capped_allocator

    cp = loader.cupy()
    with cp.cuda.Device(0):
        capped_allocator(cp).release()
        free, total = cp.cuda.runtime.memGetInfo()
    return total - free


def test_many_partitions_under_a_cap_that_streams_the_key(make_engine, gpu_param_dir, seed):
    """A cap that leaves the key about half its size: 48 partitions (12 proofs of 4) with four
    device workers all verify, no job fails, the key streams, and the device's measured peak
    stays under the cap."""
    from cuzk.backend.cuda.backend import CAPPED_POOL_SLACK
    from cuzk.backend.cuda.device import MODULE_HEADROOM

    path = gpu_param_dir / f"{key_file_stem(CIRCUIT)}.params"
    info = circuit_info(CIRCUIT, path, "cuda", 1)
    in_use = _device_in_use()  # the context, and anything another test left alive
    cap = (in_use + MODULE_HEADROOM + CAPPED_POOL_SLACK + staged_bytes_for(info, capped=True)
           + device_bytes(info) // 2)  # fmt: skip
    engine = make_engine(param_dir=gpu_param_dir, backend="cuda", workers_per_device=4,
                         staging=True, device_memory_limit=cap)  # fmt: skip
    requests = [ProofRequest.of(CIRCUIT, partitions=4, seed=seed + i) for i in range(12)]
    ids = [engine.submit(r) for r in requests]
    for job_id in ids:
        assert_verifies(engine.result(job_id, timeout=600), 4)
    wait_until(lambda: idle_budget(engine), what="partitions to drain")
    st = engine.status()
    (srs,) = st.srs
    assert srs.streamed, f"the cap ({cap} bytes) was meant to make the key stream"
    (dev,) = st.devices
    assert 0 < dev.memory_peak <= cap, (dev.memory_peak, cap)  # 0: not measured
    assert dev.staged_bytes == 0 and dev.pinned_lent == 0
