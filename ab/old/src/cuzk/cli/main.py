"""The ``cuzk`` command line: setup, prove, verify, info, the demo, the engine bench, the daemon
(``serve``) and its client, and the official parameters check (``params check``).

Exit codes: 0 success (for ``verify``: the proof is valid), 1 ``verify`` found the proof
invalid, 2 unusable input (one line on stderr says why), 3 an internal fault, 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from cuzk import safejson
from cuzk.cli import client_cmd, filecoin_cmd, params_cmd, serve_cmd, snarkjs_cmd
from cuzk.cli.bench import add_parser as _add_bench_parser
from cuzk.cli.bench import cmd_bench, size_arg
from cuzk.cli.inputs import read_input
from cuzk.errors import BadInput, CuzkError
from cuzk.openmp import configure_openmp

EXIT_INVALID, EXIT_BAD_INPUT, EXIT_INTERNAL = 1, 2, 3
DEFAULT_DEMO_CIRCUIT = "synthetic:65536"


def _build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="cuzk", description="Groth16 proving for BLS12-381 with bellperson-compatible files."
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("setup", help="make test parameters (.params and .vk) for a circuit")
    s.add_argument("--circuit", required=True, help="circuit id, e.g. synthetic:65536")
    s.add_argument("--out", required=True, type=Path, help="directory for NAME.params/NAME.vk")
    s.add_argument("--seed", type=int, help="reproducible toxic waste (tests only)")
    s.add_argument(
        "--backend",
        default="cpu",
        choices=["cpu", "cuda"],
        help="where the fixed-base multiplications run (cuda: seconds at 2^24)",
    )
    s.add_argument("--device", type=int, default=0, help="CUDA device index (--backend cuda)")
    _common(s)

    s = sub.add_parser("prove", help="prove a circuit with its parameters")
    s.add_argument("--circuit", required=True)
    s.add_argument("--params", required=True, type=Path)
    s.add_argument("--out", required=True, type=Path, help="where to write the proof bytes")
    s.add_argument("--inputs-out", type=Path, help="public inputs as a JSON list of decimals")
    s.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    s.add_argument("--device", type=int, default=0, help="CUDA device index (--backend cuda)")
    s.add_argument("--seed", type=int, default=0, help="selects the witness, not the shape")
    s.add_argument(
        "--vanilla", type=Path, help="witness from a vanilla-proof request file (cuzk gen-vanilla)"
    )
    s.add_argument(
        "--device-memory-limit",
        type=size_arg,
        help="keep the GPU's use under SIZE (e.g. 24GiB): the key streams what does not fit",
    )
    _common(s)

    s = sub.add_parser("verify", help="verify a proof (exit 0 valid, 1 invalid, 2 bad input)")
    s.add_argument("--vk", required=True, type=Path)
    s.add_argument("--proof", required=True, type=Path)
    s.add_argument("--inputs", required=True, type=Path)

    s = sub.add_parser("info", help="print the header of a .params or .vk file")
    s.add_argument("file", type=Path)
    s.add_argument("--json", action="store_true")

    s = sub.add_parser(
        "demo", help="start the daemon, prove a default circuit over gRPC, verify, print throughput"
    )
    s.add_argument("--circuit", default=DEFAULT_DEMO_CIRCUIT)
    s.add_argument("--dir", type=Path, help="where keys are kept (default: the cache)")
    s.add_argument("--proofs", type=int, default=4, help="proofs to make (after a warm-up)")
    s.add_argument(
        "--in-process",
        action="store_true",
        help="prove in this process without a daemon (the old demo)",
    )
    _common(s)

    _add_bench_parser(sub, _common)
    serve_cmd.add_parser(sub)
    client_cmd.add_parser(sub)
    snarkjs_cmd.add_parser(sub)
    params_cmd.add_parser(sub)
    filecoin_cmd.add_parsers(sub)
    return p


def _common(s: argparse.ArgumentParser) -> None:
    s.add_argument("--workers", type=int, help="MSM worker processes (default: CPU count)")
    s.add_argument("--shape-cache", type=Path, help="pre-compiled circuit cache directory")


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    configure_openmp()  # before any kernel runs: the process's choice (cuzk.openmp)
    try:
        return _COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print("cuzk: interrupted", file=sys.stderr)
        return 130
    except BadInput as e:
        print(f"cuzk: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except CuzkError as e:
        print(f"cuzk: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_INTERNAL
    except Exception as e:  # the CLI never shows a raw traceback
        if os.environ.get("CUZK_DEBUG"):
            raise
        print(
            f"cuzk: internal error: {type(e).__name__}: {e} (CUZK_DEBUG=1 shows more)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


# -- commands ----------------------------------------------------------------------------------


def cmd_setup(args: argparse.Namespace) -> int:
    from cuzk.cli.tasks import run_setup

    params_path, seconds = run_setup(
        args.circuit,
        args.out,
        seed=args.seed,
        workers=args.workers,
        shape_cache=args.shape_cache,
        backend=args.backend,
        device=args.device,
    )
    print(f"wrote {params_path} and {params_path.with_suffix('.vk')} in {seconds:.1f} s")
    return 0


def cmd_prove(args: argparse.Namespace) -> int:
    """Prove one request through the in-process engine — the daemon's synthesis pool, device
    witness, staging and prover — so a one-shot proof costs the key load plus what
    `cuzk bench` measures: every partition a ``--vanilla`` request describes, or one seeded
    partition. The proof file holds 192 bytes per partition and ``--inputs-out`` one list per
    partition when there are several."""
    from cuzk.cli.tasks import engine_config, run_prove
    from cuzk.engine import Engine, ProofRequest

    expected: list = []
    if args.vanilla is None:
        request = ProofRequest.of(args.circuit, seed=args.seed)
    else:
        from cuzk.circuits import open_statement

        payload = read_input(args.vanilla)
        statement = open_statement(args.circuit, payload=payload)
        expected = [statement.expected(i) for i in range(statement.partitions)]
        request = ProofRequest(args.circuit, payload=payload)
    config = engine_config(args.circuit, args.params, backend_name=args.backend,
                           device=args.device, workers=args.workers,
                           shape_cache=args.shape_cache,
                           device_memory_limit=args.device_memory_limit)  # fmt: skip
    with Engine(config) as engine:
        result = run_prove(engine, request)
    for i, (want, got) in enumerate(zip(expected, result.public_inputs, strict=False)):
        if want is not None and tuple(got) != tuple(want):
            raise BadInput(f"{args.vanilla}: partition {i}'s witness proves other public "
                           "inputs than the request states")  # fmt: skip
    args.out.write_bytes(result.proof)
    if args.inputs_out is not None:
        lists = [[str(x) for x in inputs] for inputs in result.public_inputs]
        args.inputs_out.write_text(json.dumps(lists[0] if len(lists) == 1 else lists) + "\n")
    parts = len(result.public_inputs)
    print(f"{parts} partition proof(s) verified; wrote {args.out} (key {result.load_s:.2f} s, "
          f"proving {result.prove_s:.2f} s)")  # fmt: skip
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from cuzk.groth16 import proofs_from_bytes, read_vk, verify

    vk = read_vk(args.vk)
    proofs = proofs_from_bytes(read_input(args.proof))
    inputs = _parse_inputs(args.inputs)
    per_partition = inputs if inputs and isinstance(inputs[0], list) else [inputs]
    if len(per_partition) != len(proofs):
        raise BadInput(f"{args.proof} holds {len(proofs)} partition proof(s) but {args.inputs} "
                       f"has {len(per_partition)} input list(s)")  # fmt: skip
    if all(verify(vk, x, p) for x, p in zip(per_partition, proofs, strict=True)):
        print("valid")
        return 0
    print("invalid", file=sys.stderr)
    return EXIT_INVALID


def cmd_info(args: argparse.Namespace) -> int:
    from cuzk.groth16 import read_header

    header = read_header(args.file)
    if args.json:
        print(
            json.dumps(
                {
                    "file": str(args.file),
                    "kind": header.kind,
                    "size": header.size,
                    "num_inputs": header.num_ic,
                    "domain_size": header.domain_size,
                    "counts": header.counts,
                }
            )
        )
        return 0
    print(f"{args.file}: {header.kind} file, {header.size:,} bytes")
    print(f"  public inputs (with ONE): {header.num_ic}")
    if header.counts:
        print(f"  domain size m: {header.domain_size:,}")
        for name, count in header.counts.items():
            print(f"  {name:5s} {count:>12,} points")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    if args.in_process:
        from cuzk.cli.tasks import run_demo

        run_demo(
            args.circuit,
            args.dir,
            proofs=args.proofs,
            workers=args.workers,
            shape_cache=args.shape_cache,
        )
        return 0
    from cuzk.cli.daemon_demo import run_daemon_demo

    run_daemon_demo(
        args.circuit,
        args.dir,
        proofs=args.proofs,
        workers=args.workers,
        shape_cache=args.shape_cache,
    )
    return 0


def _parse_inputs(path: Path) -> list:
    """A JSON list of decimal inputs, or a list of such lists (one per partition)."""
    raw = safejson.loads(read_input(path), str(path), invalid="not JSON")
    if isinstance(raw, list) and raw and all(isinstance(x, list) for x in raw):
        return [_decimals(x, f"{path} partition {k}") for k, x in enumerate(raw)]
    return _decimals(raw, str(path))


def _decimals(raw: object, where: str) -> list[int]:
    if not isinstance(raw, list):
        raise BadInput(f"{where}: expected a JSON list of decimal strings")
    out = []
    for i, x in enumerate(raw):
        if isinstance(x, str) and x.isdigit():
            out.append(safejson.decimal(x, f"{where}: input {i}"))
        elif isinstance(x, int) and not isinstance(x, bool) and x >= 0:
            out.append(x)
        else:
            raise BadInput(f"{where}: input {i} is not a non-negative decimal: {x!r}")
    return out


_COMMANDS = {
    "setup": cmd_setup,
    "prove": cmd_prove,
    "verify": cmd_verify,
    "info": cmd_info,
    "demo": cmd_demo,
    "bench": cmd_bench,
    "serve": serve_cmd.run,
    "client": client_cmd.run,
    "snarkjs": snarkjs_cmd.run,
    "params": params_cmd.run,
    **filecoin_cmd.COMMANDS,
}

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
