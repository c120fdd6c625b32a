"""Writing job ends to the journal when the journal cannot always be written.

A full disk or an I/O error must not turn finished proofs into lost ones, nor leave their
clients told "the daemon is shutting down" until a restart. :class:`ResultWriter` writes each
end; when a write fails it keeps the end in memory (AwaitProof answers from there), reports the
fault — once in the log, and in ``health()`` for /status and GetStatus — and retries every few
seconds on a thread that exists only while something is unwritten. When the journal takes
writes again everything is written, in order, and the fault clears, without a restart. A result
still unwritten when the daemon stops is lost with the process; its job is pending in the
journal and is proved again after the restart (a different, equally valid proof).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from typing import Any

from cuzk.server.journal import Journal, JournalEntry

log = logging.getLogger(__name__)

RETRY_S = 5.0


@dataclasses.dataclass
class _End:
    state: str
    fields: dict[str, Any]
    finished_at: float


class ResultWriter:
    """Job ends into ``journal``, kept and retried while it fails; thread-safe."""

    def __init__(self, journal: Journal, retry_s: float = RETRY_S) -> None:
        self.journal = journal
        self.retry_s = retry_s
        self._lock = threading.Lock()
        self._unwritten: dict[str, _End] = {}  # job id → its end, in the order they came
        self._error: str | None = None  # the last write error, while the fault lasts
        self._since: float | None = None
        self._faults = 0  # writes that failed, since the start
        self._retrier: threading.Thread | None = None
        self._closed = threading.Event()

    # -- writes -------------------------------------------------------------------------

    def finish(self, job_id: str, state: str, **fields: Any) -> None:
        """Journal a job's end, or keep it for a retry if the journal refuses (never
        raises for a journal fault)."""
        with self._lock:
            if self._unwritten:  # keep the order: behind the ones already waiting
                self._unwritten[job_id] = _End(state, fields, time.time())
                return
        try:
            self.journal.finish(job_id, state, **fields)
        except Exception as e:  # sqlite3 or OS errors: degrade, never lose it
            with self._lock:
                self._unwritten[job_id] = _End(state, fields, time.time())
            self.failed(e, f"writing the result of {job_id}")
        else:
            self.wrote()

    def failed(self, error: BaseException, what: str) -> None:
        """A journal write failed: report it (once per fault in the log) and retry what is
        unwritten until it succeeds."""
        with self._lock:
            self._faults += 1
            first = self._error is None
            self._error = f"{what}: {type(error).__name__}: {error}"
            if first:
                self._since = time.time()
            start = self._unwritten and self._retrier is None and not self._closed.is_set()
            if start:
                self._retrier = threading.Thread(
                    target=self._retry, name="cuzk-journal-retry", daemon=True
                )
                self._retrier.start()
        if first:
            log.error(
                "journal %s cannot be written (%s): results are kept in memory and retried "
                "every %g s; submissions are refused until it recovers",
                self.journal.path, self._error, self.retry_s,
            )  # fmt: skip

    def wrote(self) -> None:
        """A journal write succeeded: the fault is over once nothing is left unwritten."""
        with self._lock:
            if self._error is None or self._unwritten:
                return
            since = self._since if self._since is not None else time.time()
            self._error, self._since = None, None
        log.warning(
            "journal %s is writable again (after %.0f s)", self.journal.path, time.time() - since
        )

    # -- reads --------------------------------------------------------------------------

    def unwritten(self, job_id: str) -> JournalEntry | None:
        """The job's entry as it will be once its end is written (None: nothing pending)."""
        with self._lock:
            end = self._unwritten.get(job_id)
        if end is None:
            return None
        row = self.journal.get(job_id)
        if row is None:
            return None
        f = end.fields
        return dataclasses.replace(
            row,
            state=end.state,
            finished_at=end.finished_at,
            payload=b"",
            proof=f.get("proof"),
            public_inputs=f.get("public_inputs"),
            vk_path=f.get("vk_path"),
            error=f.get("error"),
            timings=f.get("timings"),
        )

    def health(self) -> dict[str, Any]:
        """For /status and GetStatus: whether the journal takes writes, the last error, how
        many results wait in memory, rows set aside at the start."""
        with self._lock:
            doc: dict[str, Any] = {
                "ok": self._error is None,
                "error": self._error,
                "failing_since": self._since,
                "unwritten_results": len(self._unwritten),
                "write_faults": self._faults,
            }
        doc["quarantined"] = [
            {"job_id": job_id, "reason": reason} for job_id, reason in self.journal.quarantined
        ]
        return doc

    # -- the retry thread ---------------------------------------------------------------

    def _retry(self) -> None:
        while not self._closed.wait(self.retry_s):
            if self.flush():
                return

    def flush(self) -> bool:
        """Write what is unwritten, in order; True when nothing is left."""
        while True:
            with self._lock:
                if not self._unwritten:
                    self._retrier = None
                    break
                job_id, end = next(iter(self._unwritten.items()))
            try:
                self.journal.finish(job_id, end.state, **end.fields)
            except Exception as e:  # still failing: next round
                with self._lock:
                    self._faults += 1
                    self._error = f"writing the result of {job_id}: {type(e).__name__}: {e}"
                return False
            with self._lock:
                self._unwritten.pop(job_id, None)
        self.wrote()
        return True

    def close(self) -> None:
        """Stop retrying: one last attempt, then say what is lost (its jobs stay pending)."""
        self._closed.set()
        retrier = self._retrier
        if retrier is not None:
            retrier.join(10)
        if not self.flush():
            with self._lock:
                lost = list(self._unwritten)
            log.error(
                "journal: %d result(s) could not be written (%s); those jobs are pending and "
                "are proved again after the restart",
                len(lost), ", ".join(lost[:10]),
            )  # fmt: skip
