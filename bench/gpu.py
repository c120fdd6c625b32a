"""Benchmark the CUDA Fr kernels: Fr multiplications/s, NTT, coset NTT, the H pipeline and the
a/b/c sparse products, device-resident like sppark's anchors (the sppark anchors in BENCHMARKS.md).

Usage: python bench/gpu.py [--ntt 16:27] [--h 16:27] [--spmv 16:26] [--runs 7]
       [--configs 11,2,256;10,1,256] [--transfer-mib 1024] [--device 0]

Each time is the median of --runs runs after two warm-ups, measured with CUDA events on the
backend's stream around the call (outputs come from CuPy's pool, so steady-state calls do not
allocate). Inputs are random field elements generated on the device (limbs < 2^62, so < r).
abc_spmv is A·z, B·z, C·z for three random CSR matrices of 2^k rows and columns with 2–4
entries per row (mean 3), half of the coefficients equal to one. --configs times the 2^24 NTT
(and the largest one) under other pass shapes (tile log, group log, threads per block).
Results merge into bench/results/h200.json under "kernels" (other keys are kept), and a copy
goes to $OUT when OUT is set.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from cuzk.backend.cuda import ntt as ntt_mod
from cuzk.backend.cuda.abc import DeviceCsr
from cuzk.backend.cuda.backend import CudaBackend
from cuzk.field import fr
from cuzk.openmp import configure_openmp
from cuzk.poly import Domain

RESULTS = Path(__file__).resolve().parent / "results" / "h200.json"
#: The Fr product-rate kernels: outside the package, compiled by absolute path.
FR_BENCH = str(Path(__file__).resolve().parent / "kernels" / "fr_bench.cu")
SPPARK = {  # ms, H200, device-resident (ANCHORS.md)
    "ntt": {20: 0.26, 22: 1.05, 24: 4.43, 26: 20.95, 27: 42.3},
    "coset_ntt": {20: 0.32, 22: 1.27, 24: 5.33, 26: 26.2, 27: 49.1},
}


def log_range(text: str) -> list[int]:
    if not text:
        return []
    lo, _, hi = text.partition(":")
    return list(range(int(lo), int(hi or lo) + 1))


class Timer:
    def __init__(self, be: CudaBackend, runs: int) -> None:
        self.be, self.runs = be, runs
        self.cp = be.gpu.cp

    def ms(self, fn: Any, runs: int | None = None, warmup: int = 2) -> float:
        gpu, cp = self.be.gpu, self.cp
        for _ in range(warmup):
            fn()
        times = []
        with gpu.context():
            for _ in range(runs or self.runs):
                s, e = cp.cuda.Event(), cp.cuda.Event()
                s.record(gpu.stream)
                fn()
                e.record(gpu.stream)
                e.synchronize()
                times.append(cp.cuda.get_elapsed_time(s, e))
        return float(statistics.median(times))


def free_pool() -> None:
    """Between sections only (never in a timed path): return cached blocks to the driver."""
    try:
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()
    except Exception:
        pass


def rand_dev(be: CudaBackend, n: int) -> Any:
    cp = be.gpu.cp
    with be.gpu.context():
        return cp.random.randint(0, 1 << 62, size=(n, 4), dtype=cp.int64).view(cp.uint64)


def section(name: str):
    def wrap(fn: Any) -> Any:
        def run(*a: Any, **k: Any) -> Any:
            t0 = time.time()
            print(f"--- {name}", flush=True)
            try:
                return fn(*a, **k)
            except Exception:  # keep going: one broken section must not cost the run
                traceback.print_exc()
                return None
            finally:
                print(f"--- {name} done in {time.time() - t0:.1f} s", flush=True)
                free_pool()

        return run

    return wrap


@section("fr mul/s")
def bench_mul(be: CudaBackend, t: Timer, out: dict[str, Any]) -> None:
    gpu = be.gpu
    threads, iters, chains = 256, 256, 4
    for blocks_per_sm in (2, 4):
        n = gpu.sm_count * blocks_per_sm * threads
        a = rand_dev(be, n)
        res = gpu.empty(n)
        for kern, key in (
            ("fr_bench_mul_eo", "fr_mul32_eo"),
            ("fr_bench_mul_paired", "fr_mul32_paired"),
            ("fr_bench_mul64", "fr_mul64"),
        ):
            blocks = gpu.sm_count * blocks_per_sm

            def go(
                kern: str = kern, blocks: int = blocks, res: Any = res, a: Any = a, n: int = n
            ) -> None:
                gpu.launch(FR_BENCH, kern, blocks, threads, (res, a, np.int32(iters), np.int64(n)))

            ms = t.ms(go, runs=5)
            rate = n * iters * chains / (ms / 1e3)
            print(
                f"{key:14s} {blocks_per_sm} blocks/SM: {ms:8.3f} ms  {rate:.3e} mul/s", flush=True
            )
            prev = out.setdefault("fr_mul_per_s", {}).get(key, 0.0)
            out["fr_mul_per_s"][key] = max(prev, rate)


@section("ntt / coset_ntt")
def bench_ntt(be: CudaBackend, t: Timer, logs: list[int], out: dict[str, Any]) -> None:
    for L in logs:
        d = Domain(1 << L)
        v = rand_dev(be, d.m)
        be.fr.twiddles(L)
        be.fr.pow_table(d.coset_shift, 1, d.m)
        ms_ntt = t.ms(lambda v=v, d=d: be.fr.ntt(v, d))
        ms_coset = t.ms(lambda v=v, d=d: be.fr.ntt(v, d, coset=True))
        ms_intt = t.ms(lambda v=v, d=d: be.fr.intt(v, d))
        # The twiddles a capped backend uses: two tables, a second product in some stages.
        compact = ntt_mod.GpuNtt(be.gpu, compact_twiddles=True)
        compact.twiddles(L)
        ms_compact = t.ms(lambda v=v, d=d, c=compact: c.ntt(v, d))
        out.setdefault("ntt", {})[str(L)] = round(ms_ntt, 4)
        out.setdefault("coset_ntt", {})[str(L)] = round(ms_coset, 4)
        out.setdefault("intt", {})[str(L)] = round(ms_intt, 4)
        out.setdefault("ntt_compact_twiddles", {})[str(L)] = round(ms_compact, 4)
        bfly = (d.m // 2) * L
        print(
            f"2^{L}: ntt {ms_ntt:9.3f} ms  coset {ms_coset:9.3f}  intt {ms_intt:9.3f}  "
            f"compact twiddles {ms_compact:9.3f}  ({bfly / (ms_ntt / 1e3):.3e} butterflies/s)",
            flush=True,
        )
        del v, compact


@section("ntt pass-shape sweep")
def bench_configs(
    be: CudaBackend,
    t: Timer,
    configs: list[tuple[int, int, int]],
    logs: list[int],
    out: dict[str, Any],
) -> None:
    saved = (ntt_mod.TILE_LOG, ntt_mod.GROUP_LOG, ntt_mod.THREADS)
    try:
        for L in logs:
            d = Domain(1 << L)
            v = rand_dev(be, d.m)
            for tile_log, group_log, threads in configs:
                ntt_mod.TILE_LOG, ntt_mod.GROUP_LOG, ntt_mod.THREADS = tile_log, group_log, threads
                ms = t.ms(lambda v=v, d=d: be.fr.ntt(v, d), runs=5)
                key = f"{L}:{tile_log},{group_log},{threads}"
                out.setdefault("ntt_configs", {})[key] = round(ms, 4)
                print(
                    f"2^{L} tile 2^{tile_log} groups 2^{group_log} threads {threads} "
                    f"passes {ntt_mod.pass_sizes(L)}: {ms:9.3f} ms",
                    flush=True,
                )
            del v
    finally:
        ntt_mod.TILE_LOG, ntt_mod.GROUP_LOG, ntt_mod.THREADS = saved


@section("h pipeline")
def bench_h(be: CudaBackend, t: Timer, logs: list[int], out: dict[str, Any]) -> None:
    for L in logs:
        d = Domain(1 << L)
        a, b, c = (rand_dev(be, d.m) for _ in range(3))
        ms = t.ms(lambda a=a, b=b, c=c, d=d: be.h_quotient(a, b, c, d), runs=5 if L >= 26 else None)
        out.setdefault("h_pipeline", {})[str(L)] = round(ms, 4)
        print(f"2^{L}: h_quotient {ms:9.3f} ms", flush=True)
        del a, b, c


def synthetic_csr(be: CudaBackend, rows: int, cols: int) -> DeviceCsr:
    """2–4 entries a row in the compact layout: uint32 row pointers and columns, uint16 ids
    into a table of 1,500 coefficients (PoRep has ~1,500 distinct ones), half the entries 1."""
    cp = be.gpu.cp
    with be.gpu.context():
        counts = cp.random.randint(2, 5, rows, dtype=cp.int64)
        indptr = cp.zeros(rows + 1, dtype=cp.uint32)
        cp.cumsum(counts, out=indptr[1:])
        nnz = int(indptr[-1])
        indices = cp.random.randint(0, cols, nnz, dtype=cp.int64).astype(cp.uint32)
        table = rand_dev(be, 1500)
        table[0] = cp.asarray(fr.from_int(1))[0]
        ids = cp.random.randint(1, 1500, nnz, dtype=cp.int64).astype(cp.uint16)
        ids = cp.where(cp.random.random(nnz) < 0.5, cp.uint16(0), ids).astype(cp.uint16)
    return DeviceCsr(indptr, indices, ids, table, rows, cols, "u32_u16")


@section("abc spmv")
def bench_spmv(be: CudaBackend, t: Timer, logs: list[int], out: dict[str, Any]) -> None:
    for L in logs:
        n = 1 << L
        mats = tuple(synthetic_csr(be, n, n) for _ in range(3))
        z = rand_dev(be, n)
        ms = t.ms(lambda mats=mats, z=z: be.abc.evaluate_mats(mats, z), runs=5 if L >= 25 else None)
        out.setdefault("abc_spmv", {})[str(L)] = round(ms, 4)
        nnz = sum(int(m.indices.shape[0]) for m in mats)
        print(f"2^{L}: abc spmv {ms:9.3f} ms ({nnz / (ms / 1e3):.3e} nnz/s)", flush=True)
        del mats, z


@section("transfers")
def bench_transfers(be: CudaBackend, mib: int, out: dict[str, Any]) -> None:
    n = (mib << 20) // 32
    host = (
        np.random.default_rng(1).integers(0, 1 << 62, size=(n, 4), dtype=np.int64).view(np.uint64)
    )
    pinned = be.host_vector(n)
    pinned[:] = host
    res: dict[str, float] = {}
    for label, src in (("h2d_pageable_staged", host), ("h2d_pinned", pinned)):
        be.upload(src)
        be.gpu.synchronize()
        t0 = time.perf_counter()
        for _ in range(3):
            d = be.upload(src)
        be.gpu.synchronize()
        res[label] = 3 * host.nbytes / (time.perf_counter() - t0) / 1e9
    be.download(d)  # the first call grows CuPy's pinned pool (cudaHostAlloc), later ones reuse it
    t0 = time.perf_counter()
    for _ in range(3):
        be.download(d)
    res["d2h_download"] = 3 * host.nbytes / (time.perf_counter() - t0) / 1e9
    cp, gpu = be.gpu.cp, be.gpu
    t0 = time.perf_counter()
    mem = cp.cuda.alloc_pinned_memory(host.nbytes)
    res["pinned_alloc_ms"] = (time.perf_counter() - t0) * 1e3
    buf = np.frombuffer(mem, dtype=np.uint64, count=host.size).reshape(host.shape)
    with gpu.context():
        d.get(stream=gpu.stream, out=buf)
        gpu.stream.synchronize()
        t0 = time.perf_counter()
        for _ in range(3):
            d.get(stream=gpu.stream, out=buf)
        gpu.stream.synchronize()
        res["d2h_into_pinned"] = 3 * host.nbytes / (time.perf_counter() - t0) / 1e9
        t0 = time.perf_counter()
        for _ in range(3):
            d.data.copy_to_host_async(buf.ctypes.data, host.nbytes, gpu.stream)
        gpu.stream.synchronize()
        res["d2h_raw_async"] = 3 * host.nbytes / (time.perf_counter() - t0) / 1e9
    out["transfer_GBps"] = {k: round(v, 2) for k, v in res.items()}
    print("  ".join(f"{k} {v:.1f}" for k, v in res.items()) + "  (GB/s; alloc in ms)", flush=True)


def revision() -> str:
    if os.environ.get("CUZK_REVISION"):  # a copied tree whose .git is not the source's
        return os.environ["CUZK_REVISION"]
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).parent,
        ).stdout.strip()
    except Exception:
        return "unknown"


def write(result: dict[str, Any], gpu_name: str) -> None:
    doc: dict[str, Any] = {}
    if RESULTS.exists():
        try:
            doc = json.loads(RESULTS.read_text())
        except ValueError:
            doc = {}
    doc["revision"] = revision()
    doc["gpu"] = gpu_name
    doc["date"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    kernels = doc.setdefault("kernels", {})
    for k in ("ntt", "coset_ntt", "intt", "h_pipeline", "abc_spmv"):
        if k in result:
            kernels.setdefault(k, {}).update(result[k])
    extra = doc.setdefault("fr", {})
    for k in ("fr_mul_per_s", "ntt_configs", "transfer_GBps"):
        if k in result:
            extra[k] = result[k]
    text = json.dumps(doc, indent=1, sort_keys=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text)
    if os.environ.get("OUT"):
        (Path(os.environ["OUT"]) / "h200.json").write_text(text)
    print(f"wrote {RESULTS}" + (" and $OUT/h200.json" if os.environ.get("OUT") else ""))


def table(result: dict[str, Any]) -> None:
    logs = sorted(
        {int(k) for key in ("ntt", "h_pipeline", "abc_spmv") for k in result.get(key, {})}
    )
    print("\nms (median)  | " + " | ".join(f"2^{L}" for L in logs))
    for key in ("ntt", "coset_ntt", "intt", "h_pipeline", "abc_spmv"):
        row = result.get(key, {})
        cells = [f"{row[str(L)]:.3f}" if str(L) in row else "-" for L in logs]
        print(f"{key:12s} | " + " | ".join(cells))
        if key in SPPARK:
            cells = [f"{SPPARK[key][L]:.2f}" if L in SPPARK[key] else "-" for L in logs]
            print(f"{'  sppark':12s} | " + " | ".join(cells))
    if "fr_mul_per_s" in result:
        print(
            "Fr mul/s: "
            + ", ".join(f"{k} {v:.3e}" for k, v in result["fr_mul_per_s"].items())
            + "  (anchor floor 2.9e10)"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ntt", default="16:27")
    ap.add_argument("--h", default="16:27")
    ap.add_argument("--spmv", default="16:26")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--configs", default="")
    ap.add_argument("--config-logs", default="24,27")
    ap.add_argument("--transfer-mib", type=int, default=512)
    ap.add_argument("--no-mul", action="store_true")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument(
        "--defines", default="", help="kernel defines for every module, e.g. NTT_MIN_BLOCKS=4"
    )
    ap.add_argument("--no-save", dest="save", action="store_false", help="do not write h200.json")
    args = ap.parse_args(argv)

    be = CudaBackend(args.device)
    if args.defines:
        be.gpu.defines = {**be.gpu.defines, **dict(kv.split("=") for kv in args.defines.split(","))}
        print(f"defines {be.gpu.defines}", flush=True)
    t = Timer(be, args.runs)
    print(f"GPU {args.device}: {be.gpu.name}, {be.gpu.sm_count} SMs", flush=True)
    result: dict[str, Any] = {}
    if not args.no_mul:
        bench_mul(be, t, result)
    bench_ntt(be, t, log_range(args.ntt), result)
    if args.configs:
        configs = [tuple(int(x) for x in c.split(",")) for c in args.configs.split(";") if c]
        logs = [int(x) for x in args.config_logs.split(",") if x]
        bench_configs(be, t, configs, logs, result)
    bench_h(be, t, log_range(args.h), result)
    bench_spmv(be, t, log_range(args.spmv), result)
    if args.transfer_mib:
        bench_transfers(be, args.transfer_mib, result)
    if args.save:
        write(result, be.gpu.name)
    table(result)
    return 0


if __name__ == "__main__":
    configure_openmp()  # the process's choice, before any kernel runs
    sys.exit(main())
