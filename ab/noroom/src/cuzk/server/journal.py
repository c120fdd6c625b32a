"""The daemon's durable job journal: one SQLite file of accepted requests and their results.

A request is written (and committed, ``synchronous=FULL``: on disk) before SubmitProof answers,
so a job the client was told about survives a crash. Results are committed with
``synchronous=NORMAL`` (in the write-ahead log, on disk at the next checkpoint or durable
commit): a crash may lose a result written just before it, and then the job is simply proved
again after the restart — a different but equally valid proof — which costs far less than an
fsync per finished proof. On start the daemon re-submits every row that
has no terminal state; finished rows keep their proof, public inputs, error and timings for the
retention period so AwaitProof can still answer after a restart. Job ids are the daemon's own
(``job-`` + random hex), stable across restarts; the engine runs each job under the same id.

All access goes through one connection guarded by a lock: the daemon's gRPC threads and the
engine's completion thread share it, and SQLite serialises writers anyway.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from cuzk.errors import BadInput
from cuzk.server.runtime import private_file

TERMINAL = ("succeeded", "failed", "cancelled")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id            TEXT PRIMARY KEY,
    request_id    TEXT UNIQUE,
    digest        TEXT NOT NULL,
    kind          TEXT NOT NULL,
    circuit_id    TEXT NOT NULL,
    seeds         TEXT NOT NULL,
    payload       BLOB NOT NULL,
    priority      INTEGER NOT NULL,
    state         TEXT NOT NULL,
    submitted_at  REAL NOT NULL,
    finished_at   REAL,
    proof         BLOB,
    public_inputs TEXT,
    vk_path       TEXT,
    error         TEXT,
    timings       TEXT
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs (state);
CREATE INDEX IF NOT EXISTS jobs_finished ON jobs (finished_at);
-- damaged pending rows, set aside as they were (see Journal.quarantine)
CREATE TABLE IF NOT EXISTS quarantine (
    id TEXT, request_id TEXT, digest TEXT, kind TEXT, circuit_id TEXT, seeds TEXT, payload BLOB,
    priority, state TEXT, submitted_at, finished_at, proof BLOB, public_inputs TEXT,
    vk_path TEXT, error TEXT, timings TEXT,
    reason TEXT NOT NULL,
    quarantined_at REAL NOT NULL
);
"""


@dataclass(frozen=True)
class JournalEntry:
    """One journalled job. ``state`` is "pending" until the job ends."""

    id: str
    request_id: str | None
    digest: str  # what the request asks to prove (dedup of request ids)
    kind: str  # proof family as submitted ("winning", "wpost", "porep", "snap", "circuit")
    circuit_id: str
    seeds: tuple[int, ...]
    payload: bytes
    priority: int  # engine Priority value
    state: str  # "pending", "succeeded", "failed" or "cancelled"
    submitted_at: float  # unix seconds
    finished_at: float | None
    proof: bytes | None
    public_inputs: tuple[tuple[int, ...], ...] | None
    vk_path: str | None
    error: str | None
    timings: dict | None  # AwaitProof's timing fields and the partitions' timelines

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL


