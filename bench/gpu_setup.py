"""Benchmark GPU key generation: fixed-base multiplication alone, then whole synthetic setups.

Usage: python bench/gpu_setup.py [--fixed g1:20,22,24 g2:20,22] [--logs 20 22] [--keys DIR]
       [--cpu-fixed 20]

--fixed: wall time of CudaBackend.fixed_base on uniform random scalars (host FrVec in, host
zcash rows out: upload, kernels and download included), median of --runs after one warm-up
call (whose time — NVRTC compile on a fresh machine plus the table — is printed separately).
--logs: generate_parameters(synthetic:2^log, backend=CudaBackend) end to end, with the shape's
synthesis timed apart (it is not setup), the fixed-base calls summed, and the rest (host scalar
preparation: Lagrange basis, transposed products; writing the .params file) as the remainder.
--cpu-fixed: the same fixed-base call on the CPU backend (all cores) for the ratio.
Writes a JSON summary to $OUT/gpu_setup.json when OUT is set.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from cuzk.backend.cuda.backend import CudaBackend
from cuzk.circuits.synthetic import SyntheticCircuit
from cuzk.field import fr
from cuzk.groth16.setup import generate_parameters
from cuzk.openmp import configure_openmp
from cuzk.r1cs import synthesize_shape


class _Timed:
    """The backend with its fixed_base calls timed (the rest of setup is host work)."""

    def __init__(self, backend: CudaBackend) -> None:
        self.backend = backend
        self.calls: list[tuple[str, int, float]] = []

    def fixed_base(self, group, scalars):
        t0 = time.perf_counter()
        out = self.backend.fixed_base(group, scalars)
        self.calls.append((group, len(scalars), time.perf_counter() - t0))
        return out


def bench_fixed(backend, specs: list[str], runs: int, rng) -> dict:
    res: dict = {}
    for spec in specs:
        group, _, logs = spec.partition(":")
        for log in (int(x) for x in logs.split(",")):
            s = fr.random(1 << log, rng)
            t0 = time.perf_counter()
            backend.fixed_base(group, s)
            first = time.perf_counter() - t0
            times = []
            for _ in range(runs):
                t0 = time.perf_counter()
                backend.fixed_base(group, s)
                times.append(time.perf_counter() - t0)
            med = statistics.median(times)
            rate = (1 << log) / med
            print(
                f"fixed_base {group} 2^{log}: {med * 1e3:.1f} ms median of {runs} "
                f"({rate / 1e6:.1f} M points/s; first call {first:.2f} s)",
                flush=True,
            )
            res[f"{group}:{log}"] = {"ms": med * 1e3, "first_s": first, "points_per_s": rate}
    return res


def bench_setup(backend, logs: list[int], keys: Path) -> dict:
    res: dict = {}
    for log in logs:
        n = 1 << log
        t0 = time.perf_counter()
        shape = synthesize_shape(SyntheticCircuit(n), f"synthetic:{n}")
        shape_s = time.perf_counter() - t0
        timed = _Timed(backend)
        t0 = time.perf_counter()
        generate_parameters(shape, keys, f"synthetic-{n}", seed=log, backend=timed)  # type: ignore[arg-type]
        setup_s = time.perf_counter() - t0
        fb_s = sum(t for _, _, t in timed.calls)
        size = (keys / f"synthetic-{n}.params").stat().st_size
        split = ", ".join(f"{g} {m}: {t:.2f}" for g, m, t in timed.calls if m > 1000)
        print(
            f"setup synthetic:2^{log}: {setup_s:.2f} s (fixed-base {fb_s:.2f} s [{split}], "
            f"host {setup_s - fb_s:.2f} s; {size / 1e9:.2f} GB written); shape synthesis "
            f"{shape_s:.1f} s",
            flush=True,
        )
        res[str(log)] = {
            "setup_s": setup_s,
            "fixed_base_s": fb_s,
            "shape_s": shape_s,
            "params_bytes": size,
            "calls": timed.calls,
        }
        (keys / f"synthetic-{n}.params").unlink()
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--fixed", nargs="*", default=["g1:20,22,24", "g2:20,22"])
    ap.add_argument("--logs", type=int, nargs="*", default=[20, 22])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keys", type=Path, default=None)
    ap.add_argument("--cpu-fixed", type=int, nargs="*", default=[])
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    out: dict = {}
    with CudaBackend(0) as backend:
        out["fixed_base"] = bench_fixed(backend, args.fixed, args.runs, rng)
        with tempfile.TemporaryDirectory() as tmp:
            out["setup"] = bench_setup(backend, args.logs, args.keys or Path(tmp))
    if args.cpu_fixed:
        from cuzk.backend.cpu import CpuBackend

        with CpuBackend() as cpu:
            for log in args.cpu_fixed:
                s = fr.random(1 << log, rng)
                cpu.fixed_base("g1", s[:1024])  # start the workers
                t0 = time.perf_counter()
                cpu.fixed_base("g1", s)
                t = time.perf_counter() - t0
                print(f"cpu fixed_base g1 2^{log}: {t:.2f} s ({os.cpu_count()} cores)")
                out.setdefault("cpu_fixed_base", {})[f"g1:{log}"] = t
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "gpu_setup.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    configure_openmp()  # the process's choice, before any kernel runs
    main()
