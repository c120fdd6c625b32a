"""Keys for a tiny synthetic circuit (made once per session) and daemon factories.

Daemons here listen on a unix socket in the test's temporary directory, journal into it, and
run an engine with one virtual CPU device and one MSM process, so a proof takes a few tens of
milliseconds and a test's time goes into what it checks.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cuzk.circuits import get_circuit, key_file_stem
from cuzk.groth16.setup import generate_parameters
from cuzk.r1cs import synthesize_shape

CIRCUIT = "synthetic:512"
SLOW_CIRCUIT = "synthetic:4096"  # several partitions of it run long enough to be killed


@pytest.fixture(scope="session")
def server_keys(tmp_path_factory, pool) -> Path:
    d = tmp_path_factory.mktemp("server-keys")
    for i, cid in enumerate((CIRCUIT, SLOW_CIRCUIT)):
        shape = synthesize_shape(get_circuit(cid), cid)
        generate_parameters(shape, d, key_file_stem(cid), seed=300 + i, pool=pool)
    return d


def daemon_config(tmp: Path, keys: Path, **sections):
    """A DaemonConfig for tests: unix socket and journal under ``tmp``, HTTP on a free port."""
    from cuzk.server.config import load_config

    overrides = {
        "server.listen": f"unix://{tmp}/cuzk.sock",
        "server.grace_seconds": 10.0,
        "http.listen": "127.0.0.1:0",
        "engine.param_dir": str(keys),
        "engine.msm_workers": 1,
        "engine.memory_budget": 1 << 30,
        "engine.join_timeout_s": 10.0,
        "journal.path": str(tmp / "journal.sqlite3"),
    }
    overrides.update(sections)
    return load_config(None, overrides)


@pytest.fixture
def make_daemon(tmp_path, server_keys) -> Iterator:
    """``make_daemon(**overrides)`` → a started Daemon; all are stopped at the end."""
    from cuzk.server.daemon import Daemon

    daemons = []

    def make(**overrides):
        d = Daemon(daemon_config(tmp_path, server_keys, **overrides))
        d.start()
        daemons.append(d)
        return d

    yield make
    for d in daemons:
        d.stop(graceful=False)


def serve_command(tmp: Path, keys: Path, *extra: str) -> list[str]:
    """The ``cuzk serve`` command line of :func:`spawn_daemon`."""
    sock = tmp / "cuzk.sock"
    return [
        sys.executable,
        "-m",
        "cuzk.cli.main",
        "serve",
        "--listen",
        f"unix://{sock}",
        "--http-listen",
        "127.0.0.1:0",
        "--param-cache",
        str(keys),
        "--journal",
        str(tmp / "journal.sqlite3"),
        "--backend",
        "cpu",
        "--set",
        "engine.msm_workers=1",
        "--set",
        "engine.memory_budget=1GiB",
        *extra,
    ]


def start_daemon(tmp: Path, keys: Path, *extra: str) -> subprocess.Popen:
    """``cuzk serve`` as a child process, logging to ``tmp/daemon.log``; returns at once."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with open(tmp / "daemon.log", "ab") as log:  # a file, never a pipe nobody drains
        return subprocess.Popen(
            serve_command(tmp, keys, *extra), stdout=log, stderr=subprocess.STDOUT, env=env
        )


def spawn_daemon(tmp: Path, keys: Path, *extra: str) -> subprocess.Popen:
    """``cuzk serve`` as a child process on ``tmp/cuzk.sock``; returns once it answers."""
    from cuzk.server.client import Client

    sock = tmp / "cuzk.sock"
    proc = start_daemon(tmp, keys, *extra)
    deadline = time.monotonic() + 60
    with Client(f"unix://{sock}") as c:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError(
                    f"cuzk serve exited with {proc.returncode}:\n{daemon_log(tmp)}"
                )
            try:
                c.status()
                return proc
            except Exception:  # not up yet
                time.sleep(0.2)
    proc.kill()
    raise AssertionError("cuzk serve did not answer within 60 s")


def daemon_log(tmp: Path) -> str:
    """The last lines ``cuzk serve`` children wrote (for assertion messages)."""
    path = tmp / "daemon.log"
    return path.read_text(errors="replace")[-4000:] if path.exists() else ""
