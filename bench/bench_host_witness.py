"""Host CPU of one PoRep partition's witness in deferred mode: core-seconds per challenge block.

Usage: python bench/bench_host_witness.py [--circuit porep-2k|porep-8m|porep-32g]
       [--vanilla C1.json] [--blocks 1] [--repeat 3] [--poseidon] [--profile N]
Synthesizes the view of the first ``--blocks`` challenges (the work one synthesis process does
for them, header included) the way the engine's GPU path does (SHA-256 bit programs deferred;
Poseidon too with ``--poseidon``), after one warm-up run that records and checks the tapes.
Prints the best CPU time (user + sys of this process: robust to other load) and wall time, per
challenge, and the partition's projection, with numba on one thread as in the engine's
synthesis processes (× challenges per partition). ``--profile N`` prints
cProfile's N most expensive functions (cumulative) of one more run.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from pathlib import Path

import numba

from cuzk.circuits import open_statement
from cuzk.r1cs import SynthesisOptions, synthesize_witness


def _payload(cid: str, vanilla: str | None) -> bytes:
    if vanilla:
        return Path(vanilla).read_bytes()
    from cuzk.circuits.filecoin.seal import generate_c1

    return generate_c1({"2k": 2048, "8m": 8 << 20}[cid.split("-")[1]], 1).encode()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--circuit", default="porep-2k")
    ap.add_argument("--vanilla", help="a C1 output (JSON) for the circuit's sector size")
    ap.add_argument("--blocks", type=int, default=1, help="challenges synthesized")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--poseidon", action="store_true", help="defer Poseidon hashes too")
    ap.add_argument("--profile", type=int, default=0)
    args = ap.parse_args()
    numba.set_num_threads(1)  # as in the engine's synthesis processes (one core each)
    circuit = open_statement(args.circuit, payload=_payload(args.circuit, args.vanilla)).circuit(0)
    view = circuit.view(range(args.blocks))
    options = SynthesisOptions(defer_bit_programs=True, defer_poseidon=args.poseidon)
    synthesize_witness(view, options)  # records and checks the tapes
    best_cpu = best_wall = float("inf")
    for _ in range(args.repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        cs = synthesize_witness(view, options)
        cs.aux_vector()
        best_cpu = min(best_cpu, time.process_time() - c0)
        best_wall = min(best_wall, time.perf_counter() - w0)
    per = circuit.block_count()
    n = len(cs.aux_vector())
    print(f"{args.circuit} blocks={args.blocks} poseidon_deferred={args.poseidon}: "
          f"{n:,} aux values; cpu {best_cpu:.3f} s, wall {best_wall:.3f} s; per challenge "
          f"cpu {best_cpu / args.blocks:.3f} s; partition ({per} challenges) "
          f"≈ {best_cpu / args.blocks * per:.2f} core-s")  # fmt: skip
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        synthesize_witness(view, options).aux_vector()
        prof.disable()
        stats = pstats.Stats(prof)
        stats.sort_stats("tottime").print_stats(args.profile)
        stats.sort_stats("cumulative").print_stats(args.profile)


if __name__ == "__main__":
    main()
