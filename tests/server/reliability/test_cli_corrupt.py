"""Corrupt files given to the command line exit 2 ("unusable input", a last line on stderr saying
why), never
3 ("internal error") or a traceback: inputs files, proofs, keys, snarkjs JSON, configs, a
directory where a file belongs. Seeded corruptions of valid files plus the issue's cases."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from cuzk.cli.main import main

from ..conftest import CIRCUIT
from .harness import report

KEY = "synthetic-512"


def _corruptions(valid: bytes, r: random.Random) -> list[tuple[str, bytes | None]]:
    """(name, bytes) of corrupt versions of a file; None: a directory in its place."""
    out: list[tuple[str, bytes | None]] = [
        ("empty", b""),
        ("directory", None),
        ("random", r.randbytes(r.randrange(1, 3000))),
        ("deep list", b"[" * 100_000 + b"]" * 100_000),
        ("deep object", b'{"a":' * 50_000 + b"1" + b"}" * 50_000),
        ("5000-digit number", b"[" + b"9" * 5000 + b"]"),
        ("5000-digit decimal", b'["' + b"9" * 5000 + b'"]'),
        ("superscript digit", '["²"]'.encode()),
        ("arabic digits", '["١٢٣"]'.encode()),
        ("not utf-8", b'["\xff\xfe"]'),
        ("nan", b"[NaN, Infinity]"),
        ("nested lists", b"[[[[1]]], [2]]"),
        ("huge list", b"[" + b"1," * 100_000 + b"1]"),
    ]
    for i in range(6):
        cut = r.randrange(len(valid)) if valid else 0
        out.append((f"truncated {i}", valid[:cut]))
        flipped = bytearray(valid)
        for _ in range(r.randrange(1, 8)):
            if flipped:
                flipped[r.randrange(len(flipped))] ^= 1 << r.randrange(8)
        out.append((f"flipped {i}", bytes(flipped)))
    return out


@pytest.fixture(scope="module")
def made(tmp_path_factory, server_keys):
    """A valid proof, its inputs, the key files."""
    d = tmp_path_factory.mktemp("cli-valid")
    params = server_keys / f"{KEY}.params"
    proof, inputs = d / "proof.bin", d / "inputs.json"
    code = main(["prove", "--circuit", CIRCUIT, "--params", str(params), "--out", str(proof),
                 "--inputs-out", str(inputs), "--seed", "7"])  # fmt: skip
    assert code == 0
    return {"params": params, "vk": server_keys / f"{KEY}.vk", "proof": proof, "inputs": inputs}


def _commands(files: dict[str, Path], slot: str, bad: Path) -> list[list[str]]:
    f = {**files, slot: bad}
    if slot == "params":
        prove = ["prove", "--circuit", CIRCUIT, "--params", str(bad),
                 "--out", str(bad.parent / "out.bin")]  # fmt: skip
        return [["info", str(bad)], prove]
    verify = ["verify", "--vk", str(f["vk"]), "--proof", str(f["proof"]),
              "--inputs", str(f["inputs"])]  # fmt: skip
    if slot == "vk":
        return [verify, ["info", str(bad)]]
    if slot == "inputs":  # snarkjs verify reads JSON in every position; serve a config
        return [verify, ["snarkjs", "verify", str(bad), str(bad), str(bad)],
                ["serve", "--config", str(bad)]]  # fmt: skip
    return [verify]


def test_corrupt_files_exit_2_never_3(made, tmp_path, capsys, seed):
    r = random.Random(seed)
    codes: Counter = Counter()
    bad_runs = []
    runs = 0
    for slot in ("inputs", "proof", "vk", "params"):
        valid = made[slot].read_bytes()
        for i, (name, data) in enumerate(_corruptions(valid, r)):
            bad = tmp_path / f"{slot}-{i}"
            if data is None:
                bad.mkdir()
            else:
                # (a config that happens to be valid would start a daemon: never let it be)
                bad.write_bytes(data + (b"\n[not_a_section]\n" if slot == "inputs" else b""))
            for argv in _commands(made, slot, bad):
                runs += 1
                code = main(argv)
                err = capsys.readouterr().err
                codes[code] += 1
                # info reads only a file's header: a flip beyond it leaves a readable header
                ok = (
                    code == 2
                    or (code == 1 and argv[0] == "verify" and slot != "vk")
                    or (
                        code == 0
                        and argv[0] == "info"
                        and name.startswith(("flipped", "truncated"))
                    )
                )
                last = (err.strip().splitlines() or [""])[-1]  # (prove shows progress first)
                said = code in (0, 1) or last.startswith("cuzk: error: ")
                if not ok or "Traceback" in err or not said:
                    bad_runs.append((slot, name, argv[0], code, err.strip()[-300:]))
    report("cli corrupt files (fast)", seed=seed, runs=runs,
           exit_codes=dict(sorted(codes.items())), internal=codes[3],
           wrong=len(bad_runs))  # fmt: skip
    assert not bad_runs, bad_runs[:8]
