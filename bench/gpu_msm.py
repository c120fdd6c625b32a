"""Benchmark GpuMsm (CUDA Pippenger) on G1 and G2: device time per MSM, per-stage profile.

Usage: python bench/gpu_msm.py [--g1 16:26] [--g2 16:24] [--runs 5] [--sweep g1:24:16,18,20,22]
       [--profile 24] [--no-check] [--distinct 4096] [--variant g1:22,24:ACC_MIN_BLOCKS=4 ...]
       [--batch-affine g1:20,24,26]  (old vs batch-affine accumulation, distinct bases)
       [--reduce-threads 0]  (also time other bucket-reduction plans)
       [--copies g1:24,26:2,4,13,12@20]  (plain vs precomputed bases, K copies [@window])

Points: --distinct random points per group (k·G with random k, from the fixed-base batch),
written zcash-uncompressed to a temporary file and preloaded, then tiled on the device up to the
largest size (MSM cost does not depend on which points repeat; sizes are prefixes of one tiled
vector). Scalars: uniform random Fr elements (full 255-bit), generated once on the host and kept
on the device, so the timings are device-resident like sppark's anchors. Each time is the median
of --runs runs after one warm-up, measured with CUDA events around the whole device pipeline
(digits, counting sort, accumulation, bucket reduction, window sums to one point per window);
the small host-side combination of the window sums is timed separately (end-to-end column).
Results merge into bench/results/h200.json under "kernels" ({"g1_msm": {"16": ms, ...}}) and
a copy goes to $OUT when OUT is set.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from cuzk.backend.base import PointSet
from cuzk.backend.cuda import loader
from cuzk.backend.cuda.device import Gpu
from cuzk.backend.cuda.msm import REDUCE_THREADS, GpuMsm
from cuzk.backend.cuda.msm_bases import choose_window
from cuzk.curve import g1_generator, g2_generator
from cuzk.curve.encoding import (
    g1_array_from_uncompressed,
    g1_to_bytes,
    g2_array_from_uncompressed,
    g2_to_bytes,
)
from cuzk.curve.msm import g1_fixed_base_batch, g1_msm, g2_fixed_base_batch, g2_msm
from cuzk.field import fr
from cuzk.openmp import configure_openmp

RESULTS = Path(__file__).resolve().parent / "results" / "h200.json"
#: The Fp product-rate probe: outside the package, compiled by absolute path.
FP_BENCH = str(Path(__file__).resolve().parent / "kernels" / "fp_bench.cu")
SPPARK = {  # ms, H200, device-resident (the sppark anchors in BENCHMARKS.md)
    "g1": {16: 6.8, 18: 20.3, 20: 22.1, 22: 54.9, 24: 162.3, 26: 567.4},
    "g2": {14: 6.3, 18: 32.7, 20: 49.3, 22: 137.9},
}
GROUP = {
    "g1": (96, g1_generator, g1_fixed_base_batch, g1_array_from_uncompressed, g1_msm, g1_to_bytes),
    "g2": (192, g2_generator, g2_fixed_base_batch, g2_array_from_uncompressed, g2_msm, g2_to_bytes),
}


def log_range(text: str) -> list[int]:
    if not text:
        return []
    lo, _, hi = text.partition(":")
    return list(range(int(lo), int(hi or lo) + 1))


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.cp = loader.cupy()
        self.gpu = GpuMsm(Gpu(args.device))
        self.rng = np.random.default_rng(args.seed)
        self.tmp = Path(tempfile.mkdtemp(prefix="gpu_msm_"))
        self.points: dict[str, tuple[PointSet, list]] = {}

    def prepare(self, group: str, max_log: int):
        """Distinct points in a file, preloaded, tiled on the device to 2^max_log."""
        size, gen, batch, decode, _, _ = GROUP[group]
        d = self.args.distinct
        t0 = time.perf_counter()
        raw = batch(gen(), self.rng.integers(0, 256, (d, 32), dtype=np.uint8).tobytes())
        path = self.tmp / f"{group}.bin"
        path.write_bytes(raw)
        small = PointSet(group, str(path), 0, d)
        self.gpu.preload(small)
        n = 1 << max_log
        with self.cp.cuda.Device(self.gpu.device):
            base = self.gpu.resident(small)
            tiled = self.cp.tile(base, (-(-n // d), 1))[:n]
            tiled = self.cp.ascontiguousarray(tiled)
        print(
            f"{group}: {d} distinct points made and tiled to 2^{max_log} in "
            f"{time.perf_counter() - t0:.1f} s",
            flush=True,
        )
        self.points[group] = (small, decode(raw))
        return tiled

    def scalars(self, n: int):
        t0 = time.perf_counter()
        host = fr.random(n, self.rng)
        with self.cp.cuda.Device(self.gpu.device):
            dev = self.cp.asarray(host)
        print(f"{n} random scalars in {time.perf_counter() - t0:.1f} s", flush=True)
        return host, dev

    def time_device(self, bases: PointSet, d_scalars, window: int | None, runs: int) -> float:
        cp, gpu = self.cp, self.gpu
        res = gpu._bases[bases.key]
        times = []
        with cp.cuda.Device(gpu.device), gpu._stream:
            for k in range(runs + 1):
                start, end = cp.cuda.Event(), cp.cuda.Event()
                start.record(gpu._stream)
                gpu.enqueue_windows(res, d_scalars, None, window)
                end.record(gpu._stream)
                end.synchronize()
                if k:
                    times.append(cp.cuda.get_elapsed_time(start, end))
        return statistics.median(times)

    def profile(self, bases: PointSet, d_scalars, window: int | None) -> list[tuple[str, float]]:
        cp, gpu = self.cp, self.gpu
        res = gpu._bases[bases.key]
        with cp.cuda.Device(gpu.device), gpu._stream:
            gpu.enqueue_windows(res, d_scalars, None, window)  # warm
            start = cp.cuda.Event()
            start.record(gpu._stream)
            gpu.trace = []
            try:
                gpu.enqueue_windows(res, d_scalars, None, window)
                trace = gpu.trace
            finally:
                gpu.trace = None
            trace[-1][1].synchronize()
        out, prev = [], start
        for name, ev in trace:
            out.append((name, cp.cuda.get_elapsed_time(prev, ev)))
            prev = ev
        return out

    def prefixes(self, group: str, resident, key: str, dev_all, logs: list[int]):
        """(log2 size, PointSet, device scalars) per size: prefixes of one resident vector
        and of the scalars, each adopted under its own key and evicted after its turn."""
        for lg in logs:
            n = 1 << lg
            bases = PointSet(group, f"<{key}:{n}>", 0, n)
            self.gpu._adopt(bases, resident[:n])
            try:
                yield lg, bases, dev_all[:n]
            finally:
                self.gpu.evict(bases)

    def distinct(self, group: str, max_log: int) -> tuple[PointSet, Path]:
        """2^max_log distinct random points (k·G by the GPU fixed-base kernels) written to a
        file and preloaded: what a real key's MSM gathers from HBM, unlike the tiled set."""
        from cuzk.backend.cuda.fixed_base import GpuFixedBase

        t0 = time.perf_counter()
        n = 1 << max_log
        raw = GpuFixedBase(self.gpu.gpu).multiply(group, fr.random(n, self.rng))
        path = self.tmp / f"{group}_distinct.bin"
        raw.tofile(path)
        del raw
        bases = PointSet(group, str(path), 0, n)
        self.gpu.preload(bases)
        print(f"{group}: 2^{max_log} distinct points in {time.perf_counter() - t0:.1f} s")
        return bases, path

    def distinct_run(self, group: str, logs: list[int]):
        """(bases, their file, device scalars, resident points) of a comparison on distinct
        bases: 2^max(logs) of each, the sizes then prefixes of them."""
        full, path = self.distinct(group, max(logs))
        _, dev_all = self.scalars(1 << max(logs))
        return full, path, dev_all, self.gpu.resident(full)

    def compare_batch_affine(self, group: str, logs: list[int]) -> dict[str, float]:
        """Old (XYZZ chunks) vs new (batch-affine rounds) device ms on distinct bases and
        full-width scalars, each size's two results compared, the smallest also against the
        CPU; plus a per-stage profile of the new path at the largest size."""
        if not logs:
            return {}
        full, path, dev_all, resident = self.distinct_run(group, logs)
        enc = GROUP[group][5]
        out: dict[str, float] = {}
        print(f"\n{group.upper()} batch-affine   n    c   old ms   new ms   new/old", flush=True)
        for lg, bases, d_scalars in self.prefixes(group, resident, full.key, dev_all, logs):
            n = 1 << lg
            results, times = [], []
            for flag in (False, True):
                self.gpu.batch_affine = flag
                results.append(enc(self.gpu.msm(bases, d_scalars).result(), compressed=False))
                times.append(self.time_device(bases, d_scalars, None, self.args.runs))
            self.gpu.batch_affine = False
            if results[0] != results[1]:
                raise SystemExit(f"{group} 2^{lg}: batch-affine result differs from the old path")
            if lg == min(logs) and self.args.check:
                pts = GROUP[group][3](np.fromfile(path, np.uint8, n * GROUP[group][0]).tobytes())
                host = self.cp.asnumpy(d_scalars)
                want = enc(GROUP[group][4](pts, fr.to_bytes_le(host)), compressed=False)
                if want != results[1]:
                    raise SystemExit(f"{group} 2^{lg}: batch-affine result differs from the CPU")
                print(f"  check 2^{lg} against the CPU: OK", flush=True)
            old, new = times
            out[f"{lg}_old"], out[f"{lg}_batch_affine"] = round(old, 3), round(new, 3)
            print(
                f"  2^{lg:<2} {choose_window(n, group):>5} {old:>8.2f} {new:>8.2f} "
                f"{new / old:>9.3f}  (results equal)",
                flush=True,
            )
            if lg == max(logs):
                self.gpu.batch_affine = True
                try:
                    stages = self.profile(bases, d_scalars, None)
                finally:
                    self.gpu.batch_affine = False
                agg: dict[str, float] = {}
                for name, t in stages:
                    agg[name] = agg.get(name, 0.0) + t
                print("      profile: " + ", ".join(f"{k} {v:.2f}" for k, v in agg.items()))
        del dev_all, resident
        self.gpu.evict(full)
        return out

    def compare_copies(
        self, group: str, logs: list[int], ks: list[tuple[int, int | None]]
    ) -> dict[str, float]:
        """Plain vs precomputed bases (GpuMsm.precompute, K shifted copies) on distinct bases
        and full-width scalars: device ms of each, the copies' making time (once per key) and
        VRAM, each result compared with the plain one (the smallest size's also with the CPU);
        a per-stage profile with the most copies at the largest size."""
        if not logs:
            return {}
        full, path, dev_all, resident = self.distinct_run(group, logs)
        enc = GROUP[group][5]
        words = resident.shape[1]
        out: dict[str, float] = {}
        print(f"\n{group.upper()} copies   n   K   c   plain ms   copies ms   ratio   "
              "making s   VRAM GB", flush=True)  # fmt: skip
        for lg, bases, d_scalars in self.prefixes(group, resident, full.key, dev_all, logs):
            n = 1 << lg
            plain = enc(self.gpu.msm(bases, d_scalars).result(), compressed=False)
            t_plain = self.time_device(bases, d_scalars, None, self.args.runs)
            out[f"{lg}_plain"] = round(t_plain, 3)
            if lg == min(logs) and self.args.check:
                pts = GROUP[group][3](np.fromfile(path, np.uint8, n * GROUP[group][0]).tobytes())
                host = self.cp.asnumpy(d_scalars)
                if enc(GROUP[group][4](pts, fr.to_bytes_le(host)), compressed=False) != plain:
                    raise SystemExit(f"{group} 2^{lg}: the plain MSM differs from the CPU")
                print(f"  check 2^{lg} against the CPU: OK", flush=True)
            for k, window in ks:
                t0 = time.perf_counter()
                held = self.gpu.precompute(bases, k, window=window)
                making = time.perf_counter() - t0
                c = self.gpu.precomputed(bases)[1]
                got = enc(self.gpu.msm(bases, d_scalars).result(), compressed=False)
                if got != plain:
                    raise SystemExit(f"{group} 2^{lg}, {k} copies: result differs from plain")
                t = self.time_device(bases, d_scalars, None, self.args.runs)
                vram = held * n * words * 4 / 1e9
                tag = f"{lg}_copies{held}" + (f"_c{c}" if window else "")
                out[tag] = round(t, 3)
                out[f"{tag}_window"] = c
                out[f"{tag}_making_s"] = round(making, 3)
                print(f"  2^{lg:<2} {held:>3} {c:>3} {t_plain:>10.2f} {t:>11.2f} "
                      f"{t / t_plain:>7.3f} {making:>10.2f} {vram:>9.1f}  (results equal)",
                      flush=True)  # fmt: skip
                if lg == max(logs) and (k, window) == max(ks, key=lambda kw: kw[0]):
                    agg: dict[str, float] = {}
                    for name, dt in self.profile(bases, d_scalars, None):
                        agg[name] = agg.get(name, 0.0) + dt
                    print("      profile: " + ", ".join(f"{a} {v:.2f}" for a, v in agg.items()))
                self.gpu.precompute(bases, 1)
        del dev_all, resident
        self.gpu.evict(full)
        return out

    def fp_rate(self) -> float:
        """Fp Montgomery multiplications per second (fp_bench_mul, median of --runs)."""
        nthreads, iters = 1 << 18, 512
        data = self.rng.integers(0, 2**32, (nthreads, 24), dtype=np.uint64).astype(np.uint32)
        data[:, 11] %= 0x1A0111EA  # top limb below p's: every value < p
        data[:, 23] %= 0x1A0111EA
        rate = self._probe_rate("fp_bench_mul", data, nthreads, iters)
        print(f"Fp mul: {rate / 1e9:.1f}e9/s (floor to beat 13e9/s)", flush=True)
        return rate

    def _probe_rate(self, kernel: str, data: np.ndarray, nthreads: int, iters: int) -> float:
        """Products per second of one fp_bench.cu probe (2·iters products per thread), with
        the MSM's kernel defines."""
        cp, gpu = self.cp, self.gpu
        times = []
        with cp.cuda.Device(gpu.device), gpu._stream:
            d = cp.asarray(data)
            for k in range(self.args.runs + 1):
                start, end = cp.cuda.Event(), cp.cuda.Event()
                start.record(gpu._stream)
                gpu.gpu.launch(FP_BENCH, kernel, -(-nthreads // 128), 128,
                               (d, np.uint32(nthreads), np.uint32(iters)),
                               defines=gpu.defines, stream=gpu._stream)  # fmt: skip
                end.record(gpu._stream)
                end.synchronize()
                if k:
                    times.append(cp.cuda.get_elapsed_time(start, end))
        return 2 * nthreads * iters / max(statistics.median(times) * 1e-3, 1e-9)

    def run_group(self, group: str, logs: list[int]) -> dict[str, float]:
        if not logs:
            return {}
        args = self.args
        tiled = self.prepare(group, max(logs))
        host_all, dev_all = self.scalars(1 << max(logs))
        results: dict[str, float] = {}
        small, distinct = self.points[group]
        header = "MSM   n     c   device ms   sppark ms   end-to-end ms"
        print(f"\n{group.upper()} {header}", flush=True)
        for lg, bases, d_scalars in self.prefixes(
            group, tiled, f"tiled:{small.key}", dev_all, logs
        ):
            n = 1 << lg
            if args.check and lg == min(logs):
                _, _, _, _, msm, enc = GROUP[group]
                pts = (distinct * (-(-n // len(distinct))))[:n]
                want = enc(msm(pts, fr.to_bytes_le(host_all[:n])), compressed=False)
                got = enc(self.gpu.msm(bases, d_scalars).result(), compressed=False)
                print(
                    f"  check 2^{lg} against the CPU: {'OK' if got == want else 'MISMATCH'}",
                    flush=True,
                )
                if got != want:
                    raise SystemExit(f"{group} 2^{lg}: GPU result differs from the CPU")
            ms = self.time_device(bases, d_scalars, None, args.runs)
            t0 = time.perf_counter()
            self.gpu.msm(bases, d_scalars).result()
            e2e = (time.perf_counter() - t0) * 1e3
            results[str(lg)] = round(ms, 3)
            ref = SPPARK[group].get(lg)
            print(
                f"  2^{lg:<2} {choose_window(n, group):>5} {ms:>11.2f} {ref if ref else '-':>11} "
                f"{e2e:>15.2f}",
                flush=True,
            )
            for sgroup, slogs, windows in args.sweeps:
                if sgroup != group or lg not in slogs:
                    continue
                for c in windows:
                    t = self.time_device(bases, d_scalars, c, args.runs)
                    print(f"      window {c:>2}: {t:9.2f} ms", flush=True)
            if lg in args.profile_logs:
                stages = self.profile(bases, d_scalars, None)
                total = sum(t for _, t in stages)
                agg: dict[str, float] = {}
                for name, t in stages:
                    agg[name] = agg.get(name, 0.0) + t
                print(
                    "      profile: "
                    + ", ".join(f"{k} {v:.2f}" for k, v in agg.items())
                    + f" (total {total:.2f} ms; cupy ops count toward the next kernel)",
                    flush=True,
                )
            for threads in args.reduce_threads:
                self.gpu.reduce_threads = threads
                try:
                    t = self.time_device(bases, d_scalars, None, args.runs)
                finally:
                    self.gpu.reduce_threads = REDUCE_THREADS
                print(f"      reduction aiming at {threads} threads: {t:9.2f} ms", flush=True)
            for vgroup, vlogs, vdefs in args.variants:
                if vgroup == group and lg in vlogs:
                    self.gpu.defines = vdefs
                    try:
                        t = self.time_device(bases, d_scalars, None, args.runs)
                    finally:
                        self.gpu.defines = {}
                    print(f"      variant {vdefs}: {t:9.2f} ms", flush=True)
        del tiled, dev_all
        self.gpu.evict(small)
        return results


def merge_results(new: dict[str, dict[str, float]]) -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    kernels = data.setdefault("kernels", {})
    for key, values in new.items():
        if values:
            kernels.setdefault(key, {}).update(values)
    tmp = RESULTS.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    tmp.replace(RESULTS)
    out = os.environ.get("OUT")
    if out:
        shutil.copy(RESULTS, Path(out) / "h200.json")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--g1", default="16:26", help="log2 sizes lo:hi (empty to skip)")
    ap.add_argument("--g2", default="16:24")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument(
        "--sweep",
        action="append",
        default=[],
        help="GROUP:LOGS:WINDOWS, e.g. g1:24:16,18,20,22: also time these window widths",
    )
    ap.add_argument("--profile", default="", help="log2 sizes to profile per stage, e.g. 20,24")
    ap.add_argument("--distinct", type=int, default=4096)
    ap.add_argument("--no-check", dest="check", action="store_false")
    ap.add_argument("--no-save", dest="save", action="store_false")
    ap.add_argument("--no-fp", dest="fp", action="store_false", help="skip the Fp mul probe")
    ap.add_argument(
        "--variant",
        action="append",
        default=[],
        help="GROUP:LOGS:NAME=VAL[,NAME=VAL]: also time these sizes with extra kernel defines",
    )
    ap.add_argument(
        "--batch-affine",
        action="append",
        default=[],
        help="GROUP:LOGS, e.g. g1:20,24,26: old vs batch-affine accumulation on distinct bases "
        "(results cross-checked), besides the --g1/--g2 tables (pass --g1 '' --g2 '' to skip)",
    )
    ap.add_argument(
        "--reduce-threads",
        type=lambda s: [int(x) for x in s.split(",") if x],
        default=[],
        help="also time every size with the bucket reduction aiming at these thread counts "
        "per level (0: fixed 32-bucket groups, the plan before session 10)",
    )
    ap.add_argument(
        "--copies",
        action="append",
        default=[],
        help="GROUP:LOGS:KS, e.g. g1:24,26:2,4,13,12@20: plain vs precomputed bases with K "
        "copies (K@C: made for window C, else choose_window's) on distinct bases (results "
        "cross-checked), besides the --g1/--g2 tables",
    )
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    if args.seed is None:
        args.seed = int(np.random.SeedSequence().entropy % 2**32)
    args.sweeps = []
    for v in args.sweep:
        sgroup, slogs, swins = v.split(":")
        args.sweeps.append(
            (sgroup, {int(x) for x in slogs.split(",")}, [int(x) for x in swins.split(",")])
        )
    args.profile_logs = {int(x) for x in args.profile.split(",") if x}
    args.variants = []
    for v in args.variant:
        vgroup, vlogs, vdefs = v.split(":")
        defs = dict(kv.split("=") for kv in vdefs.split(","))
        args.variants.append((vgroup, {int(x) for x in vlogs.split(",")}, defs))
    print(f"seed {args.seed}", flush=True)
    bench = Bench(args)
    try:
        rate = bench.fp_rate() if args.fp else 0.0
        new = {
            "g1_msm": bench.run_group("g1", log_range(args.g1)),
            "g2_msm": bench.run_group("g2", log_range(args.g2)),
        }
        for spec in args.batch_affine:
            bgroup, blogs = spec.split(":")
            logs = sorted(int(x) for x in blogs.split(","))
            new[f"{bgroup}_msm_batch_affine"] = bench.compare_batch_affine(bgroup, logs)
        for spec in args.copies:
            cgroup, clogs, cks = spec.split(":")
            logs = sorted(int(x) for x in clogs.split(","))
            ks = [(int(x.split("@")[0]), int(x.split("@")[1]) if "@" in x else None)
                  for x in cks.split(",")]  # fmt: skip
            new[f"{cgroup}_msm_copies"] = bench.compare_copies(cgroup, logs, ks)
    finally:
        shutil.rmtree(bench.tmp, ignore_errors=True)
    if rate:
        new["fp_mul"] = {"per_s": float(f"{rate:.4g}")}
    if args.save:
        merge_results(new)
    print("\nsummary (device ms):", json.dumps(new), flush=True)


if __name__ == "__main__":
    configure_openmp()  # the process's choice, before any kernel runs
    main()
