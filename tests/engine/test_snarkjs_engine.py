"""snarkjs keys through the engine: ``snarkjs:NAME`` proves with ``NAME.zkey`` from a ``.wtns``
payload, the result checks with the key's own verifying key (ours and snarkjs's verifier), bad
witnesses are refused at submit, and a failing snarkjs job leaves other jobs alone."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from cuzk.engine import ProofRequest
from cuzk.errors import BadInput
from cuzk.field.constants import R
from cuzk.groth16 import proofs_from_bytes, verify
from cuzk.interop import read_r1cs, read_wtns, read_zkey, verify_json, write_json
from cuzk.interop.snarkjs_json import read_json, result_to_json, write_result
from cuzk.interop.zkey_setup import write_test_zkey
from tests.engine.conftest import SMALL
from tests.engine.helpers import assert_timeline_ordered, assert_verifies
from tests.interop import toolchain
from tests.interop.conftest import FIXTURES, join_container, split_container

FIXTURE = "snarkjs:fixture"  # the committed snarkjs-made key (tests/interop/fixtures)
OURS = "snarkjs:ours"  # a key for the same circuit from our insecure setup


@pytest.fixture(scope="module")
def snarkjs_dir(param_dir, pool) -> Path:
    """The engine's parameter directory, with the two snarkjs keys added."""
    shutil.copy(FIXTURES / "fixture.zkey", param_dir / "fixture.zkey")
    if not (param_dir / "ours.zkey").exists():
        write_test_zkey(read_r1cs(FIXTURES / "fixture.r1cs"), param_dir / "ours.zkey", pool,
                        seed=11)  # fmt: skip
    return param_dir


@pytest.fixture(scope="module")
def wtns() -> bytes:
    return (FIXTURES / "fixture.wtns").read_bytes()


def _request(cid: str, payload: bytes, **kw) -> ProofRequest:
    return ProofRequest(cid, payload=payload, **kw)


def _with_values(payload: bytes, edit) -> bytes:
    """The .wtns with its values section rewritten by ``edit(bytearray) -> bytes`` and the
    header's count kept in step."""
    magic, version, sections = split_container(payload)
    out = []
    for sid, body in sections:
        if sid == 2:
            body = bytes(edit(bytearray(body)))
        out.append((sid, body))
    count = len(dict(out)[2]) // 32
    out = [(s, b[:-4] + struct.pack("<I", count) if s == 1 else b) for s, b in out]
    return join_container(magic, version, out)


def test_proves_a_snarkjs_key(make_engine, snarkjs_dir, wtns, tmp_path):
    engine = make_engine(param_dir=snarkjs_dir, shape_cache=tmp_path / "shapes")
    result = engine.prove(_request(FIXTURE, wtns), timeout=120)
    assert result.vk_path == str(snarkjs_dir / "fixture.zkey")
    (proof,) = proofs_from_bytes(result.proof)
    want = [int(v) for v in read_json(FIXTURES / "snarkjs_public.json")]
    assert list(result.public_inputs[0]) == want
    # Independently of the engine: the key's verifying key, and snarkjs's exported JSON one.
    assert verify(read_zkey(result.vk_path).vk, want, proof)
    proof_obj, public_obj = result_to_json(result.proof, result.public_inputs)
    assert verify_json(read_json(FIXTURES / "fixture_vk.json"), public_obj, proof_obj)
    assert_timeline_ordered(result)
    # The translated bases were cached under the shape cache for the next start.
    assert list((tmp_path / "shapes" / "snarkjs-bases").glob("*.bases"))


@pytest.mark.skipif(toolchain.unavailable_reason() is not None,
                    reason=str(toolchain.unavailable_reason()))  # fmt: skip
def test_snarkjs_verifies_the_engines_proof(make_engine, snarkjs_dir, wtns, tmp_path):
    toolchain.ensure_installed()
    engine = make_engine(param_dir=snarkjs_dir, shape_cache=tmp_path / "shapes")
    result = engine.prove(_request(OURS, wtns), timeout=120)
    vk = tmp_path / "vk.json"
    toolchain.snarkjs("zkey", "export", "verificationkey", result.vk_path, vk, cwd=tmp_path)
    write_result(result.proof, result.public_inputs, tmp_path / "proof.json",
                 tmp_path / "public.json")  # fmt: skip
    assert toolchain.snarkjs_verifies(vk, tmp_path / "public.json", tmp_path / "proof.json")
    assert (tmp_path / "public.json").read_text() == (
        FIXTURES / "snarkjs_public.json").read_text()  # fmt: skip
    tampered = read_json(tmp_path / "proof.json")
    tampered["pi_a"], tampered["pi_c"] = tampered["pi_c"], tampered["pi_a"]
    write_json(tmp_path / "tampered.json", tampered)
    assert not toolchain.snarkjs_verifies(vk, tmp_path / "public.json", tmp_path / "tampered.json")


