"""Shape synthesis at scale: time, peak RSS and bytes per constraint of a compact shape.

    python bench/bench_shape.py porep-32g [--blocks N] [--save DIR]

``--blocks`` shortens the circuit's repeated loop (PoRep challenges, PoSt sectors) to N, for
a quick per-block figure on a small host. ``--save`` also times writing the shape cache entry
and mapping it back. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import time

from cuzk.circuits import get_circuit
from cuzk.r1cs import R1CSShape, synthesize_shape


def _rss_gb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 1e9


def _circuit(circuit_id: str, blocks: int | None):
    if blocks is None:
        return get_circuit(circuit_id)
    if circuit_id.startswith("porep-"):
        from cuzk.circuits.filecoin.porep import StackedCircuit, porep_params

        p = dataclasses.replace(porep_params(circuit_id), challenge_count=blocks)
        return StackedCircuit(p)
    if circuit_id.startswith(("wpost-", "winning-")):
        from cuzk.circuits.filecoin.post import FallbackPoStCircuit, post_params

        return FallbackPoStCircuit(
            dataclasses.replace(post_params(circuit_id), sector_count=blocks)
        )
    raise SystemExit(f"--blocks applies to porep-* and PoSt circuits, not {circuit_id}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("circuit")
    ap.add_argument("--blocks", type=int, help="PoRep challenges / PoSt sectors to keep")
    ap.add_argument("--save", help="directory to save the shape to and map it back from")
    args = ap.parse_args()
    circuit = _circuit(args.circuit, args.blocks)
    base = _rss_gb()
    t0 = time.perf_counter()
    shape = synthesize_shape(circuit, args.circuit)
    synth = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    n = shape.num_constraints
    derived = sum(
        x.nbytes
        for x in (shape.a.column_mask(), shape.b.column_mask(), shape.a_aux_rows,
                  shape.b_aux_rows, shape.b_input_rows)
    )  # fmt: skip
    names = shape.names.nbytes if shape.names is not None else 0
    out = {
        "circuit": args.circuit,
        "blocks": args.blocks,
        "constraints": n,
        "nnz": shape.a.nnz + shape.b.nnz + shape.c.nnz,
        "coefficients": len(shape.a.table),
        "synthesis_s": round(synth, 1),
        "peak_rss_gb": round(peak, 2),
        "rss_before_gb": round(base, 2),
        "held_rss_gb": round(_rss_gb(), 2),
        "bytes_per_constraint": {
            "matrices": round(shape.nbytes / n, 1),
            "names": round(names / n, 1),
            "derived": round(derived / n, 1),
        },
    }
    if args.save:
        t0 = time.perf_counter()
        shape.save(args.save)
        out["save_s"] = round(time.perf_counter() - t0, 1)
        del shape
        t0 = time.perf_counter()
        R1CSShape.load(args.save)
        out["load_s"] = round(time.perf_counter() - t0, 3)
        out["rss_after_load_gb"] = round(_rss_gb(), 2)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
