"""Device memory under a cap: the allocator CuPy uses when a backend is given a memory limit.

CuPy's pool caches freed blocks and serves later requests from them, splitting a large free
block for a smaller request. Under a cap that splitting is what runs out first: a porep-32g
partition at 20 GiB was refused a 4 GiB vector with 13.0 GiB in use and 16.6 GiB held, the
3.6 GiB difference free pieces of large blocks that smaller, longer-lived arrays had been
carved from, which the pool cannot give back while any piece is in use.

So large requests never share a block with requests of another size. Each large request is
rounded up to a size class (:func:`size_class`, at most 1/16 more) and served by a pool of
its class only: every block there is a whole block of that size, so every cached one can be
given back. Small requests share CuPy's default pool, whose blocks are then all small. The
cap is checked over every pool together; past it cached blocks are given back (cudaFree
waits for the device: near the cap only), the largest caches first and only as many as the
request needs, then every cache, before a request is refused.

The cap is checked *before* the device is asked: the pool serving a request is given, as its
own CuPy limit, the cap less what the other pools hold, so it refuses to grow past the cap
rather than growing and giving the block back. (Checking afterwards let a porep-32g run
under 16 GiB measure 16.64 GiB on the device: each refused block had been allocated first.)
Capped requests are served one at a time, so two threads cannot both pass the same room.
A request that must give cached blocks back first waits for the device *without* holding
that turn (``drain``): the cudaFree that follows then waits only for what was queued
meanwhile, and the other threads' requests are not held up behind a device-wide wait. (At
16 GiB the give-backs' waits held every other request for 150–300 ms twice a partition:
the first MSM lane's passes, which each ask for scratch, stalled behind them.)

With :data:`memory_log` at DEBUG each request of :data:`TRACED_BYTES` or more is logged with
the bytes in use and held and the cuzk frames that asked for it, and so is each give-back of
cached blocks (counted in :attr:`CappedAllocator.give_backs`: each is a device-wide wait); a
refusal is logged at WARNING (``bench/memory_trace.py`` turns the trace on for a bench run).
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Callable
from typing import Any

#: Requests of this size or more get a pool of their size class: the vectors of a domain or a
#: witness, stream buffers and the larger MSM scratch. Below it an MSM pass's scratch, whose
#: size changes from pass to pass, stays in one pool: in classes each size would cache its own
#: blocks, and the cap would be reached (and every cache released, a device-wide wait) often.
LARGE_BYTES = 256 << 20
#: Size classes per doubling: a large request is rounded up by less than 1/16.
CLASSES_PER_OCTAVE = 16
#: The device-memory trace's logger.
memory_log = logging.getLogger("cuzk.device_memory")
#: Requests the trace logs: the vectors and scratch that decide a cap, not the small ones.
TRACED_BYTES = 64 << 20


def size_class(nbytes: int) -> int:
    """The bytes a large request is served with: ``nbytes`` rounded up to a multiple of
    1/:data:`CLASSES_PER_OCTAVE` of its power of two (a porep-32g z of 3.88 GiB and its
    4 GiB domain vectors share one class, 4 GiB)."""
    step = max(1, (1 << (nbytes.bit_length() - 1)) // CLASSES_PER_OCTAVE)
    return -(-nbytes // step) * step


class CappedAllocator:
    """CuPy's allocator (``cupy.cuda.set_allocator``) for every device, keeping each capped
    device's pools under its limit (:meth:`limit`). ``small``: the pool for small requests
    (CuPy's default); ``new_pool()`` makes a class's pool; ``oom``: CuPy's out-of-memory error
    type (raised as ``oom(size, held, limit)``); ``device()``: the current device's index."""

    def __init__(
        self,
        small: Any,
        new_pool: Callable[[], Any],
        oom: type[BaseException],
        device: Callable[[], int],
        device_use: Callable[[], int] | None = None,
        drain: Callable[[], None] | None = None,
    ) -> None:
        """``device_use()``: the current device's bytes in use (every process's), shown in
        the trace beside the pools' own count (what the cap costs outside the pools);
        ``drain()``: wait for the current device's queued work (before a give-back)."""
        self._small = small
        self._new_pool = new_pool
        self._oom = oom
        self._device = device
        self._device_use = device_use
        self._classes: dict[int, Any] = {}
        self._limits: dict[int, int] = {}
        self._lock = threading.Lock()
        #: Per capped device, held while a request is checked and served (re-entrant: a
        #: collection CuPy runs inside an allocation may run finalizers that allocate).
        self._capped: dict[int, threading.RLock] = {}
        self._drain = drain
        self._local = threading.local()  # .depth: this thread's nesting of capped requests
        #: Pools that gave cached blocks back to the device (each a cudaFree: the device
        #: drains first), every device together since start, and per device.
        self.give_backs = 0
        self.give_backs_by_device: dict[int, int] = {}

    def limit(self, device: int, nbytes: int | None) -> None:
        """Keep ``device``'s pools under ``nbytes`` together (None: no limit; then, with
        ``device`` current, each pool's own limit is lifted too)."""
        with self._lock:
            if nbytes is None:
                self._limits.pop(device, None)
            else:
                self._limits[device] = nbytes
        if nbytes is None:
            for p in self._pools():
                p.set_limit(size=0)
        if memory_log.isEnabledFor(logging.DEBUG):
            shown = "none" if nbytes is None else _gib(nbytes)
            memory_log.debug("device %d: pools limited to %s", device, shown)

    def __call__(self, size: int) -> Any:
        if size >= LARGE_BYTES:
            size = size_class(size)
            with self._lock:
                pool = self._classes.get(size)
                if pool is None:
                    pool = self._classes[size] = self._new_pool()
        else:
            pool = self._small
        if size >= TRACED_BYTES and memory_log.isEnabledFor(logging.DEBUG):
            memory_log.debug("malloc %s: %s", _gib(size), self._state())
        device = self._device()
        limit = self._limits.get(device)
        if limit is None:
            return self._malloc(pool, size, None)
        with self._lock:
            serial = self._capped.setdefault(device, threading.RLock())
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        try:
            if depth == 0 and self._drain is not None:
                with serial:  # from what the pools cache, or new room under the cap
                    block = self._first_try(pool, size, limit)
                if block is not None:
                    return block
                # A give-back comes: wait for the device outside the turn (a finalizer
                # allocating inside a request, depth > 0, cannot let the turn go).
                self._drain()
            with serial:
                return self._malloc(pool, size, limit)
        finally:
            self._local.depth = depth

    def _first_try(self, pool: Any, size: int, limit: int) -> Any:
        """``pool.malloc(size)`` within what the other pools leave under ``limit``, or None
        when that is refused (nothing is given back here)."""
        pool.set_limit(size=max(1, limit - (self.held() - pool.total_bytes())))
        try:
            return pool.malloc(size)
        except self._oom:
            return None

    def _malloc(self, pool: Any, size: int, limit: int | None) -> Any:
        """``pool.malloc(size)``; when it is refused (the device is full, or the pool may not
        grow past the cap) cached blocks are given back and it is asked again: under a cap
        first only the largest caches until the request fits the count, then every cache."""
        tries = ("enough", "all", None) if limit is not None else ("all", None)
        for release in tries:
            if limit is not None:  # what the other pools leave (CuPy reads 0 as no limit)
                pool.set_limit(size=max(1, limit - (self.held() - pool.total_bytes())))
            try:
                return pool.malloc(size)
            except self._oom:
                if release is None:
                    memory_log.warning("refused %s: %s", _gib(size), self._state())
                    if limit is None:
                        raise
                    raise self._oom(size, self.held(), limit) from None
                if release == "enough" and limit is not None:
                    self._release_for(size, limit)
                else:
                    self.release()
        raise AssertionError("unreachable")

    def _release_for(self, size: int, limit: int) -> None:
        """Give back the largest caches first until ``size`` more fits under ``limit``: each
        give-back waits for the device, and every block given back is one to allocate again."""
        pools = sorted(self._pools(), key=lambda p: p.total_bytes() - p.used_bytes())
        while pools and self.held() + size > limit:
            p = pools.pop()
            if p.total_bytes() > p.used_bytes():
                self._give_back(p, size)

    def _pools(self) -> list[Any]:
        with self._lock:
            return [self._small, *self._classes.values()]

    def held(self) -> int:
        """Bytes the current device's pools hold (in use or cached)."""
        return sum(p.total_bytes() for p in self._pools())

    def used(self) -> int:
        """Bytes of the current device's pools in use."""
        return sum(p.used_bytes() for p in self._pools())

    def release(self) -> None:
        """Give every pool's cached blocks back to the current device (every stream's)."""
        for p in self._pools():
            if p.total_bytes() > p.used_bytes():
                self._give_back(p, 0)

    def _give_back(self, pool: Any, size: int) -> None:
        cached = pool.total_bytes() - pool.used_bytes()
        pool.free_all_blocks()
        device = self._device()
        with self._lock:
            self.give_backs += 1
            self.give_backs_by_device[device] = self.give_backs_by_device.get(device, 0) + 1
        if memory_log.isEnabledFor(logging.DEBUG):
            memory_log.debug("gave back %s for %s: %s", _gib(cached), _gib(size), self._state())

    def _state(self) -> str:
        callers = [
            f"{f.filename.rsplit('/cuzk/', 1)[-1]}:{f.lineno} {f.name}"
            for f in traceback.extract_stack()[:-3]
            if "/cuzk/" in f.filename
        ][-4:]
        device = f", device {_gib(self._device_use())}" if self._device_use else ""
        return (
            f"in use {_gib(self.used())}, held {_gib(self.held())}{device} "
            f"[{threading.current_thread().name}] {' < '.join(reversed(callers))}"
        )


def _in_use(free: int, total: int) -> int:
    return total - free


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.2f} GiB"


_installed: CappedAllocator | None = None
_install_lock = threading.Lock()


def capped_allocator(cp: Any) -> CappedAllocator:
    """The process's CappedAllocator, handed to CuPy (again, should something have replaced
    it): CuPy has one allocator per process, and each capped device registers its limit."""
    global _installed
    with _install_lock:
        if _installed is None:
            _installed = CappedAllocator(
                cp.get_default_memory_pool(),
                cp.cuda.MemoryPool,
                cp.cuda.memory.OutOfMemoryError,
                cp.cuda.runtime.getDevice,
                lambda: _in_use(*cp.cuda.runtime.memGetInfo()),
                cp.cuda.runtime.deviceSynchronize,  # (lets the interpreter lock go)
            )
        cp.cuda.set_allocator(_installed)
        return _installed
