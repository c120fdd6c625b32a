"""The device half of the pipeline: a ready partition handed to a device worker, its key
waited for on that device, the kernel region's bounds, and the two release steps after it.

A collaborator of :class:`~cuzk.engine.core.EngineCore`, not a layer of its own: it shares
the core's lock and condition (and its :class:`~cuzk.engine.lifecycle.Lifecycle`), so every
transition here is as atomic with admission as it was inside the core. The core forwards the
device workers' calls here; the thread finishing a job's last partition verifies the job here,
outside the lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from cuzk.engine.assembler import PartitionProof, assemble_job
from cuzk.engine.budget import MemoryBudget
from cuzk.engine.family import family_of
from cuzk.engine.job import Partition
from cuzk.engine.lifecycle import Lifecycle, srs_wait
from cuzk.engine.request import JobResult, JobState, PartitionState, Priority
from cuzk.engine.scheduler import Scheduler
from cuzk.engine.srs import CircuitInfo, Resident, SrsManager
from cuzk.engine.srs_entry import LOADING
from cuzk.errors import InternalError

if TYPE_CHECKING:
    from cuzk.engine.workers import Device, DeviceWorker

URGENT = Priority.HIGH  # the least urgent priority a device's urgent lane takes


class DeviceSide:
    """From READY to DONE; each method takes the engine lock briefly."""

    def __init__(
        self,
        cv: threading.Condition,
        life: Lifecycle,
        scheduler: Scheduler[Partition],
        budget: MemoryBudget,
        srs: SrsManager,
        stopping: Callable[[], bool],
    ) -> None:
        self._cv = cv
        self._life = life
        self._scheduler = scheduler
        self._budget = budget
        self._srs = srs
        self._stopping = stopping  # the core's stop flag, read under the lock

    def next_for_device(self, worker: DeviceWorker) -> Partition | None:
        with self._cv:
            while True:
                if self._stopping():
                    return None
                assert worker.device is not None
                d = worker.device.index
                part = self._scheduler.pop_ready(
                    URGENT if worker.urgent_only else None, partial(_runs_on, d)
                )
                if part is None:
                    self._cv.wait()
                    continue
                part.state = PartitionState.DEVICE_WAIT
                part.device, part.worker = d, worker.name
                if part.entry is not None:  # the key stays on this device while it runs
                    part.entry.bound[d] += 1
                    part.on_device = d
                self._life.stamp(part, "device_pick")
                self._cv.notify_all()  # the look-ahead has room again
                return part

    def wait_resident(self, part: Partition) -> Resident | None:
        """The partition's key, once loaded on its device; None when that load failed while
        the key stays on other devices (the partition went back to the ready queue)."""
        with self._cv:
            entry, d = part.entry, part.on_device
            if entry is None or d is None:
                raise InternalError(f"{part.label} reached a device without a residency pin")
            self._cv.wait_for(lambda: entry.state != LOADING and entry.placed.get(d) != LOADING)
            if entry.error is not None:
                raise entry.error
            if d not in entry.placed:
                self._life.unbind(part)
                part.state = PartitionState.READY
                self._scheduler.push_ready(part.key, part)
                self._cv.notify_all()
                return None
            if part.job.vk is None and entry.params is not None:
                part.job.vk = entry.params.vk
            return entry

    def abandon(self, part: Partition) -> None:
        """A device worker gave up on a partition whose job ended while it waited to stage."""
        with self._cv:
            self._life.release(part, PartitionState.DISCARDED)

    def resident_device_bytes(self, info: CircuitInfo, device: int) -> int:
        """What resident parameters hold on ``device`` now: every key there when the devices
        have key budgets, else ``info``'s own (a staging decision's input)."""
        with self._cv:
            budgets = self._srs.device_budgets
            return budgets[device].reserved if budgets else info.point_bytes

    def begin_kernels(self, part: Partition) -> bool:
        with self._cv:
            if part.job.terminal:
                self._life.release(part, PartitionState.DISCARDED)
                return False
            part.state = PartitionState.KERNELS
            self._life.stamp(part, "kernels_start")
            return True

    def end_kernels(self, part: Partition, device: Device, seconds: float) -> None:
        with self._cv:
            self._life.stamp(part, "kernels_end")
            device.kernel_seconds += seconds

    def kernels_done(self, part: Partition) -> bool:
        """First release step: the kernel working set goes back now, and the key's place on
        the device is no longer needed by this partition."""
        with self._cv:
            self._budget.release(part.reservation, "kernel")
            self._budget.release(part.reservation, "staged")
            self._life.unbind(part)
            part.assignment = part.circuit = None
            self._cv.notify_all()
            if part.job.terminal:
                self._life.release(part, PartitionState.DISCARDED)
                return False
            part.state = PartitionState.FINALIZING
            return True

    def partition_done(self, part: Partition, output: PartitionProof) -> None:
        """Second release step; the thread finishing a job's last partition verifies it."""
        job = part.job
        with self._cv:
            self._life.stamp(part, "finalize_end")
            if job.terminal:
                self._life.release(part, PartitionState.DISCARDED)
                return
            part.output = output
            self._life.release(part, PartitionState.DONE)
            if not all(p.state is PartitionState.DONE for p in job.parts):
                return
            vk = job.vk
        try:
            if vk is None:
                raise InternalError("no verifying key was recorded for the job")
            proof, inputs = assemble_job(
                vk, [p.output for p in job.parts], family_of(job.info).unverified
            )
        except Exception as e:  # the job fails, nothing is returned
            with self._cv:
                if not job.terminal:
                    self._life.terminate(job, JobState.FAILED, e, f"verification: {e}")
            return
        with self._cv:
            if job.terminal:  # cancelled while verifying
                return
            result = JobResult(
                job.id,
                job.request.request_id,
                job.request.circuit_id,
                proof,
                inputs,
                str(job.info.vk_path),
                tuple(p.timeline() for p in job.parts),
                srs_wait(job),
            )
            self._life.succeed(job, result)


def _runs_on(device: int, part: Partition) -> bool:
    """A ready partition may go to ``device`` (its key is there or on its way)."""
    return part.entry is None or part.entry.takes(device)
