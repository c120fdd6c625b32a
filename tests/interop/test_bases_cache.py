"""What the engine's snarkjs family relies on: translated bases cached by the key's digest,
witnesses read from bytes, a key's sizes from its header alone, results as snarkjs JSON, and
the ``snarkjs:NAME`` circuit ids."""

from __future__ import annotations

import os
import shutil

import pytest

from cuzk.circuits import get_circuit, key_file_stem, open_statement
from cuzk.circuits.catalogue import snarkjs_name
from cuzk.errors import BadInput
from cuzk.groth16.proof import proofs_to_bytes
from cuzk.interop import prepare, prove, read_wtns, read_zkey, verify_json
from cuzk.interop.bases import translate_bases
from cuzk.interop.bases_cache import cached_bases, zkey_digest
from cuzk.interop.snarkjs_json import read_json, result_to_json
from cuzk.interop.zkey import read_zkey_header


def test_cached_bases_are_the_translation_and_are_reused(fixture_copy, tmp_path):
    zkey = read_zkey(fixture_copy / "fixture.zkey")
    cache = tmp_path / "cache"
    first, hit = cached_bases(zkey, cache)
    assert not hit
    plain = translate_bases(zkey)
    try:
        with open(first.path, "rb") as a, open(plain.path, "rb") as b:
            assert a.read() == b.read()
        assert [(p.group, p.offset, p.count) for p in first.sets().values()] == [
            (p.group, p.offset, p.count) for p in plain.sets().values()
        ]
    finally:
        plain.remove()
    stamp = os.stat(first.path).st_mtime_ns
    second, hit = cached_bases(zkey, cache)
    assert hit and second == first and os.stat(first.path).st_mtime_ns == stamp
    # The same key under another name (or touched) hashes again and finds the same file.
    shutil.copy(fixture_copy / "fixture.zkey", fixture_copy / "renamed.zkey")
    third, hit = cached_bases(read_zkey(fixture_copy / "renamed.zkey"), cache)
    assert hit and third.path == first.path
    # A persistent translation survives PreparedKey.close().
    key = prepare(zkey, cache_dir=cache)
    key.close()
    assert os.path.exists(first.path)


def test_digest_follows_the_content(fixture_copy, tmp_path, rng):
    path = fixture_copy / "fixture.zkey"
    before = zkey_digest(path, tmp_path)
    data = bytearray(path.read_bytes())
    k = int(rng.integers(len(data) // 2, len(data)))
    data[k] ^= 1
    path.write_bytes(bytes(data))
    os.utime(path, ns=(1, 1))  # a new mtime, as a rewrite gives
    assert zkey_digest(path, tmp_path) != before


def test_prove_with_a_cached_key(fixtures, tmp_path, cpu_backend):
    key = prepare(read_zkey(fixtures / "fixture.zkey"), cache_dir=tmp_path)
    try:
        proof, public = prove(key, read_wtns(fixtures / "fixture.wtns"), cpu_backend)
    finally:
        key.evict_from(cpu_backend)
    proof_obj, public_obj = result_to_json(proofs_to_bytes([proof]), [public])
    assert verify_json(read_json(fixtures / "fixture_vk.json"), public_obj, proof_obj)
    assert public_obj == read_json(fixtures / "snarkjs_public.json")
    with pytest.raises(BadInput, match="one proof"):
        result_to_json(proofs_to_bytes([proof, proof]), [public, public])


def test_witness_from_bytes(fixtures, rng):
    data = (fixtures / "fixture.wtns").read_bytes()
    a, b = read_wtns(fixtures / "fixture.wtns"), read_wtns("payload", data)
    assert (a.values == b.values).all()
    cut = int(rng.integers(12, len(data) - 1))
    with pytest.raises(BadInput, match="^payload: "):
        read_wtns("payload", data[:cut])


def test_header_agrees_with_the_full_reader(fixtures):
    h, z = read_zkey_header(fixtures / "fixture.zkey"), read_zkey(fixtures / "fixture.zkey")
    assert (h.n_vars, h.n_public, h.domain_size) == (z.n_vars, z.n_public, z.domain_size)
    assert h.coefficient_entries == z.a.indices.shape[0] + z.b.indices.shape[0]
    assert h.point_bytes == sum(s.size for s in z.vectors.values())
    with pytest.raises(BadInput, match="not a .zkey"):
        read_zkey_header(fixtures / "fixture.wtns")


def test_snarkjs_circuit_ids():
    assert snarkjs_name("snarkjs:my-key_1.v2") == "my-key_1.v2"
    assert key_file_stem("snarkjs:my-key") == "my-key"
    assert snarkjs_name("synthetic:300") is None
    for bad in ("snarkjs:", "snarkjs:../x", "snarkjs:a/b", "snarkjs:.hidden"):
        with pytest.raises(BadInput, match="bad circuit id"):
            snarkjs_name(bad)
    with pytest.raises(BadInput, match="no built-in circuit"):
        get_circuit("snarkjs:x")
    with pytest.raises(BadInput, match="engine's snarkjs family"):
        open_statement("snarkjs:x", payload=b"wtns")
