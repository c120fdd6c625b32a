"""``cuzk client …``: one RPC per subcommand (load against a daemon is ``cuzk bench --addr``,
:mod:`cuzk.cli.daemon_bench`; the daemon demo behind ``cuzk demo`` is
:mod:`cuzk.cli.daemon_demo`).

The daemon address comes from ``--addr``, else ``$CUZK_ADDR``, else the default socket; a token
from ``--token-file``, ``$CUZK_TOKEN`` or ``--token``. ``prove``/``await`` exit 0 for a
completed proof and 1 for a failed, cancelled or timed-out one (the reason on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from cuzk.cli.inputs import read_input
from cuzk.errors import BadInput

if TYPE_CHECKING:
    from cuzk.server.client import Client
    from cuzk.server.proto import proving_pb2 as pb

_PRIORITIES = ("low", "normal", "high", "critical")
_KINDS = {
    "porep": "POREP_SEAL_COMMIT",
    "snap": "SNAP_DEALS_UPDATE",
    "wpost": "WINDOW_POST_PARTITION",
    "winning": "WINNING_POST",
}


def _default_addr() -> str:
    """$CUZK_ADDR, else the daemon's default socket, whose directory must be this user's own
    (a socket another user placed there would receive the token and the payloads)."""
    from cuzk.server.runtime import default_socket, private_dir

    if os.environ.get("CUZK_ADDR"):
        return os.environ["CUZK_ADDR"]
    sock = default_socket()
    private_dir(sock.parent, create=False)
    return f"unix://{sock}"


def token(args: argparse.Namespace) -> str | None:
    """--token-file, else --token (which ``ps`` shows to every local user: a warning says
    so), else $CUZK_TOKEN."""
    from cuzk.server.auth import TOKEN_ENV
    from cuzk.server.runtime import read_secret

    path = getattr(args, "token_file", None)
    if path is not None:
        return read_secret(path, "--token-file")
    given = getattr(args, "token", None)
    if given:
        print(
            "cuzk: warning: --token is visible to every local user in `ps`; "
            "use --token-file or $CUZK_TOKEN",
            file=sys.stderr,
        )
        return given
    return os.environ.get(TOKEN_ENV) or None


def add_parser(sub: Any) -> None:
    c = sub.add_parser("client", help="talk to a running daemon over gRPC")
    c.add_argument(
        "--addr",
        help="unix:///path or host:port (default: $CUZK_ADDR, else the daemon's default socket)",
    )
    c.add_argument("--token-file", type=Path, help="file holding the bearer token (mode 0600)")
    c.add_argument("--token", help="bearer token (visible in ps: prefer --token-file, $CUZK_TOKEN)")
    c.add_argument("--tls-ca", type=Path, help="CA certificate; connects with TLS")
    csub = c.add_subparsers(dest="client_command", required=True, metavar="RPC")

    for name, helptext in (
        ("prove", "submit a proof and wait for it"),
        ("submit", "submit a proof; print its job id"),
    ):
        s = csub.add_parser(name, help=helptext)
        s.add_argument("--circuit", help="a registered circuit id (synthetic:N, wpost-2k, …)")
        s.add_argument("--seed", type=int, default=1, help="first witness seed (--circuit)")
        s.add_argument("--partitions", type=int, default=1, help="seeds seed, seed+1, …")
        s.add_argument(
            "--payload",
            type=Path,
            help="the circuit family's input file instead "
            "of seeds (e.g. a PoSt request from cuzk gen-vanilla)",
        )
        s.add_argument(
            "--kind", choices=sorted(_KINDS), help="Filecoin proof kind (instead of --circuit)"
        )
        s.add_argument("--registered-proof", type=int, default=0)
        s.add_argument("--sector-size", type=int, default=0)
        s.add_argument(
            "--vanilla",
            type=Path,
            action="append",
            default=[],
            help="vanilla proof file (repeatable: one per sector / partition)",
        )
        s.add_argument(
            "--curio",
            type=Path,
            metavar="DIR",
            help="send the request a `cuzk gen-vanilla KIND --curio --out DIR` wrote, as Curio "
            "would (--priority and --request-id, when given, override its own)",
        )
        for comm in ("comm-r-old", "comm-r-new", "comm-d-new"):
            s.add_argument(f"--{comm}", default="", help="--kind snap: 32 bytes (or a CID) as hex")
        s.add_argument("--miner-id", type=int, default=0)
        s.add_argument("--randomness", default="", help="32 bytes as hex")
        s.add_argument("--partition-index", type=int, default=0)
        s.add_argument("--priority", choices=_PRIORITIES, default="normal")
        s.add_argument("--request-id", default="")
        if name == "prove":
            _result_args(s)

    s = csub.add_parser("await", help="wait for a job and fetch its proof")
    s.add_argument("job_id")
    s.add_argument("--timeout", type=float, default=0.0, help="seconds (0: no limit)")
    _result_args(s)
    s = csub.add_parser("cancel", help="cancel a queued or running job")
    s.add_argument("job_id")
    s = csub.add_parser("status", help="devices, resident parameters, queues")
    s.add_argument("--json", action="store_true", help="the full /status document")
    csub.add_parser("metrics", help="Prometheus text")
    s = csub.add_parser("preload", help="load a circuit's parameters now")
    s.add_argument("circuit_id")
    s = csub.add_parser("evict", help="drop a circuit's parameters")
    s.add_argument("circuit_id")


def _result_args(s: argparse.ArgumentParser) -> None:
    s.add_argument("--out", type=Path, help="write the proof bytes here")
    s.add_argument(
        "--inputs-out",
        type=Path,
        help="public inputs: JSON list (per partition) of decimal strings",
    )
    s.add_argument("--json", action="store_true", help="print the whole answer as JSON")


def _client(args: argparse.Namespace) -> Client:
    from cuzk.server.client import Client

    return Client(args.addr or _default_addr(), token=token(args), tls_ca=args.tls_ca)


def _submit_message(args: argparse.Namespace) -> pb.SubmitProofRequest:
    from cuzk.server.proto import proving_pb2 as pb

    if args.curio is not None:
        return _curio_message(args)
    msg = pb.SubmitProofRequest(request_id=args.request_id, priority=args.priority.upper())
    if args.circuit and args.kind:
        raise BadInput("give --circuit or --kind, not both")
    if args.circuit:
        msg.circuit_id = args.circuit
        if args.payload is not None:
            msg.vanilla_proof = read_input(args.payload)
        else:
            if args.partitions < 1:
                raise BadInput("--partitions must be at least 1")
            msg.seeds.extend(args.seed + i for i in range(args.partitions))
        return msg
    if not args.kind:
        raise BadInput("give --circuit ID (with seeds or --payload) or --kind with --vanilla")
    # Value() is typed as a plain int; the number is the enum's (the constructor takes the name).
    msg.proof_kind = cast("pb.ProofKind", pb.ProofKind.Value(_KINDS[args.kind]))
    msg.registered_proof = args.registered_proof
    msg.sector_size = args.sector_size
    msg.miner_id = args.miner_id
    msg.partition_index = args.partition_index
    try:
        msg.randomness = bytes.fromhex(args.randomness)
    except ValueError as e:
        raise BadInput(f"--randomness: not hex ({e})") from e
    for name in ("comm_r_old", "comm_r_new", "comm_d_new"):
        text = getattr(args, name)
        if not text:
            continue
        flag = "--" + name.replace("_", "-")
        if args.kind != "snap":
            raise BadInput(f"{flag} is for --kind snap")
        try:
            setattr(msg, name, bytes.fromhex(text))
        except ValueError as e:
            raise BadInput(f"{flag}: not hex ({e})") from e
    blobs = [read_input(p) for p in args.vanilla]
    if args.kind == "porep":
        if len(blobs) != 1:
            raise BadInput("--kind porep takes one --vanilla file (the C1 output)")
        msg.vanilla_proof = blobs[0]
    else:
        msg.vanilla_proofs.extend(blobs)
    return msg


def _curio_message(args: argparse.Namespace) -> pb.SubmitProofRequest:
    """The request a ``gen-vanilla --curio`` directory holds; nothing else may describe it."""
    from cuzk.cli.filecoin_cmd import curio_message

    if args.circuit or args.kind or args.vanilla or args.payload is not None:
        raise BadInput("--curio DIR is the whole request: no --circuit, --kind, --vanilla or "
                       "--payload with it")  # fmt: skip
    msg = curio_message(args.curio)
    if args.request_id:
        msg.request_id = args.request_id
    if args.priority != "normal":
        msg.priority = args.priority.upper()
    return msg


def _print_outcome(args: argparse.Namespace, o: Any) -> int:
    if args.out is not None and o.proof:
        args.out.write_bytes(o.proof)
    if args.inputs_out is not None and o.status == "completed":
        args.inputs_out.write_text(
            json.dumps([[str(x) for x in part] for part in o.public_inputs]) + "\n"
        )
    if args.json:
        print(
            json.dumps(
                {
                    "job_id": o.job_id,
                    "status": o.status,
                    "error": o.error or None,
                    "circuit_id": o.circuit_id,
                    "vk": o.vk_path,
                    "proof": o.proof.hex(),
                    "timings_ms": o.timings_ms,
                    "public_inputs": [[str(x) for x in p] for p in o.public_inputs],
                }
            )
        )
    elif o.status == "completed":
        t = o.timings_ms
        print(
            f"{o.job_id}: completed, {len(o.proof)} bytes, {len(o.public_inputs)} "
            f"partition(s); total {t['total']} ms (queue {t['queue_wait']}, synthesis "
            f"{t['synthesis']}, kernels {t['gpu_compute']}); vk {o.vk_path}"
        )
    if o.status != "completed":
        print(
            f"cuzk: {o.job_id}: {o.status}" + (f": {o.error}" if o.error else ""), file=sys.stderr
        )
        return 1
    return 0


def run(args: argparse.Namespace) -> int:
    with _client(args) as c:
        cmd = args.client_command
        if cmd == "prove":
            return _print_outcome(args, c.prove(_submit_message(args)))
        if cmd == "submit":
            print(c.submit(_submit_message(args)))
            return 0
        if cmd == "await":
            return _print_outcome(args, c.await_proof(args.job_id, args.timeout))
        if cmd == "cancel":
            was = c.cancel(args.job_id)
            print(f"{args.job_id}: {'cancelled' if was else 'already finished'}")
            return 0
        if cmd == "status":
            st = c.status()
            if args.json:
                print(st.status_json or "{}")
            else:
                _print_status(st)
            return 0
        if cmd == "metrics":
            print(c.metrics(), end="")
            return 0
        if cmd == "preload":
            r = c.preload(args.circuit_id)
            print(
                f"{args.circuit_id}: "
                + ("already resident" if r.already_loaded else f"loaded in {r.load_time_ms} ms")
            )
            return 0
        if cmd == "evict":
            ev = c.evict(args.circuit_id)
            print(
                f"{args.circuit_id}: "
                + (
                    f"evicted, {ev.freed_bytes:,} bytes freed"
                    if ev.was_loaded
                    else "not evicted (not resident or in use)"
                )
            )
            return 0
    raise BadInput(f"unknown client command {cmd!r}")  # unreachable: argparse checks


def _print_status(st: Any) -> None:
    from rich.table import Table

    from cuzk.cli.tasks import out

    out.print(
        f"uptime {st.uptime_seconds} s; proofs completed {st.total_proofs_completed}, "
        f"failed {st.total_proofs_failed}; memory budget "
        f"{st.pinned_memory_bytes:,} / {st.pinned_memory_limit_bytes:,} bytes"
    )
    t = Table(title="devices")
    for col in ("ordinal", "backend", "memory free / total", "current job", "circuit"):
        t.add_column(col)
    for g in st.gpus:
        mem = f"{g.vram_free_bytes:,} / {g.vram_total_bytes:,}" if g.vram_total_bytes else "—"
        t.add_row(str(g.ordinal), g.name, mem, g.current_job_id or "—",
                  g.current_proof_kind or "—")  # fmt: skip
    out.print(t)
    t = Table(title="resident parameters")
    for col in ("circuit", "tier", "bytes", "in use"):
        t.add_column(col)
    for s in st.loaded_srs:
        t.add_row(s.circuit_id, type(s).Tier.Name(s.tier), f"{s.size_bytes:,}", str(s.ref_count))
    out.print(t)
    t = Table(title="queues")
    for col in ("circuit", "pending", "in progress"):
        t.add_column(col)
    for q in st.queues:
        t.add_row(q.proof_kind, str(q.pending), str(q.in_progress))
    out.print(t)
