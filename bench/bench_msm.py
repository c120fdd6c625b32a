"""Benchmark G1/G2 MSM single-process and through MsmPool, plus the pool's fixed costs.

Usage: python bench/bench_msm.py [--min-log 12] [--max-log 20] [--g2-max-log N] [--workers N]
       [--runs 3] [--groups g1,g2] [--out bench/results/msm.json]

Points: 256 distinct random points per group (k·G with random k, made by the fixed-base batch)
repeated cyclically up to 2^max-log and written once, zcash-uncompressed, to a temporary file.
Both the single-process run and the pool decode that file, so every position is its own point
object (as with a real parameter file) even though the values repeat; MSM cost does not depend
on the values. Scalars are uniformly random below 2^254. Times are medians of --runs runs; a
size whose first run exceeds --long-s seconds is run once.

Besides wall time, each row records CPU time: the process's own for the single-process MSM,
and for the pool the largest CPU time of one worker (``worker_cpu_s`` on the future), i.e. the
wall time the pool would need with a free core per worker. On a shared machine wall times swing
with other jobs (``loadavg_1min`` per row), CPU times much less. Results: bench/results/msm.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from cuzk.curve import g1_generator, g2_generator
from cuzk.curve.encoding import g1_array_from_uncompressed, g2_array_from_uncompressed
from cuzk.curve.msm import g1_fixed_base_batch, g1_msm, g1_sum, g2_fixed_base_batch, g2_msm
from cuzk.curve.pool import MsmPool
from cuzk.openmp import configure_openmp

RESULTS = Path(__file__).resolve().parent / "results" / "msm.json"
DISTINCT = 256
GROUP = {
    "g1": (96, g1_generator, g1_fixed_base_batch, g1_array_from_uncompressed, g1_msm),
    "g2": (192, g2_generator, g2_fixed_base_batch, g2_array_from_uncompressed, g2_msm),
}


def random_scalars(n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, 32) little-endian scalars below 2^254 < r: canonical without a reduction."""
    rows = rng.integers(0, 256, size=(n, 32), dtype=np.uint8)
    rows[:, 31] &= 0x3F
    return rows


def measure(call: Callable[[], tuple[Any, float]], runs: int, long_s: float) -> dict[str, Any]:
    """Run ``call`` (returning (result, cpu seconds)) up to ``runs`` times; once only if the
    first run is longer than ``long_s``. Median and min wall, median CPU, last result."""
    walls, cpus, result = [], [], None
    for k in range(runs):
        t0 = time.perf_counter()
        result, cpu = call()
        walls.append(time.perf_counter() - t0)
        cpus.append(cpu)
        if k == 0 and walls[0] > long_s:
            break
    return {
        "wall_s": statistics.median(walls),
        "wall_min_s": min(walls),
        "cpu_s": statistics.median(cpus),
        "runs": len(walls),
        "result": result,
    }


def local(fn: Callable[..., Any], *args: Any) -> Callable[[], tuple[Any, float]]:
    def call() -> tuple[Any, float]:
        c0 = time.process_time()
        out = fn(*args)
        return out, time.process_time() - c0

    return call


def pooled(submit: Callable[..., Any], *args: Any) -> Callable[[], tuple[Any, float]]:
    def call() -> tuple[Any, float]:
        fut = submit(*args)
        out = fut.result()
        return out, getattr(fut, "worker_cpu_s", float("nan"))

    return call