def test_bad_requests_are_refused_at_submit(make_engine, snarkjs_dir, wtns, rng):
    engine = make_engine(param_dir=snarkjs_dir)
    cut = int(rng.integers(12, len(wtns) - 1))
    cases = {
        "not a .wtns": (FIXTURE, b"zkey" + wtns[4:]),
        "truncated": (FIXTURE, wtns[:cut]),
        "one wire too many": (FIXTURE, _with_values(wtns, lambda b: b + bytes(32))),
        "one wire too few": (FIXTURE, _with_values(wtns, lambda b: b[:-32])),
        "no such key": ("snarkjs:absent", wtns),
        "a path for a name": ("snarkjs:../fixture", wtns),
    }
    expect = {
        "not a .wtns": "not a .wtns file",
        "truncated": "truncated",
        "one wire too many": "expects nVars",
        "one wire too few": "expects nVars",
        "no such key": "absent.zkey does not exist",
        "a path for a name": "bad circuit id",
    }
    for what, (cid, payload) in cases.items():
        with pytest.raises(BadInput, match=expect[what]):
            engine.submit(_request(cid, payload))
    with pytest.raises(BadInput, match="takes a .wtns payload"):
        engine.submit(ProofRequest(FIXTURE, seeds=(1,)))
    value_too_big = _with_values(wtns, lambda b: b[:-32] + b"\xff" * 32)
    with pytest.raises(BadInput, match="witness values"):
        engine.submit(_request(FIXTURE, value_too_big))
    assert engine.status().jobs == ()  # nothing was queued


def test_a_failing_snarkjs_job_leaves_the_others_alone(make_engine, snarkjs_dir, wtns, rng):
    """An unsatisfying witness (one private wire changed) passes submit — the key has no C
    matrix to check it against — and fails its own job as BadInput at the final check, while
    a good snarkjs job and a bellperson job in the same engine succeed."""
    n = len(read_wtns("fixture", wtns))
    k = int(rng.integers(n - 50, n))  # a private wire

    def bump(body: bytearray) -> bytes:
        v = int.from_bytes(body[32 * k : 32 * k + 32], "little")
        body[32 * k : 32 * k + 32] = ((v + 1) % R).to_bytes(32, "little")
        return bytes(body)

    bad = _with_values(wtns, bump)
    engine = make_engine(param_dir=snarkjs_dir, staging=True, staging_budget=1 << 28)
    ids = [
        engine.submit(_request(OURS, bad)),
        engine.submit(_request(OURS, wtns)),
        engine.submit(ProofRequest.of(SMALL, partitions=2, seed=int(rng.integers(1 << 30)))),
    ]
    with pytest.raises(BadInput, match="does not satisfy"):
        engine.result(ids[0], timeout=120)
    good = engine.result(ids[1], timeout=120)
    assert verify(read_zkey(good.vk_path).vk, good.public_inputs[0],
                  proofs_from_bytes(good.proof)[0])  # fmt: skip
    assert_verifies(engine.result(ids[2], timeout=120), 2)
    st = engine.status()
    assert {s.circuit_id for s in st.srs} == {OURS, SMALL}
    assert st.budget.by_kind["partition"] == 0


def test_evict_and_reload_uses_the_cached_bases(make_engine, snarkjs_dir, wtns, tmp_path):
    cache = tmp_path / "shapes"
    engine = make_engine(param_dir=snarkjs_dir, shape_cache=cache)
    engine.preload(OURS)
    (bases,) = (cache / "snarkjs-bases").glob("*.bases")
    stamp = bases.stat().st_mtime_ns
    assert engine.evict(OURS)
    assert engine.status().srs == ()
    engine.prove(_request(OURS, wtns), timeout=120)  # loads again: same translation, reused
    assert bases.stat().st_mtime_ns == stamp
