"""The command line, run in-process: exit codes, files written, errors without tracebacks."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from cuzk.circuits import key_file_stem
from cuzk.cli.main import main
from cuzk.groth16 import proofs_from_bytes, read_vk, verify

CIRCUIT = "synthetic:300"


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    cache = d / "shapes"
    assert (
        main(
            [
                "setup",
                "--circuit",
                CIRCUIT,
                "--out",
                str(d),
                "--seed",
                "5",
                "--workers",
                "2",
                "--shape-cache",
                str(cache),
            ]
        )
        == 0
    )
    return d, cache


@pytest.fixture(scope="module")
def proof_files(keys):
    d, cache = keys
    args = [
        "prove",
        "--circuit",
        CIRCUIT,
        "--params",
        str(d / "synthetic-300.params"),
        "--out",
        str(d / "proof.bin"),
        "--inputs-out",
        str(d / "inputs.json"),
        "--seed",
        "8",
        "--workers",
        "2",
        "--shape-cache",
        str(cache),
    ]
    assert main(args) == 0
    return d / "proof.bin", d / "inputs.json", d / "synthetic-300.vk"


def _verify(proof, inputs, vk) -> int:
    return main(["verify", "--vk", str(vk), "--proof", str(proof), "--inputs", str(inputs)])


def test_prove_then_verify(proof_files):
    proof, inputs, vk = proof_files
    assert len(proof.read_bytes()) == 192
    values = json.loads(inputs.read_text())
    assert len(values) == 4 and all(isinstance(v, str) and v.isdigit() for v in values)
    assert _verify(proof, inputs, vk) == 0


def test_verify_invalid_exits_1(proof_files, tmp_path, capsys):
    proof, inputs, vk = proof_files
    values = json.loads(inputs.read_text())
    values[0] = str(int(values[0]) ^ 1)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps(values))
    assert _verify(proof, wrong, vk) == 1
    assert "invalid" in capsys.readouterr().err


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda p, i, v, t: (t / "none.bin", i, v), "cannot read"),
        (lambda p, i, v, t: (_write(t / "short.bin", p.read_bytes()[:100]), i, v), "192"),
        (lambda p, i, v, t: (p, _write(t / "x.json", b"[1, "), v), "not JSON"),
        (lambda p, i, v, t: (p, _write(t / "x.json", b'["-3"]'), v), "decimal"),
        (lambda p, i, v, t: (p, _write(t / "x.json", b'["1"]'), v), "public inputs"),
        (lambda p, i, v, t: (p, i, _write(t / "x.vk", v.read_bytes()[:-5])), "truncated"),
    ],
)
def test_verify_bad_input_exits_2(proof_files, tmp_path, capsys, mutate, message):
    proof, inputs, vk = mutate(*proof_files, tmp_path)
    assert _verify(proof, inputs, vk) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


def test_info(keys, capsys):
    d, _ = keys
    assert main(["info", str(d / "synthetic-300.params"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["kind"] == "params" and info["domain_size"] == 512 and info["num_inputs"] == 5
    assert main(["info", str(d / "synthetic-300.vk")]) == 0
    assert "vk file" in capsys.readouterr().out
    assert main(["info", str(d / "nothing")]) == 2


def test_unknown_circuit_is_a_clear_error(keys, capsys):
    d, cache = keys
    code = main(
        [
            "prove",
            "--circuit",
            "nope:1",
            "--params",
            str(d / "synthetic-300.params"),
            "--out",
            str(d / "p"),
            "--shape-cache",
            str(cache),
        ]
    )
    assert code == 2 and "unknown circuit" in capsys.readouterr().err


def test_params_for_another_circuit_are_refused(keys, capsys, tmp_path):
    """A key file under another circuit's name is refused by its name; one renamed to this
    circuit's name, by its contents, before any work."""
    import shutil

    d, cache = keys
    prove = ["prove", "--circuit", "synthetic:600", "--out", str(d / "p"), "--workers", "2",
             "--shape-cache", str(cache), "--params"]  # fmt: skip
    assert main([*prove, str(d / "synthetic-300.params")]) == 2
    assert "synthetic-600.params" in capsys.readouterr().err
    renamed = tmp_path / "synthetic-600.params"
    shutil.copy(d / "synthetic-300.params", renamed)
    assert main([*prove, str(renamed)]) == 2
    assert "not made for circuit" in capsys.readouterr().err


