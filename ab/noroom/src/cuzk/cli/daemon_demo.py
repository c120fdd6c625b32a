"""``cuzk demo`` through the daemon: start one in the background (a unix socket in a temporary
directory, embedded defaults), prove fresh witnesses over gRPC with a progress bar, verify every
proof, print throughput and the timeline's path, and stop the daemon. What a newcomer runs
first, so each step says what it waits for."""

from __future__ import annotations

import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cuzk.cli.tasks import count_progress, demo_keys, err, out
from cuzk.cli.timeline_chart import draw_timeline, require_matplotlib
from cuzk.errors import BadInput, CuzkError

if TYPE_CHECKING:
    from cuzk.server.client import Client

START_TIMEOUT_S = 120.0  # the daemon must answer this soon after it is started


def run_daemon_demo(
    circuit_id: str,
    key_dir: Path | None,
    *,
    proofs: int,
    workers: int | None,
    shape_cache: Path | None,
) -> None:
    """Prove ``proofs`` fresh witnesses of ``circuit_id`` through a background daemon (keys
    from ``key_dir``, made there first if missing), verify them and report."""
    from cuzk.r1cs.cache import default_cache_dir

    key_dir = demo_keys(circuit_id, key_dir, workers, shape_cache)
    backend = _demo_backend()
    demo_dir = default_cache_dir().parent / "demo"
    demo_dir.mkdir(parents=True, exist_ok=True)
    n = max(1, proofs)
    with _daemon(key_dir, backend, workers, shape_cache) as client:
        _warm_up(client, circuit_id)
        results, wall = _prove_all(client, circuit_id, n)
    _verify_all(results)
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


def _serve_command(
    sock: str, tmp: str, key_dir: Path, backend: str, workers: int | None, shape_cache: Path | None
) -> list[str]:
    cmd = [
        sys.executable, "-m", "cuzk.cli.main", "serve",
        "--listen", sock,
        "--no-http",
        "--param-cache", str(key_dir),
        "--journal", f"{tmp}/journal.sqlite3",
        "--backend", backend,
        "--set", "log.level=warning",
    ]  # fmt: skip
    if workers:
        cmd += ["--set", f"engine.msm_workers={workers}"]
    if shape_cache:
        cmd += ["--set", f"engine.shape_cache={shape_cache}"]
    return cmd


@contextmanager
def _daemon(
    key_dir: Path, backend: str, workers: int | None, shape_cache: Path | None
) -> Iterator[Client]:
    """A ``cuzk serve`` child on a socket in a temporary directory, and a client that it has
    answered; the child is stopped (SIGTERM, then SIGKILL after 60 s) whatever happens."""
    from cuzk.server.client import Client

    with tempfile.TemporaryDirectory(prefix="cuzk-demo-") as tmp:
        sock = f"unix://{tmp}/cuzk.sock"
        cmd = _serve_command(sock, tmp, key_dir, backend, workers, shape_cache)
        log_path = Path(tmp) / "daemon.log"
        with open(log_path, "wb") as log_file:
            daemon = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT)
        try:
            with Client(sock) as client:
                _wait_for(client, daemon, log_path)
                err.print(f"[dim]daemon (pid {daemon.pid}, {backend}) listening on {sock}[/dim]")
                yield client
        finally:
            daemon.terminate()
            try:
                daemon.wait(60)
            except subprocess.TimeoutExpired:
                daemon.kill()


def _warm_up(client: Client, circuit_id: str) -> None:
    """Load the key into the daemon and prove once, so the figures that follow are steady."""
    from cuzk.server.proto import proving_pb2 as pb

    t0 = time.perf_counter()
    with err.status(f"loading {circuit_id} parameters into the daemon…"):
        client.preload(circuit_id)
        client.prove(
            pb.SubmitProofRequest(circuit_id=circuit_id, seeds=[(1 << 63) + secrets.randbits(32)])
        )
    err.print(
        f"[dim]parameters loaded, warm-up proof done — {time.perf_counter() - t0:.1f} s[/dim]"
    )


def _prove_all(client: Client, circuit_id: str, n: int) -> tuple[list[Any], float]:
    """Submit ``n`` jobs at once, await each in order; (outcomes, wall seconds)."""
    from cuzk.server.proto import proving_pb2 as pb

    results: list[Any] = []
    t0 = time.perf_counter()
    with count_progress("proving") as bar:
        task = bar.add_task(f"{circuit_id} over gRPC", total=n)
        ids = [
            client.submit(
                pb.SubmitProofRequest(circuit_id=circuit_id, seeds=[secrets.randbits(63)])
            )
            for _ in range(n)
        ]
        for job_id in ids:
            results.append(client.await_proof(job_id))
            bar.advance(task)
    return results, time.perf_counter() - t0


def _verify_all(results: list[Any]) -> None:
    """Every job completed and every proof verifies against the daemon's verifying key."""
    from cuzk.groth16 import proofs_from_bytes, read_vk, verify

    bad = [o for o in results if o.status != "completed"]
    if bad:
        raise CuzkError(f"{len(bad)} demo proof(s) failed: {bad[0].error or bad[0].status}")
    vk = read_vk(Path(results[0].vk_path))
    for o in results:
        for inputs, proof in zip(o.public_inputs, proofs_from_bytes(o.proof), strict=True):
            if not verify(vk, inputs, proof):
                raise CuzkError(f"{o.job_id}: the daemon returned a proof that does not verify")


def _demo_backend() -> str:
    try:
        from cuzk.backend.cuda import cuda_available

        return "cuda" if cuda_available()[0] else "cpu"
    except Exception:  # anything wrong with CUDA means the CPU
        return "cpu"


def _wait_for(client: Any, daemon: subprocess.Popen, log_path: Path) -> None:
    from cuzk.server.client import DaemonUnavailable

    deadline = time.monotonic() + START_TIMEOUT_S
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
    raise CuzkError(f"the daemon did not start within {START_TIMEOUT_S:g} s")


def _demo_table(circuit_id: str, backend: str, results: list, wall: float) -> None:
    from rich.table import Table

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
