"""Engine configuration and fault injection, as frozen dataclasses validated on creation."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cuzk.backend.base import Backend
from cuzk.circuits import key_file_stem
from cuzk.engine.budget import DEFAULT_MARGIN
from cuzk.errors import BadInput
from cuzk.groth16.locate import locate_params
from cuzk.r1cs import SynthesisOptions

FAULT_KINDS = ("synthesis", "kernel", "slow_kernel", "budget", "bad_proof")


@dataclass(frozen=True)
class FaultInjection:
    """Deliberate failures for tests, demos and chaos runs; all off by default.

    Each kind fires for a partition with its probability, decided by a hash of (seed, kind,
    request key, partition) — reproducible, and independent of thread timing. ``targets``
    limits faults to jobs whose client request id is listed (None: every job).
    """

    synthesis_error: float = 0.0  # synthesis raises InternalError
    kernel_error: float = 0.0  # the kernel region raises DeviceFault (after its work ran)
    slow_kernel: float = 0.0  # the kernel region sleeps slow_kernel_s inside the lock
    slow_kernel_s: float = 0.5
    budget_exhaustion: float = 0.0  # admission refuses the partition with ResourceExhausted
    bad_proof: float = 0.0  # the assembled proof is corrupted (the assembler must catch it)
    seed: int = 0
    targets: frozenset[str] | None = None  # client request ids; None: all jobs

    def __post_init__(self) -> None:
        for name in (
            "synthesis_error",
            "kernel_error",
            "slow_kernel",
            "budget_exhaustion",
            "bad_proof",
        ):
            p = getattr(self, name)
            if not 0.0 <= p <= 1.0:
                raise BadInput(f"fault probability {name} must lie in [0, 1], got {p}")
        if self.slow_kernel_s < 0:
            raise BadInput("slow_kernel_s must be non-negative")

    @classmethod
    def uniform(cls, rate: float, seed: int = 0, slow_kernel_s: float = 0.05) -> FaultInjection:
        """Every kind at ``rate`` (``cuzk bench --inject-faults RATE``)."""
        return cls(rate, rate, rate, slow_kernel_s, rate, rate, seed)

    @property
    def active(self) -> bool:
        return any(
            (
                self.synthesis_error,
                self.kernel_error,
                self.slow_kernel,
                self.budget_exhaustion,
                self.bad_proof,
            )
        )

    def fires(self, kind: str, request_key: str, partition: int) -> bool:
        """Whether fault ``kind`` hits this partition of the job keyed ``request_key``."""
        p = {
            "synthesis": self.synthesis_error,
            "kernel": self.kernel_error,
            "slow_kernel": self.slow_kernel,
            "budget": self.budget_exhaustion,
            "bad_proof": self.bad_proof,
        }[kind]
        if p <= 0.0 or (self.targets is not None and request_key not in self.targets):
            return False
        if p >= 1.0:
            return True
        digest = hashlib.blake2b(
            f"{self.seed}/{kind}/{request_key}/{partition}".encode(), digest_size=8
        ).digest()
        return int.from_bytes(digest, "little") / 2**64 < p


MAX_JOIN_TIMEOUT_S = 3600.0  # a thread that has not stopped in an hour never will

BackendFactory = Callable[[int], Backend]
"""Makes the backend for device index i; the engine closes what it returns at shutdown."""


@dataclass(frozen=True)
class EngineConfig:
    """How the engine is built. Sizes are bytes, times seconds."""

    param_dir: Path  # keys live at param_dir/<circuit id with ':' → '-'>.params
    backend: str = "cpu"  # "cpu" (K virtual devices) or "cuda" (K GPUs, indices 0..K-1)
    devices: int = 1  # K
    workers_per_device: int = 2  # N device workers share one compute lock per device
    # One more device worker per device that takes only CRITICAL/HIGH partitions, so a
    # WindowPoSt is staged at once and runs next, not after the partition staged beside it.
    urgent_lane: bool = True
    synthesis_workers: int = 1  # threads (see cuzk.engine.workers for why threads)
    # Processes for Python-heavy witnesses (Filecoin circuits; cuzk.engine.synth_pool);
    # None: half the cores (at most 8) on machines of 4+ cores, else 0 (in-thread).
    synthesis_processes: int | None = None
    synthesis_lookahead: int | None = None  # partitions synthesizing or ready; None: see below
    msm_workers: int | None = None  # CPU: MSM processes per device; None: cores / K
    memory_budget: int | None = None  # None: MemAvailable − memory_margin
    memory_margin: int = DEFAULT_MARGIN
    shape_cache: Path | None = None  # pre-compiled circuit directory; None: shapes in memory
    staging: bool = True  # stage inputs under a second per-device lock (cuzk.engine.staging)
    # Leave SHA-256 compressions' inner bits to the backend (cuzk.r1cs.deferred): on a GPU
    # they are made on the device, on the CPU by the numba executor at staging.
    defer_witness: bool = True
    # Leave Poseidon hashes' values (most of a PoSt witness) to the backend too: "all" (the
    # CUDA kernel backend/cuda/poseidon_witness.cu or the CPU executor; on an H200 a 32 GiB
    # WindowPoSt takes 9.1 s instead of 10.7), "cpu" (only when the backend is the CPU),
    # "off" (all on the host).
    defer_poseidon: str = "all"
    staging_budget: int | None = None  # bytes per device for staged partitions; None: auto
    # Shifted copies of a resident key's bases kept on each GPU (faster MSMs; cuzk.engine.srs):
    # None: 13 (one bucket row) when they take at most half the free key budget, else none;
    # 1: never; K: up to K when they fit.
    msm_copies: int | None = None
    # Keep every device's use under this many bytes (None: the whole device): resident keys,
    # staged partitions, kernel scratch, CuPy's pools and the CUDA context. A key that does not
    # fit streams its vectors from page-locked host memory (cuzk.engine.key_plan), so one large
    # GPU can stand in for a 16-48 GB card. On CPU virtual devices: the size they report.
    device_memory_limit: int | None = None
    # CPU virtual devices report this much memory (None: none): each gets a key budget and its
    # own keys as a GPU does, so residency can be benchmarked without one (cuzk bench).
    cpu_device_memory: int | None = None
    pinned_pool_bytes: int = 2 << 30  # idle pinned host buffers kept per device
    max_partitions: int = 64  # per request
    retain_jobs: int = 10_000  # terminal jobs remembered (for result() and dedup)
    join_timeout_s: float = 30.0  # shutdown: how long to wait for each thread
    faults: FaultInjection = field(default_factory=FaultInjection)
    backend_factory: BackendFactory | None = None  # tests: share or wrap backends

    def __post_init__(self) -> None:
        if not isinstance(self.param_dir, Path):
            object.__setattr__(self, "param_dir", Path(self.param_dir))
        if self.shape_cache is not None and not isinstance(self.shape_cache, Path):
            object.__setattr__(self, "shape_cache", Path(self.shape_cache))
        if self.backend not in ("cpu", "cuda"):
            raise BadInput(f"unknown backend {self.backend!r}; available: cpu, cuda")
        if self.defer_poseidon not in ("cpu", "all", "off"):
            raise BadInput(f"defer_poseidon must be cpu, all or off, got {self.defer_poseidon!r}")
        for name in (
            "devices",
            "workers_per_device",
            "synthesis_workers",
            "max_partitions",
            "retain_jobs",
        ):
            if getattr(self, name) < 1:
                raise BadInput(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.synthesis_processes is not None and self.synthesis_processes < 0:
            raise BadInput("synthesis_processes must be non-negative")
        if self.synthesis_lookahead is not None and self.synthesis_lookahead < 1:
            raise BadInput("synthesis_lookahead must be at least 1")
        if self.msm_workers is not None and self.msm_workers < 1:
            raise BadInput("msm_workers must be at least 1")
        if self.memory_budget is not None and self.memory_budget <= 0:
            raise BadInput("memory_budget must be positive")
        if self.staging_budget is not None and self.staging_budget <= 0:
            raise BadInput("staging_budget must be positive")
        if self.msm_copies is not None and not 1 <= self.msm_copies <= 64:
            raise BadInput("msm_copies must be between 1 and 64")
        if self.device_memory_limit is not None and self.device_memory_limit <= 0:
            raise BadInput("device_memory_limit must be positive")
        if self.cpu_device_memory is not None and (
            self.backend != "cpu" or self.cpu_device_memory <= 0
        ):
            raise BadInput("cpu_device_memory is a positive size for the cpu backend only")
        if self.pinned_pool_bytes < 0:
            raise BadInput("pinned_pool_bytes must be non-negative")
        if not 0 < self.join_timeout_s <= MAX_JOIN_TIMEOUT_S:  # (False for NaN too)
            raise BadInput(
                f"join_timeout_s must be in (0, {MAX_JOIN_TIMEOUT_S:g}], got {self.join_timeout_s}"
            )

    @property
    def poseidon_deferred(self) -> bool:
        """Whether this engine's witnesses leave Poseidon hashes to its backend."""
        return self.defer_poseidon == "all" or (
            self.defer_poseidon == "cpu" and self.backend == "cpu"
        )

    @property
    def synthesis_options(self) -> SynthesisOptions:
        """How this engine's witnesses are synthesized (what they leave to the backend)."""
        return SynthesisOptions(
            defer_bit_programs=self.defer_witness, defer_poseidon=self.poseidon_deferred
        )

    @property
    def lookahead(self) -> int:
        """Partitions synthesizing or synthesized but not yet on a device: enough to keep every
        device worker and every synthesis process busy."""
        return self.synthesis_lookahead or max(
            self.devices * self.workers_per_device, self.synthesis_threads
        )

    @property
    def processes_for_synthesis(self) -> int:
        if self.synthesis_processes is not None:
            return self.synthesis_processes
        cores = os.cpu_count() or 1
        return min(8, cores // 2) if cores >= 4 else 0

    @property
    def synthesis_threads(self) -> int:
        """One thread per process at least: a thread waits on each remote witness."""
        return max(self.synthesis_workers, self.processes_for_synthesis)

    @property
    def msm_workers_per_device(self) -> int:
        return self.msm_workers or max(1, (os.cpu_count() or 1) // self.devices)

    @property
    def capped(self) -> bool:
        """Devices run under a memory cap (their kernels then keep fewer vectors alive:
        :func:`cuzk.engine.budget.capped_kernel_bytes`)."""
        return self.device_memory_limit is not None

    def params_path(self, circuit_id: str) -> Path:
        """Where ``cuzk setup --circuit ID --out DIR`` puts the proving key, or the official
        file where Filecoin keeps it (:func:`cuzk.groth16.locate.locate_params`)."""
        return locate_params(self.param_dir, key_file_stem(circuit_id))
