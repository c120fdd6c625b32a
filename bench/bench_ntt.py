"""Benchmark the CPU NTT family and the whole H quotient across domain sizes.

Usage: python bench/bench_ntt.py [--min-log 16] [--max-log 22] [--threads N] [--repeats 3]

Prints a table of median wall times and writes bench/results/ntt.json. Compilation (or the
disk-cache load) happens in a warm-up call before anything is timed, and input generation is
not timed; the in-place transforms are timed so the numbers are the transforms alone.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import numba
import numpy as np

from cuzk.field import fr
from cuzk.openmp import configure_openmp
from cuzk.poly import Domain, coset_ntt_inplace, h_quotient, intt_inplace, ntt_inplace

RESULTS = Path(__file__).resolve().parent / "results" / "ntt.json"


def _median_time(fn: Any, make_input: Any, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        args = make_input()
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _mul_rate(n: int, repeats: int) -> float:
    """Elementwise Montgomery products per second over n-element vectors."""
    rng = np.random.default_rng()
    a, b = fr.random(n, rng), fr.random(n, rng)
    fr.mul(a[:8], b[:8])
    return n / _median_time(fr.mul, lambda: (a, b), repeats)


def _bench_size(log_m: int, rng: np.random.Generator, repeats: int) -> dict[str, Any]:
    d = Domain(1 << log_m)
    base = fr.random(d.m, rng)
    d.omega_powers(64)  # twiddles are a one-off per domain, not per transform
    fresh = lambda: (base.copy(),)  # noqa: E731 - the in-place transforms consume their input
    ntt_s = _median_time(lambda v: ntt_inplace(v, d), fresh, repeats)
    intt_s = _median_time(lambda v: intt_inplace(v, d), fresh, repeats)
    coset_s = _median_time(lambda v: coset_ntt_inplace(v, d), fresh, repeats)
    a, b = fr.random(d.m, rng), fr.random(d.m, rng)
    c = fr.mul(a, b)
    h_s = _median_time(lambda *x: h_quotient(*x, d), lambda: (a, b, c), repeats)
    return {"log_m": log_m, "ntt_s": ntt_s, "intt_s": intt_s, "coset_ntt_s": coset_s, "h_s": h_s}


def run(min_log: int, max_log: int, threads: int, repeats: int) -> dict[str, Any]:
    numba.set_num_threads(threads)
    load_before = os.getloadavg()[0]
    rng = np.random.default_rng()
    # Warm-up: compile or load every kernel once, outside the timings.
    d_small = Domain(1 << 14)
    h_quotient(*(fr.random(100, rng) for _ in range(3)), d_small)
    ntt_inplace(fr.random(d_small.m, rng), d_small)

    rows = []
    for log_m in range(min_log, max_log + 1):
        row = _bench_size(log_m, rng, repeats)
        rows.append(row)
        print(
            f"2^{log_m:<3} ntt {row['ntt_s'] * 1e3:9.1f} ms   intt {row['intt_s'] * 1e3:9.1f} ms"
            f"   coset_ntt {row['coset_ntt_s'] * 1e3:9.1f} ms   H {row['h_s'] * 1e3:9.1f} ms",
            flush=True,
        )
    mul_rate = _mul_rate(1 << 20, max(repeats, 5))
    print(
        f"elementwise mul (2^20): {mul_rate / 1e6:.1f} M/s with {threads} thread(s); "
        f"load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after"
    )
    return {
        "threads": threads,
        "repeats": repeats,
        "statistic": "median",
        "machine": platform.processor() or platform.machine(),
        "numba": numba.__version__,
        "mul_per_s": mul_rate,
        # Other work on the machine skews every number; the 1-minute load average says how much.
        "loadavg_1min_before_after": [load_before, os.getloadavg()[0]],
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-log", type=int, default=16)
    parser.add_argument("--max-log", type=int, default=22)
    parser.add_argument("--threads", type=int, default=numba.config.NUMBA_NUM_THREADS)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    result = run(args.min_log, args.max_log, args.threads, args.repeats)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    existing = json.loads(args.out.read_text()) if args.out.exists() else {}
    existing[f"threads={args.threads}"] = result
    args.out.write_text(json.dumps(existing, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    configure_openmp()  # the process's choice, before any kernel runs
    main()
