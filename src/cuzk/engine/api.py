"""``Engine``: the public face of the proving engine (the executor, in vLLM's terms).

It builds one backend per device — always with an explicit device index, never through
CUDA_VISIBLE_DEVICES — starts the synthesis and device worker threads, forwards the API to
:class:`~cuzk.engine.core.EngineCore`, and tears everything down in order at shutdown: intake
closed, jobs finished or cancelled, in-flight partitions drained, threads joined, outcomes
delivered, circuits evicted, backends closed.

A client that wants to hear of every job's end (the daemon journals it) registers one
completion callback with :meth:`Engine.on_complete`; it is called once per job, on the
engine's delivery thread (:mod:`~cuzk.engine.completion`), never under the engine lock.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from types import TracebackType

from cuzk.backend.base import MemoryInfo
from cuzk.engine.budget import default_staging_bytes, fmt_bytes
from cuzk.engine.completion import CompletionCallback, Completions
from cuzk.engine.config import EngineConfig
from cuzk.engine.core import EngineCore
from cuzk.engine.request import CANCELLED_BY_CLIENT, EngineStatus, JobResult, ProofRequest
from cuzk.engine.staging import StagingArea
from cuzk.engine.synth_pool import SynthesisPool
from cuzk.engine.timeline import Clock
from cuzk.engine.workers import Device, DeviceWorker, SynthesisWorker, Worker

log = logging.getLogger(__name__)


class Engine:
    """An in-process proving engine. Use it as a context manager, or call :meth:`shutdown`."""

    def __init__(self, config: EngineConfig) -> None:
        config, devices = _make_devices(config)
        self.config = config
        self._clock = Clock()
        self.devices = devices
        processes = config.processes_for_synthesis
        self._synth_pool = SynthesisPool(processes) if processes else None
        self._completions = Completions()
        try:
            self._core = EngineCore(
                config, self._clock, self.devices, self._synth_pool, self._completions.post
            )
        except BaseException:
            _close_backends(self.devices)
            if self._synth_pool is not None:
                self._synth_pool.close()
            raise
        self._workers: list[Worker] = [
            SynthesisWorker(self._core, f"cuzk-synth-{i}") for i in range(config.synthesis_threads)
        ]
        for d in self.devices:
            self._workers += [
                DeviceWorker(self._core, f"cuzk-dev{d.index}-w{j}", d)
                for j in range(config.workers_per_device)
            ]
            if config.urgent_lane:
                self._workers.append(
                    DeviceWorker(self._core, f"cuzk-dev{d.index}-urgent", d, urgent_only=True)
                )
        for w in self._workers:
            w.start()

    def submit(self, request: ProofRequest, job_id: str | None = None) -> str:
        """Queue a request; returns its job id at once.

        ``job_id`` names the job (a daemon that journals jobs passes its own id, so one id
        serves the client, the journal and every status); the caller then deduplicates its
        request ids itself and the engine does not. Without it the engine names the job and
        a request id reused with the same payload returns the first job.

        Raises BadInput (unknown circuit, missing key file, too many partitions, a request id
        reused with another payload, a job id in use) or ResourceExhausted (it could never
        fit the memory budget, or the engine is shutting down).
        """
        return self._core.submit(request, job_id)

    def on_complete(self, callback: CompletionCallback) -> None:
        """Register the engine's one completion callback: called with a
        :class:`~cuzk.engine.request.JobOutcome` once for every job that ends after this call
        (succeeded, failed or cancelled), in the order they end, on one delivery thread. It
        should return quickly (it delays the next delivery, never a partition); what it
        raises is logged. Register before submitting; a second registration is an error."""
        self._completions.register(callback)

    def result(self, job_id: str, timeout: float | None = None) -> JobResult:
        """Wait for a job and return its verified result.

        Raises the failure's category (BadInput, ResourceExhausted, DeviceFault,
        InternalError) with a message naming the partition and stage, JobCancelled, BadInput
        for an unknown job id, or TimeoutError after ``timeout`` seconds.
        """
        return self._core.result(job_id, timeout)

    def prove(self, request: ProofRequest, timeout: float | None = None) -> JobResult:
        """submit() then result()."""
        return self._core.result(self._core.submit(request), timeout)

    def cancel(self, job_id: str, reason: str = CANCELLED_BY_CLIENT) -> bool:
        """Cancel a job: True if it was queued or running (it is CANCELLED now; running
        partitions finish their current stage and are discarded), False if it had already
        finished. BadInput for an unknown job id. ``reason`` is the job's error from now on
        (status, results), so that a deadline or a superseding request is not shown as a
        client's cancellation."""
        return self._core.cancel(job_id, reason)

    def preload(self, circuit_id: str, timeout: float | None = None) -> None:
        """Make a circuit's parameters resident on every device now, waiting for memory if
        needed (TimeoutError after ``timeout``); ResourceExhausted if they can never fit."""
        self._core.preload(circuit_id, timeout)

    def evict(self, circuit_id: str) -> bool:
        """Drop a circuit's parameters from every device: True if done, False if it was not
        resident or partitions in flight still use it."""
        return self._core.evict(circuit_id)

    def status(self) -> EngineStatus:
        """A consistent snapshot of jobs, partitions, budget, residency, workers, devices."""
        return self._core.snapshot(self._workers, self.devices)

    def shutdown(self, graceful: bool = True, timeout: float | None = None) -> None:
        """Stop accepting work; with ``graceful`` let every job finish (cancelling what is
        left after ``timeout`` seconds), else cancel everything now. Kernel regions in flight
        always finish. Then stop the threads, evict every circuit and close the backends.
        Idempotent; status() still works afterwards."""
        if not self._core.stop(graceful, timeout):
            return
        for w in self._workers:
            w.join(self.config.join_timeout_s)
            if w.is_alive():
                log.error("shutdown: worker %s did not stop", w.name)
        self._completions.close(self.config.join_timeout_s)  # every outcome delivered
        self._core.drop_residency()
        _close_backends(self.devices)
        if self._synth_pool is not None:
            self._synth_pool.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.shutdown(graceful=exc_type is None)

    @property
    def threads(self) -> list[threading.Thread]:
        """The engine's threads: workers and the completion delivery thread, once started
        (for monitoring and leak checks)."""
        return [*self._workers, *self._completions.threads]

    @property
    def budget_live_reservations(self) -> int:
        """Reservations still holding memory: twice the resident circuits when idle."""
        return self._core.budget_live_reservations


