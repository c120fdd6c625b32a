"""``cuzk snarkjs prove|verify`` in-process: files written, exit codes 0 / 1 / 2."""

from __future__ import annotations

import json

import pytest

from cuzk.cli.main import main
from cuzk.field.constants import P
from tests.interop import toolchain


@pytest.fixture(scope="module")
def proved(tmp_path_factory):
    from tests.interop.conftest import FIXTURES

    d = tmp_path_factory.mktemp("snarkjs-cli")
    rc = main(
        [
            "snarkjs",
            "prove",
            str(FIXTURES / "fixture.zkey"),
            str(FIXTURES / "fixture.wtns"),
            str(d / "proof.json"),
            str(d / "public.json"),
            "--workers",
            "2",
            "--r1cs",
            str(FIXTURES / "fixture.r1cs"),
        ]
    )
    assert rc == 0
    return d


def _verify(fixtures, public, proof) -> int:
    return main(["snarkjs", "verify", str(fixtures / "fixture_vk.json"), str(public), str(proof)])


def test_prove_writes_snarkjs_files(proved, fixtures):
    public = (proved / "public.json").read_text()
    assert public == (fixtures / "snarkjs_public.json").read_text()
    proof = json.loads((proved / "proof.json").read_text())
    assert list(proof) == ["pi_a", "pi_b", "pi_c", "protocol", "curve"]


def test_verify_exit_codes(proved, fixtures, tmp_path, capsys):
    assert _verify(fixtures, proved / "public.json", proved / "proof.json") == 0
    assert "valid" in capsys.readouterr().out
    wrong = tmp_path / "public.json"
    values = json.loads((proved / "public.json").read_text())
    wrong.write_text(json.dumps([values[0], values[1], str(int(values[2]) + 1)]))
    assert _verify(fixtures, wrong, proved / "proof.json") == 1
    garbage = tmp_path / "proof.json"
    garbage.write_text('{"pi_a": ["1"]}')
    assert _verify(fixtures, proved / "public.json", garbage) == 2
    assert "pi_a" in capsys.readouterr().err


def test_verify_accepts_snarkjs_proof(fixtures):
    assert _verify(fixtures, fixtures / "snarkjs_public.json", fixtures / "snarkjs_proof.json") == 0


def test_snarkjs_accepts_cli_proof_and_rejects_tampering(npm_bin, proved, fixtures, tmp_path):
    vk = fixtures / "fixture_vk.json"
    assert toolchain.snarkjs_verifies(vk, proved / "public.json", proved / "proof.json")
    proof = json.loads((proved / "proof.json").read_text())
    proof["pi_c"][1] = str(P - int(proof["pi_c"][1]))
    (tmp_path / "bad.json").write_text(json.dumps(proof))
    assert not toolchain.snarkjs_verifies(vk, proved / "public.json", tmp_path / "bad.json")
    assert _verify(fixtures, proved / "public.json", tmp_path / "bad.json") == 1


def test_prove_bad_input_exit_2(fixtures, tmp_path, capsys):
    rc = main(
        [
            "snarkjs",
            "prove",
            str(fixtures / "fixture.wtns"),
            str(fixtures / "fixture.wtns"),
            str(tmp_path / "p.json"),
            str(tmp_path / "q.json"),
        ]
    )
    assert rc == 2
    assert "not a .zkey file" in capsys.readouterr().err
    assert not (tmp_path / "p.json").exists()


def test_prove_with_a_bases_cache(fixtures, tmp_path):
    cache = tmp_path / "cache"
    for run in range(2):  # translate, then reuse
        out = tmp_path / str(run)
        out.mkdir()
        rc = main(
            [
                "snarkjs",
                "prove",
                str(fixtures / "fixture.zkey"),
                str(fixtures / "fixture.wtns"),
                str(out / "proof.json"),
                str(out / "public.json"),
                "--workers",
                "1",
                "--bases-cache",
                str(cache),
            ]
        )
        assert rc == 0
        assert _verify(fixtures, out / "public.json", out / "proof.json") == 0
        assert len(list(cache.glob("*.bases"))) == 1


@pytest.mark.parametrize("digits", [4301, 100_000])
def test_verify_overlong_public_input_is_bad_input(fixtures, tmp_path, capsys, digits):
    """A signal longer than Python's int-string limit is unusable input (2), not a fault (3),
    and the message does not echo it back."""
    public = tmp_path / "public.json"
    public.write_text(json.dumps(["9" * digits, "1", "2"]))
    assert _verify(fixtures, public, fixtures / "snarkjs_proof.json") == 2
    err = capsys.readouterr().err
    assert "signal 0" in err and "digits" in err and len(err) < 400
