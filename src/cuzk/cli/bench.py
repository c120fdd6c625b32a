"""``cuzk bench``: run the in-process engine on one circuit and report what it achieved.

Prints proofs per minute, seconds per proof, device busy % (the union of kernel regions over
the measured window, and over the steady state between a device's first kernel start and its
last kernel end, which leaves out the pipeline's fill and drain), the engine's hand-off
overhead, host CPU per proof (:mod:`cuzk.cli.cpu_time`), how often the engine process's
interpreter lock was found held (:mod:`cuzk.cli.gil_meter`) and per-stage medians; ``--json``
writes every job's outcome (state, error, proof hex, public inputs per partition), every
partition's stage timestamps under ``timelines`` and the verifying key's path under ``vk``;
``--timeline`` draws a Gantt chart of every partition's stages. ``--urgent CIRCUIT=PATH``
also measures how long a CRITICAL proof (a WindowPoSt) waits while this load runs
(:mod:`cuzk.cli.bench_urgent`).

The circuit's parameters are preloaded and one warm-up proof per device worker runs before
the clock starts (CPU MSM processes start and load their points on first use), so the figures
are steady state. Imports of the engine and of matplotlib happen inside the command, keeping
``cuzk --help`` fast.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cuzk.cli.bench_jobs import Outcome, curio_request
from cuzk.cli.bench_urgent import (
    UrgentOutcome,
    UrgentProbe,
    UrgentSource,
    print_urgent,
    urgent_summary,
)
from cuzk.cli.cpu_time import CpuTimes, cpu_times
from cuzk.cli.gil_meter import GilMeter, GilReading
from cuzk.cli.timeline_chart import draw_timeline, require_matplotlib
from cuzk.errors import BadInput, CuzkError

if TYPE_CHECKING:
    from cuzk.engine import EngineStatus
    from cuzk.engine.request import DeviceStatus


def _peak_rss() -> int:
    """This process's peak resident set in bytes (page-locked keys included)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _since(before: EngineStatus, d: DeviceStatus) -> dict[str, Any]:
    """A device's counters over the measured proofs (loading and warm-ups left out)."""
    b = next((x for x in before.devices if x.index == d.index), None)
    return {
        "give_backs": d.memory_give_backs - (b.memory_give_backs if b else 0),
        "uploaded_bytes": d.uploaded_bytes - (b.uploaded_bytes if b else 0),
        "kernel_seconds": d.kernel_seconds - (b.kernel_seconds if b else 0.0),
    }


def _bus(m: dict[str, Any], partitions: int) -> str:
    """Host→device bytes a partition and their rate over the device's kernel time."""
    per = m["uploaded_bytes"] / max(partitions, 1) / 1e9
    rate = m["uploaded_bytes"] / m["kernel_seconds"] / 1e9 if m["kernel_seconds"] > 0 else 0.0
    return f"{per:.1f} GB / {rate:.1f} GB/s"


def _cap_and_peak(m: dict[str, int]) -> str:
    """The cap and the device's measured peak, the peak marked when it passed the cap (the
    cap is the claim a small card's owner relies on)."""
    gib = 1 << 30
    cap = f"{m['limit_bytes'] / gib:.1f} GiB" if m["limit_bytes"] else "none"
    peak = f"{m['peak_bytes'] / gib:.2f} GiB" if m["peak_bytes"] else "not measured"
    over = m["limit_bytes"] and m["peak_bytes"] and m["peak_bytes"] > m["limit_bytes"]
    return f"{cap} / {peak}" + (" (over the cap)" if over else "")


