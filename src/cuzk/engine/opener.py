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

A kind whose payloads hold many partitions (a 32 GiB C1: 10) is opened by every helper at
once, each decoding, reading and checking only its share of the partitions
(:func:`cuzk.circuits.open_share`; the C1 is cut at its partitions without decoding it,
:func:`cuzk.safejson.split_array`), and the shares are joined here. Until a request is
opened none of its partitions is queued, so on an idle device the opening is the start of
the request's latency: one helper took 1.5–2.2 s for a 32 GiB C1 on the GPU hosts, nearly
all of it single-threaded Python that shares divide. A host gets one helper per
:data:`CORES_PER_HELPER` cores, at most :data:`MAX_HELPERS`.
"""

from __future__ import annotations

import concurrent.futures as cf
import itertools
import logging
import multiprocessing
import os
import pickle
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing import shared_memory
from typing import Any

from cuzk.circuits import Share, join, open_share, open_statement, opens_in_shares
from cuzk.circuits.statement import Statement, StatementShare, payload_digest
from cuzk.engine.ranked import RankedSubmitter
from cuzk.engine.request import Priority
from cuzk.errors import InternalError

log = logging.getLogger(__name__)

#: Payloads from this size on are opened in a helper (smaller ones parse in well under a
#: second, less than the round trip and the helper's spawn on first use are worth).
HELPER_BYTES = 1 << 20
#: A host's helpers: one per CORES_PER_HELPER cores, at most MAX_HELPERS (a 32 GiB C1's ten
#: partitions in shares of two on a 16-core host; a helper idles at ≈ 0.3 GB of memory).
CORES_PER_HELPER = 3
MAX_HELPERS = 5


def default_helpers(cores: int | None = None) -> int:
    """Helpers for a host of ``cores`` cores (this one's by default): one per
    :data:`CORES_PER_HELPER`, at least one and at most :data:`MAX_HELPERS`."""
    cores = cores if cores is not None else (os.cpu_count() or 1)
    return max(1, min(MAX_HELPERS, cores // CORES_PER_HELPER))


class PayloadOpener:
    """``processes`` spawned helpers (started on first use) that open large payloads
    (default: :func:`default_helpers`). Their tasks are served in rank order, (priority,
    arrival, share): two requests opened in shares at the same moment do not interleave
    (the first's join would wait for tasks served after the second's), and an urgent
    request's opening takes the next free helper."""

    def __init__(self, processes: int | None = None, min_bytes: int = HELPER_BYTES) -> None:
        processes = default_helpers() if processes is None else processes
        if processes < 1:
            raise ValueError("a payload opener needs at least one process")
        self.processes = processes
        self.min_bytes = min_bytes
        self._lock = threading.Lock()
        self._helpers: _Helpers | None = None
        self._arrivals = itertools.count()
        self._local: set[str] = set()  # circuit ids whose statements do not pickle
        self._closed = False
        self.opened = 0  # statements opened in a helper (status and tests)

    def wants(self, payload: bytes) -> bool:
        """Whether ``payload`` is large enough to be opened in a helper."""
        return len(payload) >= self.min_bytes

    def statement(
        self,
        circuit_id: str,
        seeds: Sequence[int],
        payload: bytes,
        priority: int = Priority.NORMAL,
    ) -> Statement | None:
        """The request's statement opened in a helper process, or None where it must be
        opened in this one (its statement does not pickle, or the opener is closed: a submit
        racing shutdown must not spawn a helper nobody stops). ``priority``: the request's
        (lower opens first). Raises what the parser raised (BadInput naming the field, or the
        parser's own error); InternalError if a helper died."""
        with self._lock:
            if self._closed or circuit_id in self._local:
                return None
            if self._helpers is None:
                self._helpers = _Helpers.start(self.processes)
            helpers = self._helpers
            tasks = _Tasks(helpers.tasks, (int(priority), next(self._arrivals)))
        try:
            if self.processes > 1 and not seeds and opens_in_shares(circuit_id):
                statement = _joined(tasks, circuit_id, payload, self.processes)
                with self._lock:
                    self.opened += 1
                return statement
            blob = tasks.submit(_open_pickled, circuit_id, tuple(seeds), payload).result()
        except cf.process.BrokenProcessPool as e:
            with self._lock:
                if self._helpers is helpers:
                    self._helpers = None  # fresh helpers for the next request
            helpers.stop(wait=False)
            raise InternalError(f"the payload opener process died: {e}") from e
        except cf.CancelledError:
            with self._lock:
                closed = self._closed
            if closed:  # closed while this request waited for a helper
                return None
            raise InternalError("the payload opener's helpers were replaced mid-open") from None
        if blob is None:
            log.debug("%s statements do not pickle; opened in the engine from now on", circuit_id)
            with self._lock:
                self._local.add(circuit_id)
            return None
        with self._lock:
            self.opened += 1
        return pickle.loads(blob)  # our own helper's output

    def close(self) -> None:
        """Stop the helpers; later requests are opened in the engine's process."""
        with self._lock:
            self._closed = True
            helpers, self._helpers = self._helpers, None
        if helpers is not None:
            helpers.stop(wait=True)


@dataclass(frozen=True)
class _Helpers:
    """The helper processes and the ranked queue in front of them (as many tasks handed
    over as there are helpers: none waits in the executor's own first-come queue)."""

    pool: cf.ProcessPoolExecutor
    tasks: RankedSubmitter

    @classmethod
    def start(cls, processes: int) -> _Helpers:
        pool = cf.ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn"))
        return cls(pool, RankedSubmitter(pool, processes, name="cuzk-open-feed"))

    def stop(self, wait: bool) -> None:
        self.tasks.close()  # tasks not yet handed over are cancelled
        self.pool.shutdown(wait=wait, cancel_futures=True)


@dataclass(frozen=True)
class _Tasks:
    """One request's tasks for the helpers, ranked (priority, arrival, then their order)."""

    queue: RankedSubmitter
    rank: tuple[int, int]

    def submit(self, fn: Callable[..., Any], *args: Any, order: int = 0) -> cf.Future:
        return self.queue.submit((*self.rank, order), fn, *args)


def _hashing_threads(share: Share | None) -> None:
    """(In a helper.) Its numba threads for the parallel hashing: the cores' share of one
    share of a payload opened by every helper at once (a thread per core in each would
    oversubscribe the host: measured on 2 cores, 2 helpers 2.7 s a 32 GiB C1, 2.0 with one
    thread each), every core for a payload opened whole (a full WindowPoSt partition's
    23,490 paths are ≈ 13 core-s of Poseidon)."""
    import numba

    cores = numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]
    numba.set_num_threads(cores if share is None else max(1, cores // share.count))


def _joined(tasks: _Tasks, circuit_id: str, payload: bytes, count: int) -> Statement:
    """The statement of ``payload`` opened in ``count`` shares at once, the payload handed
    to them in one shared segment (pickled through the executor's one call queue it reached
    the helpers one after another: 0.15 s a copy of a 32 GiB C1, measured on 2 cores). Every
    share is waited for, so a refused payload leaves no helper busy with it. A payload a
    share refuses is opened whole by one helper, so the error is the one the whole payload's
    reader gives (a share names JSON positions in its own piece)."""
    segment = None
    if _segment_room(len(payload)):
        segment = shared_memory.SharedMemory(create=True, size=max(1, len(payload)))
    try:
        source: _Segment | bytes = payload
        if segment is not None:
            view = segment.buf
            assert view is not None  # an open segment's
            view[: len(payload)] = payload
            source = _Segment(segment.name, len(payload))
        futures = [tasks.submit(_open_share, circuit_id, source, Share(k, count), order=k)
                   for k in range(count)]  # fmt: skip
        digest = payload_digest(circuit_id, (), payload)  # while they open (no GIL held)
        cf.wait(futures)
    finally:
        if segment is not None:
            segment.close()
            segment.unlink()
    refused = not all(f.exception() is None for f in futures)
    if not refused:
        try:
            return join([f.result() for f in futures], digest)
        except ValueError as e:  # shares that do not join: a reader's fault, not the payload's
            log.warning("%s: the payload's shares do not join (%s); opened whole", circuit_id, e)
    blob = tasks.submit(_open_pickled, circuit_id, (), payload, order=count).result()
    if blob is None:
        raise InternalError(f"{circuit_id}: a statement opened in shares does not pickle whole")
    if refused:
        log.warning("%s: a share refused a payload the whole reader accepts", circuit_id)
    return pickle.loads(blob)  # our own helper's output


@dataclass(frozen=True)
class _Segment:
    """A payload in a shared-memory segment: its name and length."""

    name: str
    size: int

    def read(self) -> bytes:
        shm = shared_memory.SharedMemory(name=self.name)
        try:
            view = shm.buf
            assert view is not None  # an open segment's
            return bytes(view[: self.size])
        finally:
            shm.close()  # the engine unlinks it


def _segment_room(size: int) -> bool:
    """Whether the shared-memory file system has room for a segment of ``size`` bytes, twice
    over: a segment is sized before its pages are written, and writing past the file
    system's room (a container's 64 MB /dev/shm) kills the process with SIGBUS rather than
    raising. Without room the payload is pickled to each helper instead."""
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return False
    return st.f_bavail * st.f_frsize >= 2 * size


def _open_share(circuit_id: str, source: _Segment | bytes, share: Share) -> StatementShare:
    """(In a helper.) One share of the payload (in ``source``'s segment, or ``source``
    itself), or the error it raised in a form that travels back."""
    try:
        _hashing_threads(share)
        payload = source.read() if isinstance(source, _Segment) else source
        return open_share(circuit_id, payload, share)
    except Exception as e:
        raise portable(e) from None


def _open_pickled(circuit_id: str, seeds: tuple[int, ...], payload: bytes) -> bytes | None:
    """(In the helper.) The statement, pickled here so that one that does not pickle comes
    back as None rather than as an error indistinguishable from the parser's."""
    _hashing_threads(None)
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