class Journal:
    """The SQLite journal at ``path`` (created if missing, parent directories included)."""

    def __init__(self, path: Path, retention_s: float) -> None:
        self.path = Path(path)
        self.retention_s = retention_s
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            private_file(self.path)  # 0600: it holds payloads and proofs (SQLite gives its
            # -wal and -shm files the same mode)
            self._db = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=30.0
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as e:
            raise BadInput(f"journal {self.path}: cannot open it ({e})") from e
        self._lock = threading.Lock()
        self._quarantined: list[tuple[str | None, str]] = []

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @staticmethod
    def new_id() -> str:
        return f"job-{secrets.token_hex(8)}"

    def add(
        self, entry: JournalEntry, *, replaces: str | None = None, superseded: str | None = None
    ) -> None:
        """Insert an accepted request; sqlite3.IntegrityError if its request id is taken.

        ``replaces`` names the job that held the request id until now (the service decided
        the id may be used again, see ``ProvingService.submit``): in the same transaction that
        job gives the id up, so a request id always names the latest job submitted under it
        and a crash never leaves two rows, or none, holding it. With ``superseded`` (the
        error to record), that job, if still pending, is cancelled in the same transaction:
        a restart never resumes a job a newer request replaced."""
        with self._lock:
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("BEGIN IMMEDIATE")
            try:
                if replaces is not None:
                    self._db.execute(
                        "UPDATE jobs SET request_id = NULL WHERE id = ? AND request_id = ?",
                        (replaces, entry.request_id),
                    )
                if replaces is not None and superseded is not None:
                    self._db.execute(
                        "UPDATE jobs SET state = 'cancelled', finished_at = ?, error = ?, "
                        "payload = X'' WHERE id = ? AND state = 'pending'",
                        (time.time(), superseded, replaces),
                    )
                self._insert(entry)
            except BaseException:
                if self._db.in_transaction:  # (SQLite may have rolled back already)
                    self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _insert(self, entry: JournalEntry) -> None:
        self._db.execute(
            "INSERT INTO jobs (id, request_id, digest, kind, circuit_id, seeds, payload, "
            "priority, state, submitted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                entry.id,
                entry.request_id,
                entry.digest,
                entry.kind,
                entry.circuit_id,
                json.dumps(list(entry.seeds)),
                entry.payload,
                entry.priority,
                entry.state,
                entry.submitted_at,
            ),
        )

    def finish(
        self,
        job_id: str,
        state: str,
        *,
        proof: bytes | None = None,
        public_inputs: tuple[tuple[int, ...], ...] | None = None,
        vk_path: str | None = None,
        error: str | None = None,
        timings: dict | None = None,
    ) -> None:
        """Record a job's end (once; a later call for a finished job changes nothing). The
        payload (a PoRep C1 output can be tens of MB) is dropped: deduplication only needs the
        digest, and a finished job is never proved again."""
        if state not in TERMINAL:
            raise ValueError(f"not a terminal state: {state}")
        inputs = (
            None
            if public_inputs is None
            else json.dumps([[str(x) for x in part] for part in public_inputs])
        )
        with self._lock:
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "UPDATE jobs SET state = ?, finished_at = ?, proof = ?, public_inputs = ?, "
                "vk_path = ?, error = ?, timings = ?, payload = X'' "
                "WHERE id = ? AND state = 'pending'",
                (
                    state,
                    time.time(),
                    proof,
                    inputs,
                    vk_path,
                    error,
                    None if timings is None else json.dumps(timings),
                    job_id,
                ),
            )

    def get(self, job_id: str) -> JournalEntry | None:
        return self._one("SELECT * FROM jobs WHERE id = ?", (job_id,))

    def by_request_id(self, request_id: str) -> JournalEntry | None:
        return self._one("SELECT * FROM jobs WHERE request_id = ?", (request_id,))

    def pending(self) -> list[JournalEntry]:
        """Accepted jobs without a result, oldest first (to re-submit after a restart).

        A row that cannot be read back (a damaged value, a failing page) is quarantined
        (:meth:`quarantine`) and skipped: one bad row never keeps the others from running."""
        with self._lock:
            try:
                rowids = [
                    r[0]
                    for r in self._db.execute(
                        "SELECT rowid FROM jobs WHERE state = 'pending' ORDER BY submitted_at"
                    )
                ]
            except sqlite3.DatabaseError as e:
                raise BadInput(
                    f"journal {self.path}: cannot list its pending jobs ({e}); the file is "
                    "damaged: move it aside (its finished results are lost, pending jobs "
                    "must be submitted again)"
                ) from e
        entries = []
        for rowid in rowids:
            try:
                with self._lock:
                    row = self._db.execute(
                        "SELECT * FROM jobs WHERE rowid = ?", (rowid,)
                    ).fetchone()
                if row is not None:
                    entries.append(_entry(row))
            except Exception as e:  # any damage: set the row aside, go on
                self.quarantine(rowid, f"unreadable row ({type(e).__name__}: {e})")
        return entries

    def quarantine(self, row: int | str, reason: str) -> str | None:
        """Set a damaged pending row aside (``row``: its rowid, or its job id): a copy as it
        is goes to the ``quarantine`` table with the reason (for the operator: it may hold a
        payload that took hours to make), and the job is marked failed so a client asking for
        it hears why. Returns the job id, when it could be read."""
        where = "rowid = ?" if isinstance(row, int) else "id = ?"
        now = time.time()
        with self._lock:
            try:
                found = self._db.execute(f"SELECT id FROM jobs WHERE {where}", (row,)).fetchone()
                job_id = found[0] if found is not None and isinstance(found[0], str) else None
            except sqlite3.DatabaseError:
                job_id = row if isinstance(row, str) else None
            self._quarantined.append((job_id, reason))
            try:
                self._db.execute("PRAGMA synchronous=FULL")
                try:
                    self._db.execute(
                        f"INSERT INTO quarantine SELECT *, ?, ? FROM jobs WHERE {where}",
                        (reason, now, row),
                    )
                except sqlite3.DatabaseError:  # the row does not even copy: its id at least
                    self._db.execute(
                        "INSERT INTO quarantine (id, reason, quarantined_at) VALUES (?, ?, ?)",
                        (job_id, reason, now),
                    )
                self._db.execute(
                    "UPDATE jobs SET state = 'failed', finished_at = ?, error = ?, payload = X'' "
                    f"WHERE {where} AND state = 'pending'",
                    (now, f"the journal row was damaged and set aside: {reason}", row),
                )
            except sqlite3.DatabaseError as e:  # it stays pending and is skipped again
                self._quarantined[-1] = (job_id, f"{reason}; not recorded: {e}")
        return job_id

    @property
    def quarantined(self) -> list[tuple[str | None, str]]:
        """(job id, reason) of every row set aside since this journal was opened."""
        return list(self._quarantined)

    def counts(self) -> dict[str, int]:
        with self._lock:
            rows = self._db.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall()
        return {state: n for state, n in rows}

    def purge(self, now: float | None = None) -> int:
        """Forget finished jobs older than the retention period; returns how many."""
        cutoff = (time.time() if now is None else now) - self.retention_s
        with self._lock:
            cur = self._db.execute(
                "DELETE FROM jobs WHERE state != 'pending' AND finished_at < ?", (cutoff,)
            )
        return cur.rowcount

    def _one(self, sql: str, args: tuple) -> JournalEntry | None:
        with self._lock:
            row = self._db.execute(sql, args).fetchone()
        if row is None:
            return None
        try:
            return _entry(row)
        except Exception as e:  # a damaged row answers as a failed job
            return _damaged(row, e)


