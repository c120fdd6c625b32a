"""The official parameters check: paramfetch's digest (against RFC 7693's BLAKE2b-512 test
vector, not hashlib alone), the embedded parameters.json (byte-identical to the test copy of
rust-fil-proofs' file), where files are found (as the daemon finds them), and ``cuzk params
check``'s verdicts and exit codes on random files with a manifest made for them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from cuzk.circuits import key_file_stem, official_circuits
from cuzk.cli import params_cmd
from cuzk.cli.main import main
from cuzk.errors import BadInput
from cuzk.groth16 import locate
from cuzk.groth16.official import (
    MANIFEST_NAME,
    check_circuits,
    file_digest,
    parse_manifest,
    read_manifest,
)

DATA = Path(__file__).parent / "data"

# RFC 7693 appendix A: BLAKE2b-512("abc"), first 16 bytes.
ABC_DIGEST = "ba80a53f981c4d0d6a2797b69f12f6e9"


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    """(own dir, $FIL_PROOFS_PARAMETER_CACHE, the default cache), all empty, none of them
    the machine's real /var/tmp/filecoin-proof-parameters."""
    own, env, default = (tmp_path / n for n in ("own", "env", "default"))
    for d in (own, env, default):
        d.mkdir()
    monkeypatch.setenv(locate.FIL_CACHE_ENV, str(env))
    monkeypatch.setattr(locate, "FIL_DEFAULT_CACHE", default)
    return own, env, default


def _put(directory: Path, name: str, rng, size: int = 3000) -> str:
    """A random file; its paramfetch digest (computed here with hashlib in one call)."""
    data = rng.bytes(size)
    (directory / name).write_bytes(data)
    return hashlib.blake2b(data).digest()[:16].hex()


def _manifest(path: Path, digests: dict[str, str]) -> Path:
    doc = {n: {"cid": f"Qm{n[-8:]}", "digest": d, "sector_size": 2048} for n, d in digests.items()}
    path.write_text(json.dumps(doc))
    return path


# -- the digest ------------------------------------------------------------------------------


def test_digest_is_blake2b_512_truncated(tmp_path):
    (tmp_path / "abc").write_bytes(b"abc")
    assert file_digest(tmp_path / "abc") == ABC_DIGEST
    # a 16-byte BLAKE2b is another function: the check must not use it
    assert hashlib.blake2b(b"abc", digest_size=16).hexdigest() != ABC_DIGEST


@pytest.mark.parametrize("chunk", [1, 7, 4096, 1 << 20])
def test_digest_streams_in_chunks(tmp_path, rng, chunk):
    size = int(rng.integers(1, 20_000))
    want = _put(tmp_path, "f", rng, size)
    seen: list[tuple[str, int, int]] = []
    got = file_digest(tmp_path / "f", lambda *a: seen.append(a), chunk=chunk)
    assert got == want
    assert [d for _, d, _ in seen] == [min(size, k * chunk) for k in range(1, len(seen) + 1)]
    assert seen[-1] == ("f", size, size)


def test_digest_of_unreadable_path_is_bad_input(tmp_path):
    with pytest.raises(BadInput, match="cannot read"):
        file_digest(tmp_path / "nothing")
    with pytest.raises(BadInput, match="cannot read"):
        file_digest(tmp_path)


# -- the manifest ----------------------------------------------------------------------------


def test_embedded_manifest_is_rust_fil_proofs_file():
    import cuzk.groth16

    embedded = Path(cuzk.groth16.__file__).parent / MANIFEST_NAME
    assert embedded.read_bytes() == (DATA / "parameters.json").read_bytes()
    m = read_manifest()
    assert len(m) == 44
    stem = key_file_stem("porep-32g")
    assert m[f"{stem}.params"].digest == "6a388072a518cf46ebd661f5cc46900a"
    assert m[f"{stem}.vk"].cid == "Qmf93EMrADXAK6CyiSfE8xx45fkMfR3uzKEPCvZC1n2kzb"
    assert m[f"{stem}.params"].sector_size == 32 << 30
    # every Filecoin circuit of the catalogue has both files listed
    assert len(official_circuits()) == 20
    for cid in official_circuits():
        assert {f"{key_file_stem(cid)}.params", f"{key_file_stem(cid)}.vk"} <= set(m)


