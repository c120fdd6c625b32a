"""One CUDA device as the Fr kernels see it: its stream, kernels, transfers and error mapping.

Every call names its device explicitly (``cupy.cuda.Device(index)``), never through
``CUDA_VISIBLE_DEVICES``. Work is queued on one stream per :class:`Gpu`, so calls are ordered
among themselves and the host waits only where it reads results back (:meth:`Gpu.download`).
The stream is a blocking one: CuPy work the caller issues on the legacy default stream is
ordered after it (and before later calls), so device results are safe to use directly.
CUDA errors become :class:`~cuzk.errors.DeviceFault` naming the device,
the kernel and CUDA's message; launch-time errors (bad configuration, too much shared memory)
leave the context usable.

Transfers: host→device copies go straight from page-locked memory when the source already is
(:meth:`Gpu.pinned_empty` and :meth:`Gpu.page_lock` make such arrays), otherwise through two
reusable page-locked staging chunks so the host copy of one chunk overlaps the DMA of the
previous one.
Device→host copies land in page-locked memory from CuPy's pinned pool and are returned as is.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from cuzk.backend.cuda import loader
from cuzk.backend.cuda.host_pages import HostPages, pages_of
from cuzk.backend.cuda.memory import capped_allocator
from cuzk.errors import DeviceFault, ResourceExhausted

#: Shared memory a block gets without opting in.
DEFAULT_SMEM_LIMIT = 48 * 1024
#: Device memory kept beside CuPy's pool under a memory cap for what loads after it is set:
#: the kernel modules (a few MB each) and CuPy's own handles.
MODULE_HEADROOM = 256 << 20
#: How often :class:`MemoryWatch` samples the device's memory in use.
WATCH_INTERVAL_S = 0.02
#: Bytes per page-locked staging chunk for uploads from pageable memory.
STAGING_CHUNK = 32 << 20
#: Stream priorities (CUDA: lower numbers first; values past the device's range are clamped
#: to its ends). Priorities only order which waiting thread blocks the device starts next:
#: a kernel already running is never stopped, and copies are not affected.
HIGH_PRIORITY = -(1 << 10)
LOW_PRIORITY = 0


def below_highest(device: int) -> int:
    """The stream priority one step below ``device``'s highest (the highest itself where the
    device has only two levels). CUDA clamps a priority into the device's range, so the
    highest is read back from a stream asked for :data:`HIGH_PRIORITY`."""
    cp = loader.cupy()
    with cp.cuda.Device(device):
        highest = int(cp.cuda.Stream(non_blocking=True, priority=HIGH_PRIORITY).priority)
    return highest + 1 if highest + 1 < LOW_PRIORITY else highest


def cuda_available() -> tuple[bool, str]:
    """Whether CuPy imports and sees at least one CUDA device, with the reason if not."""
    try:
        import cupy
    except Exception as e:  # ImportError or a broken CUDA install
        return False, f"CuPy is not importable ({type(e).__name__}: {e})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        return False, f"no usable CUDA driver/device ({type(e).__name__}: {e})"
    if count < 1:
        return False, "CuPy sees no CUDA device"
    return True, f"{count} CUDA device(s)"


def _cuda_error_types(cp: Any) -> tuple[type[BaseException], ...]:
    types: list[type[BaseException]] = []
    for mod, name in (
        (cp.cuda.driver, "CUDADriverError"),
        (cp.cuda.runtime, "CUDARuntimeError"),
    ):
        t = getattr(mod, name, None)
        if isinstance(t, type):
            types.append(t)
    compiler = getattr(cp.cuda, "compiler", None)
    t = getattr(compiler, "CompileException", None)
    if isinstance(t, type):
        types.append(t)
    return tuple(types)


class Gpu:
    """Kernels, stream and memory traffic of one CUDA device.

    Subclasses may replace the five primitives (``empty``, ``launch``, ``upload``,
    ``download``, ``context``) to host the same kernels elsewhere.
    """

    def __init__(
        self,
        device: int = 0,
        *,
        defines: dict[str, object] | None = None,
        priority: int | None = None,
    ) -> None:
        """``priority``: the compute stream's (:data:`HIGH_PRIORITY` under a memory cap, where
        a dense MSM fills the device beside it); None: CUDA's default."""
        cp = loader.cupy()
        #: -D options for every module this object loads (benchmarks' switches, e.g.
        #: {"ACC_MIN_BLOCKS": 4}).
        self.defines: dict[str, object] = dict(defines or {})
        self.cp = cp
        self.xp = cp
        self.device = int(device)
        self._errors = _cuda_error_types(cp)
        oom = getattr(getattr(cp.cuda, "memory", None), "OutOfMemoryError", None)
        self._oom: tuple[type[BaseException], ...] = (oom,) if isinstance(oom, type) else ()
        self._lock = threading.RLock()
        self._smem_set: dict[tuple[object, ...], int] = {}
        self._kernels: dict[tuple[object, ...], Any] = {}
        self._stage: list[np.ndarray] | None = None
        self._stage_events: list[Any] = []
        #: Bytes queued host→device through :meth:`upload` and the relays (streamed key
        #: vectors and matrices, staged witnesses) since this object was made: with the
        #: kernels' time, the bus rate a capped run achieved.
        self.uploaded = 0
        self._uploaded_lock = threading.Lock()
        try:
            with cp.cuda.Device(self.device):
                # A blocking stream: ordered with CuPy work on the legacy default stream, so a
                # caller's own CuPy operations on returned device arrays need no explicit sync.
                self.stream = cp.cuda.Stream(non_blocking=False, priority=priority)
                props = cp.cuda.runtime.getDeviceProperties(self.device)
        except self._errors as e:
            raise DeviceFault(f"CUDA device {self.device} is unusable: {e}") from e
        name = props.get("name", b"?")
        self.name = name.decode() if isinstance(name, bytes) else str(name)
        self.sm_count = int(props.get("multiProcessorCount", 1))
        self.smem_optin = int(props.get("sharedMemPerBlockOptin", DEFAULT_SMEM_LIMIT))

    # -- context ---------------------------------------------------------------------------------
    @contextlib.contextmanager
    def context(self, stream: Any = None) -> Iterator[None]:
        """This device current and ``stream`` (default: the compute stream) the current one."""
        with self.cp.cuda.Device(self.device), stream or self.stream:
            yield

    def side_stream(self, priority: int | None = None) -> Any:
        """A second, non-blocking stream on this device for work that overlaps the compute
        stream (the MSMs); order it with :meth:`record` and ``stream.wait_event``.
        ``priority``: see :data:`HIGH_PRIORITY` (None: CUDA's default)."""
        with self.cp.cuda.Device(self.device), self.guard("creating a stream"):
            return self.cp.cuda.Stream(non_blocking=True, priority=priority)

    def record(self, stream: Any = None) -> Any:
        """An event marking the work queued so far on ``stream`` (default: the compute
        stream): a consumer on another stream waits for it instead of the host waiting."""
        with self.context(stream), self.guard("recording an event"):
            event = self.cp.cuda.Event(disable_timing=True)
            event.record(stream or self.stream)
        return event

    def memory(self) -> tuple[int, int]:
        """(free, total) bytes of this device: a device-wide query, for start-up only."""
        with self.cp.cuda.Device(self.device), self.guard("memory query"):
            free, total = self.cp.cuda.runtime.memGetInfo()
        return int(free), int(total)

    def cap_memory(self, limit: int) -> int:
        """Keep this device's use under ``limit`` bytes: CuPy's pool (every array cuzk makes
        here) may hold ``limit`` less what the device holds now (the CUDA context) less
        :data:`MODULE_HEADROOM` for the kernel modules loaded later; an allocation past it is
        ResourceExhausted (:mod:`cuzk.backend.cuda.memory`: large requests in pools of their
        size class, so a cap is not lost to split blocks). Returns the pools' limit. The
        device's own use (other processes included) is what :class:`MemoryWatch` measures."""
        free, total = self.memory()
        pool_limit = limit - (total - free) - MODULE_HEADROOM
        if pool_limit <= 0:
            raise ResourceExhausted(
                f"CUDA device {self.device}: a memory limit of {limit / (1 << 30):.1f} GiB "
                f"leaves nothing beside the {(total - free) / (1 << 30):.1f} GiB already in "
                "use on the device"
            )
        capped_allocator(self.cp).limit(self.device, pool_limit)
        return pool_limit

    def give_backs(self) -> int:
        """How often cached blocks went back to this device to keep a capped request under
        its cap (each a device-wide wait), since the process started."""
        return capped_allocator(self.cp).give_backs_by_device.get(self.device, 0)

    def uncap_memory(self) -> None:
        """Lift :meth:`cap_memory`'s limit (the backend closes; the device may be opened
        again without one)."""
        alloc = capped_allocator(self.cp)
        with self.cp.cuda.Device(self.device):
            alloc.limit(self.device, None)
            alloc.release()  # what its pools cache goes back to the device

    def fault(self, what: str, e: BaseException) -> DeviceFault:
        msg = e.get_message() if hasattr(e, "get_message") else str(e)
        return DeviceFault(f"CUDA device {self.device}: {what} failed: {msg}")

    @contextlib.contextmanager
    def guard(self, what: str) -> Iterator[None]:
        """Turn CUDA errors raised inside into DeviceFault (``what`` names the operation)."""
        try:
            yield
        except (DeviceFault, ResourceExhausted):
            raise
        except self._oom as e:
            raise ResourceExhausted(
                f"CUDA device {self.device}: {what}: out of memory ({e})"
            ) from e
        except self._errors as e:
            raise self.fault(what, e) from e

    # -- memory ----------------------------------------------------------------------------------
    def empty(self, n: int, dtype: Any = np.uint64, width: int = 4) -> Any:
        """An uninitialised device FrVec (n, 4) (or (n, width) of dtype; width 0 for 1-D)."""
        shape = (n, width) if width else (n,)
        with self.context(), self.guard(f"allocating {shape} {np.dtype(dtype).name}"):
            return self.cp.empty(shape, dtype=dtype)

    def zeros(self, n: int) -> Any:
        a = self.empty(n)
        with self.context():
            a.fill(0)
        return a

    @staticmethod
    def ptr(a: Any) -> int:
        return int(a.data.ptr)

    def pinned_empty(self, shape: tuple[int, ...] | int, dtype: Any = np.uint64) -> np.ndarray:
        """A host array in page-locked memory from CuPy's pinned pool (recycled: staging
        buffers, downloads): uploads from it are direct DMA at full bus speed."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        count = int(np.prod(shape))
        nbytes = count * np.dtype(dtype).itemsize
        if nbytes == 0:
            return np.empty(shape, dtype=dtype)
        with self._page_locking("allocating page-locked host memory", nbytes):
            mem = self.cp.cuda.alloc_pinned_memory(nbytes)
        return np.frombuffer(mem, dtype=dtype, count=count).reshape(shape)

    @staticmethod
    def host_pages(shape: tuple[int, ...] | int, dtype: Any = np.uint64) -> np.ndarray:
        """Plain host memory of its own, to fill and then :meth:`page_lock` (streamed keys
        and matrices: tens of GB that must not linger in a pool). Filling it faults its pages
        in on the filling threads, so locking is cheap (see :mod:`host_pages`)."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        return HostPages(shape, dtype).array()

    def page_lock(self, a: np.ndarray) -> np.ndarray:
        """Page-lock an array from :meth:`host_pages` (portable to every device; unlocked when
        its last view goes) and return it."""
        pages = pages_of(a)
        if pages is None:
            raise TypeError("page_lock takes arrays made by Gpu.host_pages")
        with self._page_locking("page-locking host memory", pages.nbytes):
            pages.lock(self.cp.cuda.runtime)
        return a

    @contextlib.contextmanager
    def _page_locking(self, what: str, nbytes: int) -> Iterator[None]:
        """This device current, CUDA errors mapped, and no page-lockable host memory left
        for ``nbytes`` as ResourceExhausted."""
        with self.context(), self.guard(what):
            try:
                yield
            except self._errors as e:
                if "cudaErrorMemoryAllocation" not in str(e):
                    raise
                raise ResourceExhausted(
                    f"cannot page-lock {nbytes / (1 << 30):.1f} GiB of host memory ({e})"
                ) from e

    def pinned_copy(self, a: np.ndarray) -> np.ndarray:
        """``a`` copied into page-locked memory of its own: what is kept on the host to be
        uploaded again and again (streamed matrices, row indices)."""
        out = self.host_pages(a.shape, a.dtype)
        np.copyto(out, a)
        return self.page_lock(out)

    def is_pinned(self, a: np.ndarray) -> bool:
        if a.nbytes == 0:
            return False
        rt = self.cp.cuda.runtime
        try:
            attrs = rt.pointerGetAttributes(a.ctypes.data)
        except Exception:  # unregistered memory may raise on old drivers
            return False
        kind = getattr(attrs, "type", None)
        return kind == getattr(rt, "memoryTypeHost", 1)

    def upload(self, host: np.ndarray, out: Any = None, stream: Any = None) -> Any:
        """Copy a host array to the device (queued on ``stream``, default the compute stream;
        returns at once when the source is page-locked, after the last chunk's host copy
        otherwise — so a memory-mapped file is read straight into the staging chunks)."""
        host = np.ascontiguousarray(host)
        stream = stream or self.stream
        self.count_upload(host.nbytes)
        with self.context(stream), self.guard("host→device copy"):
            d = self.cp.empty(host.shape, dtype=host.dtype) if out is None else out
            if host.nbytes == 0:
                return d
            if self.is_pinned(host):
                d.set(host, stream=stream)
                return d
            with self._lock:  # one user of the staging chunks at a time
                self._staged_upload(host, d, stream)
        return d

    def count_upload(self, nbytes: int) -> None:
        with self._uploaded_lock:
            self.uploaded += nbytes

    def _staged_upload(self, host: np.ndarray, d: Any, stream: Any) -> None:
        cp = self.cp
        if self._stage is None:
            self._stage = [
                np.frombuffer(cp.cuda.alloc_pinned_memory(STAGING_CHUNK), dtype=np.uint8)
                for _ in range(2)
            ]
            self._stage_events = [cp.cuda.Event(disable_timing=True) for _ in range(2)]
            for ev in self._stage_events:
                ev.record(stream)
        src = host.reshape(-1).view(np.uint8)
        dst = d.reshape(-1).view(cp.uint8)
        for k, off in enumerate(range(0, src.size, STAGING_CHUNK)):
            slot = k & 1
            n = min(STAGING_CHUNK, src.size - off)
            self._stage_events[slot].synchronize()  # the DMA that last read this slot is done
            buf = self._stage[slot][:n]
            np.copyto(buf, src[off : off + n])
            dst[off : off + n].set(buf, stream=stream)
            self._stage_events[slot].record(stream)

    def download(self, d: Any) -> np.ndarray:
        """Copy a device array to (page-locked) host memory and wait for it: the one place the
        host waits for the stream, so errors of earlier queued kernels surface here."""
        shape, dtype = tuple(d.shape), np.dtype(d.dtype)
        with self.context(), self.guard("device→host copy (or a kernel queued before it)"):
            if d.size == 0:
                self.stream.synchronize()
                return np.empty(shape, dtype=dtype)
            d = self.cp.ascontiguousarray(d)
            mem = self.cp.cuda.alloc_pinned_memory(d.nbytes)
            out = np.frombuffer(mem, dtype=dtype, count=d.size).reshape(shape)
            d.get(stream=self.stream, out=out)
            self.stream.synchronize()
        return out

    def synchronize(self) -> None:
        """Wait for everything queued on this device's stream."""
        with self.context(), self.guard("stream synchronize"):
            self.stream.synchronize()

    # -- kernels ---------------------------------------------------------------------------------
    def kernel(
        self, filename: str, name: str, smem: int = 0, defines: dict[str, object] | None = None
    ) -> Any:
        """``name`` from ``filename`` compiled with this object's -D options and ``defines``."""
        merged = {**self.defines, **(defines or {})}
        key = (filename, name, tuple(sorted((d, str(v)) for d, v in merged.items())))
        k = self._kernels.get(key)
        if k is None:
            k = loader.get_kernel(filename, name, device=self.device, defines=merged or None)
            self._kernels[key] = k
        if smem > DEFAULT_SMEM_LIMIT and self._smem_set.get(key, 0) < smem:
            with self.guard(f"raising the shared-memory limit of {name}"):
                k.max_dynamic_shared_size_bytes = smem
            self._smem_set[key] = smem
        return k

    def launch(
        self,
        filename: str,
        name: str,
        grid: int | tuple[int, ...],
        block: int,
        args: Sequence[Any],
        smem: int = 0,
        *,
        defines: dict[str, object] | None = None,
        stream: Any = None,
    ) -> None:
        """Queue ``name`` from ``filename`` on ``stream`` (default: the compute stream); device
        arrays pass as pointers, None as NULL, everything else must already be a NumPy scalar
        of the kernel parameter's type."""
        grid = (grid,) if isinstance(grid, int) else tuple(grid)
        conv = tuple(self._arg(a) for a in args)
        what = f"kernel {name} ({filename}) grid={grid} block={block}"
        with self.context(stream), self.guard(what):
            k = self.kernel(filename, name, smem, defines)
            k(grid, (block,), conv, shared_mem=smem)

    def _arg(self, a: Any) -> Any:
        if a is None:
            return np.uint64(0)
        if isinstance(a, self.cp.ndarray):
            return np.uint64(a.data.ptr)
        if isinstance(a, np.generic):
            return a
        raise TypeError(f"kernel argument {a!r} must be a device array, None or a NumPy scalar")


