"""A pool of worker processes that keep point vectors resident and run MSMs on them.

arkworks holds the GIL and its points cannot be pickled, so parallel MSMs need processes that
load the bases themselves. Each registered vector is cut into one contiguous chunk per worker;
a worker mmaps the parameter file and decodes only its chunk, once. An MSM then ships each
worker just its share of scalars (and indices), every worker returns one partial sum, and the
parent adds the partial sums. Each worker serves its requests in order, so many futures may be
outstanding at once and both cores stay busy.

Threads: one I/O thread per worker sends requests and waits for either the reply or the
process's death, so a crashed worker fails its pending futures with DeviceFault instead of
hanging; the next request starts a fresh worker and replays the registrations.
"""

from __future__ import annotations

import atexit
import logging
import multiprocessing as mp
import os
import queue
import threading
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any, Literal

import numpy as np

from cuzk import errors
from cuzk.curve import _pool_worker
from cuzk.curve.points import (
    BytesLike,
    G1Point,
    G2Point,
    as_scalar_rows,
)
from cuzk.errors import BadInput, DeviceFault, InternalError, ResourceExhausted

log = logging.getLogger(__name__)

Group = Literal["g1", "g2"]
_POINT_CLASS: dict[str, Any] = {"g1": G1Point, "g2": G2Point}
_STOP = object()
# Requests that change what a worker holds run even when their job has already failed
# elsewhere, or the worker would disagree with the registry until it is restarted.
_STATE_OPS = frozenset({"register", "unregister"})
# How long close() lets idle workers exit on their own before terminating them.
_GRACE_S = 2.0


@dataclass(frozen=True)
class _Registration:
    group: Group
    path: str
    offset: int
    count: int
    chunks: tuple[tuple[int, int], ...]  # [lo, hi) per worker
    stamp: tuple[int, int, int]  # (inode, mtime ns, size): a rewritten file is a new source

    @property
    def source(self) -> tuple:
        return (self.group, self.path, self.offset, self.count, self.stamp)


class _Job:
    """One caller-visible future assembled from per-worker parts.

    The future carries ``worker_cpu_s`` once resolved: the largest CPU time any one worker
    spent on it, i.e. the wall time the job would take with a free core per worker (a
    diagnostic for benchmarks on shared machines; the rest of the wall time is queueing,
    transfer and contention).
    """

    def __init__(self, parts: int, finish: Callable[[list], Any]) -> None:
        self.future: Future = Future()
        self.future.set_running_or_notify_cancel()
        self._results: list = [None] * parts
        self._remaining = parts
        self._finish = finish
        self._lock = threading.Lock()
        self._cpu_s = 0.0

    def part_done(self, index: int, payload: Any, cpu_s: float) -> None:
        with self._lock:
            if self.future.done():
                return
            self._results[index] = payload
            self._cpu_s = max(self._cpu_s, cpu_s)
            self._remaining -= 1
            if self._remaining:
                return
        try:
            result = self._finish(self._results)
        except BaseException as e:  # delivered to the waiter
            self._fail(e)
        else:
            with self._lock:
                if not self.future.done():
                    # why the ignore below: the future carries its worker's CPU seconds to the
                    # engine's accounting (Future declares no such field)
                    self.future.worker_cpu_s = self._cpu_s  # type: ignore[attr-defined]
                    self.future.set_result(result)

    def _fail(self, exc: BaseException) -> None:
        with self._lock:
            if not self.future.done():
                self.future.set_exception(exc)

    part_failed = _fail


@dataclass
class _Request:
    op: str
    args: tuple
    buffers: Sequence[BytesLike]
    job: _Job
    part: int


