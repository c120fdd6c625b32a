"""The SQLite journal on its own: what is pending, finishing once, request ids (unique, taken
over by a new job) and retention."""

from __future__ import annotations

import sqlite3
import time

import pytest

from cuzk.server.journal import Journal, JournalEntry


def _entry(
    journal: Journal,
    request_id: str | None,
    seeds: tuple[int, ...],
    at: float,
    payload: bytes = b"",
) -> JournalEntry:
    return JournalEntry(
        journal.new_id(),
        request_id,
        f"digest-{seeds}",
        "circuit",
        "synthetic:64",
        seeds,
        payload,
        2,
        "pending",
        at,
        None,
        None,
        None,
        None,
        None,
        None,
    )


def test_pending_finish_and_reopen(tmp_path, rng):
    path = tmp_path / "sub" / "j.sqlite3"
    j = Journal(path, retention_s=3600)
    now = time.time()
    entries = [
        _entry(
            j,
            f"r{i}",
            (int(rng.integers(1 << 62)),),
            now + i,
            payload=rng.bytes(int(rng.integers(0, 64))),
        )
        for i in range(4)
    ]
    for e in reversed(entries):
        j.add(e)
    assert [e.id for e in j.pending()] == [e.id for e in entries]  # oldest first
    inputs = ((int(rng.integers(1 << 62)), 5), (7, 8))
    j.finish(
        entries[0].id,
        "succeeded",
        proof=b"p" * 384,
        public_inputs=inputs,
        vk_path="/v",
        timings={"total_ms": 12},
    )
    j.finish(entries[0].id, "failed", error="too late")  # a second finish changes nothing
    j.finish(entries[1].id, "failed", error="partition 0: boom")
    with pytest.raises(sqlite3.IntegrityError):
        j.add(_entry(j, "r2", (1,), now))
    j.close()
    j = Journal(path, retention_s=3600)  # everything survives a reopen
    got = j.get(entries[0].id)
    assert got.state == "succeeded" and got.proof == b"p" * 384 and got.public_inputs == inputs
    assert got.timings == {"total_ms": 12} and got.terminal and got.payload == b""
    assert j.get(entries[1].id).error == "partition 0: boom"
    assert j.by_request_id("r3").payload == entries[3].payload
    assert j.by_request_id("r3").seeds == entries[3].seeds
    assert [e.id for e in j.pending()] == [entries[2].id, entries[3].id]
    assert j.counts() == {"pending": 2, "succeeded": 1, "failed": 1}
    # Retention drops finished rows only.
    assert j.purge(now=time.time() + 3601) == 2
    assert j.get(entries[0].id) is None and len(j.pending()) == 2
    with pytest.raises(ValueError):
        j.finish(entries[2].id, "pending")
    j.close()


def test_unusable_path_is_bad_input(tmp_path):
    from cuzk.errors import BadInput

    (tmp_path / "file").write_text("x")
    with pytest.raises(BadInput, match="journal"):
        Journal(tmp_path / "file" / "j.sqlite3", 60)


def test_a_new_job_takes_a_request_id_over_in_one_transaction(tmp_path, rng):
    path = tmp_path / "j.sqlite3"
    j = Journal(path, retention_s=3600)
    now = time.time()
    rid = "wdpost-1000-0-[12 34 56]"
    seeds = [(int(x),) for x in rng.integers(1 << 62, size=3)]
    first = _entry(j, rid, seeds[0], now)
    j.add(first)
    j.finish(first.id, "failed", error="boom")
    second = _entry(j, rid, seeds[1], now + 1)
    j.add(second, replaces=first.id)
    assert j.by_request_id(rid).id == second.id
    assert j.get(first.id).request_id is None and j.get(first.id).error == "boom"
    # naming a job that does not hold the id changes nothing and the insert fails whole
    third = _entry(j, rid, seeds[2], now + 2)
    with pytest.raises(sqlite3.IntegrityError):
        j.add(third, replaces=first.id)
    assert j.get(third.id) is None and j.by_request_id(rid).id == second.id
    j.close()
    j = Journal(path, retention_s=3600)
    assert j.by_request_id(rid).id == second.id and j.get(second.id).seeds == seeds[1]
    # a pending job replaced by another payload is cancelled with it, so never resumed
    fourth = _entry(j, rid, seeds[2], now + 3)
    j.add(fourth, replaces=second.id, superseded="superseded by the fourth")
    old = j.get(second.id)
    assert (old.state, old.error, old.request_id, old.payload) == (
        "cancelled", "superseded by the fourth", None, b"")  # fmt: skip
    assert [e.id for e in j.pending()] == [fourth.id]
    j.close()