class Relay:
    """Two device slots filled in turn from the host on a copy stream while a consumer stream
    reads the other: the upload of block k overlaps the kernels of block k − 1. What a key or
    a shape too large for the device streams through (MSM bases, constraint matrices).

    Block k goes into slot k % 2: its upload waits for the consumer's last use of that slot
    (:meth:`release`), and the consumer waits for the upload (:meth:`wait`). The events
    persist across calls, so one relay serves every evaluation that reuses its slots.

    :meth:`fill` is both steps at once. A consumer that waits on the host between blocks (an
    MSM's pass plans its scalars, which needs their count) issues block k + 1's upload before
    that wait and makes its stream wait for block k + 1 only just before block k + 1's kernels:
    the copy stream then never idles for the host."""

    def __init__(self, gpu: Gpu, copy_stream: Any, consumer: Any) -> None:
        self._cp, self._gpu = gpu.cp, gpu
        self._copy, self._consumer = copy_stream, consumer
        # The slots are free once the consumer is past its earlier work: CuPy's pool may have
        # handed the caller slot memory that kernels queued on the consumer still read.
        ready = self._cp.cuda.Event(disable_timing=True)
        ready.record(consumer)
        self._freed = [ready, ready]
        self._uploaded: list[Any] = [None, None]

    def fill(self, k: int, copies: Sequence[tuple[Any, np.ndarray]]) -> None:
        """Upload block k (:meth:`upload`) and make the consumer's later work wait for it."""
        self.upload(k, copies)
        self.wait(k)

    def upload(self, k: int, copies: Sequence[tuple[Any, np.ndarray]]) -> None:
        """Queue each (device view in slot k % 2, host array) copy on the copy stream, after
        the consumer's last use of the slot. Host arrays should be page-locked (else each copy
        blocks)."""
        slot = k % 2
        self._copy.wait_event(self._freed[slot])
        for dst, src in copies:
            if src.size:
                dst.set(src, stream=self._copy)
        self._gpu.count_upload(sum(src.nbytes for _, src in copies))
        uploaded = self._cp.cuda.Event(disable_timing=True)
        uploaded.record(self._copy)
        self._uploaded[slot] = uploaded

    def wait(self, k: int) -> None:
        """The consumer's work queued from now on waits for block k's upload."""
        uploaded = self._uploaded[k % 2]
        if uploaded is None:
            raise RuntimeError(f"block {k} was never uploaded")
        self._consumer.wait_event(uploaded)

    def release(self, k: int) -> None:
        """The consumer's work on block k's slot is all queued: the next upload into it waits
        for that work."""
        done = self._cp.cuda.Event(disable_timing=True)
        done.record(self._consumer)
        self._freed[k % 2] = done


class MemoryWatch:
    """The device's memory in use (total − free, the whole device as the driver reports it),
    sampled every :data:`WATCH_INTERVAL_S` on a daemon thread: ``peak`` is the highest seen —
    a measurement, not the engine's accounting (cudaMemGetInfo does not synchronise)."""

    def __init__(self, gpu: Gpu, interval_s: float = WATCH_INTERVAL_S) -> None:
        self._gpu = gpu
        self._interval = interval_s
        self._stop = threading.Event()
        self.peak = self.sample()
        self._thread = threading.Thread(
            target=self._run, name=f"cuzk-gpu{gpu.device}-memwatch", daemon=True
        )
        self._thread.start()

    def sample(self) -> int:
        free, total = self._gpu.memory()
        return total - free

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.peak = max(self.peak, self.sample())
            except Exception:  # a failing device is reported by its kernels
                return

    def reset(self) -> None:
        """Start a new peak from the use now (a benchmark's measured run)."""
        self.peak = self.sample()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(1.0)
