"""``cuzk client …`` (one RPC per subcommand), ``cuzk bench --addr`` (load against a daemon)
and the daemon demo behind ``cuzk demo``.

The daemon address comes from ``--addr``, else ``$CUZK_ADDR``, else the default socket; a token
from ``--token-file``, ``$CUZK_TOKEN`` or ``--token``. ``prove``/``await`` exit 0 for a
completed proof and 1 for a failed, cancelled or timed-out one (the reason on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from cuzk.cli.inputs import read_input
from cuzk.cli.timeline_chart import draw_timeline, require_matplotlib
from cuzk.errors import BadInput, CuzkError

if TYPE_CHECKING:
    from cuzk.server.client import Client
    from cuzk.server.proto import proving_pb2 as pb

DEFAULT_BENCH_CIRCUIT = "synthetic:65536"
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


# -- cuzk bench --addr -----------------------------------------------------------------------


def bench_daemon(args: argparse.Namespace) -> int:
    """``--proofs`` jobs of ``--circuit`` against the daemon at ``--addr``, ``--concurrency``
    in flight; latency is measured at the client (submission to proof received)."""
    from cuzk.server.client import Client

    circuit = args.circuit or DEFAULT_BENCH_CIRCUIT
    for name in ("partitions", "proofs", "concurrency"):
        if getattr(args, name) < 1:
            raise BadInput(f"--{name} must be at least 1")
    if args.timeline is not None:
        require_matplotlib()
    with Client(args.addr, token=token(args)) as client:
        client.wait_ready(10.0)
        t0 = time.perf_counter()
        client.preload(circuit)
        warm = args.devices * args.workers_per_device
        run_id = secrets.token_hex(4)
        _run_daemon_jobs(
            client,
            circuit,
            args,
            warm,
            f"bench-{run_id}-warm",
            (1 << 63) + secrets.randbits(32),
            show=False,
        )
        load_s = time.perf_counter() - t0
        outcomes, wall = _run_daemon_jobs(
            client, circuit, args, args.proofs, f"bench-{run_id}", args.seed, show=True
        )
    report = _daemon_report(circuit, args, outcomes, wall, load_s)
    _print_daemon_report(report)
    if args.json is not None:
        doc = {
            "summary": report,
            "jobs": [
                {
                    "job_id": o.job_id,
                    "state": o.status,
                    "error": o.error or None,
                    "latency_s": lat,
                    "vk": o.vk_path,
                    "proof": o.proof.hex() or None,
                    "public_inputs": [[str(x) for x in p] for p in o.public_inputs],
                }
                for o, lat in outcomes
            ],
        }
        try:
            args.json.write_text(json.dumps(doc, indent=1) + "\n")
        except OSError as e:
            raise BadInput(f"cannot write {args.json}: {e.strerror}") from e
    if args.timeline is not None:
        timelines = [t for o, _ in outcomes for t in o.timelines]
        draw_timeline(
            timelines,
            args.timeline,
            title=f"{circuit} × {args.partitions} via the daemon at {args.addr}",
        )
    return 0 if report["succeeded"] == len(outcomes) else 3


def _run_daemon_jobs(
    client: Any,
    circuit: str,
    args: argparse.Namespace,
    count: int,
    prefix: str,
    first_seed: int,
    show: bool,
) -> tuple[list, float]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from cuzk.cli.tasks import err
    from cuzk.server.proto import proving_pb2 as pb

    results: list[Any] = [None] * count
    todo = iter(range(count))
    lock = threading.Lock()
    with Progress(
        "bench {task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not show,
    ) as bar:
        task = bar.add_task(f"{circuit} via {args.addr}", total=count)

        def worker() -> None:
            while True:
                with lock:
                    i = next(todo, None)
                if i is None:
                    return
                seed = first_seed + i * args.partitions
                msg = pb.SubmitProofRequest(
                    circuit_id=circuit,
                    request_id=f"{prefix}-{i}",
                    seeds=[seed + k for k in range(args.partitions)],
                )
                t = time.perf_counter()
                outcome = client.prove(msg)
                results[i] = (outcome, time.perf_counter() - t)
                bar.advance(task)

        t0 = time.perf_counter()
        threads = [
            threading.Thread(target=worker, name=f"bench-client-{k}")
            for k in range(min(args.concurrency, count))
        ]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        wall = time.perf_counter() - t0
    missing = [i for i, r in enumerate(results) if r is None]
    if missing:
        raise CuzkError(f"{len(missing)} bench request(s) got no answer from the daemon")
    return results, wall


def _engine_seconds(outcome: Any) -> float | None:
    ts = outcome.timelines
    ends = [t.finalize_end for t in ts if t.finalize_end is not None]
    if not ts or not ends:
        return None
    return max(ends) - min(t.queued for t in ts)


def _daemon_report(
    circuit: str, args: argparse.Namespace, outcomes: list, wall: float, load_s: float
) -> dict:
    ok = [(o, lat) for o, lat in outcomes if o.status == "completed"]
    lats = [lat for _, lat in ok]
    overheads = [lat - e for o, lat in ok if (e := _engine_seconds(o)) is not None]
    return {
        "circuit": circuit,
        "addr": args.addr,
        "partitions": args.partitions,
        "proofs": len(outcomes),
        "concurrency": args.concurrency,
        "succeeded": len(ok),
        "failed": sum(o.status == "failed" for o, _ in outcomes),
        "cancelled": sum(o.status == "cancelled" for o, _ in outcomes),
        "wall_s": wall,
        "load_s": load_s,
        "proofs_per_minute": 60.0 * len(ok) / wall if wall > 0 else 0.0,
        "latency_avg_s": statistics.fmean(lats) if lats else None,
        "latency_min_s": min(lats) if lats else None,
        "latency_max_s": max(lats) if lats else None,
        # client latency minus the engine's own queued→finalized span: gRPC, journal, completion
        "daemon_overhead_median_s": statistics.median(overheads) if overheads else None,
    }


def _print_daemon_report(r: dict) -> None:
    from rich.table import Table

    from cuzk.cli.tasks import out

    def s(v: float | None, unit: str = "s", scale: float = 1.0) -> str:
        return "—" if v is None else f"{v * scale:.3f} {unit}"

    table = Table(
        title=f"cuzk bench — {r['circuit']} × {r['partitions']} partition(s) via "
        f"{r['addr']}, {r['concurrency']} in flight"
    )
    table.add_column("metric")
    table.add_column("value", justify="right")
    rows = [
        (
            "proofs (ok / failed / cancelled)",
            f"{r['succeeded']} / {r['failed']} / {r['cancelled']}",
        ),
        ("wall time", f"{r['wall_s']:.2f} s (+ {r['load_s']:.2f} s loading and warm-up)"),
        ("proofs per minute", f"{r['proofs_per_minute']:.1f}"),
        ("latency avg", s(r["latency_avg_s"])),
        ("latency min", s(r["latency_min_s"])),
        ("latency max", s(r["latency_max_s"])),
        ("daemon overhead (median)", s(r["daemon_overhead_median_s"], "ms", 1e3)),
    ]
    for k, v in rows:
        table.add_row(k, v)
    out.print(table)


# -- cuzk demo ---------------------------------------------------------------------------------


def run_daemon_demo(
    circuit_id: str,
    key_dir: Path | None,
    *,
    proofs: int,
    workers: int | None,
    shape_cache: Path | None,
) -> None:
    """Start a daemon in the background (unix socket in a temporary directory, embedded
    defaults), prove ``proofs`` fresh witnesses over gRPC with a progress bar, verify each,
    print throughput and the timeline's path, and stop the daemon."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from cuzk.circuits import key_file_stem
    from cuzk.cli.tasks import err, out, run_setup
    from cuzk.groth16 import proofs_from_bytes, read_vk, verify
    from cuzk.r1cs.cache import default_cache_dir
    from cuzk.server.client import Client
    from cuzk.server.proto import proving_pb2 as pb

    key_dir = key_dir or default_cache_dir().parent / "params"
    if not (key_dir / f"{key_file_stem(circuit_id)}.params").exists():
        err.print(f"no parameters for {circuit_id} in {key_dir}: running setup (once)")
        _, seconds = run_setup(
            circuit_id, key_dir, seed=None, workers=workers, shape_cache=shape_cache
        )
        err.print(f"[dim]setup — {seconds:.1f} s[/dim]")
    backend = _demo_backend()
    demo_dir = default_cache_dir().parent / "demo"
    demo_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="cuzk-demo-") as tmp:
        sock = f"unix://{tmp}/cuzk.sock"
        cmd = [
            sys.executable,
            "-m",
            "cuzk.cli.main",
            "serve",
            "--listen",
            sock,
            "--no-http",
            "--param-cache",
            str(key_dir),
            "--journal",
            f"{tmp}/journal.sqlite3",
            "--backend",
            backend,
            "--set",
            "log.level=warning",
        ]
        if workers:
            cmd += ["--set", f"engine.msm_workers={workers}"]
        if shape_cache:
            cmd += ["--set", f"engine.shape_cache={shape_cache}"]
        log_path = Path(tmp) / "daemon.log"
        with open(log_path, "wb") as log_file:
            daemon = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT)
        try:
            with Client(sock) as client:
                _wait_for(client, daemon, log_path)
                err.print(f"[dim]daemon (pid {daemon.pid}, {backend}) listening on {sock}[/dim]")
                t0 = time.perf_counter()
                with err.status(f"loading {circuit_id} parameters into the daemon…"):
                    client.preload(circuit_id)
                    client.prove(
                        pb.SubmitProofRequest(
                            circuit_id=circuit_id, seeds=[(1 << 63) + secrets.randbits(32)]
                        )
                    )
                err.print(
                    f"[dim]parameters loaded, warm-up proof done — "
                    f"{time.perf_counter() - t0:.1f} s[/dim]"
                )
                n = max(1, proofs)
                results: list[Any] = []
                t0 = time.perf_counter()
                with Progress(
                    "proving {task.description}",
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeElapsedColumn(),
                    console=err,
                    transient=True,
                ) as bar:
                    task = bar.add_task(f"{circuit_id} over gRPC", total=n)
                    ids = [
                        client.submit(
                            pb.SubmitProofRequest(
                                circuit_id=circuit_id, seeds=[secrets.randbits(63)]
                            )
                        )
                        for _ in range(n)
                    ]
                    for job_id in ids:
                        results.append(client.await_proof(job_id))
                        bar.advance(task)
                wall = time.perf_counter() - t0
        finally:
            daemon.terminate()
            try:
                daemon.wait(60)
            except subprocess.TimeoutExpired:
                daemon.kill()
    bad = [o for o in results if o.status != "completed"]
    if bad:
        raise CuzkError(f"{len(bad)} demo proof(s) failed: {bad[0].error or bad[0].status}")
    vk = read_vk(Path(results[0].vk_path))
    for o in results:
        for inputs, proof in zip(o.public_inputs, proofs_from_bytes(o.proof), strict=True):
            if not verify(vk, inputs, proof):
                raise CuzkError(f"{o.job_id}: the daemon returned a proof that does not verify")
    _demo_table(circuit_id, backend, results, wall)
    timeline = demo_dir / "timeline.png"
    try:
        require_matplotlib()
        draw_timeline(
            [t for o in results for t in o.timelines],
            timeline,
            title=f"cuzk demo — {n} × {circuit_id} through the daemon ({backend})",
        )
        out.print(f"timeline: {timeline}")
    except BadInput as e:
        err.print(f"[dim]no timeline picture: {e}[/dim]")


