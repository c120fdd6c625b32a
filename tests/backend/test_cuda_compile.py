"""Device kernels compiled by nvcc on machines without a GPU, with the loader's options and
the device architecture the daemon runs on (sm_90), so a kernel that does not build fails in CI
rather than in the first device call. NVRTC (what the loader uses) accepts the same C++."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from cuzk.backend.cuda.loader import BASE_OPTIONS, KERNEL_DIR

NVCC = shutil.which("nvcc")
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed on this machine")
#: NVRTC-only options the nvcc driver spells differently or does not need.
NVRTC_ONLY = {"-default-device"}
ARCH = "sm_90"


@pytest.mark.parametrize(
    "filename,defines,kernels",
    [
        ("msm_ba.cu", {"MSM_G2": 0}, ["msm_ba_round", "msm_ba_to_dense"]),
        ("msm_ba.cu", {"MSM_G2": 1}, ["msm_ba_round", "msm_ba_to_dense"]),
        ("fp_bench.cu", {}, ["msm_fp_bench"]),
        ("msm.cu", {"MSM_G2": 0}, ["msm_accumulate", "msm_digits", "msm_shift_copy"]),
        (
            "msm.cu",
            {"MSM_G2": 1},
            ["msm_accumulate", "msm_reduce_level", "msm_digits", "msm_shift_copy"],
        ),
    ],
)
def test_kernels_compile(tmp_path, filename, defines, kernels):
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
        str(KERNEL_DIR / filename),
    ]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"{' '.join(cmd)}\n{run.stderr}"
    binary = out.read_bytes()
    for name in kernels:
        assert name.encode() in binary, f"{name} missing from {filename} {defines}"
