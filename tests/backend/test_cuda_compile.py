"""Device kernels compiled by nvcc on machines without a GPU, with the loader's options and
the device architecture the daemon runs on (sm_90), so a kernel that does not build fails in CI
rather than in the first device call. NVRTC (what the loader uses) accepts the same C++.

Each module is built with every set of ``-D`` options production or a benchmark compiles it
with; the benchmark-only kernels under ``bench/kernels`` are named by absolute path, as the
benchmarks hand them to the loader, and find the package's headers on its include path."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cuzk.backend.cuda.loader import BASE_OPTIONS, KERNEL_DIR, source_path
from cuzk.backend.cuda.msm_ba import BA_BLOCK

NVCC = shutil.which("nvcc")
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed on this machine")
#: NVRTC-only options the nvcc driver spells differently or does not need.
NVRTC_ONLY = {"-default-device"}
ARCH = "sm_90"
BENCH_KERNELS = Path(__file__).resolve().parents[2] / "bench" / "kernels"

MSM = ["msm_to_mont", "msm_from_zcash", "msm_digits", "msm_accumulate", "msm_seg_reduce",
       "msm_reduce_level", "msm_sum_rows", "msm_sum_affine", "msm_shift_copy"]  # fmt: skip
MSM_BA = ["msm_ba_round", "msm_ba_to_dense"]
FIXED_BASE = [f"fixed_base_{k}_{g}" for g in ("g1", "g2") for k in ("table", "mul", "affine")]
FR_ELEMENTWISE = ["fr_vec_add", "fr_vec_sub", "fr_vec_mul", "fr_vec_mul_sub", "fr_vec_scale",
                  "fr_vec_scale_powers", "fr_vec_powers", "fr_vec_classify", "fr_vec_rlc",
                  "fr_vec_sums_equal"]  # fmt: skip
FR_BENCH = ["fr_bench_mul", "fr_bench_mul_eo", "fr_bench_mul_paired", "fr_bench_mul64"]
SPMV = [
    f"spmv{k}_{ip}_{i}" for k in ("", "_abc") for ip in ("u32", "u64") for i in ("u8", "u16", "u32")
]

CASES = [
    # msm.py: one module per group (GpuMsm.defines, empty unless a benchmark sets them, on top).
    ("msm.cu", {"MSM_G2": 0}, MSM),
    ("msm.cu", {"MSM_G2": 1}, MSM),
    # bench/gpu_msm.py --variant: the accumulation's register cap at another value.
    ("msm.cu", {"MSM_G2": 0, "ACC_MIN_BLOCKS": 4}, MSM),
    # msm.py's batch-affine accumulation.
    ("msm_ba.cu", {"MSM_G2": 0, "BA_BLOCK": BA_BLOCK}, MSM_BA),
    ("msm_ba.cu", {"MSM_G2": 1, "BA_BLOCK": BA_BLOCK}, MSM_BA),
    # fixed_base.py (key generation) and msm.py's precomputed copies: both groups, no options.
    ("fixed_base.cu", {}, FIXED_BASE),
    # fr_vec.py's elementwise kernels (the NTTs', the MSM plans', the a·b = c combination's).
    ("fr_vec.cu", {}, FR_ELEMENTWISE),
    # abc.py's sparse products, witness.py's placement and bit programs and its Poseidon hashes.
    ("spmv.cu", {}, SPMV),
    ("ntt.cu", {}, [f"ntt_{d}_{w}" for d in ("dif", "dit") for w in ("fwd", "inv")]),
    ("witness.cu", {}, ["witness_place", "witness_bitprog"]),
    ("poseidon_witness.cu", {}, ["poseidon_witness"]),
    # The benchmark-only kernels (bench/gpu_msm.py's Fp probe, bench/gpu.py's Fr products).
    (str(BENCH_KERNELS / "fp_bench.cu"), {}, ["fp_bench_mul"]),
    (str(BENCH_KERNELS / "fr_bench.cu"), {}, FR_BENCH),
]


def case_id(filename: str, defines: dict[str, object]) -> str:
    return "-".join([Path(filename).name, *(f"{k}={v}" for k, v in defines.items())])


@pytest.mark.parametrize(
    "filename,defines,kernels",
    [pytest.param(f, d, k, id=case_id(f, d)) for f, d, k in CASES],
)
def test_kernels_compile(tmp_path, filename, defines, kernels):
    source = source_path(filename)
    assert source.is_file(), source
    out = tmp_path / "module.cubin"
    cmd = [
        NVCC,
        *(o for o in BASE_OPTIONS if o not in NVRTC_ONLY),
        f"-arch={ARCH}",
        f"-I{KERNEL_DIR}",
        *(f"-D{k}={v}" for k, v in defines.items()),
        "-cubin",
        "-o",
        str(out),
        str(source),
    ]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"{' '.join(cmd)}\n{run.stderr}"
    binary = out.read_bytes()
    for name in kernels:
        assert name.encode() in binary, f"{name} missing from {filename} {defines}"


def test_bench_kernels_are_outside_the_package():
    """The loader resolves a package kernel by name and a benchmark kernel by absolute path;
    no benchmark-only module ships in the package."""
    assert source_path("msm.cu") == KERNEL_DIR / "msm.cu"
    bench = BENCH_KERNELS / "fr_bench.cu"
    assert source_path(str(bench)) == bench
    assert not list(KERNEL_DIR.glob("*bench*.cu"))
