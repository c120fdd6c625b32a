"""Where a streamed MSM's time goes (issue 31): one MSM timed four ways, and traced pass by pass.

Usage: python bench/streamed_msm.py [--group g1] [--log 27] [--pass-mib 560,1024]
       [--mix bits,dense] [--runs 3] [--out DIR] [--windows dense:19,20,21 ...]

For each scalar mix and pass size, the same split MSM (``GpuMsm.split_msm_planned``, the path
every MSM of a capped partition takes) is timed, wall clock from submission to its result:

- *resident*: the bases in device memory, one pass (the uncapped engine);
- *resident, passes*: the same bases, cut into the streamed run's passes (the pass overhead
  alone: each pass is a complete MSM with its own plan, sort and bucket reduction);
- *streamed*: the bases in page-locked host memory, uploaded into two device buffers on the
  copy stream while the other buffer's pass runs;
- *upload only*: the same bytes through the same two buffers with no kernels (the bus).

If the double buffering works, streamed ≈ max(resident passes, upload only). The streamed run
is also traced: per pass, the upload's start and end on the copy stream, when the MSM stream
passed its wait for the upload, and when it finished the pass's kernels. The MSM stream's
idle time between passes and the copy stream's idle time between uploads say which side
waits for which.

Scalar mixes: ``dense`` (uniform, full width: the H MSM), ``bits`` (45 % zero, 45 % one, 10 %
uniform: a PoRep witness's L and A). Bases: --distinct random points tiled to 2^log on the
device, copied once into page-locked host memory.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from functools import partial
from pathlib import Path

import numpy as np
from gpu_msm import Bench

from cuzk.backend.base import PointSet
from cuzk.backend.cuda import device, msm
from cuzk.backend.cuda.msm_bases import ResidentBases, pass_points, point_words
from cuzk.field import fr


class TracedRelay(device.Relay):
    """The engine's relay, with timing events: per block, upload start and end (copy stream),
    the consumer past its wait for the upload, and the consumer done with the block."""

    log: list[dict[str, object]] | None = None

    def upload(self, k, copies):  # type: ignore[no-untyped-def]
        cp = self._cp
        ev = {name: cp.cuda.Event() for name in ("up0", "up1", "ready")}
        self._copy.wait_event(self._freed[k % 2])
        ev["up0"].record(self._copy)
        super().upload(k, copies)
        ev["up1"].record(self._copy)
        if TracedRelay.log is not None:
            TracedRelay.log.append({"k": k, **ev})

    def wait(self, k):  # type: ignore[no-untyped-def]
        super().wait(k)
        if TracedRelay.log is not None:
            block = next(b for b in reversed(TracedRelay.log) if b["k"] == k)
            block["ready"].record(self._consumer)

    def release(self, k):  # type: ignore[no-untyped-def]
        super().release(k)
        if TracedRelay.log is not None and TracedRelay.log:
            done = self._cp.cuda.Event()
            done.record(self._consumer)
            next(b for b in reversed(TracedRelay.log) if b["k"] == k)["done"] = done


def make_scalars(cp, n: int, mix: str, rng_seed: int):  # type: ignore[no-untyped-def]
    """(n, 4) uint64 Montgomery rows on the device: every row a valid Fr element."""
    rs = cp.random.RandomState(rng_seed)
    words = rs.randint(0, 1 << 62, size=(n, 4), dtype=cp.int64).astype(cp.uint64)
    words[:, 3] &= cp.uint64((1 << 60) - 1)  # < 2^252 < r: a valid element
    if mix == "bits":
        u = rs.random_sample(n)
        one = cp.asarray(fr.ones(1)[0])
        words[u < 0.45] = 0
        words[(u >= 0.45) & (u < 0.9)] = one
    return words


def run(gm, bases: PointSet, source, window=None) -> object:  # type: ignore[no-untyped-def]
    return gm.split_msm_planned(bases, source, window=window).result()


def timed(fn, runs: int) -> float:  # type: ignore[no-untyped-def]
    fn()  # warm-up (kernel compile, pool)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def upload_only(gpu_msm, host: np.ndarray, step: int) -> float:  # type: ignore[no-untyped-def]
    """Seconds to push ``host`` through two device buffers of ``step`` rows on the copy stream
    (events, no kernels)."""
    cp = gpu_msm._cp
    with gpu_msm.gpu.context(gpu_msm._stream):
        bufs = [cp.empty((step, host.shape[1]), dtype=cp.uint32) for _ in range(2)]
        relay = device.Relay(gpu_msm.gpu, gpu_msm._copy_stream, gpu_msm._stream)
        t0, t1 = cp.cuda.Event(), cp.cuda.Event()
        t0.record(gpu_msm._copy_stream)
        for k, lo in enumerate(range(0, len(host), step)):
            hi = min(len(host), lo + step)
            relay.fill(k, [(bufs[k % 2][: hi - lo], host[lo:hi])])
            relay.release(k)
        t1.record(gpu_msm._copy_stream)
        t1.synchronize()
        return cp.cuda.get_elapsed_time(t0, t1) / 1e3


def summarise_trace(log: list[dict[str, object]], cp) -> dict[str, float]:  # type: ignore[no-untyped-def]
    ms = cp.cuda.get_elapsed_time
    up = [ms(e["up0"], e["up1"]) for e in log]
    kern = [ms(e["ready"], e["done"]) for e in log if "done" in e]
    pairs = list(zip(log, log[1:], strict=False))
    msm_idle = [ms(a["done"], b["ready"]) for a, b in pairs if "done" in a]
    copy_idle = [ms(a["up1"], b["up0"]) for a, b in pairs]
    return {
        "passes": len(log),
        "upload_ms_median": statistics.median(up),
        "kernels_ms_median": statistics.median(kern) if kern else 0.0,
        "msm_stream_gap_ms_median": statistics.median(msm_idle) if msm_idle else 0.0,
        "msm_stream_gap_ms_total": sum(msm_idle),
        "copy_stream_gap_ms_median": statistics.median(copy_idle) if copy_idle else 0.0,
        "copy_stream_gap_ms_total": sum(copy_idle),
        "upload_ms_total": sum(up),
        "kernels_ms_total": sum(kern),
    }


def stage_profile(gm, bases: PointSet, source, cp, window=None) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """ms per kernel name over one run (the MSM stream's time between a launch's event and the
    one before it: CuPy work queued in between counts to the next launch; "plan" is a pass's
    gather and classification)."""
    planned = msm.planned  # the pass scalars the MSM module makes (pass_scalars.planned)

    def marked(*args):  # type: ignore[no-untyped-def]
        plan = planned(*args)

        def run_plan(k, lo, hi):  # type: ignore[no-untyped-def]
            out = plan(k, lo, hi)
            gm._mark("plan")
            return out

        return run_plan

    msm.planned = marked
    gm.trace = []
    try:
        with gm.gpu.context(gm._stream):
            start = cp.cuda.Event()
            start.record(gm._stream)
        run(gm, bases, source, window)
        trace = gm.trace
    finally:
        gm.trace = None
        msm.planned = planned
    return stage_totals(cp, start, trace)


def stage_totals(cp, start, trace) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """ms per name over a launch trace ((name, event) pairs after the event ``start``): each
    launch counts the time from the event before it, largest first."""
    out: dict[str, float] = {}
    prev = start
    for name, ev in trace:
        out[name] = out.get(name, 0.0) + cp.cuda.get_elapsed_time(prev, ev)
        prev = ev
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--group", default="g1", choices=("g1", "g2"))
    ap.add_argument("--log", type=int, default=27)
    ap.add_argument("--pass-mib", default="560,1024")
    ap.add_argument("--mix", default="bits,dense")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--distinct", type=int, default=4096)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument(
        "--windows",
        action="append",
        default=[],
        help="MIX:C,C,...: also time each pass size at these windows (the carried buckets' "
        "window, which the first pass chooses alone otherwise), e.g. dense:19,20,21",
    )
    ap.add_argument(
        "--chunks",
        type=int,
        default=None,
        help="log2 of the chunks the accumulation aims at (msm.TARGET_CHUNKS, 19 by default: "
        "this bench runs on the first lane; a tree's msm.DENSE_LANE_CHUNKS, where it has one, "
        "is the second lane's)",
    )
    args = ap.parse_args()
    if args.chunks is not None:
        msm.TARGET_CHUNKS = 1 << args.chunks
    windows = {m: [int(c) for c in cs.split(",")] for m, cs in (w.split(":") for w in args.windows)}
    msm.Relay = TracedRelay  # the MSM's passes use the traced relay
    bench = Bench(args)
    gm, cp = bench.gpu, bench.cp
    n = 1 << args.log
    t0 = time.perf_counter()
    tiled = bench.prepare(args.group, args.log)
    host = gm.gpu.host_pages(tiled.shape, np.uint32)
    with gm.gpu.context():
        tiled.get(out=host)
    gm.gpu.page_lock(host)
    print(f"{n} points copied to page-locked host memory in {time.perf_counter() - t0:.1f} s")
    resident = PointSet(args.group, "<resident>", 0, n)
    gm._adopt(resident, tiled)
    results: dict[str, dict[str, object]] = {}
    for mix in args.mix.split(","):
        with gm.gpu.context():
            source = make_scalars(cp, n, mix, args.seed)
            gm.gpu.stream.synchronize()
        whole = gm.split_msm_planned(resident, source).result()
        t_res = timed(partial(run, gm, resident, source), args.runs)
        print(f"\n{args.group} 2^{args.log} {mix}: resident, one pass {t_res:.3f} s")
        prof = stage_profile(gm, resident, source, cp)
        print("   stages (ms): " + ", ".join(f"{k} {v:.1f}" for k, v in prof.items()))
        results[f"{mix}:resident"] = {"s": t_res, "stages_ms": prof}
        for mib in (int(x) for x in args.pass_mib.split(",")):
            step = pass_points(args.group, mib << 20)
            gm.max_pass_points = step
            t_pass = timed(partial(run, gm, resident, source), args.runs)
            prof = stage_profile(gm, resident, source, cp)
            print("   stages (ms): " + ", ".join(f"{k} {v:.1f}" for k, v in prof.items()))
            gm.max_pass_points = None
            streamed = PointSet(args.group, f"<streamed:{mib}>", 0, n)
            gm._bases[streamed.key] = ResidentBases(args.group, n, host, stream_bytes=mib << 20)
            got = gm.split_msm_planned(streamed, source).result()
            if got != whole:
                raise SystemExit(f"{mix}, {mib} MiB passes: the streamed MSM differs")
            t_str = timed(partial(run, gm, streamed, source), args.runs)
            TracedRelay.log = []
            gm.split_msm_planned(streamed, source).result()
            trace = summarise_trace(TracedRelay.log, cp)
            TracedRelay.log = None
            gm.evict(streamed)
            t_up = upload_only(gm, host, step)
            gb = n * point_words(args.group)[0] * 4 / 1e9
            print(
                f"  {mib} MiB passes ({trace['passes']}): resident passes {t_pass:.3f} s, "
                f"streamed {t_str:.3f} s, upload only {t_up:.3f} s ({gb / t_up:.1f} GB/s)"
            )
            print("   trace: " + ", ".join(f"{k} {v:.2f}" for k, v in trace.items()))
            for c in windows.get(mix, []):
                gm.max_pass_points = step
                if run(gm, resident, source, c) != whole:
                    raise SystemExit(f"{mix}, {mib} MiB passes, window {c}: the MSM differs")
                t_c = timed(partial(run, gm, resident, source, c), args.runs)
                prof_c = stage_profile(gm, resident, source, cp, c)
                gm.max_pass_points = None
                gm._bases[streamed.key] = ResidentBases(args.group, n, host, stream_bytes=mib << 20)
                t_cs = timed(partial(run, gm, streamed, source, c), args.runs)
                gm.evict(streamed)
                print(f"  window {c}: resident passes {t_c:.3f} s, streamed {t_cs:.3f} s")
                print("   stages (ms): " + ", ".join(f"{k} {v:.1f}" for k, v in prof_c.items()))
                results[f"{mix}:{mib}MiB:window{c}"] = {
                    "resident_passes_s": t_c,
                    "streamed_s": t_cs,
                    "resident_passes_stages_ms": prof_c,
                }
            results[f"{mix}:{mib}MiB"] = {
                "resident_passes_s": t_pass,
                "resident_passes_stages_ms": prof,
                "streamed_s": t_str,
                "upload_only_s": t_up,
                "upload_gb_per_s": gb / t_up,
                **trace,
            }
    path = Path(args.out) / f"streamed_msm_{args.group}_{args.log}.json"
    path.write_text(json.dumps(results, indent=1))
    print(f"\nwritten {path}")


if __name__ == "__main__":
    main()
