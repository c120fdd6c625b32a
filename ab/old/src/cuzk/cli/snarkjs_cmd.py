"""``cuzk snarkjs prove|verify``: snarkjs's own command lines, answered by cuzk.

``cuzk snarkjs prove KEY.zkey WITNESS.wtns PROOF.json PUBLIC.json`` writes the same two files
``snarkjs groth16 prove`` writes (and verifies the proof first); ``cuzk snarkjs verify VK.json
PUBLIC.json PROOF.json`` exits 0 for a valid proof, 1 for an invalid one and 2 for unusable
input, like ``cuzk verify``. Heavy imports happen inside the commands so ``cuzk --help`` stays
fast.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

EXIT_INVALID = 1


def add_parser(sub: Any) -> None:
    """Register the ``snarkjs`` command group on the top-level subparsers."""
    group = sub.add_parser("snarkjs", help="prove and verify with snarkjs/circom files")
    cmds = group.add_subparsers(dest="snarkjs_command", required=True, metavar="COMMAND")

    p = cmds.add_parser(
        "prove", help="prove a circom witness with a snarkjs Groth16 key (bls12381)"
    )
    p.add_argument("zkey", type=Path, metavar="KEY.zkey")
    p.add_argument("wtns", type=Path, metavar="WITNESS.wtns")
    p.add_argument("proof", type=Path, metavar="PROOF.json")
    p.add_argument("public", type=Path, metavar="PUBLIC.json")
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--device", type=int, default=0, help="CUDA device index (--backend cuda)")
    p.add_argument("--workers", type=int, help="MSM worker processes (default: CPU count)")
    p.add_argument("--r1cs", type=Path, help="the circuit's .r1cs: name a failing constraint")
    p.add_argument("--timings", action="store_true", help="print per-stage seconds to stderr")
    p.add_argument(
        "--bases-cache",
        type=Path,
        metavar="DIR",
        help="keep the key's translated bases in DIR (by the key's SHA-256) and "
        "reuse them next time",
    )

    v = cmds.add_parser("verify", help="verify (exit 0 valid, 1 invalid, 2 bad input)")
    v.add_argument("vk", type=Path, metavar="VK.json")
    v.add_argument("public", type=Path, metavar="PUBLIC.json")
    v.add_argument("proof", type=Path, metavar="PROOF.json")


def run(args: argparse.Namespace) -> int:
    """Dispatch a parsed ``cuzk snarkjs …`` command; errors propagate to ``cuzk.cli.main``."""
    if args.snarkjs_command == "prove":
        return cmd_prove(args)
    return cmd_verify(args)


def cmd_prove(args: argparse.Namespace) -> int:
    from cuzk.backend import get_backend
    from cuzk.groth16.prover import Timings
    from cuzk.interop import prepare, prove, read_r1cs, read_wtns, read_zkey
    from cuzk.interop.snarkjs_json import proof_to_json, public_to_json, write_json

    t0 = time.perf_counter()
    timings = Timings()
    zkey = read_zkey(args.zkey)
    witness = read_wtns(args.wtns)
    r1cs = read_r1cs(args.r1cs) if args.r1cs is not None else None
    key = prepare(zkey, cache_dir=args.bases_cache)
    timings.record("load", time.perf_counter() - t0)
    try:
        backend = get_backend(args.backend, workers=args.workers, device=args.device)
        try:
            proof, public = prove(key, witness, backend, r1cs, timings)
        finally:
            backend.close()
    finally:
        key.close()
    write_json(args.proof, proof_to_json(proof))
    write_json(args.public, public_to_json(public))
    total = time.perf_counter() - t0
    if args.timings:
        stages = ", ".join(f"{k} {v:.3f}" for k, v in timings.stages.items())
        print(f"timings (s): {stages}", file=sys.stderr)
    print(f"proof verified; wrote {args.proof} and {args.public} ({total:.2f} s)")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from cuzk.interop import verify_files

    if verify_files(args.vk, args.public, args.proof):
        print("valid")
        return 0
    print("invalid", file=sys.stderr)
    return EXIT_INVALID
