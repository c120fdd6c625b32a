"""Host witness time with and without deferred runs (SHA-256 bit programs, Poseidon hashes),
and the backend's assembly of z.

Usage: python bench/bench_device_witness.py [--circuit porep-2k|snap-2k|wpost-2k|winning-2k]
       [--backend cpu|cuda] [--repeat 3]
Prints per mode (nothing deferred; SHA-256; SHA-256 and Poseidon) the host synthesis seconds
(warm: the first, tape-recording and checking run is dropped), the share of values deferred,
and the seconds the backend takes to make z from the record.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from cuzk.circuits import open_statement
from cuzk.field import fr
from cuzk.r1cs import SynthesisOptions, synthesize_witness
from cuzk.r1cs.deferred import DeferredAux


def _payload(cid: str, seed: int) -> bytes:
    size = {"2k": 2048, "8m": 8 << 20}[cid.split("-")[1]]
    if cid.startswith(("wpost", "winning")):
        from cuzk.circuits.filecoin.post import post_params
        from cuzk.circuits.filecoin.vanilla_json import random_request

        return random_request(post_params(cid), np.random.default_rng(seed))[0].encode()
    if cid.startswith("porep"):
        from cuzk.circuits.filecoin.seal import generate_c1

        return generate_c1(size, seed).encode()
    from cuzk.circuits.filecoin.snap_vanilla import generate_update

    return generate_update(size, seed).encode()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--circuit", default="porep-2k")
    ap.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    circuit = open_statement(args.circuit, payload=_payload(args.circuit, 1)).circuit(0)
    if args.backend == "cuda":
        from cuzk.backend.cuda.backend import CudaBackend

        backend = CudaBackend(0)
    else:
        from cuzk.backend.cpu import CpuBackend

        backend = CpuBackend(1)
    modes = {"none": (False, False), "sha256": (True, False), "sha256+poseidon": (True, True)}
    for mode, (bits, poseidon) in modes.items():
        options = SynthesisOptions(defer_bit_programs=bits, defer_poseidon=poseidon)
        synthesize_witness(circuit, options)  # records and checks the tapes
        best, best_z = float("inf"), float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            cs = synthesize_witness(circuit, options)
            aux = cs.aux_vector()
            best = min(best, time.perf_counter() - t0)
            inputs = fr.from_ints(cs.inputs)
            t1 = time.perf_counter()
            if isinstance(aux, DeferredAux):
                z = backend.upload_witness(inputs, aux)
            else:
                z = backend.upload(np.concatenate([inputs, aux]))
            backend.download(z[:1])
            best_z = min(best_z, time.perf_counter() - t1)
        share = aux.deferred / len(aux) if isinstance(aux, DeferredAux) else 0.0
        print(f"{args.circuit} defer={mode}: host witness {best:.3f} s, {len(aux):,} values, "
              f"{share:.1%} deferred; z on {args.backend} {best_z:.3f} s")  # fmt: skip


if __name__ == "__main__":
    main()