STATES = ("pending", *TERMINAL)


def _entry(row: tuple) -> JournalEntry:
    """A row as an entry; ValueError (or the decoder's error) for a row that is not one."""
    (
        id_,
        request_id,
        digest,
        kind,
        circuit_id,
        seeds,
        payload,
        priority,
        state,
        submitted_at,
        finished_at,
        proof,
        public_inputs,
        vk_path,
        error,
        timings,
    ) = row
    seed_list = json.loads(seeds)
    texts = (id_, digest, kind, circuit_id)
    if not all(isinstance(t, str) for t in texts) or not isinstance(payload, bytes):
        raise ValueError("a text or blob column holds another type")
    if not isinstance(seed_list, list) or not all(type(x) is int for x in seed_list):
        raise ValueError(f"seeds: not a list of integers: {seeds!r:.80}")
    if (
        type(priority) is not int
        or state not in STATES
        or request_id is not None
        and not (isinstance(request_id, str))
    ):
        raise ValueError(f"priority/state/request_id: {priority!r:.20}/{state!r:.20}")
    return JournalEntry(
        id_,
        request_id,
        digest,
        kind,
        circuit_id,
        tuple(seed_list),
        payload,
        priority,
        state,
        submitted_at,
        finished_at,
        None if proof is None else bytes(proof),
        None
        if public_inputs is None
        else tuple(tuple(int(x) for x in part) for part in json.loads(public_inputs)),
        vk_path,
        error,
        None if timings is None else json.loads(timings),
    )


def _damaged(row: tuple, error: BaseException) -> JournalEntry:
    """A row that does not read back, as a failed job that says so."""
    id_, request_id, digest, kind, circuit_id = (v if isinstance(v, str) else "" for v in row[:5])
    at = row[9] if isinstance(row[9], int | float) else 0.0
    said = row[14] if row[8] == "failed" and isinstance(row[14], str) else None  # quarantined
    why = said or f"the journal row is damaged ({type(error).__name__}: {error})"
    return JournalEntry(
        id_, request_id or None, digest, kind, circuit_id, (), b"", 0, "failed", at, at,
        None, None, None, why[:500], None,
    )  # fmt: skip