@pytest.mark.parametrize(
    ("doc", "why"),
    [
        (b"not json", "not valid JSON"),
        (b"[]", "expected a JSON object"),
        (b"{}", "expected a JSON object"),
        (b'{"a": 3}', "expected an object"),
        (b'{"a": {"cid": "Q", "digest": "abc", "sector_size": 1}}', "32 hex"),
        (b'{"a": {"cid": "Q", "digest": 7, "sector_size": 1}}', "32 hex"),
        (b'{"a": {"digest": "' + b"0" * 32 + b'", "sector_size": 1}}', "cid must be"),
        (b'{"a": {"cid": "Q", "digest": "' + b"0" * 32 + b'", "sector_size": true}}', "positive"),
        (b'{"a": {"cid": "Q", "digest": "' + b"0" * 32 + b'", "sector_size": 0}}', "positive"),
    ],
)
def test_bad_manifests_are_refused_with_a_reason(doc, why):
    with pytest.raises(BadInput, match=why):
        parse_manifest(doc, "m.json")


def test_manifest_digests_are_compared_in_lower_case():
    m = parse_manifest(
        b'{"a": {"cid": "Q", "digest": "' + b"AB" * 16 + b'", "sector_size": 9}}', ""
    )
    assert m["a"].digest == "ab" * 16


# -- finding and checking files --------------------------------------------------------------


def test_find_key_order_and_vk_suffix(dirs, rng):
    own, env, default = dirs
    stem = key_file_stem("wpost-2k")
    assert locate.search_dirs(own, stem) == [own, env]
    assert locate.search_dirs(None, stem) == [env]
    assert locate.search_dirs(own, "synthetic-300") == [own]
    assert locate.find_key(None, stem) is None
    _put(env, f"{stem}.vk", rng)
    assert locate.find_key(own, stem, ".vk") == env / f"{stem}.vk"
    (own / f"{stem}.params").mkdir()  # not a file: skipped
    assert locate.find_key(own, stem) is None
    assert locate.locate_params(own, stem) == own / f"{stem}.params"


def test_parameter_cache_variable_replaces_the_default(dirs, rng, monkeypatch):
    """Filecoin's rule: with $FIL_PROOFS_PARAMETER_CACHE set, only that directory is read (a
    stale file in /var/tmp/filecoin-proof-parameters is never picked up); unset, the default."""
    own, env, default = dirs
    stem = key_file_stem("wpost-2k")
    _put(default, f"{stem}.params", rng)
    assert locate.find_key(own, stem) is None
    assert locate.locate_params(own, stem) == own / f"{stem}.params"
    (mine,) = check_circuits(_keys(["wpost-2k"]), own, read_manifest())
    assert mine.state == "missing" and mine.searched == (own, env)
    monkeypatch.delenv(locate.FIL_CACHE_ENV)
    assert locate.search_dirs(own, stem) == [own, default]
    assert locate.find_key(own, stem) == default / f"{stem}.params"
    monkeypatch.setenv(locate.FIL_CACHE_ENV, "")  # set but empty: as unset
    assert locate.find_key(None, stem) == default / f"{stem}.params"


def test_check_reports_ready_missing_corrupt_unlisted(dirs, rng, tmp_path):
    own, env, default = dirs
    ready, corrupt, missing, vk_elsewhere, unlisted = (
        "wpost-2k", "porep-2k", "snap-2k", "winning-2k", "wpost-8m")  # fmt: skip
    s = {c: key_file_stem(c) for c in (ready, corrupt, missing, vk_elsewhere, unlisted)}
    digests = {
        f"{s[ready]}.params": _put(env, f"{s[ready]}.params", rng),
        f"{s[ready]}.vk": _put(env, f"{s[ready]}.vk", rng),
        f"{s[corrupt]}.params": _put(env, f"{s[corrupt]}.params", rng),
        f"{s[corrupt]}.vk": _put(env, f"{s[corrupt]}.vk", rng),
        f"{s[missing]}.params": "00" * 16,
        f"{s[missing]}.vk": "00" * 16,
        f"{s[vk_elsewhere]}.params": _put(env, f"{s[vk_elsewhere]}.params", rng),
        f"{s[vk_elsewhere]}.vk": _put(own, f"{s[vk_elsewhere]}.vk", rng),
    }
    _put(env, f"{s[unlisted]}.params", rng)
    _put(env, f"{s[unlisted]}.vk", rng)
    bad = bytearray((env / f"{s[corrupt]}.vk").read_bytes())
    bad[int(rng.integers(len(bad)))] ^= 1 << int(rng.integers(8))
    (env / f"{s[corrupt]}.vk").write_bytes(bytes(bad))
    manifest = read_manifest(_manifest(tmp_path / "m.json", digests))

    got = {c.circuit_id: c for c in check_circuits(_keys(s), None, manifest)}
    assert {c: got[c].state for c in s} == {
        ready: "ready", corrupt: "corrupt", missing: "missing", vk_elsewhere: "missing",
        unlisted: "unlisted"}  # fmt: skip
    assert got[ready].params.path == env / f"{s[ready]}.params"
    assert got[ready].vk.path == env / f"{s[ready]}.vk"
    assert (got[corrupt].params.state, got[corrupt].vk.state) == ("ok", "corrupt")
    assert digests[f"{s[corrupt]}.vk"] in got[corrupt].vk.detail
    assert "Qm" in got[missing].params.detail and got[missing].params.path is None
    # the daemon reads the .vk beside the .params it uses, not one in another directory
    assert got[vk_elsewhere].params.state == "ok" and got[vk_elsewhere].vk.state == "missing"
    assert got[ready].searched == (env,)

    # cuzk's own directory comes first, as for the daemon: a test key there is not official
    _put(own, f"{s[ready]}.params", rng)
    _put(own, f"{s[ready]}.vk", rng)
    (mine,) = check_circuits(_keys([ready]), own, manifest)
    assert mine.state == "corrupt" and mine.params.path == own / f"{s[ready]}.params"
    assert mine.searched == (own, env)


