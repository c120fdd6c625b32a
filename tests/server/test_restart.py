"""Restarting right after SIGTERM, while the previous daemon still finishes its jobs: the new
one waits for it (one daemon per journal), starts cleanly every time, and no job is lost or
proved by both. (Before, the new daemon resumed the jobs the old one still ran, then either
refused to start because the old one still listened, or bound the socket just before the old
one's exit removed it, listening where no client could find it.) ``-m heavy``: 200 cycles."""

from __future__ import annotations

import signal
import time

import pytest

from cuzk.server.client import Client
from cuzk.server.journal import Journal

from .conftest import CIRCUIT, daemon_log, start_daemon

JOBS_PER_CYCLE = 2


def _answers(proc, tmp) -> None:
    """``proc`` (the newest daemon) answers on the socket."""
    deadline = time.monotonic() + 90
    with Client(f"unix://{tmp}/cuzk.sock") as c:
        while True:
            assert proc.poll() is None, f"exited with {proc.returncode}:\n{daemon_log(tmp)}"
            assert time.monotonic() < deadline, f"no answer:\n{daemon_log(tmp)}"
            try:
                c.status()
                return
            except Exception:  # not up yet
                time.sleep(0.1)


@pytest.mark.parametrize(
    "cycles", [pytest.param(3, marks=pytest.mark.slow), pytest.param(200, marks=pytest.mark.heavy)]
)
def test_restart_right_after_sigterm_starts_cleanly_every_time(tmp_path, server_keys, cycles):
    extra = ("--no-http", "--set", "server.grace_seconds=1")
    proc = start_daemon(tmp_path, server_keys, *extra)
    seed = 1
    try:
        for _ in range(cycles):
            _answers(proc, tmp_path)
            with Client(f"unix://{tmp_path}/cuzk.sock") as c:
                for _ in range(JOBS_PER_CYCLE):
                    c.submit_circuit(CIRCUIT, [seed])
                    seed += 1
            proc.send_signal(signal.SIGTERM)
            old, proc = proc, start_daemon(tmp_path, server_keys, *extra)  # at once
            assert old.wait(60) == 0, daemon_log(tmp_path)
        _answers(proc, tmp_path)
        with Client(f"unix://{tmp_path}/cuzk.sock") as c:
            journal = Journal(tmp_path / "journal.sqlite3", 86400)
            try:
                ids = [e.id for e in journal.pending()]
            finally:
                journal.close()
            for job_id in ids:  # what is unfinished is proved by the last daemon
                assert c.await_proof(job_id, timeout_s=120).status == "completed"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    journal = Journal(tmp_path / "journal.sqlite3", 86400)
    try:
        assert journal.counts().get("succeeded") == cycles * JOBS_PER_CYCLE, journal.counts()
    finally:
        journal.close()
    log = (tmp_path / "daemon.log").read_text(errors="replace")
    assert "Traceback" not in log and "epoll" not in log and "error" not in log.lower(), log[-4000:]