def _demo_backend() -> str:
    try:
        from cuzk.backend.cuda import cuda_available

        return "cuda" if cuda_available()[0] else "cpu"
    except Exception:  # noqa: BLE001 - anything wrong with CUDA means the CPU
        return "cpu"


def _wait_for(client: Any, daemon: subprocess.Popen, log_path: Path) -> None:
    from cuzk.server.client import DaemonUnavailable

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            tail = log_path.read_text(errors="replace")[-2000:]
            raise CuzkError(f"the daemon exited with {daemon.returncode}:\n{tail}")
        try:
            client.wait_ready(1.0)
            client.status()
            return
        except DaemonUnavailable:
            continue
    raise CuzkError("the daemon did not start within 120 s")


def _demo_table(circuit_id: str, backend: str, results: list, wall: float) -> None:
    from rich.table import Table

    from cuzk.cli.tasks import out

    table = Table(title=f"{circuit_id} on {backend} through the daemon — every proof verified")
    for col in ("job", "total ms", "queue ms", "synthesis ms", "device wait ms", "kernels ms"):
        table.add_column(col, justify="right")
    for o in results:
        t = o.timings_ms
        wait = sum(tl.durations().get("device_wait", 0.0) for tl in o.timelines)
        table.add_row(
            o.job_id,
            str(t["total"]),
            str(t["queue_wait"]),
            str(t["synthesis"]),
            str(round(wait * 1000)),
            str(t["gpu_compute"]),
        )
    out.print(table)
    out.print(f"{len(results)} proofs in {wall:.2f} s: {60 * len(results) / wall:.1f} proofs/min")
    out.print(f"proof: {results[-1].proof.hex()}")