def size_arg(text: str) -> int:
    """A size argument ("24GiB" or bytes), refused by argparse with the accepted forms."""
    from cuzk.server.config import parse_size

    try:
        return parse_size(text)
    except BadInput as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_parser(sub: Any, common: Callable[[argparse.ArgumentParser], None]) -> None:
    s = sub.add_parser(
        "bench",
        help="run the proving engine in-process (or load a daemon with "
        "--addr) and report throughput",
    )
    s.add_argument(
        "--circuit", help="circuit id, e.g. synthetic:65536 (with --addr: default synthetic:65536)"
    )
    s.add_argument("--addr", help="bench the daemon at unix:///path or host:port over gRPC")
    s.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    s.add_argument("--devices", type=int, default=1, help="devices (CPU: virtual devices)")
    s.add_argument("--workers-per-device", type=int, default=2)
    s.add_argument("--synthesis-workers", type=int, default=1)
    s.add_argument(
        "--synthesis-processes",
        type=int,
        help="processes for Filecoin witnesses (default: half the cores, at most 8)",
    )
    s.add_argument(
        "--msm-copies",
        type=int,
        help="shifted copies of the key's bases per GPU (1: none; default: the engine's auto)",
    )
    s.add_argument("--partitions", type=int, default=1, help="partitions per proof")
    s.add_argument("--proofs", "-c", type=int, default=4, help="proofs (jobs) to make")
    s.add_argument("--concurrency", "-j", type=int, default=2, help="jobs in flight at once")
    s.add_argument(
        "--inject-faults",
        type=float,
        default=0.0,
        metavar="RATE",
        help="probability of each injected fault kind per partition",
    )
    s.add_argument("--seed", type=int, default=1, help="first witness seed")
    s.add_argument(
        "--vanilla",
        type=Path,
        help="prove this request file every time (cuzk gen-vanilla; e.g. a virtual 32 GiB C1) "
        "instead of seeded witnesses; --partitions is then the file's. A directory is a "
        "request as Curio sends it (gen-vanilla --curio), converted for every proof the way "
        "the daemon converts a SubmitProofRequest, so its time counts",
    )
    s.add_argument(
        "--param-dir",
        type=Path,
        help="directory of <circuit>.params keys (default: the cache's params/)",
    )
    s.add_argument("--memory-budget", type=int, help="bytes (default: available memory)")
    s.add_argument(
        "--cpu-device-memory",
        type=size_arg,
        metavar="SIZE",
        help="CPU virtual devices report this much memory, so each gets a key budget (half of "
        "it) and its own keys as a GPU does: residency benchmarks without a GPU",
    )
    s.add_argument(
        "--device-memory-limit",
        type=size_arg,
        metavar="SIZE",
        help='keep each device\'s use under SIZE ("24GiB"): one large GPU stands in for a '
        "smaller card; keys that do not fit stream from host memory",
    )
    s.add_argument(
        "--staging",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="stage inputs under a second per-device lock (the default; "
        "--no-staging: everything inside the compute lock)",
    )
    s.add_argument(
        "--defer-witness",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="leave SHA-256 compressions' inner bits to the backend (the default; on a GPU "
        "they are made on the device); --no-defer-witness: the whole witness on the host",
    )
    s.add_argument(
        "--defer-poseidon",
        choices=["cpu", "all", "off"],
        help="Poseidon hashes left to the backend: cpu (on the CPU backend only), all (on the "
        "GPU too), off (default: the engine's)",
    )
    s.add_argument(
        "--urgent",
        metavar="CIRCUIT=PATH",
        help="while the bench runs, also prove this request (a file or a Curio directory) at "
        "CRITICAL priority every --urgent-every seconds, one at a time, and report its latency "
        "(e.g. wpost-32g=W.dir during a porep-32g run)",
    )
    s.add_argument("--urgent-every", type=float, default=20.0, metavar="SECONDS")
    s.add_argument(
        "--urgent-lane",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="a device worker per device for CRITICAL/HIGH partitions only (the default; "
        "--no-urgent-lane: measure without it)",
    )
    s.add_argument("--json", type=Path, help="write per-job results here")
    s.add_argument("--timeline", type=Path, help="draw a Gantt chart (PNG; needs matplotlib)")
    common(s)


