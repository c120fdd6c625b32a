"""Witness throughput of Python-heavy circuits: in-process (one thread) vs the engine's
process pool. ``python bench/bench_synth_pool.py --circuit snap-2k --jobs 2 --processes 2``."""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import time

from cuzk.circuits import open_statement
from cuzk.engine.synth_pool import SynthesisPool
from cuzk.openmp import configure_openmp
from cuzk.r1cs import SynthesisOptions, synthesize_witness


def payload(circuit_id: str, seed: int) -> bytes:
    if circuit_id.startswith("porep-"):
        from cuzk.circuits.filecoin.seal import generate_c1

        return generate_c1(2048, seed).encode()
    from cuzk.circuits.filecoin.snap_vanilla import generate_update

    return generate_update(2048, seed).encode()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--circuit", default="snap-2k", choices=["snap-2k", "porep-2k"])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--processes", type=int, default=2)
    args = ap.parse_args()
    docs = [payload(args.circuit, s) for s in range(args.jobs)]
    t = time.perf_counter()
    for d in docs:
        synthesize_witness(open_statement(args.circuit, payload=d).circuit(0))
    inline = time.perf_counter() - t
    pool = SynthesisPool(args.processes)
    try:
        warm = open_statement(args.circuit, payload=docs[0]).circuit(0)
        pool.synthesize(warm, SynthesisOptions())  # start the workers before timing
        t = time.perf_counter()
        circuits = [open_statement(args.circuit, payload=d).circuit(0) for d in docs]
        with cf.ThreadPoolExecutor(args.processes) as ex:
            list(ex.map(lambda c: pool.synthesize(c, SynthesisOptions()), circuits))
        pooled = time.perf_counter() - t
    finally:
        pool.close()
    print(
        f"{args.circuit} × {args.jobs}: in-process {inline:.1f} s, "
        f"{args.processes} processes {pooled:.1f} s ({inline / pooled:.2f}×)"
    )


if __name__ == "__main__":
    configure_openmp()  # the process's choice, before any kernel runs
    main()
