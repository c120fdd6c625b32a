"""The two MSM lanes of a capped device side by side, without the engine (issue 31): H's MSM on
the second lane beside a chain of PoRep-like split MSMs on the first, each timed alone and
together, at several chunk counts of the second lane's accumulation.

Usage: python bench/lane_pair.py [--log 27] [--first 27,25,27] [--dense-chunks 19,21]
       [--pass-mib 576] [--runs 2] [--out DIR]

Why: in the engine at 16 GiB (session 33) the first lane's planned passes took 2.5–8 times
their time alone while H ran beside them. The hypothesis: a block, once started, holds its SM
until it ends whatever its stream's priority, and H's accumulation blocks last ≈ 3.3 ms, so
each of the first lane's kernels waits for them. This bench measures that on the lanes alone:

- *H alone*: G1 2^log, dense scalars, streamed bases, on the second lane (its passes, its
  buffer size and its window, as under a cap; device scalars, so in its workspace);
- *first lane alone*: the chain of split MSMs (G1 2^k for each k of --first, bits scalars:
  45 % zero, 45 % one, 10 % uniform, planned pass by pass), one after another as the engine's
  first lane runs L, B₁ and A;
- *together*: H submitted, then the chain at once: each MSM's time, the chain's span, H's;
- the chain's time per kernel name on its stream, alone and beside H (which kernels stretch:
  the accumulation, or the chains of small launches each pass ends with).

Each is repeated for each --dense-chunks value (log2 of msm.DENSE_LANE_CHUNKS: the second
lane's target; a tree without it times the default only). Every result is checked against the
same MSM's result alone. Results: DIR/lane_pair.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
from gpu_msm import Bench
from streamed_msm import make_scalars, stage_totals

from cuzk.backend.base import PointSet
from cuzk.backend.cuda import msm
from cuzk.backend.cuda.device import Gpu
from cuzk.backend.cuda.msm_bases import ResidentBases


def together(gm: msm.GpuMsm, h: tuple[PointSet, Any], chain: list[tuple[PointSet, Any]]):  # type: ignore[no-untyped-def]
    """H on the second lane and the chain on the first, started together: (results, H's
    seconds, the chain's seconds, each chain MSM's seconds)."""
    t0 = time.perf_counter()
    h_future = gm.msm(*h)
    each, results = [], []
    for bases, scalars in chain:
        t = time.perf_counter()
        results.append(gm.split_msm_planned(bases, scalars).result())
        each.append(time.perf_counter() - t)
    t_chain = time.perf_counter() - t0
    h_result = h_future.result()
    t_h = time.perf_counter() - t0
    return [h_result, *results], t_h, t_chain, each


def chain_stages(gm: msm.GpuMsm, chain: list[tuple[PointSet, Any]], h: tuple | None) -> dict:  # type: ignore[type-arg]
    """ms per kernel name on the first lane's stream over one run of the chain (beside H when
    ``h`` is given): the time from the launch before to each launch's end, so a kernel's wait
    for SMs counts to it (host time between two MSMs of the chain counts to the next one's
    first kernel)."""
    cp = gm._cp

    class FirstLane(list):  # type: ignore[type-arg]
        def append(self, item: Any) -> None:
            if not gm._dense_lane:  # the calling thread's lane: H's launches are left out
                super().append(item)

    gm.trace = FirstLane()
    try:
        with gm.gpu.context(gm._stream):  # this thread's lane: the first
            start = cp.cuda.Event()
            start.record(gm._stream)
        h_future = gm.msm(*h) if h is not None else None
        for job in chain:
            gm.split_msm_planned(*job).result()
        if h_future is not None:
            h_future.result()
        trace = list(gm.trace)
    finally:
        gm.trace = None
    return stage_totals(cp, start, trace)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", type=int, default=27, help="H's size, log2")
    ap.add_argument("--first", default="27,25,27", help="the first lane's MSMs, log2 each")
    ap.add_argument("--dense-chunks", default="19,21", help="log2 of the second lane's chunks")
    ap.add_argument("--pass-mib", type=int, default=576)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--distinct", type=int, default=4096)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    args = ap.parse_args()
    firsts = [int(x) for x in args.first.split(",")]
    bench = Bench(args)
    cp = bench.cp
    n = 1 << max(args.log, *firsts)
    tiled = bench.prepare("g1", max(args.log, *firsts))
    bench.gpu.close()
    gm = msm.GpuMsm(Gpu(args.device), lanes=2)
    host = gm.gpu.host_pages(tiled.shape, np.uint32)
    with gm.gpu.context():
        tiled.get(out=host)
    gm.gpu.page_lock(host)
    del tiled
    stream_bytes = args.pass_mib << 20

    def streamed(log: int) -> PointSet:
        count = 1 << log
        bases = PointSet("g1", f"<streamed:{log}>", 0, count)
        gm._bases[bases.key] = ResidentBases("g1", count, host[:count], stream_bytes=stream_bytes)
        return bases

    with gm.gpu.context():
        h = (streamed(args.log), make_scalars(cp, 1 << args.log, "dense", args.seed))
        chain = [
            (streamed(k), make_scalars(cp, 1 << k, "bits", args.seed + 1 + i))
            for i, k in enumerate(firsts)
        ]
        gm.gpu.stream.synchronize()
    print(f"g1 2^{args.log} dense beside {', '.join(f'2^{k} bits' for k in firsts)}; {n} points")
    want = [gm.msm(*h).result(), *(gm.split_msm_planned(*job).result() for job in chain)]
    results: dict[str, Any] = {"log": args.log, "first": firsts, "pass_mib": args.pass_mib}
    for c in (int(x) for x in args.dense_chunks.split(",")):
        if hasattr(msm, "DENSE_LANE_CHUNKS"):
            msm.DENSE_LANE_CHUNKS = 1 << c
        elif c != 19:
            print(f"chunks 2^{c}: this tree has no DENSE_LANE_CHUNKS (2^19 only); skipped")
            continue
        if gm.msm(*h).result() != want[0]:
            raise SystemExit(f"chunks 2^{c}: H differs from its first result")
        h_alone, chain_alone, both = [], [], []
        for _ in range(args.runs):
            t = time.perf_counter()
            gm.msm(*h).result()
            h_alone.append(time.perf_counter() - t)
            t = time.perf_counter()
            for job in chain:
                gm.split_msm_planned(*job).result()
            chain_alone.append(time.perf_counter() - t)
            got, t_h, t_chain, each = together(gm, h, chain)
            if got != want:
                raise SystemExit(f"chunks 2^{c}: an MSM run beside the other lane differs")
            both.append((t_h, t_chain, each))
        med = statistics.median
        row = {
            "h_alone_s": med(h_alone),
            "chain_alone_s": med(chain_alone),
            "together_h_s": med(b[0] for b in both),
            "together_chain_s": med(b[1] for b in both),
            "together_each_s": [med(b[2][i] for b in both) for i in range(len(chain))],
        }
        row["chain_stages_alone_ms"] = chain_stages(gm, chain, None)
        row["chain_stages_beside_h_ms"] = chain_stages(gm, chain, h)
        results[f"chunks_{c}"] = row
        print(
            f"chunks 2^{c}: H alone {row['h_alone_s']:.3f} s, chain alone "
            f"{row['chain_alone_s']:.3f} s; together: H {row['together_h_s']:.3f} s, chain "
            f"{row['together_chain_s']:.3f} s ("
            + ", ".join(f"{t:.3f}" for t in row["together_each_s"])
            + ")",
            flush=True,
        )
        for key in ("chain_stages_alone_ms", "chain_stages_beside_h_ms"):
            top = list(row[key].items())[:8]
            print(f"   {key}: " + ", ".join(f"{k} {v:.1f}" for k, v in top), flush=True)
    gm.close()
    path = Path(args.out) / "lane_pair.json"
    path.write_text(json.dumps(results, indent=1))
    print(f"written {path}")


if __name__ == "__main__":
    main()
