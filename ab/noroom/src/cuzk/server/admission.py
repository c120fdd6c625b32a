"""How much memory the requests in flight may hold: large messages are admitted against a byte
budget and decoded a few at a time.

A vanilla proof can be hundreds of MB; receiving one holds it twice for a moment (gRPC's buffer
and the Python bytes), decoding and converting it two or three times. Six 200 MB requests at
once took a daemon from 130 MB to several GB, and glibc kept most of it afterwards. So:

- the RPCs that carry vanilla proofs (SubmitProof, Prove) are *read* by the handler, at most
  ``READ_SLOTS`` at a time (until then HTTP/2 flow control holds the sender back), each within
  ``READ_TIMEOUT_S``;
- a request of ``LARGE_BYTES`` or more is *admitted* only while the large requests held stay
  within ``server.max_inflight_bytes`` (beyond it: RESOURCE_EXHAUSTED at once, its bytes freed,
  the client retries later), and is decoded and converted holding one of ``LARGE_AT_ONCE``
  slots, waited for on the event loop;
- after a large request the allocator is asked to give freed memory back to the system.

Small requests (status, cancel, a WinningPoSt submit) are never counted, never refused and never
wait for a decoding slot.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import functools
import logging
from collections.abc import AsyncIterator
from typing import Any

from cuzk.errors import BadInput, ResourceExhausted

log = logging.getLogger(__name__)

LARGE_BYTES = 1 << 20  # requests this large are counted; smaller ones pass freely
LARGE_AT_ONCE = 1  # large requests decoded and converted at the same time
READ_SLOTS = 2  # SubmitProof/Prove requests being received at the same time
READ_TIMEOUT_S = 120.0  # a request must arrive within this once its reading begins
TRIM_BYTES = 16 << 20  # after a request this large, give freed memory back
TRIM_DELAY_S = 0.2


class Admission:
    """The budget of one server; used from its event loop only (no lock needed)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0  # bytes of large requests admitted now
        self.refused = 0  # large requests refused since the start
        self._slots: asyncio.Semaphore | None = None  # made on the loop at first use
        self._readers: asyncio.Semaphore | None = None
        self._trim_pending = False

    async def read(self, context: Any, what: str, *, gated: bool) -> bytes:
        """The call's one request message. ``gated`` (the RPCs that carry vanilla proofs):
        read while holding one of ``READ_SLOTS``, within ``READ_TIMEOUT_S``."""
        if not gated:
            raw = await context.read()
        else:
            if self._readers is None:
                self._readers = asyncio.Semaphore(READ_SLOTS)
            async with self._readers:
                try:
                    raw = await asyncio.wait_for(context.read(), READ_TIMEOUT_S)
                except TimeoutError:
                    raise ResourceExhausted(
                        f"{what}: the request was not received within {READ_TIMEOUT_S:g} s"
                    ) from None
        if not isinstance(raw, bytes):  # grpc.aio.EOF: the client sent no message
            raise BadInput(f"{what}: the call carried no request message")
        return raw

    @contextlib.asynccontextmanager
    async def admit(self, size: int, what: str) -> AsyncIterator[None]:
        """Hold ``size`` bytes of the budget and a decoding slot (for large requests) while
        the body runs; ResourceExhausted if the budget cannot take them now."""
        if size < LARGE_BYTES:
            yield
            return
        if self.held + size > self.limit:
            self.refused += 1
            raise ResourceExhausted(
                f"{what}: {self.held:,} bytes of large requests are in flight and this one "
                f"({size:,}) would pass server.max_inflight_bytes ({self.limit:,}); retry later"
            )
        self.held += size
        try:
            if self._slots is None:
                self._slots = asyncio.Semaphore(LARGE_AT_ONCE)
            async with self._slots:
                yield
        finally:
            self.held -= size
            if size >= TRIM_BYTES:
                self._trim_soon()

    def _trim_soon(self) -> None:
        """Trim once the call has ended and its bytes are garbage (gRPC holds the raw
        message until the handler returns), off the loop thread; one trim serves many."""
        if self._trim_pending:
            return
        self._trim_pending = True
        loop = asyncio.get_running_loop()

        def trim() -> None:
            self._trim_pending = False
            loop.run_in_executor(None, release_memory)

        loop.call_later(TRIM_DELAY_S, trim)


def release_memory() -> None:
    """Give the allocator's free memory back to the system (glibc's malloc_trim; nothing
    elsewhere). Takes milliseconds."""
    trim = _malloc_trim()
    if trim is not None:
        try:
            trim(0)
        except OSError:  # pragma: no cover - never seen; the memory is merely kept
            log.debug("malloc_trim failed", exc_info=True)


@functools.cache
def _malloc_trim():  # a ctypes function or None
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        fn = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    fn.argtypes, fn.restype = [ctypes.c_size_t], ctypes.c_int
    return fn
