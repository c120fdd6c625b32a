"""Host CPU of one PoRep partition's witness in deferred mode: core-seconds per challenge block.

Usage: python bench/bench_host_witness.py [--circuit porep-2k|porep-8m|porep-32g]
       [--vanilla C1.json] [--blocks 1] [--repeat 3] [--poseidon] [--profile N]
Synthesizes the view of the first ``--blocks`` challenges (the work one synthesis process does
for them, header included) the way the engine's GPU path does (SHA-256 bit programs deferred;
Poseidon too with ``--poseidon``) in a spawned process holding only that view, with numba on one
thread: what the engine's synthesis processes do. After one warm-up run that records and checks
the tapes, prints the best CPU time (user + sys of that process: robust to other load) and wall
time, per challenge, and the partition's projection (× challenges per partition).
``--profile N`` prints cProfile's N most expensive functions (own time) of one more run.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import cProfile
import io
import multiprocessing
import pickle
import pstats
import time
from pathlib import Path

from cuzk.circuits import open_statement
from cuzk.r1cs import SynthesisOptions, synthesize_witness


def _payload(cid: str, vanilla: str | None) -> bytes:
    if vanilla:
        return Path(vanilla).read_bytes()
    from cuzk.circuits.filecoin.seal import generate_c1

    return generate_c1({"2k": 2048, "8m": 8 << 20}[cid.split("-")[1]], 1).encode()


def _measure(view: bytes, poseidon: bool, repeat: int, profile: int) -> tuple[float, float, str]:
    """In the worker: best CPU and wall seconds of the view's witness, and the profile text."""
    import numba

    numba.set_num_threads(1)  # as the engine's synthesis processes do
    circuit = pickle.loads(view)
    options = SynthesisOptions(defer_bit_programs=True, defer_poseidon=poseidon)
    synthesize_witness(circuit, options).aux_vector()  # records and checks the tapes
    best_cpu = best_wall = float("inf")
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        synthesize_witness(circuit, options).aux_vector()
        best_cpu = min(best_cpu, time.process_time() - c0)
        best_wall = min(best_wall, time.perf_counter() - w0)
    text = ""
    if profile:
        prof = cProfile.Profile()
        prof.enable()
        synthesize_witness(circuit, options).aux_vector()
        prof.disable()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(profile)
        text = out.getvalue()
    return best_cpu, best_wall, text


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--circuit", default="porep-2k")
    ap.add_argument("--vanilla", help="a C1 output (JSON) for the circuit's sector size")
    ap.add_argument("--blocks", type=int, default=1, help="challenges synthesized")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--poseidon", action="store_true", help="defer Poseidon hashes too")
    ap.add_argument("--profile", type=int, default=0)
    args = ap.parse_args()
    circuit = open_statement(args.circuit, payload=_payload(args.circuit, args.vanilla)).circuit(0)
    view = pickle.dumps(circuit.view(range(args.blocks)))
    with cf.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        cpu, wall, text = pool.submit(
            _measure, view, args.poseidon, args.repeat, args.profile
        ).result()
    per = circuit.block_count()
    print(f"{args.circuit} blocks={args.blocks} poseidon_deferred={args.poseidon}: "
          f"cpu {cpu:.3f} s, wall {wall:.3f} s; per challenge cpu {cpu / args.blocks:.3f} s; "
          f"partition ({per} challenges) ≈ {cpu / args.blocks * per:.2f} core-s")  # fmt: skip
    print(text, end="")


if __name__ == "__main__":
    main()
