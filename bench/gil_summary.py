"""Who holds the engine's interpreter lock: a summary of a py-spy profile taken with --gil
(samples only while a thread holds the lock) in its raw (collapsed) format; of one taken
with --idle instead, where each thread spends its time, waits included.

    PY="py-spy record --gil --nonblocking --threads --format raw -r 100 -o $OUT/gil.txt \\
        -- python3" OUT=$OUT CAPS=16GiB bash bench/capped_sweep.sh
    python3 bench/gil_summary.py $OUT/gil.txt        # top threads, cuzk frames and leaves
    python3 bench/gil_summary.py $OUT/spy_16GiB.txt.gz msm_0   # one thread (profiles taken
                                                            # with --idle: where it waits)

Each line of the raw format is a stack (frames joined by ';', outermost first, "function
(file:line)"; with --threads the first is the thread) and its sample count.
"""

from __future__ import annotations

import gzip
import signal
import sys
from collections import Counter


def summarize(path: str, top: int = 20, thread: str = "") -> dict[str, Counter[str]]:
    """Samples by thread, by innermost cuzk frame (where the engine's own code holds the
    lock, or calls what holds it) and by innermost frame of any code; with ``thread``, only
    the threads whose name contains it."""
    threads: Counter[str] = Counter()
    cuzk: Counter[str] = Counter()
    leaves: Counter[str] = Counter()
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack or not count.isdigit():
                continue
            n = int(count)
            frames = stack.split(";")
            if thread and thread not in frames[0]:
                continue
            if frames[0].startswith(("thread", "process")):
                threads[frames[0]] += n
            leaves[frames[-1]] += n
            own = [fr for fr in frames if "/cuzk/" in fr or "cuzk/" in fr.split("(")[-1]]
            cuzk[own[-1] if own else "(no cuzk frame)"] += n
    return {"threads": threads, "cuzk frames": cuzk, "leaf frames": leaves}


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print(__doc__)
        return 2
    tables = summarize(argv[0], thread=argv[1] if len(argv) == 2 else "")
    total = sum(tables["leaf frames"].values()) or 1
    print(f"{total} samples" + (f" of threads named *{argv[1]}*" if len(argv) == 2 else ""))
    for name, counts in tables.items():
        if not counts:
            continue
        print(f"\n{name}:")
        for key, n in counts.most_common(20):
            print(f"  {100 * n / total:5.1f} %  {key[:150]}")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` is fine
    sys.exit(main(sys.argv[1:]))
