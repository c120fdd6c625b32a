"""Full synthetic Groth16 proofs on the CPU backend, with the time split by stage.

    python bench/bench_prove.py --logs 16 20 [--proofs 2] [--workers N] [--backend cpu|cuda]

Keys are made once per size (seeded setup, kept under --keys) and are not part of the timing;
the shape is synthesized once and cached. Each proof uses a fresh witness seed. MSM rows are
measured from submission to completion, so they overlap each other and the H stage.
Writes bench/results/prove.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from cuzk.backend import get_backend
from cuzk.circuits import get_circuit
from cuzk.curve.pool import MsmPool
from cuzk.groth16 import Timings, prove, read_params
from cuzk.groth16.setup import generate_parameters
from cuzk.openmp import configure_openmp
from cuzk.r1cs.cache import ShapeCache


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--logs", type=int, nargs="+", default=[16, 20])
    ap.add_argument("--proofs", type=int, default=2)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--keys", type=Path, default=Path("bench/.keys"))
    ap.add_argument("--out", type=Path, default=Path("bench/results/prove.json"))
    args = ap.parse_args()

    cache = ShapeCache(args.keys / "shapes")
    rows = []
    for log in args.logs:
        circuit_id = f"synthetic:{1 << log}"
        t0 = time.perf_counter()
        shape = cache.get(circuit_id, get_circuit(circuit_id))
        shape_s = time.perf_counter() - t0
        params_path = args.keys / f"synthetic-{1 << log}.params"
        setup_s = 0.0
        if not params_path.exists():
            t0 = time.perf_counter()
            with MsmPool(args.workers) as pool:
                generate_parameters(shape, args.keys, params_path.stem, seed=log, pool=pool)
            setup_s = time.perf_counter() - t0
        params = read_params(params_path)
        backend = get_backend(args.backend, workers=args.workers, device=args.device)
        try:
            for b in params.vectors:  # SRS residency: load once, as the daemon will
                backend.preload(b)
            runs = []
            for i in range(args.proofs):
                timings = Timings()
                t0 = time.perf_counter()
                prove(get_circuit(circuit_id, seed=1000 + i), shape, params, backend, timings)
                total = time.perf_counter() - t0
                runs.append({"total": total, **timings.stages})
                print(
                    f"{circuit_id} proof {i + 1}: {total:.2f} s  "
                    + " ".join(f"{k}={v:.2f}" for k, v in timings.stages.items()),
                    flush=True,
                )
        finally:
            backend.close()
        best = min(runs, key=lambda r: r["total"])
        rows.append(
            {
                "circuit": circuit_id,
                "backend": args.backend,
                "constraints": shape.num_constraints,
                "aux": shape.num_aux,
                "shape_s": shape_s,
                "setup_s": setup_s,
                "median_total_s": statistics.median(r["total"] for r in runs),
                "best": best,
                "runs": runs,
            }
        )
    meta = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "python": sys.version.split()[0],
        "command": " ".join(["python", *sys.argv]),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    print(json.dumps({"meta": meta}, indent=1))


if __name__ == "__main__":
    configure_openmp()  # the process's choice, before any kernel runs
    main()
