"""The one CUDA loader: ``.cu`` files in this package compiled lazily through CuPy (NVRTC).

Fixed options, this directory on the include path, ``-D`` parameters per call, the device's
own architecture (sm_90 on Hopper), and one compiled module per (file, defines, device) kept
for the life of the process (CuPy also caches the binaries on disk). Nothing compiles at
import time, and importing this module does not import CuPy. A compile error is re-raised as
:class:`~cuzk.errors.DeviceFault` carrying NVRTC's log, which names the file and line.

A ``.cu`` outside this package (the benchmark-only kernels under ``bench/kernels``) is named by
its absolute path; it compiles the same way, with this package's headers on its include path.

Kernels are named ``<file stem>_<operation>[_<variant>]`` (``fr_vec_mul``, ``msm_digits``,
``fixed_base_table_g1``, ``spmv_abc_u32_u16``); a file with one kernel names it by its stem
(``poseidon_witness``).
"""

from __future__ import annotations

import hashlib
import threading
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from cuzk.errors import DeviceFault

KERNEL_DIR = Path(__file__).resolve().parent
BASE_OPTIONS = ("--std=c++17", "-default-device", "--use_fast_math")
_ModuleKey = tuple[str, tuple[tuple[str, str], ...], int]
_lock = threading.Lock()  # guards the two dicts only; compiles run under per-module locks
_modules: dict[_ModuleKey, Any] = {}
_compiling: dict[_ModuleKey, threading.Lock] = {}


@lru_cache(maxsize=1)
def headers_digest() -> str:
    """Hash of every ``.cuh`` here: CuPy's disk cache keys on the main source and options
    only, so without this an edited header could load a stale binary."""
    h = hashlib.sha256()
    for path in sorted(KERNEL_DIR.glob("*.cuh")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def cupy() -> Any:
    """Import CuPy on first use; a clear error where it (or a GPU) is missing."""
    try:
        import cupy as cp
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise DeviceFault("the CUDA backend needs CuPy (pip install cupy-cuda13x)") from e
    return cp


@cache
def device_arch(device: int) -> str:
    return f"sm_{cupy().cuda.Device(device).compute_capability}"  # e.g. "90" on Hopper


def source_path(filename: str) -> Path:
    """Where ``filename`` is: a name relative to this package, or an absolute path."""
    path = Path(filename)
    return path if path.is_absolute() else KERNEL_DIR / path


def load_module(filename: str, *, device: int, defines: dict[str, object] | None = None) -> Any:
    """The compiled ``cupy.RawModule`` for ``filename`` (relative to this package, or an
    absolute path: :func:`source_path`) on ``device``; ``defines`` become ``-DNAME=VALUE``
    options."""
    key_defines = tuple(sorted((k, str(v)) for k, v in (defines or {}).items()))
    key = (filename, key_defines, device)
    with _lock:
        module = _modules.get(key)
        if module is not None:
            return module
        compile_lock = _compiling.setdefault(key, threading.Lock())
    # Different modules compile concurrently (NVRTC takes seconds to tens of seconds for the
    # curve kernels); callers of the same module wait for the one compile.
    with compile_lock:
        with _lock:
            module = _modules.get(key)
        if module is None:
            module = _compile(filename, key_defines, device)
            with _lock:
                _modules[key] = module
    return module


def _compile(filename: str, key_defines: tuple[tuple[str, str], ...], device: int) -> Any:
    cp = cupy()
    path = source_path(filename)
    source = path.read_text()
    options = (
        *BASE_OPTIONS,
        f"-I{KERNEL_DIR}",
        f"--gpu-architecture={device_arch(device)}",
        f"-DCUZK_HEADERS_DIGEST=0x{headers_digest()}",
        *(f"-D{k}={v}" for k, v in key_defines),
    )
    with cp.cuda.Device(device):
        try:
            module = cp.RawModule(code=source, options=options, name_expressions=None)
            module.compile()
        except cp.cuda.compiler.CompileException as e:
            raise DeviceFault(f"compiling {path} failed:\n{e.get_message()}") from e
    return module


def get_kernel(
    filename: str, name: str, *, device: int, defines: dict[str, object] | None = None
) -> Any:
    """One ``__global__`` function (declared ``extern "C"``) from ``filename`` (as in
    :func:`load_module`)."""
    return load_module(filename, device=device, defines=defines).get_function(name)
