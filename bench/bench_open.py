"""Seconds to open one request: parse and check a payload as the engine does at submit.

Usage: NUMBA_NUM_THREADS=1 python bench/bench_open.py CIRCUIT PAYLOAD [--prof N]
       python bench/bench_open.py CIRCUIT PAYLOAD --helpers 1,2,4 [--runs 3] [--together 2]

PAYLOAD from ``cuzk gen-vanilla porep|window-post|snap --sector-size 32GiB --virtual``. Opens
the payload once to warm numba's caches and the SDR graph code, then times a second open (what
every request after the daemon's first pays). ``--prof N`` prints cProfile's top N functions by
cumulative time for the timed open. CPU seconds are the process's own (with one numba thread:
one core's), which a machine shared with other work inflates less than wall time.

``--helpers`` times the engine's payload opener instead (``cuzk.engine.opener``: spawned
helpers, a kind with many partitions opened in shares by all of them at once) with each helper
count: one warm-up open, then ``--runs`` timed ones, each checked equal to the in-process
statement. What a request waits before its first partition can be queued. ``--together N``
opens N copies at once from N threads, as a bench's clients submit: the first ready is what
the device's first partition waits for, the last what the second request's does.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import resource
import statistics
import time


def in_process(cid: str, payload: bytes, top: int) -> None:
    from cuzk.circuits.catalogue import open_statement

    t0 = time.perf_counter()
    open_statement(cid, payload=payload)
    print(f"{cid}: first open {time.perf_counter() - t0:.2f} s ({len(payload) / 1e6:.1f} MB)")
    profiler = cProfile.Profile() if top else None
    c0, t0 = time.process_time(), time.perf_counter()
    if profiler:
        profiler.enable()
    st = open_statement(cid, payload=payload)
    if profiler:
        profiler.disable()
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"{cid}: open {dt:.2f} s wall, {cpu:.2f} s CPU, {st.partitions} partitions")
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(top)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


def through_helpers(cid: str, payload: bytes, counts: list[int], runs: int, together: int) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from cuzk.circuits.catalogue import open_statement
    from cuzk.engine.opener import PayloadOpener, default_helpers

    want = open_statement(cid, payload=payload)
    print(f"{cid}: {len(payload) / 1e6:.1f} MB, {want.partitions} partitions; this host's "
          f"default: {default_helpers()} helpers; {together} opened at once")  # fmt: skip

    def timed(opener: PayloadOpener, t0: float) -> float:
        got = opener.statement(cid, (), payload)
        ready = time.perf_counter() - t0
        assert got is not None and got.expected_inputs == want.expected_inputs
        assert all(got.circuit(i) == want.circuit(i) for i in range(want.partitions))
        return ready

    for n in counts:
        opener = PayloadOpener(processes=n)
        firsts, lasts = [], []
        try:
            opener.statement(cid, (), payload)  # spawns the helpers, warms their caches
            with ThreadPoolExecutor(together) as clients:
                for _ in range(runs):
                    t0 = time.perf_counter()
                    ready = sorted(clients.map(timed, [opener] * together, [t0] * together))
                    firsts.append(ready[0])
                    lasts.append(ready[-1])
        finally:
            opener.close()
        # the largest peak of any child reaped so far: each helper holds a whole document
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
        last = "" if together == 1 else (
            f"; the last ready: median {statistics.median(lasts):.2f} s")  # fmt: skip
        print(f"{n} helpers: median {statistics.median(firsts):.2f} s "
              f"(runs {', '.join(f'{t:.2f}' for t in firsts)}){last}, statements equal; "
              f"a helper's peak RSS {peak:.2f} GiB")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("circuit")
    ap.add_argument("payload")
    ap.add_argument("--prof", type=int, default=0, metavar="N", help="cProfile's top N")
    ap.add_argument("--helpers", default="", help="helper counts for the engine's opener: 1,2,4")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--together", type=int, default=1, help="requests opened at once")
    args = ap.parse_args()
    payload = open(args.payload, "rb").read()
    if args.helpers:
        counts = [int(x) for x in args.helpers.split(",")]
        through_helpers(args.circuit, payload, counts, args.runs, args.together)
    else:
        in_process(args.circuit, payload, args.prof)


if __name__ == "__main__":
    main()