class _Worker:
    """One worker process and the I/O thread that talks to it."""

    def __init__(self, core: _PoolCore, index: int) -> None:
        self.core = core
        self.index = index
        self.proc: Any = None
        self.conn: Any = None
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.busy = False  # a request is on its way to / running in the process
        self.thread = threading.Thread(target=self._run, name=f"cuzk-msm-io-{index}", daemon=True)
        self.thread.start()

    @property
    def pid(self) -> int | None:
        proc = self.proc
        return proc.pid if proc is not None and proc.is_alive() else None

    # -- I/O thread ------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            req = self.queue.get()
            if req is _STOP:
                self._stop_process()
                return
            self.busy = True
            try:
                self._serve(req)
            finally:
                self.busy = False

    def _serve(self, req: _Request) -> None:
        if self.core.closed:
            req.job.part_failed(ResourceExhausted("MsmPool is closed"))
            return
        if req.job.future.done() and req.op not in _STATE_OPS:
            return  # another part already failed; skip the wasted computation
        try:
            self._ensure_process()
            status, payload, extra = self._roundtrip(req.op, req.args, req.buffers)
        except _WorkerDied as e:
            self._fail_pending(req, e)
            return
        except BaseException as e:  # never let the I/O thread die
            req.job.part_failed(InternalError(f"MSM pool I/O: {type(e).__name__}: {e}"))
            return
        if status == "ok":
            req.job.part_done(req.part, payload, extra)
        else:
            req.job.part_failed(_rebuild_error(payload, extra))

    def _ensure_process(self) -> None:
        if self.proc is not None and self.proc.is_alive():
            return
        if self.proc is not None:
            self._discard_process()
        parent_conn, child_conn = self.core.ctx.Pipe(duplex=True)
        proc = self.core.ctx.Process(
            target=_pool_worker.main,
            args=(child_conn,),
            name=f"cuzk-msm-worker-{self.index}",
            daemon=True,
        )
        try:
            proc.start()
        except BaseException as e:
            parent_conn.close()
            raise _WorkerDied(f"MSM worker {self.index} failed to start: {e}") from e
        finally:
            child_conn.close()
        self.proc, self.conn = proc, parent_conn
        # A fresh process holds nothing: replay every registration (in registration order).
        for key, reg in self.core.registrations():
            lo, hi = reg.chunks[self.index]
            status, payload, extra = self._roundtrip(
                "register", (key, reg.group, reg.path, reg.offset, lo, hi), ()
            )
            if status != "ok":
                log.warning("replaying %s on worker %d failed: %s", key, self.index, extra)

    def _roundtrip(self, op: str, args: tuple, buffers: Sequence[BytesLike]) -> tuple:
        conn, proc = self.conn, self.proc
        try:
            conn.send((op, args, len(buffers)))
            for buf in buffers:
                # Flat byte view: send_bytes measures a 2-D view in rows, not bytes. (numpy's
                # stubs declare ndarray's buffer protocol for Python >= 3.12 only.)
                conn.send_bytes(memoryview(buf).cast("B"))  # type: ignore[arg-type]
            ready = wait([conn, proc.sentinel])
            if conn in ready:
                return conn.recv()
        except (EOFError, OSError):
            pass
        proc.join(timeout=1.0)
        raise _WorkerDied(
            f"MSM worker {self.index} (pid {proc.pid}) died"
            + (f" with exit code {proc.exitcode}" if proc.exitcode is not None else "")
        )

    def _fail_pending(self, req: _Request, died: _WorkerDied) -> None:
        exc: Exception = (
            ResourceExhausted("MsmPool is closed") if self.core.closed else DeviceFault(str(died))
        )
        if not self.core.closed:
            log.error("%s; failing its pending requests", died)
        req.job.part_failed(exc)
        self._discard_process()
        # Everything already queued for this worker was pending when it died.
        requeue_stop = False
        while True:
            try:
                other = self.queue.get_nowait()
            except queue.Empty:
                break
            if other is _STOP:
                requeue_stop = True
            else:
                other.job.part_failed(exc)
        if requeue_stop:
            self.queue.put(_STOP)

    def _discard_process(self) -> None:
        if self.conn is not None:
            self.conn.close()
        if self.proc is not None and self.proc.is_alive():
            self.proc.kill()
            self.proc.join(timeout=1.0)
        self.proc = self.conn = None

    def _stop_process(self) -> None:
        proc, conn = self.proc, self.conn
        if proc is None:
            return
        try:
            conn.send(("stop", (), 0))
        except (EOFError, OSError):
            pass
        proc.join(timeout=_GRACE_S)
        self._discard_process()

    # -- called from other threads ---------------------------------------------------------
    def terminate(self) -> None:
        """Kill the process so a busy I/O thread wakes up (used by close())."""
        proc = self.proc
        if proc is not None and proc.is_alive():
            proc.kill()