def cmd_bench(args: argparse.Namespace) -> int:
    if args.addr is not None:
        from cuzk.cli.daemon_bench import bench_daemon

        if args.urgent is not None:
            raise BadInput("--urgent runs in-process only (without --addr)")
        return bench_daemon(args)
    if args.circuit is None:
        raise BadInput("--circuit is required (unless --addr names a daemon)")
    from cuzk.engine import Engine, EngineConfig, FaultInjection
    from cuzk.r1cs.cache import default_cache_dir

    for name in (
        "devices",
        "workers_per_device",
        "synthesis_workers",
        "partitions",
        "proofs",
        "concurrency",
    ):
        if getattr(args, name) < 1:
            raise BadInput(f"--{name.replace('_', '-')} must be at least 1")
    if not 0.0 <= args.inject_faults <= 1.0:
        raise BadInput("--inject-faults must lie in [0, 1]")
    if args.timeline is not None:
        require_matplotlib()
    urgent = None if args.urgent is None else UrgentSource.parse(args.urgent)
    if urgent is not None and not args.urgent_every > 0:
        raise BadInput("--urgent-every must be a positive number of seconds")
    args.payload = args.curio = None
    if args.vanilla is not None:
        from cuzk.circuits import open_statement
        from cuzk.cli.inputs import read_input

        if args.vanilla.is_dir():
            from cuzk.cli.filecoin_cmd import curio_message

            args.curio = curio_message(args.vanilla)
            first = _request(args, 0, "bench-check")
            if first.circuit_id != args.circuit:
                raise BadInput(f"{args.vanilla} is a {first.circuit_id} request, "
                               f"not {args.circuit}")  # fmt: skip
            args.payload = first.payload
        else:
            args.payload = read_input(args.vanilla)
        args.partitions = open_statement(args.circuit, payload=args.payload).partitions
    config = EngineConfig(
        param_dir=args.param_dir or default_cache_dir().parent / "params",
        backend=args.backend,
        devices=args.devices,
        workers_per_device=args.workers_per_device,
        synthesis_workers=args.synthesis_workers,
        synthesis_processes=args.synthesis_processes,
        msm_workers=args.workers,
        memory_budget=args.memory_budget,
        staging=args.staging,
        urgent_lane=args.urgent_lane,
        defer_witness=args.defer_witness,
        msm_copies=args.msm_copies,
        cpu_device_memory=args.cpu_device_memory,
        device_memory_limit=args.device_memory_limit,
        shape_cache=args.shape_cache,
        max_partitions=max(64, args.partitions),
        faults=FaultInjection.uniform(args.inject_faults, seed=args.seed)
        if args.inject_faults
        else FaultInjection(),
        **({} if args.defer_poseidon is None else {"defer_poseidon": args.defer_poseidon}),
    )
    with Engine(config) as engine:
        t0 = time.perf_counter()
        engine.preload(args.circuit)
        keys_s = time.perf_counter() - t0  # the key read and placed (no proof yet)
        _warm_up(engine, args)
        probe = None
        if urgent is not None:
            engine.preload(urgent.circuit)
            probe = UrgentProbe(engine, urgent, args.urgent_every)
            probe.warm_up()
        load_s = time.perf_counter() - t0
        before = engine.status()
        window_start = before.uptime
        cpu_start = cpu_times()
        with GilMeter() as gil:
            outcomes, wall = _run_jobs(engine, args, probe)
        cpu_end = cpu_times()
        status = engine.status()
        window = (window_start, status.uptime)

        def timelines_of(ids: set) -> list:
            return [p.timeline for j in status.jobs if j.job_id in ids for p in j.partitions]

        timelines = timelines_of({o.job_id for o in outcomes})
        urgent_timelines = [] if probe is None else timelines_of({o.job_id for o in probe.outcomes})
        vk = str(config.params_path(args.circuit).with_suffix(".vk"))
        urgent_vk = (
            "" if urgent is None else str(config.params_path(urgent.circuit).with_suffix(".vk"))
        )
    cpu = None if cpu_start is None or cpu_end is None else cpu_end - cpu_start
    report = _summarize(
        args, outcomes, timelines, window, wall, (keys_s, load_s), cpu, gil.reading()
    )
    # What the key's MSMs ran with (auto may have made none): a run is read with it.
    report["msm_copies"] = next(
        (s.msm_copies for s in status.srs if s.circuit_id == args.circuit), None
    )
    report["streamed"] = list(
        next((s.streamed for s in status.srs if s.circuit_id == args.circuit), ())
    )
    report["partitions_measured"] = len(timelines)
    report["device_memory"] = [
        {
            "device": d.index,
            "usable_bytes": d.memory_total,
            "limit_bytes": d.memory_limit,
            "peak_bytes": d.memory_peak,
            **_since(before, d),
            "staging_bytes": d.staging_total,
            "keys_bytes": d.key_bytes,
        }
        for d in status.devices
    ]
    report["host_peak_rss_bytes"] = _peak_rss()
    report["host_srs_bytes"] = status.budget.by_kind.get("srs", 0)
    if probe is not None:
        report["urgent"] = urgent_summary(probe, urgent_timelines)
    _print_report(args, report)
    if probe is not None:
        print_urgent(report)
    if args.json is not None:
        urgent_doc = None if probe is None else (probe.outcomes, urgent_timelines, urgent_vk)
        _write_json(args, report, outcomes, vk, timelines, urgent_doc)
    if args.timeline is not None:
        draw_timeline(
            timelines + urgent_timelines,
            args.timeline,
            title=f"{args.circuit} × {args.partitions} on "
            f"{args.devices} {args.backend} device(s), {args.workers_per_device} "
            f"workers each{', staging' if args.staging else ''}",
        )
    failed = sum(o.state != "succeeded" for o in outcomes)
    if probe is not None:
        failed += sum(o.state != "succeeded" for o in probe.outcomes)
    return 0 if failed == 0 or args.inject_faults > 0 else 3


