"""``cuzk bench`` run in-process on a tiny circuit."""

from __future__ import annotations

import importlib.util
import json

import pytest

from cuzk.cli.main import main
from cuzk.groth16 import proofs_from_bytes, read_vk, verify

from .conftest import SMALL


def _bench(param_dir, *extra: str) -> int:
    return main(
        ["bench", "--circuit", SMALL, "--param-dir", str(param_dir), "--workers", "1", *extra]
    )


def test_bench_json(param_dir, tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert (
        _bench(
            param_dir,
            "--devices",
            "2",
            "--workers-per-device",
            "2",
            "--proofs",
            "3",
            "--partitions",
            "2",
            "--concurrency",
            "2",
            "--json",
            str(out),
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "proofs per minute" in printed and "device 1 busy" in printed
    doc = json.loads(out.read_text())
    vk = read_vk(doc["vk"])
    assert doc["summary"]["succeeded"] == 3 and doc["summary"]["proofs_per_minute"] > 0
    assert len(doc["summary"]["device_busy"]) == 2
    for whole, steady in zip(
        doc["summary"]["device_busy"], doc["summary"]["device_busy_steady"], strict=True
    ):
        assert 0 < whole <= steady <= 1  # the steady window lies inside the measured one
    assert len(doc["jobs"]) == 3
    spp, steady = doc["summary"]["s_per_proof"], doc["summary"]["s_per_proof_steady"]
    assert 0 < steady < spp  # the window less the first synthesis and the last check
    assert "pipeline full" in printed
    summary = doc["summary"]  # the fill: requests queued, then kernels, inside the window
    first_kernels = min(t["kernels_start"] for t in doc["timelines"])
    assert 0 <= summary["first_queued_s"] < summary["first_kernels_s"] < summary["wall_s"]
    first_witness = min(t["synth_end"] for t in doc["timelines"])  # before its staging
    assert summary["first_queued_s"] < summary["first_witness_s"] <= summary["first_kernels_s"]
    assert summary["first_witness_s"] == pytest.approx(
        first_witness - min(t["queued"] for t in doc["timelines"]) + summary["first_queued_s"]
    )
    assert summary["first_kernels_s"] == pytest.approx(
        first_kernels - min(t["queued"] for t in doc["timelines"]) + summary["first_queued_s"]
    )
    assert "fill: first request" in printed
    cpu = doc["summary"]["host_cpu_s_per_proof"]  # the MSM worker processes are helpers
    assert cpu["engine_process"] > 0 and cpu["helper_processes"] > 0
    assert "host CPU per proof" in printed
    gil = doc["summary"]["engine_gil"]  # sampled ~200 times a second over the window
    assert gil["samples"] > 10 and 0 <= gil["held_share"] <= 1 and 0 <= gil["wait_share"] < 1
    assert "engine GIL found held" in printed
    summary = doc["summary"]  # the key's own load, apart from the warm-up proofs after it
    assert 0 < summary["keys_s"] <= summary["load_s"]
    assert "the key in" in printed
    assert doc["summary"]["msm_copies"] == 1  # the CPU backend makes no copies of its bases
    assert "MSM base copies per device" in printed
    timelines = doc["timelines"]  # one per measured partition, stages in order
    assert sorted((t["job_id"], t["partition"]) for t in timelines) == sorted(
        (j["job_id"], p) for j in doc["jobs"] for p in range(2)
    )
    for t in timelines:
        marks = [t[k] for k in ("queued", "synth_start", "synth_end", "kernels_start",
                                "kernels_end", "finalize_end")]  # fmt: skip
        assert marks == sorted(marks) and t["device"] in (0, 1) and t["stages"]
    for job in doc["jobs"]:
        assert job["state"] == "succeeded" and job["error"] is None
        proofs = proofs_from_bytes(bytes.fromhex(job["proof"]))
        inputs = job["public_inputs"]
        assert len(proofs) == len(inputs) == 2
        for part_inputs, proof in zip(inputs, proofs, strict=True):
            assert all(isinstance(x, str) and x.isdigit() for x in part_inputs)
            assert verify(vk, [int(x) for x in part_inputs], proof)


def test_bench_with_faults_reports_failures(param_dir, tmp_path):
    out = tmp_path / "chaos.json"
    assert _bench(param_dir, "--proofs", "4", "--inject-faults", "1.0", "--json", str(out)) == 0
    doc = json.loads(out.read_text())
    assert [j["state"] for j in doc["jobs"]] == ["failed"] * 4
    assert all(j["proof"] is None and "injected" in j["error"] for j in doc["jobs"])


def test_bench_missing_key_is_bad_input(tmp_path, capsys):
    assert main(["bench", "--circuit", SMALL, "--param-dir", str(tmp_path)]) == 2
    assert "synthetic-300.params" in capsys.readouterr().err


@pytest.mark.skipif(
    importlib.util.find_spec("matplotlib") is not None, reason="matplotlib is installed"
)
def test_bench_timeline_without_matplotlib_says_what_to_install(param_dir, tmp_path, capsys):
    assert _bench(param_dir, "--timeline", str(tmp_path / "t.png")) == 2
    assert "pip install 'matplotlib==" in capsys.readouterr().err


def test_bench_timeline_draws_png(param_dir, tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "timeline.png"
    assert _bench(param_dir, "--proofs", "3", "--timeline", str(png)) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
