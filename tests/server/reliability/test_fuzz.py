"""Fuzzed gRPC requests (a seeded generator: random bytes, mutated messages, hostile field
values): every one is answered with a code other than INTERNAL/UNKNOWN, none hangs, nothing is
logged with a traceback, the daemon keeps serving, and every job the storm got accepted ends.
``-m heavy``: 12,000 requests against a ``cuzk serve`` child, which must still be alive."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path

import pytest

from cuzk.server.client import Client

from ..conftest import CIRCUIT, spawn_daemon
from .fuzz import storm
from .harness import Process, report


def _all_ended(client: Client, jobs: list[str], timeout: float) -> int:
    """Wait for every accepted job to end; returns how many never did (lost)."""
    deadline = time.monotonic() + timeout
    left = list(jobs)
    while left and time.monotonic() < deadline:
        left = [j for j in left if client.await_proof(j, timeout_s=1).status == "timeout"]
    return len(left)


def test_fuzzed_requests_never_get_internal(make_daemon, caplog, seed):
    caplog.set_level(logging.WARNING)
    d = make_daemon()
    result = asyncio.run(storm(d.address, seed, 1500))
    assert not result.failures, result.failures[:5]
    with Client(d.address) as c:
        lost = _all_ended(c, result.accepted, 120)
        doc = json.loads(c.status().status_json)
    assert lost == 0
    tracebacks = [r.getMessage() for r in caplog.records if r.exc_info]
    assert not tracebacks, tracebacks[:3]
    after = Process.now()
    report("grpc fuzz (fast)", seed=seed, **result.figures(), jobs_lost=lost,
           threads_after=after.threads, rss_mib_after=after.rss_mib,
           journal_ok=doc["journal"]["ok"])  # fmt: skip


@pytest.mark.heavy
def test_12000_fuzzed_requests_against_cuzk_serve(tmp_path, server_keys, seed):
    proc = spawn_daemon(tmp_path, server_keys)
    try:
        address = f"unix://{tmp_path}/cuzk.sock"
        result = asyncio.run(storm(address, seed, 12_000, concurrency=64))
        alive = proc.poll() is None
        with Client(address) as c:
            lost = _all_ended(c, result.accepted, 600)
            ok = c.submit_circuit(CIRCUIT, [1])
            assert c.await_proof(ok, timeout_s=60).status == "completed"
        threads = len(list(Path(f"/proc/{proc.pid}/task").iterdir()))
        with open(f"/proc/{proc.pid}/status") as f:
            rss = next(int(x.split()[1]) // 1024 for x in f if x.startswith("VmRSS:"))
    finally:
        proc.kill()
        proc.wait(10)
    log = (tmp_path / "daemon.log").read_text(errors="replace")
    report("grpc fuzz (heavy, cuzk serve)", seed=seed, **result.figures(), crashes=int(not alive),
           jobs_lost=lost, threads_after=threads, rss_mib_after=rss,
           tracebacks_in_log=log.count("Traceback"))  # fmt: skip
    assert alive and not result.failures and lost == 0, result.failures[:5]
    assert log.count("Traceback") == 0
