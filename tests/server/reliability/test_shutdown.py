"""A shutdown never turns accepted work into a failure: a job whose partition fails while the
daemon stops (pools closing under it) stays pending and is proved after the restart."""

from __future__ import annotations

import json
import threading
import time

from cuzk.server.client import Client
from cuzk.server.daemon import Daemon
from cuzk.server.journal import Journal

from ..conftest import CIRCUIT, daemon_config


def _in_kernels(client: Client, job: str) -> bool:
    doc = json.loads(client.status().status_json)
    return any(
        j["job_id"] == job and any(p["state"] == "kernels" for p in j["partitions"])
        for j in doc["jobs"]
    )


def test_a_failure_during_shutdown_leaves_the_job_pending(tmp_path, server_keys):
    doomed = {  # its kernel region sleeps, then fails: the failure lands during the stop
        "engine.faults.slow_kernel": 1.0,
        "engine.faults.slow_kernel_s": 1.5,
        "engine.faults.kernel_error": 1.0,
        "engine.faults.targets": ["doomed"],
    }
    cfg = daemon_config(tmp_path, server_keys, **doomed)
    d = Daemon(cfg)
    d.start()
    try:
        with Client(d.address) as c:
            job = c.submit_circuit(CIRCUIT, [5], request_id="doomed")
            deadline = time.monotonic() + 30
            while not _in_kernels(c, job):
                assert time.monotonic() < deadline, "the job never reached its kernels"
                time.sleep(0.02)
        stopper = threading.Thread(target=d.stop, kwargs={"graceful": True, "grace": 10.0})
        stopper.start()
    finally:
        stopper.join(60)
        d.stop(graceful=False)
    j = Journal(cfg.journal.path, 3600)
    try:
        assert j.get(job).state == "pending"
    finally:
        j.close()
    with Daemon(daemon_config(tmp_path, server_keys)) as d2, Client(d2.address) as c:
        assert c.await_proof(job, timeout_s=60).status == "completed"
