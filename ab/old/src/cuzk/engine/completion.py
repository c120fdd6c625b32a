"""Delivery of job outcomes to the one completion callback an engine may have.

A job ends on whichever thread made it terminal — a device worker finishing its last partition,
a synthesis worker failing it, an RPC thread cancelling it, the shutdown — always under the
engine lock. Calling a client's code there would hold every worker up for as long as that code
runs (a daemon writes a database row), so the engine only *posts* the outcome here, which never
blocks, and one delivery thread per engine calls the callback, in the order jobs ended. A
callback that raises is logged and the next outcome is delivered; it cannot reach the engine.
A slow callback delays later deliveries only, never a partition.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

from cuzk.engine.request import JobOutcome

log = logging.getLogger(__name__)

CompletionCallback = Callable[[JobOutcome], None]
_STOP = object()


class Completions:
    """The delivery thread and its queue; started by :meth:`register`."""

    def __init__(self, name: str = "cuzk-completions") -> None:
        self._name = name
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._callback: CompletionCallback | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    def register(self, callback: CompletionCallback) -> None:
        """Set the callback (once) and start delivering."""
        if not callable(callback):
            raise TypeError(f"a completion callback must be callable, got {callback!r}")
        with self._lock:
            if self._closed:
                raise RuntimeError("the engine has shut down")
            if self._callback is not None:
                raise RuntimeError("this engine already has a completion callback")
            self._callback = callback
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()

    @property
    def threads(self) -> list[threading.Thread]:
        return [] if self._thread is None else [self._thread]

    def post(self, outcome: JobOutcome) -> None:
        """Queue an outcome for delivery (never blocks; a no-op without a callback)."""
        if self._thread is not None:
            self._queue.put(outcome)

    def close(self, timeout: float | None = None) -> None:
        """Deliver what is queued, then stop the thread (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
        if thread is None:
            return
        self._queue.put(_STOP)
        thread.join(timeout)
        if thread.is_alive():
            log.error("completion callback still running after %s s at shutdown", timeout)

    def _run(self) -> None:
        callback = self._callback
        assert callback is not None
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            try:
                # why the ignore below: _STOP was handled above: item is an outcome
                callback(item)  # type: ignore[arg-type]
            except Exception:  # a callback's failure never reaches the engine
                log.exception("completion callback failed for %s", getattr(item, "job_id", "?"))
