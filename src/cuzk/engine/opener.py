"""Large payloads parsed and checked in a helper process, off the engine's GIL.

Opening a request checks its payload completely (:func:`cuzk.circuits.open_statement`): for
a 32 GiB PoRep C1 (38 MB of JSON) that is 8.3 s of pure Python — label recomputation, path
checks. Run in the engine's process it holds the GIL that every device worker needs to
launch kernels and every synthesis thread needs to collect a witness: measured on one H200
(porep-32g, two proofs in flight), a job submitted while another ran stretched the next
partition's staging from 0.25 to 2.1 s, its kernels from 1.6 to 2.5 s and the two syntheses
under way from 2.9 to 6.3 s (read off the run's timeline chart) — about 3 s of idle device
per proof submitted under load.

Here the payload goes to a spawned process and the statement comes back pickled (its
per-partition circuits are the parsed vanilla data: a porep-2k C1 of 100 kB pickles to
23 kB). A statement that cannot be pickled (one built around a closure) is opened in
the engine's process instead, and its circuit kind is not sent out again.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import multiprocessing
import pickle
import threading
from collections.abc import Sequence

from cuzk.circuits import open_statement
from cuzk.circuits.statement import Statement
from cuzk.errors import InternalError

log = logging.getLogger(__name__)

#: Payloads from this size on are opened in a helper (smaller ones parse in well under a
#: second, less than the round trip and the helper's spawn on first use are worth).
HELPER_BYTES = 1 << 20


class PayloadOpener:
    """``processes`` spawned helpers (started on first use) that open large payloads."""

    def __init__(self, processes: int = 1, min_bytes: int = HELPER_BYTES) -> None:
        if processes < 1:
            raise ValueError("a payload opener needs at least one process")
        self.processes = processes
        self.min_bytes = min_bytes
        self._lock = threading.Lock()
        self._pool: cf.ProcessPoolExecutor | None = None
        self._local: set[str] = set()  # circuit ids whose statements do not pickle
        self._closed = False
        self.opened = 0  # statements opened in a helper (status and tests)

    def wants(self, payload: bytes) -> bool:
        """Whether ``payload`` is large enough to be opened in a helper."""
        return len(payload) >= self.min_bytes

    def statement(self, circuit_id: str, seeds: Sequence[int], payload: bytes) -> Statement | None:
        """The request's statement opened in a helper process, or None where it must be
        opened in this one (its statement does not pickle, or the opener is closed: a submit
        racing shutdown must not spawn a helper nobody stops). Raises what the parser raised
        (BadInput naming the field, or the parser's own error); InternalError if the helper
        died."""
        with self._lock:
            if self._closed or circuit_id in self._local:
                return None
            if self._pool is None:
                self._pool = cf.ProcessPoolExecutor(
                    self.processes, mp_context=multiprocessing.get_context("spawn")
                )
            pool = self._pool
        try:
            blob = pool.submit(_open_pickled, circuit_id, tuple(seeds), payload).result()
        except cf.process.BrokenProcessPool as e:
            with self._lock:
                if self._pool is pool:
                    self._pool = None  # a fresh helper for the next request
            raise InternalError(f"the payload opener process died: {e}") from e
        if blob is None:
            log.debug("%s statements do not pickle; opened in the engine from now on", circuit_id)
            with self._lock:
                self._local.add(circuit_id)
            return None
        with self._lock:
            self.opened += 1
        return pickle.loads(blob)  # our own helper's output

    def close(self) -> None:
        """Stop the helper; later requests are opened in the engine's process."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _open_pickled(circuit_id: str, seeds: tuple[int, ...], payload: bytes) -> bytes | None:
    """(In the helper.) The statement, pickled here so that one that does not pickle comes
    back as None rather than as an error indistinguishable from the parser's."""
    try:
        statement = open_statement(circuit_id, seeds, payload)
    except Exception as e:
        raise portable(e) from None
    try:
        return pickle.dumps(statement, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, AttributeError, TypeError):
        return None


def portable(error: BaseException) -> BaseException:
    """``error``, or where it would not survive the trip back to the engine, the nearest of
    its base classes that does, carrying its message. An exception whose ``__init__`` takes
    other arguments than its message (:class:`~cuzk.errors.UnsatisfiedConstraint`) fails to
    unpickle in the engine, and the executor then reports the helper pool as broken: a bad
    payload would surface as an InternalError instead of BadInput."""
    for cls in type(error).__mro__:
        if not issubclass(cls, BaseException):
            continue
        try:
            stand_in = error if cls is type(error) else cls(str(error))
            pickle.loads(pickle.dumps(stand_in))  # made just above
        except Exception:  # this class does not travel: try its base
            continue
        return stand_in
    return InternalError(f"{type(error).__name__}: {error}")