def _request(args: argparse.Namespace, seed: int, request_id: str) -> Any:
    """The bench's request: ``--partitions`` seeded partitions, or the ``--vanilla`` file."""
    from cuzk.engine import ProofRequest

    if args.curio is not None:
        return curio_request(args.curio, request_id)
    if args.vanilla is not None:
        return ProofRequest(args.circuit, payload=args.payload, request_id=request_id)
    return ProofRequest.of(args.circuit, partitions=args.partitions, seed=seed,
                           request_id=request_id)  # fmt: skip


def _warm_up(engine: Any, args: argparse.Namespace) -> None:
    """One unmeasured proof per device worker: the CPU backend's MSM processes start and load
    their points on first use, and numba compiles on first call."""

    n = args.devices * args.workers_per_device
    ids = [engine.submit(_request(args, (1 << 63) + i, f"warm-up-{i}")) for i in range(n)]
    for job_id in ids:
        try:
            engine.result(job_id)
        except CuzkError:
            pass  # an injected fault; the warm-up still happened


def _run_jobs(
    engine: Any, args: argparse.Namespace, probe: UrgentProbe | None = None
) -> tuple[list[Outcome], float]:
    """``--proofs`` jobs, at most ``--concurrency`` in flight, with a progress bar; the urgent
    probe (if any) submits beside them until they are done."""
    from cuzk.cli.tasks import count_progress, err

    outcomes: list[Outcome | None] = [None] * args.proofs
    next_index = iter(range(args.proofs))
    lock = threading.Lock()

    with count_progress("bench") as bar:
        task = bar.add_task(args.circuit, total=args.proofs)

        def client() -> None:
            while True:
                with lock:
                    i = next(next_index, None)
                if i is None:
                    return
                request = _request(args, args.seed + i * args.partitions, f"bench-{i}")
                job_id = None
                try:
                    job_id = engine.submit(request)
                    r = engine.result(job_id)
                    outcomes[i] = Outcome(i, job_id, "succeeded", None, r.proof, r.public_inputs)
                except CuzkError as e:
                    state = "cancelled" if type(e).__name__ == "JobCancelled" else "failed"
                    outcomes[i] = Outcome(i, job_id, state, str(e), None, None)
                bar.advance(task)
                if not err.is_terminal:  # logs of long runs: a line per proof as it ends
                    done = outcomes[i]
                    err.print(f"bench: proof {i} {done.state if done else '?'} at "
                              f"{time.perf_counter() - t0:.1f} s")  # fmt: skip

        t0 = time.perf_counter()
        clients = [
            threading.Thread(target=client, name=f"bench-client-{k}")
            for k in range(min(args.concurrency, args.proofs))
        ]
        for c in clients:
            c.start()
        if probe is not None:
            probe.start(t0)
        for c in clients:
            c.join()
        wall = time.perf_counter() - t0
        if probe is not None:
            probe.stop()
    return [o for o in outcomes if o is not None], wall


