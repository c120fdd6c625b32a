"""``cuzk serve`` flags, ``cuzk client …`` and ``cuzk bench --addr`` against a daemon, and the
daemon-backed ``cuzk demo`` — run in-process through ``main`` (the demo's daemon is a child)."""

from __future__ import annotations

import json

import pytest

from cuzk.circuits import get_circuit, key_file_stem
from cuzk.cli.main import _build_parser, main
from cuzk.cli.serve_cmd import overrides
from cuzk.groth16 import proofs_from_bytes, read_vk, verify
from cuzk.groth16.setup import generate_parameters
from cuzk.r1cs import synthesize_shape
from cuzk.server.daemon import Daemon

from ..server.conftest import daemon_config

CIRCUIT = "synthetic:512"


@pytest.fixture(scope="module")
def keys(tmp_path_factory, pool):
    d = tmp_path_factory.mktemp("serve-keys")
    generate_parameters(
        synthesize_shape(get_circuit(CIRCUIT), CIRCUIT),
        d,
        key_file_stem(CIRCUIT),
        seed=77,
        pool=pool,
    )
    return d


@pytest.fixture
def daemon(tmp_path, keys):
    with Daemon(daemon_config(tmp_path, keys)) as d:
        yield d


def _client(daemon, *args: str) -> int:
    return main(["client", "--addr", daemon.address, *args])


def test_serve_flags_become_config_overrides(tmp_path):
    from cuzk.server.config import load_config

    args = _build_parser().parse_args(
        [
            "serve",
            "--listen",
            "unix:///tmp/x.sock",
            "--http-listen",
            "127.0.0.1:0",
            "--param-cache",
            str(tmp_path),
            "--journal",
            str(tmp_path / "j.db"),
            "--backend",
            "cpu",
            "--set",
            "engine.devices=2",
            "--set",
            "journal.retention_hours=1.5",
        ]
    )
    cfg = load_config(None, overrides(args))
    assert cfg.server.listen == "unix:///tmp/x.sock" and cfg.http.port == 0
    assert cfg.engine.param_dir == tmp_path and cfg.journal.path == tmp_path / "j.db"
    assert cfg.engine.devices == 2 and cfg.journal.retention_hours == 1.5
    bad = _build_parser().parse_args(["serve", "--set", "engine.devices=0"])
    with pytest.raises(Exception, match="engine.devices"):
        load_config(None, overrides(bad))


def test_serve_refuses_exposed_listener(capsys):
    assert main(["serve", "--listen", "0.0.0.0:0"]) == 2
    assert "reachable from other hosts" in capsys.readouterr().err


def test_client_commands(daemon, tmp_path, capsys):
    proof, inputs = tmp_path / "p.bin", tmp_path / "in.json"
    assert (
        _client(
            daemon,
            "prove",
            "--circuit",
            CIRCUIT,
            "--partitions",
            "2",
            "--seed",
            "9",
            "--out",
            str(proof),
            "--inputs-out",
            str(inputs),
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "completed" in printed and "2 partition(s)" in printed
    vk = read_vk(keys_vk(daemon))
    parts = json.loads(inputs.read_text())
    for part, p in zip(parts, proofs_from_bytes(proof.read_bytes()), strict=True):
        assert verify(vk, [int(x) for x in part], p)

    assert (
        _client(daemon, "submit", "--circuit", CIRCUIT, "--seed", "3", "--request-id", "cli-1") == 0
    )
    job = capsys.readouterr().out.strip()
    assert job.startswith("job-")
    assert _client(daemon, "await", job, "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "completed" and len(bytes.fromhex(doc["proof"])) == 192
    assert _client(daemon, "cancel", job) == 0
    assert "already finished" in capsys.readouterr().out
    assert _client(daemon, "status") == 0
    assert CIRCUIT in capsys.readouterr().out
    assert _client(daemon, "status", "--json") == 0
    assert json.loads(capsys.readouterr().out)["jobs"]
    assert _client(daemon, "metrics") == 0
    assert "cuzk_proofs_completed_total" in capsys.readouterr().out
    assert _client(daemon, "evict", CIRCUIT) == 0
    assert "evicted" in capsys.readouterr().out
    assert _client(daemon, "preload", CIRCUIT) == 0
    assert "loaded in" in capsys.readouterr().out
    # Errors: one line, exit 2 for what the caller can fix.
    assert _client(daemon, "await", "job-nope") == 2
    assert "no job" in capsys.readouterr().err
    assert _client(daemon, "prove", "--kind", "winning", "--vanilla", str(proof)) == 2
    assert "randomness" in capsys.readouterr().err


def keys_vk(daemon) -> str:
    return str(daemon.engine_config.params_path(CIRCUIT).with_suffix(".vk"))


def test_client_without_daemon(tmp_path, capsys):
    assert main(["client", "--addr", f"unix://{tmp_path}/none.sock", "status"]) == 3
    err = capsys.readouterr().err
    assert "none.sock" in err and "Traceback" not in err


def test_bench_against_the_daemon(daemon, tmp_path, capsys):
    out, png = tmp_path / "bench.json", tmp_path / "t.png"
    assert (
        main(
            [
                "bench",
                "--addr",
                daemon.address,
                "--circuit",
                CIRCUIT,
                "-c",
                "4",
                "-j",
                "2",
                "--partitions",
                "2",
                "--json",
                str(out),
                "--timeline",
                str(png),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "proofs per minute" in printed and "latency avg" in printed
    doc = json.loads(out.read_text())
    assert doc["summary"]["succeeded"] == 4 and doc["summary"]["latency_min_s"] > 0
    vk = read_vk(doc["jobs"][0]["vk"])
    for job in doc["jobs"]:
        proofs = proofs_from_bytes(bytes.fromhex(job["proof"]))
        for part, p in zip(job["public_inputs"], proofs, strict=True):
            assert verify(vk, [int(x) for x in part], p)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_in_process_still_needs_a_circuit(capsys):
    assert main(["bench"]) == 2
    assert "--circuit is required" in capsys.readouterr().err


def test_demo_through_a_daemon(keys, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert (
        main(["demo", "--circuit", CIRCUIT, "--dir", str(keys), "--proofs", "3", "--workers", "1"])
        == 0
    )
    printed = capsys.readouterr().out
    assert "every proof verified" in printed and "proofs/min" in printed
    png = tmp_path / "cache" / "cuzk" / "demo" / "timeline.png"
    assert f"timeline: {png}" in printed.replace("\n", "")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