def write_points(group: str, n: int, path: Path, rng: np.random.Generator) -> None:
    """Write n points cycling through DISTINCT random ones."""
    size, gen, batch, _, _ = GROUP[group]
    distinct = batch(gen(), random_scalars(DISTINCT, rng))
    with open(path, "wb") as f:
        for _ in range(-(-n // DISTINCT)):
            f.write(distinct)
        f.truncate(n * size)


def bench_fixed_base(pool: MsmPool, rng: np.random.Generator, log_n: int) -> dict[str, Any]:
    out: dict[str, Any] = {"log_n_g1": log_n, "log_n_g2": log_n - 2}
    for group in ("g1", "g2"):
        _, gen, batch, _, _ = GROUP[group]
        n = 1 << (log_n if group == "g1" else log_n - 2)
        ks = random_scalars(n, rng)
        single = measure(local(batch, gen(), ks), 1, 0)
        pool_m = measure(pooled(pool.fixed_base, group, gen(), ks), 1, 0)
        assert single["result"] == pool_m["result"]
        out[group] = {
            "n": n,
            "single_us_per_pt": single["wall_s"] / n * 1e6,
            "single_cpu_us_per_pt": single["cpu_s"] / n * 1e6,
            "pool_us_per_pt": pool_m["wall_s"] / n * 1e6,
            "pool_worker_cpu_us_per_pt": pool_m["cpu_s"] / n * 1e6,
        }
        r = out[group]
        print(
            f"fixed-base {group} n={n}: single {r['single_us_per_pt']:.1f} µs/pt "
            f"(cpu {r['single_cpu_us_per_pt']:.1f}), pool {r['pool_us_per_pt']:.1f} µs/pt "
            f"(worker cpu {r['pool_worker_cpu_us_per_pt']:.1f})",
            flush=True,
        )
    return out


def bench_pool_overhead(pool: MsmPool) -> dict[str, float]:
    pool._ping().result()
    latency = statistics.median(_wall(pool._ping) for _ in range(20))
    payload = bytes(16 << 20)  # each worker's share of a 2^20 MSM's scalars (2 workers)
    transfer = statistics.median(_wall(lambda: pool._ping(payload)) for _ in range(3))
    print(
        f"pool round trip (empty): {latency * 1e3:.2f} ms; 16 MiB to each of "
        f"{pool.workers} workers: {transfer * 1e3:.1f} ms",
        flush=True,
    )
    return {"empty_round_trip_s": latency, "send_16MiB_each_s": transfer}


def _wall(submit: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    submit().result()
    return time.perf_counter() - t0


def bench_group(
    group: str,
    args: argparse.Namespace,
    pool: MsmPool,
    tmp: Path,
    rng: np.random.Generator,
    max_log: int,
) -> list[dict[str, Any]]:
    size, _, _, load, msm = GROUP[group]
    path = tmp / f"{group}.bin"
    write_points(group, 1 << max_log, path, rng)
    rows = []
    for log_n in range(args.min_log, max_log + 1):
        n = 1 << log_n
        with open(path, "rb") as f:
            raw = f.read(n * size)
        t0 = time.perf_counter()
        points = load(raw)
        load_us = (time.perf_counter() - t0) / n * 1e6
        del raw
        ks = random_scalars(n, rng)
        single = measure(local(msm, points, ks), args.runs, args.long_s)
        del points
        key = f"bench:{group}:{n}"
        t0 = time.perf_counter()
        pool.register(key, group, str(path), 0, n).result()
        register_s = time.perf_counter() - t0
        pool_m = measure(pooled(pool.msm, key, ks), args.runs, args.long_s)
        assert pool_m["result"] == single["result"], f"pool and single MSM differ, {group} {n}"
        sum_m = measure(pooled(pool.sum, key), 1, 0) if group == "g1" else None
        pool.unregister(key)
        row = {
            "group": group,
            "log_n": log_n,
            "n": n,
            "single_s": single["wall_s"],
            "single_min_s": single["wall_min_s"],
            "single_cpu_s": single["cpu_s"],
            "single_runs": single["runs"],
            "pool_s": pool_m["wall_s"],
            "pool_min_s": pool_m["wall_min_s"],
            "pool_worker_cpu_s": pool_m["cpu_s"],
            "pool_runs": pool_m["runs"],
            "speedup_wall": single["wall_s"] / pool_m["wall_s"],
            "speedup_cpu": single["cpu_s"] / pool_m["cpu_s"],
            "single_cpu_us_per_pt": single["cpu_s"] / n * 1e6,
            "load_us_per_pt": load_us,
            "pool_register_s": register_s,
            "pool_sum_s": sum_m["wall_s"] if sum_m else None,
            "loadavg_1min": os.getloadavg()[0],
        }
        rows.append(row)
        print(
            f"{group} 2^{log_n:<2} single {row['single_s']:7.3f} s "
            f"(cpu {row['single_cpu_s']:.3f})"
            f"  pool {row['pool_s']:7.3f} s (worker cpu {row['pool_worker_cpu_s']:.3f})"
            f"  x{row['speedup_wall']:.2f} wall, x{row['speedup_cpu']:.2f} cpu"
            f"  load {load_us:.2f} µs/pt  register {register_s:.2f} s"
            f"  loadavg {row['loadavg_1min']:.1f}",
            flush=True,
        )
    path.unlink()
    return rows


def single_sum_rate(rng: np.random.Generator) -> float:
    points = g1_array_from_uncompressed(
        g1_fixed_base_batch(g1_generator(), random_scalars(4096, rng))
    )
    return measure(local(g1_sum, points), 5, 60)["cpu_s"] / len(points) * 1e6


def print_table(rows: list[dict[str, Any]]) -> None:
    print(
        f"{'group':<5} {'n':>5} {'single s':>9} {'pool s':>8} {'x wall':>7} {'single cpu':>10} "
        f"{'worker cpu':>10} {'x cpu':>6} {'cpu µs/pt':>9} {'loadavg':>7}"
    )
    for r in rows:
        print(
            f"{r['group']:<5} {'2^' + str(r['log_n']):>5} {r['single_s']:>9.3f} "
            f"{r['pool_s']:>8.3f} {r['speedup_wall']:>7.2f} {r['single_cpu_s']:>10.3f} "
            f"{r['pool_worker_cpu_s']:>10.3f} {r['speedup_cpu']:>6.2f} "
            f"{r['single_cpu_us_per_pt']:>9.1f} {r['loadavg_1min']:>7.1f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--min-log", type=int, default=12)
    ap.add_argument("--max-log", type=int, default=20)
    ap.add_argument("--g2-max-log", type=int, default=None, help="default: --max-log")
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument(
        "--long-s",
        type=float,
        default=20.0,
        help="run a size once if its first run takes longer than this",
    )
    ap.add_argument("--groups", default="g1,g2", help="comma-separated: g1, g2")
    ap.add_argument("--fixed-base-log", type=int, default=14, help="0 skips the fixed-base run")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    rng = np.random.default_rng()
    g2_max = args.g2_max_log if args.g2_max_log is not None else args.max_log
    with MsmPool(args.workers) as pool, tempfile.TemporaryDirectory() as tmp:
        overhead = bench_pool_overhead(pool)
        sum_us = single_sum_rate(rng)
        print(f"g1_sum (single process): {sum_us:.2f} µs/pt (cpu)", flush=True)
        fixed = bench_fixed_base(pool, rng, args.fixed_base_log) if args.fixed_base_log else {}
        rows = []
        for group in args.groups.split(","):
            top = args.max_log if group == "g1" else g2_max
            rows += bench_group(group, args, pool, Path(tmp), rng, top)
    print()
    print_table(rows)
    result = {
        "workers": args.workers,
        "runs": args.runs,
        "statistic": "median",
        "points": f"{DISTINCT} distinct random points repeated cyclically, decoded per position",
        "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "pool_overhead": overhead,
        "g1_sum_cpu_us_per_pt": sum_us,
        "fixed_base": fixed,
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    configure_openmp()  # the process's choice, before any kernel runs
    main()