CPU_STAGING_BUDGET = 8 << 30  # virtual devices: accounting only, no device memory exists


def _default_staging_budget(memory: MemoryInfo | None, capped: bool) -> int:
    """Half the device's memory (the other half is for resident parameters), asked once at
    start-up; a fixed figure for CPU virtual devices, which have none. Under a memory cap the
    area starts empty and grows to one partition of each key placed on the device
    (:meth:`cuzk.engine.srs.SrsManager.place`): the rest is the keys', which stream what does
    not fit, so a key never finds half a small device taken from it."""
    if capped:
        return 1
    return CPU_STAGING_BUDGET if memory is None else default_staging_bytes(memory.usable)


#: A GPU with less memory than this runs as if capped at its whole size when no
#: ``device_memory_limit`` is set: the kernels a cap selects keep two domain vectors and each
#: MSM's scalars only while it needs them (porep-32g: 16 GiB a partition, against 44 GiB for the
#: default kernels, which only the largest GPUs hold beside any of the key). Measured on an H200:
#: at the same memory the capped kernels cost nothing (session 15, 2.19 s of GPU a partition at
#: 64 and 32 GiB), and a 32 GiB PoRep proves under 24 GiB.
AUTO_CAP_BELOW = 64 << 30


def _make_devices(config: EngineConfig) -> tuple[EngineConfig, list[Device]]:
    """The devices, and the config they run under: GPUs smaller than :data:`AUTO_CAP_BELOW`
    with no cap set get one at the largest device's size (each device then plans with its own
    memory, since a device's usable memory is the lower of the two)."""
    devices = _open_devices(config)
    if config.backend != "cuda" or config.capped:
        return config, devices
    totals = [d.memory_total for d in devices if d.memory_total is not None]
    if not totals or min(totals) >= AUTO_CAP_BELOW:
        return config, devices
    limit = max(totals)
    log.info("GPU memory %s < %s: running the capped kernels (device_memory_limit %s)",
             fmt_bytes(min(totals)), fmt_bytes(AUTO_CAP_BELOW), fmt_bytes(limit))  # fmt: skip
    _close_backends(devices)
    config = dataclasses.replace(config, device_memory_limit=limit)
    return config, _open_devices(config)


def _open_devices(config: EngineConfig) -> list[Device]:
    from cuzk.backend import get_backend

    factory = config.backend_factory or (
        lambda i: get_backend(
            config.backend,
            workers=config.msm_workers_per_device,
            device=i,
            memory_total=config.cpu_device_memory,
            memory_limit=config.device_memory_limit,
        )
    )
    devices: list[Device] = []
    try:
        for i in range(config.devices):
            backend = factory(i)  # the index is explicit, always
            staging = None
            memory = backend.memory()  # a device-wide query: asked here, once
            memory_total = None if memory is None else memory.usable  # the cap, if lower
            if config.staging:
                total = config.staging_budget or _default_staging_budget(memory, config.capped)
                # Under a cap the area is one partition per key, counted as traced, and the
                # allocator holds the cap: a partition stages beside another's kernels only
                # where that other gave its staged z back (workers: witness_read), with no
                # extra headroom (which no capped device has).
                staging = StagingArea(i, total, None if config.capped else memory_total)
            margin = 0 if memory is None else memory.margin
            devices.append(
                Device(i, backend, staging, config.pinned_pool_bytes, memory_total, margin)
            )
    except BaseException:
        _close_backends(devices)
        raise
    return devices


def _close_backends(devices: list[Device]) -> None:
    for d in devices:
        try:
            d.backend.close()
        except Exception:  # closing the others matters more
            log.exception("closing the backend of device %d", d.index)
