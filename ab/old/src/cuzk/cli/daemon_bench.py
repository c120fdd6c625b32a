"""``cuzk bench --addr``: load against a running daemon, measured at the client.

``--proofs`` jobs of ``--circuit`` go through unary Prove calls, ``--concurrency`` in flight
(after a warm-up of one job per device worker, which also loads the key); latency is from the
call to the proof received, and the daemon's overhead is that latency less the engine's own
queued→finalized span.
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import threading
import time
from typing import Any

from cuzk.cli.client_cmd import token
from cuzk.cli.tasks import count_progress
from cuzk.cli.timeline_chart import draw_timeline, require_matplotlib
from cuzk.errors import BadInput, CuzkError

DEFAULT_BENCH_CIRCUIT = "synthetic:65536"


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
    from cuzk.server.proto import proving_pb2 as pb

    results: list[Any] = [None] * count
    todo = iter(range(count))
    lock = threading.Lock()
    with count_progress("bench", show=show) as bar:
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