def test_each_file_is_hashed_once(dirs, rng):
    _, env, _ = dirs
    stem = key_file_stem("wpost-2k")
    digests = {f"{stem}.{e}": _put(env, f"{stem}.{e}", rng) for e in ("params", "vk")}
    manifest = {n: read_manifest()[n] for n in digests}  # real entries: both corrupt
    hashed: list[str] = []
    out = check_circuits(_keys(["wpost-2k"] * 3), None, manifest,
                         progress=lambda n, d, t: hashed.append(n) if d == t else None)  # fmt: skip
    assert [c.state for c in out] == ["corrupt"] * 3
    assert sorted(hashed) == sorted(digests)


def _keys(ids: list[str] | dict[str, str]) -> list[tuple[str, str]]:
    """(circuit id, key file stem) pairs, as ``cuzk params check`` joins them."""
    return [(cid, key_file_stem(cid)) for cid in ids]


# -- cuzk params check ------------------------------------------------------------------------


def test_cli_exit_codes_and_output(dirs, rng, tmp_path, capsys, monkeypatch):
    own, env, _ = dirs
    stem = key_file_stem("wpost-2k")
    digests = {f"{stem}.{e}": _put(env, f"{stem}.{e}", rng) for e in ("params", "vk")}
    m = str(_manifest(tmp_path / "m.json", digests))
    monkeypatch.setattr(params_cmd, "PROGRESS_MIN_BYTES", 1)

    assert main(["params", "check", str(own), "--manifest", m, "--circuit", "wpost-2k"]) == 0
    out, err = capsys.readouterr()
    assert f"wpost-2k      ready    {env / stem}.params (+ .vk)" in out
    assert f"looked in: {own}, {env}" in out and "hashing" in err and "100%" in err

    # a requested circuit that is not ready: exit 1; without --circuit, missing is fine
    assert main(["params", "check", "--manifest", m, "--circuit", "porep-2k"]) == 1
    assert "unlisted" in capsys.readouterr().out
    assert main(["params", "check", "--manifest", m]) == 0
    out = capsys.readouterr().out
    assert "1 ready, 19 unlisted" in out
    assert main(["params", "check"]) == 1  # the real manifest: our random files are corrupt
    out = capsys.readouterr().out
    assert "wpost-2k      corrupt" in out and "19 missing" in out

    assert main(["params", "check", "--manifest", m, "--json", "--circuit", "wpost-2k"]) == 0
    (doc,) = json.loads(capsys.readouterr().out)["circuits"]
    assert doc["state"] == "ready" and doc["params"]["path"] == str(env / f"{stem}.params")
    assert doc["vk"]["name"] == f"{stem}.vk" and doc["searched"][0] == str(env)


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["--circuit", "synthetic:300"], "no official parameters"),
        (["--circuit", "wpost-3g"], "unknown circuit"),
        (["--manifest", "/nonexistent/m.json"], "cannot read manifest"),
    ],
)
def test_cli_bad_input_exits_2(dirs, capsys, args, why):
    assert main(["params", "check", *args]) == 2
    err = capsys.readouterr().err
    assert why in err and "Traceback" not in err
