"""An asyncio event loop on a background thread, for the daemon's listeners.

The daemon's main thread stays synchronous (it waits for signals and runs the shutdown); the
gRPC server and the HTTP status server each run on a :class:`LoopThread`. Waiting there costs
a coroutine, never a thread, so any number of clients blocked in AwaitProof leave the loop free
to answer status, cancel and submit calls. Blocking work (the engine's lock, the journal's
fsync) goes from the loop to small thread pools owned by the code that needs them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """``start(setup)`` runs ``setup()`` on a new loop and keeps the loop running;
    ``call(fn)`` runs a coroutine function there from any other thread; ``stop(cleanup)``
    runs ``cleanup()``, stops the loop and joins the thread."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._setup_result: Any = None
        self._setup_error: BaseException | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            raise RuntimeError(f"{self.name}: the loop is not running")
        return self._loop

    def start(self, setup: Callable[[], Awaitable[T]], timeout: float = 30.0) -> T:
        """Run ``setup()`` on the new loop and return what it returns (or raise what it
        raised, after the thread has ended)."""
        if self._thread is not None:
            raise RuntimeError(f"{self.name}: already started")
        self._thread = threading.Thread(
            target=self._run, args=(setup,), name=self.name, daemon=True
        )
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError(f"{self.name}: did not start within {timeout} s")
        if self._setup_error is not None:
            self._thread.join(timeout)
            raise self._setup_error
        return self._setup_result

    def call(self, fn: Callable[[], Awaitable[T]], timeout: float | None = None) -> T:
        """Run ``fn()`` on the loop and wait for its result (from another thread only)."""
        future = asyncio.run_coroutine_threadsafe(_invoke(fn), self.loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"{self.name}: no answer within {timeout} s") from None

    def stop(
        self, cleanup: Callable[[], Awaitable[Any]] | None = None, timeout: float = 30.0
    ) -> None:
        """Run ``cleanup()`` on the loop (errors propagate), then stop it. Idempotent."""
        thread, loop = self._thread, self._loop
        if thread is None or loop is None or not thread.is_alive():
            return
        try:
            if cleanup is not None:
                self.call(cleanup, timeout)
        finally:
            try:
                loop.call_soon_threadsafe(loop.stop)
            except RuntimeError:  # closed in the meantime
                pass
            thread.join(timeout)
        if thread.is_alive():
            raise RuntimeError(f"{self.name}: the loop thread did not stop within {timeout} s")

    def _run(self, setup: Callable[[], Awaitable[Any]]) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        try:
            self._setup_result = loop.run_until_complete(_invoke(setup))
        except BaseException as e:  # reported by start()
            self._setup_error = e
            _close(loop)
            self._ready.set()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            _close(loop)


async def _invoke(fn: Callable[[], Awaitable[T]]) -> T:
    return await fn()


def _close(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what is left on the loop, let it unwind, close the loop."""
    tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for t in tasks:
        t.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.run_until_complete(loop.shutdown_default_executor())
    loop.close()
