"""Per-partition phases of a capped bench, read off its device-request trace
(bench/memory_trace.py's memory_<cap>.log[.gz]): the cadence, the first lane's split MSMs in
the order the prover submits them (L, B₁, B₂, A), when the H MSM on the second lane starts
after the witness and how long it takes, and how the first lane's last MSM ends against H's.

    python3 bench/trace_phases.py bench/results/s24/call1_memory_16GiB.log.gz [--after 140000]
    python3 bench/trace_phases.py $OUT/memory_16GiB.log.gz --skip 4   # as capped_sweep.sh

Markers (requests of 64 MiB or more only; times are ms since the process started):
- a partition's witness: z's request (``empty`` asked by ``witness.py``'s ``assemble``);
- a first-lane MSM over streamed bases: its two pass buffers, asked for back to back in
  ``_run_passes`` by the first lane's thread (``msm_0``); its passes' gathers follow, one a
  pass (``plan``, or ``gather`` called by ``plan`` since passes are classified ahead; L
  gathers nothing: its scalars are a slice of z);
- H: the second lane's workspace (``msm-dense_0``, ``_run``) and its "H workspace of" line
  when it is given back.
A first-lane MSM lasts until the next one starts; the partition's last (A) until the next
witness, which waits for z's release after A — or, under a cap where H's MSM ends first (the
holder lends its memory, `StagingArea.lend`), only for H's end: then "A ends after H" is the
hand-off after H (≈ 2 ms) and A's own end is not in the trace. Medians over the partitions
after ``--after``.

``--passes`` also times each first-lane MSM's passes by their gathers (a pass from its
gather to the next one, the last to the MSM's end): the median of each pass by its index,
and each MSM's median pass while H runs and after it has ended.
"""

from __future__ import annotations

import argparse
import gzip
import re
import signal
import statistics
from collections import Counter
from dataclasses import dataclass, field

LINE = re.compile(r"^\s*(\d+) DEBUG (.*)$")
NAMES = ("L", "B1", "B2", "A")


@dataclass
class Partition:
    witness: int
    msms: list[tuple[int, list[int]]] = field(default_factory=list)  # (start, pass gathers)
    h: tuple[int, int] | None = None  # (workspace taken, given back)


def read(path: str) -> list[tuple[int, str]]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return [(int(m[1]), m[2]) for m in map(LINE.match, f) if m]


def partitions(events: list[tuple[int, str]], after: int) -> list[Partition]:
    parts: list[Partition] = []
    last_buffer = -(10**9)
    h_start: int | None = None
    for t, text in events:
        if t < after:
            continue
        if re.search(r"\] \S+ empty < \S+witness\.py:\d+ assemble <", text):
            parts.append(Partition(t))
        elif "[cuzk-gpu0-msm_0]" in text and re.search(r"\] \S+ _run_passes <", text):
            if parts and t - last_buffer > 3:  # the first of the pair
                parts[-1].msms.append((t, []))
            last_buffer = t
        elif (
            "[cuzk-gpu0-msm_0]" in text
            and re.search(r"\] \S+ (gather < \S+ )?plan <", text)
            and parts
            and parts[-1].msms
        ):
            parts[-1].msms[-1][1].append(t)
        elif "[cuzk-gpu0-msm-dense_0]" in text and " _run" in text:
            h_start = t
        elif text.startswith("H workspace of") and h_start is not None:
            # H belongs to the partition whose witness came before it started
            owner = [p for p in parts if p.witness <= h_start]
            if owner:
                owner[-1].h = (h_start, t)
            h_start = None
    return parts


def spans(parts: list[Partition]) -> tuple[dict[str, list[int]], Counter[str]]:
    """ms per phase, over partitions whose four first-lane MSMs and H were all seen, and
    which first-lane MSM was running when H's ended (A: the lane ended after H)."""
    out: dict[str, list[int]] = {
        k: [] for k in ("cadence", *NAMES, "H starts", "H", "A ends after H")
    }
    across: Counter[str] = Counter()
    for p, nxt in zip(parts, parts[1:], strict=False):
        out["cadence"].append(nxt.witness - p.witness)
        # MSMs that started before this partition's witness belong to the one before
        own = [m for m in p.msms if m[0] >= p.witness]
        if len(own) != 4 or p.h is None:
            continue
        ends = [m[0] for m in own[1:]] + [nxt.witness]
        for name, (start, _), end in zip(NAMES, own, ends, strict=True):
            out[name].append(end - start)
            if start < p.h[1] <= end:
                across[name] += 1
        if p.h[1] > nxt.witness:
            across["(none: the lane ended first)"] += 1
        out["H starts"].append(p.h[0] - p.witness)  # after the witness: a/b/c, check, h
        out["H"].append(p.h[1] - p.h[0])
        out["A ends after H"].append(nxt.witness - p.h[1])
    return out, across


def pass_times(parts: list[Partition]) -> tuple[dict[str, list[list[int]]], dict[str, dict]]:
    """ms per pass of each first-lane MSM (by pass index, over partitions), and each MSM's
    pass times split by whether H was still running when the pass ended."""
    by_index: dict[str, list[list[int]]] = {k: [] for k in NAMES}
    beside: dict[str, dict[str, list[int]]] = {k: {"beside H": [], "after H": []} for k in NAMES}
    for p, nxt in zip(parts, parts[1:], strict=False):
        own = [m for m in p.msms if m[0] >= p.witness]
        if len(own) != 4 or p.h is None:
            continue
        ends = [m[0] for m in own[1:]] + [nxt.witness]
        for name, (_, gathers), end in zip(NAMES, own, ends, strict=True):
            marks = [*gathers, end]
            for k, (a, b) in enumerate(zip(marks, marks[1:], strict=False)):
                while len(by_index[name]) <= k:
                    by_index[name].append([])
                by_index[name][k].append(b - a)
                beside[name]["beside H" if b <= p.h[1] else "after H"].append(b - a)
    return by_index, beside


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--after", type=int, default=0, help="ms: skip loading and warm-ups")
    ap.add_argument("--skip", type=int, default=0, help="partitions to skip (warm-ups)")
    ap.add_argument("--passes", action="store_true", help="the first lane's passes too")
    args = ap.parse_args()
    parts = partitions(read(args.trace), args.after)[args.skip :]
    table, across = spans(parts)
    print(f"{len(parts)} partitions after {args.after} ms")
    for name, values in table.items():
        if values:
            q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
            print(f"{name:>15}: median {statistics.median(values):6.0f} ms "
                  f"(quartiles {q[0]:.0f}–{q[2]:.0f}, n={len(values)})")  # fmt: skip
    print("first-lane MSM running when H ended: "
          + ", ".join(f"{k} {n}" for k, n in sorted(across.items())))  # fmt: skip
    if args.passes:
        by_index, beside = pass_times(parts)
        med = statistics.median
        for name in NAMES:
            if not by_index[name]:
                continue  # (L gathers nothing: its passes leave no mark)
            each = ", ".join(f"{med(v):.0f}" for v in by_index[name])
            split = "; ".join(f"{k} {med(v):.0f} (n={len(v)})" for k, v in beside[name].items()
                              if v)  # fmt: skip
            print(f"{name:>3} passes (ms, median by index): {each}\n      {split}")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` is fine
    raise SystemExit(main())
