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
            self._db = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=30.0
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as e:
            raise BadInput(f"journal {self.path}: cannot open it ({e})") from e
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @staticmethod
    def new_id() -> str:
        return f"job-{secrets.token_hex(8)}"

    def add(self, entry: JournalEntry) -> None:
        """Insert an accepted request; sqlite3.IntegrityError if its request id is taken."""
        with self._lock:
            self._db.execute("PRAGMA synchronous=FULL")
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
        """Accepted jobs without a result, oldest first (to re-submit after a restart)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT * FROM jobs WHERE state = 'pending' ORDER BY submitted_at"
            ).fetchall()
        return [_entry(r) for r in rows]

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
        return None if row is None else _entry(row)


def _entry(row: tuple) -> JournalEntry:
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
    return JournalEntry(
        id_,
        request_id,
        digest,
        kind,
        circuit_id,
        tuple(json.loads(seeds)),
        bytes(payload),
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