def test_prove_from_vanilla_request(tmp_path, capsys):
    """gen-vanilla → setup → prove --vanilla → verify, and a request for another circuit is
    refused."""
    cache = tmp_path / "shapes"
    assert (
        main(
            [
                "setup",
                "--circuit",
                "wpost-2k",
                "--out",
                str(tmp_path),
                "--seed",
                "3",
                "--workers",
                "2",
                "--shape-cache",
                str(cache),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "gen-vanilla",
                "window-post",
                "--sector-size",
                "2KiB",
                "--out",
                str(tmp_path / "v.json"),
            ]
        )
        == 0
    )
    stem = key_file_stem("wpost-2k")
    assert stem.startswith("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-")
    prove = [
        "prove",
        "--circuit",
        "wpost-2k",
        "--params",
        str(tmp_path / f"{stem}.params"),
        "--vanilla",
        str(tmp_path / "v.json"),
        "--out",
        str(tmp_path / "p.bin"),
        "--inputs-out",
        str(tmp_path / "i.json"),
        "--workers",
        "2",
        "--shape-cache",
        str(cache),
    ]
    assert main(prove) == 0
    assert _verify(tmp_path / "p.bin", tmp_path / "i.json", tmp_path / f"{stem}.vk") == 0
    capsys.readouterr()
    prove[2] = "winning-2k"
    assert main(prove) == 2
    assert "is for wpost-2k" in capsys.readouterr().err
    # The bench proves a request as Curio sends it, converted per proof like the daemon does.
    curio = tmp_path / "curio"
    assert main(["gen-vanilla", "window-post", "--sector-size", "2KiB", "--curio",
                 "--out", str(curio)]) == 0  # fmt: skip
    bench = ["bench", "--backend", "cpu", "--circuit", "wpost-2k", "--vanilla", str(curio),
             "--param-dir", str(tmp_path), "--shape-cache", str(cache), "--proofs", "2",
             "--concurrency", "1", "--workers-per-device", "1",
             "--json", str(tmp_path / "b.json")]  # fmt: skip
    assert main(bench) == 0
    summary = json.loads((tmp_path / "b.json").read_text())["summary"]
    assert (summary["succeeded"], summary["failed"]) == (2, 0)
    capsys.readouterr()
    bench[4] = "winning-2k"
    assert main(bench) == 2
    assert "is a wpost-2k request, not winning-2k" in capsys.readouterr().err
    # --urgent: the same request at CRITICAL priority while the bench's own proofs run.
    bench[4] = "wpost-2k"
    bench[bench.index("--proofs") + 1] = "3"
    urgent = [*bench, "--urgent", f"wpost-2k={curio}", "--urgent-every", "0.05"]
    assert main(urgent) == 0
    printed = capsys.readouterr().out
    assert "urgent wpost-2k (CRITICAL)" in printed and "waited for the device" in printed
    doc = json.loads((tmp_path / "b.json").read_text())
    u = doc["summary"]["urgent"]
    assert u["submitted"] >= 1 and u["succeeded"] == u["submitted"] == len(doc["urgent_jobs"])
    assert doc["summary"]["succeeded"] == 3  # the urgent proofs are not counted there
    vk = read_vk(doc["urgent_vk"])
    for job in doc["urgent_jobs"]:
        assert job["state"] == "succeeded" and job["latency_s"] > 0
        (inputs,) = job["public_inputs"]
        assert verify(
            vk, [int(x) for x in inputs], proofs_from_bytes(bytes.fromhex(job["proof"]))[0]
        )
    assert {t["job_id"] for t in doc["urgent_timelines"]} == {
        j["job_id"] for j in doc["urgent_jobs"]
    }
    assert main([*bench, "--urgent", "wpost-2k"]) == 2
    assert "--urgent takes CIRCUIT=PATH" in capsys.readouterr().err
    assert main([*bench, "--urgent", f"winning-2k={curio}"]) == 2
    assert "is a wpost-2k request, not winning-2k" in capsys.readouterr().err