class _WorkerDied(Exception):
    pass


def _rebuild_error(name: str, message: str) -> Exception:
    cls = getattr(errors, name, None)
    if isinstance(cls, type) and issubclass(cls, errors.CuzkError) and cls is not errors.CuzkError:
        try:
            return cls(message)
        except TypeError:
            pass
    return InternalError(f"MSM worker: {name}: {message}")


def _decode_partials(group: str) -> Callable[[list], Any]:
    from_xy = _POINT_CLASS[group].from_xy_bytes_unchecked_be
    identity = _POINT_CLASS[group].identity

    def finish(parts: list) -> Any:
        total = identity()
        for xy in parts:
            total = total + from_xy(xy)
        return total

    return finish


def _split_even(n: int, parts: int) -> tuple[tuple[int, int], ...]:
    return tuple((k * n // parts, (k + 1) * n // parts) for k in range(parts))


class _PoolCore:
    """State shared by the I/O threads; separate from MsmPool so a dropped pool can be
    finalized (the threads keep the core alive, not the pool)."""

    def __init__(self, workers: int) -> None:
        # Spawned, never forked: a fork would inherit a running OpenMP pool or CUDA context.
        self.ctx = mp.get_context("spawn")
        self.lock = threading.Lock()
        self.closed = False
        self._registry: dict[str, _Registration] = {}
        self._loads: dict[str, Future] = {}
        self.workers = [_Worker(self, i) for i in range(workers)]

    def registrations(self) -> list[tuple[str, _Registration]]:
        with self.lock:
            return list(self._registry.items())

    def lookup(self, key: str) -> _Registration:
        with self.lock:
            reg = self._registry.get(key)
        if reg is None:
            raise BadInput(f"no point vector registered as {key!r}")
        return reg

    def register(self, key: str, reg: _Registration) -> Future:
        """Record a registration and queue its loads; an identical one returns the original
        load future, so waiting on it still means "resident"."""
        with self.lock:
            self._check_open()
            old = self._registry.get(key)
            if old is not None and old.source == reg.source:
                return self._loads[key]
            self._registry[key] = reg
            parts = [
                (w, "register", (key, reg.group, reg.path, reg.offset, lo, hi), ())
                for w, (lo, hi) in enumerate(reg.chunks)
            ]
            fut = self._submit_locked(parts, lambda _: None)
            self._loads[key] = fut
            return fut

    def unregister(self, key: str) -> None:
        with self.lock:
            self._check_open()
            if self._registry.pop(key, None) is None:
                return
            self._loads.pop(key, None)
            parts = [(w, "unregister", (key,), ()) for w in range(len(self.workers))]
            self._submit_locked(parts, lambda _: None)

    def submit(
        self,
        parts: Sequence[tuple[int, str, tuple, Sequence[BytesLike]]],
        finish: Callable[[list], Any],
    ) -> Future:
        """One request per (worker index, op, args, buffers); ``finish`` combines the replies."""
        with self.lock:
            self._check_open()
            return self._submit_locked(parts, finish)

    def _submit_locked(
        self,
        parts: Sequence[tuple[int, str, tuple, Sequence[BytesLike]]],
        finish: Callable[[list], Any],
    ) -> Future:
        job = _Job(len(parts), finish)
        if not parts:
            job.future.set_result(finish([]))
            return job.future
        for k, (w, op, args, buffers) in enumerate(parts):
            self.workers[w].queue.put(_Request(op, args, buffers, job, k))
        return job.future

    def _check_open(self) -> None:
        if self.closed:
            raise ResourceExhausted("MsmPool is closed")

    def close(self) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
        for w in self.workers:
            w.queue.put(_STOP)
            if w.busy:  # mid-request: kill the process so its I/O thread wakes up now
                w.terminate()
        me = threading.current_thread()
        for w in self.workers:
            if w.thread is not me:
                w.thread.join(timeout=_GRACE_S + 1.0)
        for w in self.workers:  # a request slipped in after all: same remedy
            if w.thread.is_alive() and w.thread is not me:
                w.terminate()
                w.thread.join(timeout=5.0)


_LIVE: weakref.WeakSet[_PoolCore] = weakref.WeakSet()


@atexit.register
def _close_all_at_exit() -> None:
    for core in list(_LIVE):
        core.close()


class MsmPool:
    """Worker processes holding registered point vectors; MSMs return futures.

    ``workers`` defaults to the CPU count. Workers start lazily (spawned, so the pool is safe to
    create from a process with threads or numba). ``close()`` fails whatever is still pending
    with ResourceExhausted and stops the workers; it is idempotent and also runs at exit.
    """

    def __init__(self, workers: int | None = None) -> None:
        n = workers if workers is not None else (os.cpu_count() or 1)
        if n < 1:
            raise BadInput(f"an MSM pool needs at least one worker, got {n}")
        self._core = _PoolCore(n)
        _LIVE.add(self._core)
        self._finalizer = weakref.finalize(self, _PoolCore.close, self._core)

    @property
    def workers(self) -> int:
        return len(self._core.workers)

    def worker_pids(self) -> list[int | None]:
        """Process id per worker (None while not running): for monitoring and tests."""
        return [w.pid for w in self._core.workers]

    # -- registration ----------------------------------------------------------------------
    def register(self, key: str, group: Group, path: str, offset: int, count: int) -> Future:
        """Make ``count`` zcash-uncompressed points at ``offset`` in ``path`` resident.

        Returns a future that resolves once every worker has loaded its chunk; requests made
        after this call are queued behind the load, so waiting on it is optional. Registering
        the same key with the same source again (same file, unmodified) is a no-op returning
        the first load's future; with another source it replaces the vector (requests already
        queued still see the old one). Cheap enough to call before every MSM.
        """
        if group not in _POINT_CLASS:
            raise BadInput(f"group must be 'g1' or 'g2', got {group!r}")
        if count < 0 or offset < 0:
            raise BadInput(f"bad point vector location: offset {offset}, count {count}")
        size = _pool_worker.POINT_SIZE[group]
        path = os.path.abspath(path)  # workers may not share a later working directory
        try:
            st = os.stat(path)
        except OSError as e:
            raise BadInput(f"cannot read point vector file {path}: {e}") from e
        if offset + count * size > st.st_size:
            raise BadInput(
                f"{path}: {count} {group} points at offset {offset} need "
                f"{offset + count * size} bytes, the file has {st.st_size}"
            )
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        reg = _Registration(group, path, offset, count, _split_even(count, self.workers), stamp)
        return self._core.register(key, reg)

    def unregister(self, key: str) -> None:
        """Drop a vector from every worker (after requests already queued); unknown keys are
        ignored."""
        self._core.unregister(key)

    # -- work ------------------------------------------------------------------------------
    def msm(self, key: str, scalars_le: BytesLike, indices: np.ndarray | None = None) -> Future:
        """Future of Σ scalars[i]·P[indices[i]] over a registered vector.

        ``indices`` (int64, ascending; unsorted input is sorted together with its scalars)
        selects points by position; None means every point, one scalar each. The scalar
        array is sent from the caller's memory, without a copy, when its turn comes: do not
        modify it until the future resolves.
        """
        reg = self._core.lookup(key)
        rows = as_scalar_rows(scalars_le)
        parts: list = []
        if indices is None:
            if len(rows) != reg.count:
                raise BadInput(f"{len(rows)} scalars for the {reg.count} points of {key!r}")
            for w, (lo, hi) in enumerate(reg.chunks):
                if hi > lo:
                    parts.append((w, "msm", (key, lo, False), (rows[lo:hi],)))
        else:
            idx, order = _check_indices(indices, reg.count, len(rows))
            if order is not None:
                rows = rows[order]
            for w, a, b, lo in _cut(idx, reg):
                local = idx[a:b] - lo
                parts.append((w, "msm", (key, a, True), (rows[a:b], local)))
        return self._core.submit(parts, _decode_partials(reg.group))

    def sum(self, key: str, indices: np.ndarray | None = None) -> Future:
        """Future of Σ P[indices[i]] (all points if None): the MSM share whose scalars are 1."""
        reg = self._core.lookup(key)
        parts: list = []
        if indices is None:
            for w, (lo, hi) in enumerate(reg.chunks):
                if hi > lo:
                    parts.append((w, "sum", (key, False), ()))
        else:
            idx, _ = _check_indices(indices, reg.count, None)
            for w, a, b, lo in _cut(idx, reg):
                parts.append((w, "sum", (key, True), (idx[a:b] - lo,)))
        return self._core.submit(parts, _decode_partials(reg.group))

    def fixed_base(self, group: Group, base: G1Point | G2Point, scalars_le: BytesLike) -> Future:
        """Future of n·96 (G1) or n·192 (G2) bytes: zcash-uncompressed k_i·base, in order."""
        if group not in _POINT_CLASS or not isinstance(base, _POINT_CLASS[group]):
            raise BadInput(f"fixed_base: base is not a {group} point")
        rows = as_scalar_rows(scalars_le)
        base_xy = base.to_xy_bytes_be()
        parts = [
            (w, "fixed_base", (group, base_xy), (rows[lo:hi],))
            for w, (lo, hi) in enumerate(_split_even(len(rows), self.workers))
            if hi > lo
        ]
        return self._core.submit(parts, b"".join)

    def _ping(self, payload: BytesLike = b"", sleep_s: float = 0.0) -> Future:
        """Round trip to every worker carrying ``payload`` (latency/transfer probe, test hook);
        resolves to the list of (pid, bytes received)."""
        parts = [(w, "ping", (sleep_s,), (payload,)) for w in range(self.workers)]
        return self._core.submit(parts, list)

    # -- lifecycle -------------------------------------------------------------------------
    def close(self) -> None:
        self._finalizer()

    def __enter__(self) -> MsmPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _check_indices(
    indices: np.ndarray, count: int, n_scalars: int | None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Validated int64 indices in ascending order, and the sorting permutation if one was
    needed (None when already sorted)."""
    idx = np.ascontiguousarray(indices, dtype=np.int64)
    if idx.ndim != 1:
        raise BadInput(f"indices must be one-dimensional, got shape {idx.shape}")
    if n_scalars is not None and len(idx) != n_scalars:
        raise BadInput(f"{n_scalars} scalars for {len(idx)} indices")
    if len(idx) and (idx.min() < 0 or idx.max() >= count):
        raise BadInput(f"indices must lie in [0, {count})")
    order = None
    if len(idx) > 1 and np.any(idx[1:] < idx[:-1]):
        order = np.argsort(idx, kind="stable")
        idx = idx[order]
    return idx, order


def _cut(idx: np.ndarray, reg: _Registration) -> list[tuple[int, int, int, int]]:
    """(worker, start, stop, chunk lo) for each worker whose chunk holds some of ``idx``."""
    starts = np.searchsorted(idx, [lo for lo, _ in reg.chunks] + [reg.count])
    return [
        (w, int(starts[w]), int(starts[w + 1]), lo)
        for w, (lo, _) in enumerate(reg.chunks)
        if starts[w + 1] > starts[w]
    ]