def _summarize(
    args: argparse.Namespace,
    outcomes: list[Outcome],
    timelines: list,
    window: tuple[float, float],
    wall: float,
    load: tuple[float, float],
    cpu: CpuTimes | None,
    gil: GilReading,
) -> dict:
    """``load``: (seconds to place the key, seconds until the warm-up proofs were done)."""
    from cuzk.engine.timeline import (
        busy_fraction,
        handoff_gaps,
        kernel_intervals,
        kernels_span,
        stage_medians,
        steady_busy_fraction,
    )

    ok = sum(o.state == "succeeded" for o in outcomes)
    gaps = [g for d in range(args.devices) for g in handoff_gaps(timelines, d)]
    spans = kernel_intervals(timelines)  # sorted: the first is the device's first work
    first_witness = min((t.synth_end for t in timelines if t.synth_end is not None), default=None)
    return {
        "circuit": args.circuit,
        "backend": args.backend,
        "devices": args.devices,
        "workers_per_device": args.workers_per_device,
        "staging": args.staging,
        "partitions": args.partitions,
        "proofs": len(outcomes),
        "succeeded": ok,
        "failed": sum(o.state == "failed" for o in outcomes),
        "cancelled": sum(o.state == "cancelled" for o in outcomes),
        "wall_s": wall,
        "keys_s": load[0],
        "load_s": load[1],
        "proofs_per_minute": 60.0 * ok / wall if wall > 0 else 0.0,
        "s_per_proof": wall / ok if ok else None,
        # The kernels' span per proof: the measured window without its fill and drain.
        "s_per_proof_steady": kernels_span(timelines) / ok if ok else None,
        # The fill, from the window's start: the first request opened (its payload parsed and
        # checked) and its partitions queued, the first witness ready, then the device's
        # first kernels (staging between the last two).
        "first_queued_s": min(t.queued for t in timelines) - window[0] if timelines else None,
        "first_witness_s": None if first_witness is None else first_witness - window[0],
        "first_kernels_s": spans[0][0] - window[0] if spans else None,
        "device_busy": [busy_fraction(timelines, d, window) for d in range(args.devices)],
        "device_busy_steady": [steady_busy_fraction(timelines, d) for d in range(args.devices)],
        "handoff_gap_median_s": statistics.median(gaps) if gaps else None,
        "stage_medians_s": stage_medians(timelines),
        # Host CPU seconds per succeeded proof over the measured window (None: no /proc).
        "host_cpu_s_per_proof": None
        if cpu is None or not ok
        else {"engine_process": cpu.process_s / ok, "helper_processes": cpu.helpers_s / ok},
        # The engine process's interpreter lock over the window (cuzk.cli.gil_meter).
        "engine_gil": dataclasses.asdict(gil),
    }


