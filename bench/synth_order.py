"""Several partitions synthesized at once through the engine's synthesis pool, and one urgent
partition submitted while they run: when each witness is ready, with the pool's tasks in
rank order (the engine's) or first come first served (every task the same rank: the pool as
it was before ranks).

    python bench/synth_order.py --payload C1 --partitions 5 --processes 8 --urgent-after 0.5

Each partition's circuit is cut into views (one per PoRep challenge), so the pool's queue
holds every view of every partition synthesizing. First come first served, an urgent
partition (a WindowPoSt due soon, CRITICAL) waits behind all of them; ranked, it goes next.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

from cuzk.circuits import open_statement
from cuzk.engine.synth_pool import SynthesisPool
from cuzk.openmp import configure_openmp
from cuzk.r1cs import SynthesisOptions
from cuzk.r1cs.blocks import BlockCircuit

# what the engine asks of a GPU backend: SHA-256 bits and Poseidon left to the device
OPTIONS = SynthesisOptions(defer_bit_programs=True, defer_poseidon=True)


def run(
    pool: SynthesisPool, circuits: list[BlockCircuit], ranked: bool, urgent_after: float
) -> tuple[list[float], float]:
    """Seconds from the common start to each partition's witness, and the urgent one's
    seconds from its submission to its witness (the last circuit is the urgent one)."""
    *normal, urgent = circuits
    done = [0.0] * len(normal)
    go = threading.Barrier(len(normal) + 1)

    def one(i: int) -> None:
        go.wait()
        pool.synthesize_blocks(normal[i], OPTIONS, (1, i) if ranked else ())
        done[i] = time.perf_counter() - t0

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(normal))]
    for t in threads:
        t.start()
    t0 = time.perf_counter()
    go.wait()
    time.sleep(urgent_after)
    t1 = time.perf_counter()
    pool.synthesize_blocks(urgent, OPTIONS, (0, 0) if ranked else ())
    waited = time.perf_counter() - t1
    for t in threads:
        t.join()
    return done, waited


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--circuit", default="porep-32g")
    ap.add_argument("--payload", required=True, help="the request's payload (a C1 for porep)")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--urgent-after", type=float, default=0.5, help="seconds into a run")
    args = ap.parse_args()
    statement = open_statement(args.circuit, payload=open(args.payload, "rb").read())
    circuits = [statement.circuit(i % statement.partitions) for i in range(args.partitions + 1)]
    pool = SynthesisPool(args.processes)
    try:
        pool.synthesize_blocks(circuits[0], OPTIONS)  # start and warm the workers
        t = time.perf_counter()
        pool.synthesize_blocks(circuits[0], OPTIONS)
        print(f"{args.circuit}: one partition alone {time.perf_counter() - t:.2f} s "
              f"on {args.processes} processes")  # fmt: skip
        for ranked in (False, True) * args.runs:
            done, waited = run(pool, circuits, ranked, args.urgent_after)
            each = ", ".join(f"{x:.2f}" for x in done)
            print(f"{'ranked' if ranked else 'fifo  '}: urgent {waited:.2f} s; the others "
                  f"first {min(done):.2f} s, median {statistics.median(done):.2f}, last "
                  f"{max(done):.2f} ({each})", flush=True)  # fmt: skip
    finally:
        pool.close()


if __name__ == "__main__":
    configure_openmp()
    main()
