"""Journal faults degrade, report and recover without a restart: a journal that refuses writes
(an injected write error here; a full tmpfs with ``-m heavy``) keeps finished results in memory
and answers AwaitProof from there, refuses new submissions with UNAVAILABLE, says so in the
status, and writes everything once it takes writes again. A damaged pending row is set aside at
start and the other pending jobs run."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import time

import pytest

from cuzk.server.client import Client, DaemonUnavailable
from cuzk.server.daemon import Daemon
from cuzk.server.journal import Journal

from ..conftest import CIRCUIT, daemon_config
from .harness import report


@contextlib.contextmanager
def _refusing_writes(journal: Journal):
    """Every write to the journal fails (SQLite's read-only mode on its connection) while
    inside; reads still work, as on a full disk."""
    with journal._lock:
        journal._db.execute("PRAGMA query_only = 1")
    try:
        yield
    finally:
        with journal._lock:
            journal._db.execute("PRAGMA query_only = 0")


def _health(client: Client) -> dict:
    return json.loads(client.status().status_json)["journal"]


def _until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_write_errors_degrade_report_and_recover(make_daemon, caplog):
    d = make_daemon()
    d.service.results.retry_s = 0.2
    journal = d.service.journal
    with Client(d.address) as c:
        c.preload(CIRCUIT)
        with _refusing_writes(journal):
            with pytest.raises(DaemonUnavailable, match="cannot journal the request"):
                c.submit_circuit(CIRCUIT, [1])
            h = _health(c)
            assert not h["ok"] and "journalling a request" in h["error"]
            before = journal.counts()
        assert _health(c)["ok"] is False  # (until a write succeeds)
        job = c.submit_circuit(CIRCUIT, [2])  # accepted: the journal takes writes again
        with _refusing_writes(journal):
            _until(lambda: d.service.results.health()["unwritten_results"] == 1, 30,
                   "the result never waited in memory")  # fmt: skip
            outcome = c.await_proof(job, timeout_s=30)  # answered from memory
            assert outcome.status == "completed" and outcome.proof
            assert journal.get(job).state == "pending"
            h = _health(c)
            assert not h["ok"] and h["unwritten_results"] == 1
        _until(lambda: journal.get(job).state == "succeeded", 10, "never written after")
        assert _health(c)["ok"] and journal.counts().get("pending", 0) == 0
        assert c.await_proof(job).proof == outcome.proof
        assert before.get("pending", 0) == 0  # the refused submission left nothing
    errors = [r for r in caplog.records if r.levelname == "ERROR" and "journal" in r.getMessage()]
    assert len(errors) == 2  # one line per fault, not one per failed write


def _corrupt(path, job_id: str, column: str, value) -> None:
    db = sqlite3.connect(path)
    with db:
        db.execute(f"UPDATE jobs SET {column} = ? WHERE id = ?", (value, job_id))
    db.close()


@pytest.mark.parametrize(
    "column,value",
    [
        ("seeds", "[1, 2"),
        ("priority", 99),
        ("priority", "high"),
        ("seeds", '["x"]'),
        ("payload", "text"),
        ("circuit_id", b"\xff\xfe"),
    ],  # fmt: skip
)
def test_a_damaged_pending_row_is_set_aside_and_the_others_start(
    tmp_path, server_keys, column, value
):
    cfg = daemon_config(tmp_path, server_keys)
    d = Daemon(cfg)
    d.start()
    with Client(d.address) as c:
        good = c.submit_circuit(CIRCUIT, [3])
        bad = c.submit_circuit(CIRCUIT, [4])
    d.stop(graceful=False)  # both stay pending
    for job in (good, bad):
        _corrupt(cfg.journal.path, job, "state", "pending")
    _corrupt(cfg.journal.path, bad, column, value)
    with Daemon(cfg) as d2, Client(d2.address) as c:
        assert c.await_proof(good, timeout_s=60).status == "completed"
        failed = c.await_proof(bad, timeout_s=10)
        assert failed.status == "failed" and "set aside" in failed.error
        (q,) = json.loads(c.status().status_json)["journal"]["quarantined"]
        assert q["job_id"] == bad
    db = sqlite3.connect(cfg.journal.path)
    assert [r[0] for r in db.execute("SELECT id FROM quarantine")] == [bad]
    db.close()


@pytest.mark.heavy
def test_a_full_disk_degrades_and_recovers(tmp_path, server_keys):
    """A real full filesystem: the journal on a 1 MiB tmpfs (needs root to mount), filled
    up by a file, then emptied."""
    if shutil.which("mount") is None:
        pytest.skip("no mount command")
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
                       capture_output=True, text=True)  # fmt: skip
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        cfg = daemon_config(tmp_path, server_keys, **{"journal.path": str(mnt / "j.sqlite3")})
        with Daemon(cfg) as d, Client(d.address) as c:
            d.service.results.retry_s = 0.2
            c.preload(CIRCUIT)
            filler = mnt / "filler"
            jobs = [c.submit_circuit(CIRCUIT, [100 + i]) for i in range(10)]
            fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
            with contextlib.suppress(OSError):  # fill the disk while those jobs run
                while True:
                    os.write(fd, b"\0" * 4096)
            os.close(fd)
            refused = 0
            for i in range(10):
                try:
                    jobs.append(c.submit_circuit(CIRCUIT, [200 + i]))
                except DaemonUnavailable:
                    refused += 1
            full = _health(c)
            time.sleep(1.0)
            filler.unlink()
            _until(lambda: _health(c)["ok"], 30, "the journal never recovered")
            for i in range(5):
                jobs.append(c.submit_circuit(CIRCUIT, [300 + i]))
            outcomes = [c.await_proof(j, timeout_s=60).status for j in jobs]
            assert outcomes == ["completed"] * len(jobs)
            states = {d.service.journal.get(j).state for j in jobs}
            assert states == {"succeeded"}
        report("journal full disk (heavy, 1 MiB tmpfs)", submitted=25, refused_while_full=refused,
               accepted=len(jobs), proved_and_journalled=len(jobs),
               reported_while_full=not full["ok"], write_faults=full["write_faults"])  # fmt: skip
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