def _print_report(args: argparse.Namespace, report: dict) -> None:
    from rich.table import Table

    from cuzk.cli.tasks import out

    table = Table(
        title=f"cuzk bench — {args.circuit} × {args.partitions} partition(s), "
        f"{args.devices} {args.backend} device(s) × {args.workers_per_device} workers"
    )
    table.add_column("metric")
    table.add_column("value", justify="right")
    spp = report["s_per_proof"]
    gap = report["handoff_gap_median_s"]
    rows = [
        (
            "proofs (ok / failed / cancelled)",
            f"{report['succeeded']} / {report['failed']} / {report['cancelled']}",
        ),
        (
            "wall time",
            f"{report['wall_s']:.2f} s (+ {report['load_s']:.2f} s loading: the key in "
            f"{report['keys_s']:.2f} s, then the warm-up proofs)",
        ),
        ("proofs per minute", f"{report['proofs_per_minute']:.1f}"),
        ("seconds per proof", "—" if spp is None else f"{spp:.3f}"),
        (
            "seconds per proof, pipeline full (first kernels to last)",
            "—" if report["s_per_proof_steady"] is None else f"{report['s_per_proof_steady']:.3f}",
        ),
        (
            "fill: first request queued / first witness / first kernels (s)",
            " / ".join(
                "—" if report[k] is None else f"{report[k]:.2f}"
                for k in ("first_queued_s", "first_witness_s", "first_kernels_s")
            ),
        ),
        *(
            (f"device {d} busy (whole run / steady)", f"{100 * b:.1f} % / {100 * s:.1f} %")
            for d, (b, s) in enumerate(
                zip(report["device_busy"], report["device_busy_steady"], strict=True)
            )
        ),
        ("hand-off gap (median)", "—" if gap is None else f"{gap * 1e3:.2f} ms"),
        ("MSM base copies per device (1: none)", str(report.get("msm_copies") or "—")),
        ("vectors streamed from host memory", ", ".join(report.get("streamed") or ()) or "none"),
        *(
            (f"device {m['device']} memory: cap / peak measured", _cap_and_peak(m))
            for m in report.get("device_memory") or ()
        ),
        *(
            (f"device {m['device']}: pool give-backs (device-wide waits)", str(m["give_backs"]))
            for m in report.get("device_memory") or ()
            if m.get("limit_bytes")
        ),
        *(
            (
                f"device {m['device']}: host → device a partition / rate in kernel time",
                _bus(m, report.get("partitions_measured", 0)),
            )
            for m in report.get("device_memory") or ()
            if m.get("uploaded_bytes")
        ),
        (
            "host peak RSS (engine process)",
            f"{report.get('host_peak_rss_bytes', 0) / 2**30:.2f} GiB",
        ),
        ("host CPU per proof (engine process + helpers)", _cpu_text(report)),
        (
            "engine GIL found held / time lost waiting",
            f"{100 * report['engine_gil']['held_share']:.1f} % / "
            f"{100 * report['engine_gil']['wait_share']:.1f} %",
        ),
    ]
    for k, v in rows:
        table.add_row(k, v)
    out.print(table)
    stages = Table(title="per-partition stage medians")
    stages.add_column("stage")
    stages.add_column("median (s)", justify="right")
    for name, seconds in report["stage_medians_s"].items():
        stages.add_row(name, f"{seconds:.4f}")
    out.print(stages)


def _cpu_text(report: dict) -> str:
    cpu = report["host_cpu_s_per_proof"]
    if cpu is None:
        return "—"
    return f"{cpu['engine_process']:.1f} s + {cpu['helper_processes']:.1f} s"


def _job_doc(o: Outcome | UrgentOutcome) -> dict:
    return {
        "index": o.index,
        "job_id": o.job_id,
        "state": o.state,
        "error": o.error,
        "proof": o.proof.hex() if o.proof is not None else None,
        # One list of decimal strings per partition (as `cuzk prove --inputs-out`).
        "public_inputs": None
        if o.public_inputs is None
        else [[str(x) for x in part] for part in o.public_inputs],
    }


def _write_json(
    args: argparse.Namespace,
    report: dict,
    outcomes: list[Outcome],
    vk: str,
    timelines: list,
    urgent: tuple[list[UrgentOutcome], list, str] | None = None,
) -> None:
    doc = {
        "vk": vk,
        "summary": report,
        "jobs": [_job_doc(o) for o in outcomes],
        # Every measured partition's stage timestamps (seconds since the engine started), so
        # a run's hand-offs can be analysed after the fact, not only read off the chart.
        "timelines": [dataclasses.asdict(t) for t in timelines],
    }
    if urgent is not None:  # --urgent: its key, jobs (when submitted, latency), timelines
        outcomes_u, timelines_u, doc["urgent_vk"] = urgent
        doc["urgent_jobs"] = [
            {
                **_job_doc(o),
                "submitted_s": round(o.submitted_s, 4),
                "latency_s": round(o.latency_s, 4),
            }
            for o in outcomes_u
        ]
        doc["urgent_timelines"] = [dataclasses.asdict(t) for t in timelines_u]
    try:
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    except OSError as e:
        raise BadInput(f"cannot write {args.json}: {e.strerror}") from e
