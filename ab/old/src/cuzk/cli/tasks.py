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
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from cuzk.backend import get_backend
from cuzk.circuits import get_circuit, key_file_stem
from cuzk.engine import Engine, EngineConfig, ProofRequest
from cuzk.errors import BadInput
from cuzk.groth16 import Proof, read_vk, verify
from cuzk.r1cs import R1CSShape
from cuzk.r1cs.cache import ShapeCache, default_cache_dir

err = Console(stderr=True)
out = Console()


@contextmanager
def _status(message: str) -> Iterator[None]:
    t0 = time.perf_counter()
    with err.status(message):
        yield
    err.print(f"[dim]{message.rstrip('.…')} — {time.perf_counter() - t0:.2f} s[/dim]")


def count_progress(verb: str, *, show: bool = True) -> Progress:
    """A bar on stderr for a count of proofs: "<verb> <task description>", done of total,
    time elapsed; gone once finished (``show`` False: nothing is drawn, e.g. for a warm-up)."""
    return Progress(
        f"{verb} {{task.description}}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not show,
    )


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
    """One job proved by the in-process engine: every partition's proof, verified."""

    proof: bytes  # 192 bytes per partition, in partition order
    public_inputs: tuple[tuple[int, ...], ...]  # per partition, without ONE
    load_s: float  # reading the key (and shape) onto the device
    prove_s: float  # from submission to the verified result
    stages: dict[str, float]  # per stage, summed over the partitions (engine and prover)


def engine_config(
    circuit_id: str,
    params: Path,
    *,
    backend_name: str,
    device: int,
    workers: int | None,
    shape_cache: Path | None,
    device_memory_limit: int | None = None,
) -> EngineConfig:
    """The engine a one-shot command proves with: the daemon's own pipeline (synthesis pool,
    device witness, staging, prover and self-check) on one device. ``params`` is the key file
    as `cuzk setup` names it, or its directory: the engine finds keys by circuit id."""
    param_dir = params if params.is_dir() else params.parent
    config = EngineConfig(param_dir=param_dir, backend=backend_name, msm_workers=workers,
                          shape_cache=shape_cache, device_memory_limit=device_memory_limit,
                          backend_factory=lambda _: get_backend(
                              backend_name, workers=workers, device=device,
                              memory_limit=device_memory_limit))  # fmt: skip
    where = config.params_path(circuit_id)
    if not params.is_dir() and where.resolve() != params.resolve():
        raise BadInput(
            f"{params} is not where {circuit_id}'s key is looked for ({where.name} in its "
            "directory): pass the file `cuzk setup` wrote for this circuit, or its directory"
        )
    return config


def run_prove(engine: Engine, request: ProofRequest) -> ProveResult:
    """Prove ``request`` through ``engine`` (loading its key first, if not resident) with a
    line per partition showing its stage, and return the verified result."""
    t0 = time.perf_counter()
    with _status(f"loading the key of {request.circuit_id}…"):
        engine.preload(request.circuit_id)
    t1 = time.perf_counter()
    job_id = engine.submit(request)
    with Progress(
        TextColumn("partition {task.description}"),
        TextColumn("{task.fields[state]}"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as bar:
        tasks: dict[int, TaskID] = {}
        while True:
            try:
                result = engine.result(job_id, timeout=0.2)
                break
            except TimeoutError:
                _show_partitions(engine, job_id, bar, tasks)
    t2 = time.perf_counter()
    stages: dict[str, float] = {}
    for t in result.timelines:
        for name, seconds in (*t.durations().items(), *t.stages.items()):
            stages[name] = stages.get(name, 0.0) + seconds
    return ProveResult(result.proof, result.public_inputs, t1 - t0, t2 - t1, stages)


def _show_partitions(engine: Engine, job_id: str, bar: Progress, tasks: dict[int, TaskID]) -> None:
    job = next((j for j in engine.status().jobs if j.job_id == job_id), None)
    for p in job.partitions if job is not None else ():
        if p.index not in tasks:
            tasks[p.index] = bar.add_task(str(p.index), total=1, state=p.state.value)
        bar.update(tasks[p.index], state=p.state.value, completed=int(p.state.terminal))


def stages_table(title: str, results: list[ProveResult]) -> Table:
    table = Table(title=title)
    table.add_column("stage (s, summed over partitions)")
    for i in range(len(results)):
        table.add_column(f"proof {i + 1}", justify="right")
    names = list(dict.fromkeys(k for r in results for k in r.stages))
    for name in names:
        table.add_row(name, *(f"{r.stages.get(name, 0.0):.3f}" for r in results))
    table.add_row("[bold]proving[/bold]", *(f"[bold]{r.prove_s:.3f}[/bold]" for r in results))
    return table


def demo_keys(
    circuit_id: str, key_dir: Path | None, workers: int | None, shape_cache: Path | None
) -> Path:
    """The demos' key directory (``key_dir``, else the cache's), holding parameters for
    ``circuit_id``: test parameters are made there the first time."""
    key_dir = key_dir or default_cache_dir().parent / "params"
    if not (key_dir / f"{key_file_stem(circuit_id)}.params").exists():
        err.print(f"no parameters for {circuit_id} in {key_dir}: running setup (once)")
        _, seconds = run_setup(
            circuit_id, key_dir, seed=None, workers=workers, shape_cache=shape_cache
        )
        err.print(f"[dim]setup — {seconds:.1f} s[/dim]")
    return key_dir


def run_demo(
    circuit_id: str,
    key_dir: Path | None,
    *,
    proofs: int,
    workers: int | None,
    shape_cache: Path | None,
) -> None:
    """Set up keys once (cached), then prove ``proofs`` times with fresh witnesses and verify."""
    key_dir = demo_keys(circuit_id, key_dir, workers, shape_cache)
    params_path = key_dir / f"{key_file_stem(circuit_id)}.params"
    config = engine_config(circuit_id, params_path, backend_name="cpu", device=0,
                           workers=workers, shape_cache=shape_cache)  # fmt: skip
    vk = read_vk(params_path.with_suffix(".vk"))
    with Engine(config) as engine:
        results = [
            run_prove(engine, ProofRequest.of(circuit_id, seed=i + 1))
            for i in range(max(1, proofs))
        ]
    for r in results:  # the engine verified them; a second, independent check here
        if not verify(vk, r.public_inputs[0], Proof.from_bytes(r.proof)):
            raise AssertionError("unreachable: the engine returned an invalid proof")
    out.print(stages_table(f"{circuit_id} on cpu — every proof verified", results))
    out.print(f"proof: {results[-1].proof.hex()}")