def test_verify_takes_several_partitions(keys, proof_files, tmp_path):
    """A proof file of P partitions verifies against P input lists, in order."""
    d, cache = keys
    proof, inputs, vk = proof_files
    other, other_inputs = tmp_path / "p2.bin", tmp_path / "i2.json"
    assert (
        main(
            [
                "prove",
                "--circuit",
                CIRCUIT,
                "--params",
                str(d / "synthetic-300.params"),
                "--out",
                str(other),
                "--inputs-out",
                str(other_inputs),
                "--seed",
                "9",
                "--workers",
                "2",
                "--shape-cache",
                str(cache),
            ]
        )
        == 0
    )
    both = _write(tmp_path / "both.bin", proof.read_bytes() + other.read_bytes())
    lists = [json.loads(inputs.read_text()), json.loads(other_inputs.read_text())]
    assert lists[0] != lists[1]
    good = tmp_path / "both.json"
    good.write_text(json.dumps(lists))
    assert _verify(both, good, vk) == 0
    swapped = tmp_path / "swapped.json"
    swapped.write_text(json.dumps(lists[::-1]))
    assert _verify(both, swapped, vk) == 1
    assert _verify(both, inputs, vk) == 2  # two proofs, one input list


@pytest.mark.parametrize(
    "kind, circuit, inputs", [("porep", "porep-2k", 39), ("snap", "snap-2k", 4)]
)
def test_gen_vanilla_porep_and_snap_open_as_requests(kind, circuit, inputs, tmp_path, seed):
    from cuzk.circuits import open_statement

    out = tmp_path / f"{kind}.json"
    assert (
        main(["gen-vanilla", kind, "--sector-size", "2KiB", "--seed", str(seed), "--out", str(out)])
        == 0
    )
    statement = open_statement(circuit, payload=out.read_bytes())
    assert statement.partitions == 1 and len(statement.expected(0)) == inputs
    assert main(["gen-vanilla", kind, "--partition", "1", "--out", str(out)]) == 2


def test_bench_counts_a_devices_bus_and_give_backs_over_the_measured_proofs(rng):
    from cuzk.cli.bench import _bus, _since
    from cuzk.engine.request import DeviceStatus

    def status(give_backs: int, uploaded: int, kernel_s: float) -> Any:
        dev = DeviceStatus(0, "cuda", kernel_s, memory_give_backs=give_backs,
                           uploaded_bytes=uploaded)  # fmt: skip
        return SimpleNamespace(devices=(dev,))

    g, u, k = int(rng.integers(0, 100)), int(rng.integers(0, 1 << 40)), float(rng.uniform(1, 9))
    dg, du, dk = int(rng.integers(1, 100)), int(rng.integers(1e9, 1e12)), float(rng.uniform(1, 60))
    after = status(g + dg, u + du, k + dk).devices[0]
    m = _since(status(g, u, k), after)
    assert m["give_backs"] == dg and m["uploaded_bytes"] == du
    assert m["kernel_seconds"] == pytest.approx(dk)
    parts = int(rng.integers(1, 40))
    assert _bus(m, parts) == f"{du / parts / 1e9:.1f} GB / {du / dk / 1e9:.1f} GB/s"
    assert _bus({"uploaded_bytes": du, "kernel_seconds": 0.0}, parts).endswith("/ 0.0 GB/s")


def test_bench_marks_a_peak_over_the_cap():
    from cuzk.cli.bench import _cap_and_peak

    gib = 1 << 30
    over = _cap_and_peak({"limit_bytes": 16 * gib, "peak_bytes": 16 * gib + (640 << 20)})
    assert over == "16.0 GiB / 16.62 GiB (over the cap)"
    under = _cap_and_peak({"limit_bytes": 16 * gib, "peak_bytes": 15 * gib})
    assert under == "16.0 GiB / 15.00 GiB"
    assert _cap_and_peak({"limit_bytes": 0, "peak_bytes": 100 * gib}) == "none / 100.00 GiB"
    assert _cap_and_peak({"limit_bytes": 16 * gib, "peak_bytes": 0}).endswith("not measured")
