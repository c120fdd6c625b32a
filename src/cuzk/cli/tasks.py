"""What the CLI commands do, with progress and timing output (kept apart from argument parsing).

Everything long shows progress on stderr; tables go to stdout.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from cuzk.backend import Backend, get_backend
from cuzk.circuits import get_circuit, key_file_stem
from cuzk.groth16 import Proof, Timings, prove, read_params, verify
from cuzk.r1cs import Circuit, R1CSShape
from cuzk.r1cs.cache import ShapeCache, default_cache_dir

err = Console(stderr=True)
out = Console()


@contextmanager
def _status(message: str) -> Iterator[None]:
    t0 = time.perf_counter()
    with err.status(message):
        yield
    err.print(f"[dim]{message.rstrip('.…')} — {time.perf_counter() - t0:.2f} s[/dim]")


def load_shape(circuit_id: str, shape_cache: Path | None) -> R1CSShape:
    cache = ShapeCache(shape_cache)
    circuit = get_circuit(circuit_id)
    fresh = not (cache.path_for(circuit_id) / "meta.json").exists()
    label = "synthesizing circuit shape (once per circuit type)" if fresh else "loading shape"
    with _status(f"{label} {circuit_id}…"):
        return cache.get(circuit_id, circuit)


def run_setup(
    circuit_id: str,
    out_dir: Path,
    *,
    seed: int | None,
    workers: int | None,
    shape_cache: Path | None,
    backend: str = "cpu",
    device: int = 0,
) -> tuple[Path, float]:
    """Test parameters for ``circuit_id``; the fixed-base work runs in a CPU worker pool, or
    on GPU ``device`` with ``backend="cuda"``."""
    from cuzk.curve.pool import MsmPool
    from cuzk.groth16.setup import generate_parameters

    t0 = time.perf_counter()
    shape = load_shape(circuit_id, shape_cache)
    with (
        ExitStack() as stack,
        Progress(
            TextColumn("setup {task.description}"),
            BarColumn(),
            TextColumn("{task.completed:,}/{task.total:,} points"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=err,
            transient=True,
        ) as bar,
    ):
        task = bar.add_task(circuit_id, total=1)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        cuda = backend == "cuda"
        gpu = stack.enter_context(closing(get_backend("cuda", device=device))) if cuda else None
        pool = None if cuda else stack.enter_context(MsmPool(workers))
        generate_parameters(
            shape,
            out_dir,
            key_file_stem(circuit_id),
            seed=seed,
            progress=progress,
            backend=gpu,
            pool=pool,
        )
    return out_dir / f"{key_file_stem(circuit_id)}.params", time.perf_counter() - t0


@dataclass(frozen=True)
class ProveResult:
    proof: Proof
    public_inputs: tuple[int, ...]
    timings: Timings
    total: float


def run_prove(
    circuit_id: str,
    params_path: Path,
    *,
    seed: int,
    backend_name: str,
    workers: int | None,
    shape_cache: Path | None,
    device: int = 0,
    backend: Backend | None = None,  # reuse an open backend (demo)
    circuit: Circuit | None = None,
) -> ProveResult:
    """Prove ``circuit`` (default: the registry's ``circuit_id`` with witness ``seed``)."""
    shape = load_shape(circuit_id, shape_cache)
    params = read_params(params_path)
    circuit = circuit if circuit is not None else get_circuit(circuit_id, seed)
    own = backend is None
    if backend is None:
        backend = get_backend(backend_name, workers=workers, device=device)
    try:
        t0 = time.perf_counter()
        timings = Timings()
        with _status(f"proving {circuit_id} (seed {seed}) on {backend.name}…"):
            proof, inputs = prove(circuit, shape, params, backend, timings)
        return ProveResult(proof, inputs, timings, time.perf_counter() - t0)
    finally:
        if own:
            backend.close()


def timings_table(title: str, results: list[ProveResult]) -> Table:
    table = Table(title=title)
    table.add_column("stage")
    for i in range(len(results)):
        table.add_column(f"proof {i + 1} (s)", justify="right")
    stages = list(dict.fromkeys(k for r in results for k in r.timings.stages))
    for stage in stages:
        table.add_row(stage, *(f"{r.timings.stages.get(stage, 0.0):.3f}" for r in results))
    table.add_row("[bold]total[/bold]", *(f"[bold]{r.total:.3f}[/bold]" for r in results))
    return table


def run_demo(
    circuit_id: str,
    key_dir: Path | None,
    *,
    proofs: int,
    workers: int | None,
    shape_cache: Path | None,
) -> None:
    """Set up keys once (cached), then prove ``proofs`` times with fresh witnesses and verify."""

    key_dir = key_dir or default_cache_dir().parent / "params"
    params_path = key_dir / f"{key_file_stem(circuit_id)}.params"
    if not params_path.exists():
        err.print(f"no parameters for {circuit_id} in {key_dir}: running setup (once)")
        _, seconds = run_setup(
            circuit_id, key_dir, seed=None, workers=workers, shape_cache=shape_cache
        )
        err.print(f"[dim]setup — {seconds:.1f} s[/dim]")
    params = read_params(params_path)
    results = []
    with closing(get_backend("cpu", workers=workers)) as backend:
        for i in range(max(1, proofs)):
            result = run_prove(
                circuit_id,
                params_path,
                seed=i + 1,
                backend_name="cpu",
                workers=workers,
                shape_cache=shape_cache,
                backend=backend,
            )
            if not verify(params.vk, result.public_inputs, result.proof):
                raise AssertionError("unreachable: prove() returned an invalid proof")
            results.append(result)
    out.print(timings_table(f"{circuit_id} on cpu — every proof verified", results))
    out.print(f"proof: {results[-1].proof.to_bytes().hex()}")
