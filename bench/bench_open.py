"""Seconds to open one request: parse and check a payload as the engine does at submit.

Usage: NUMBA_NUM_THREADS=1 python bench/bench_open.py CIRCUIT PAYLOAD [prof [N]]

PAYLOAD from ``cuzk gen-vanilla porep|window-post|snap --sector-size 32GiB --virtual``. Opens
the payload once to warm numba's caches and the SDR graph code, then times a second open (what
every request after the daemon's first pays). ``prof`` prints cProfile's top N (default 25)
functions by cumulative time for the timed open. CPU seconds are the process's own (with one
numba thread: one core's), which a machine shared with other work inflates less than wall time.
"""

import cProfile
import pstats
import sys
import time

from cuzk.circuits.catalogue import open_statement

cid, path = sys.argv[1], sys.argv[2]
prof = len(sys.argv) > 3 and sys.argv[3] == "prof"
top = int(sys.argv[4]) if len(sys.argv) > 4 else 25
payload = open(path, "rb").read()
t0 = time.perf_counter()
open_statement(cid, payload=payload)
print(f"{cid}: first open {time.perf_counter() - t0:.2f} s ({len(payload) / 1e6:.1f} MB)")
profiler = cProfile.Profile() if prof else None
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
