"""The insecure key generator for tests/benchmarks: snarkjs proves and verifies with its keys,
and so does cuzk — which also checks our reading of snarkjs's setup (H basis, public rows)."""

from __future__ import annotations

import pytest

from cuzk.interop import (
    prepare,
    proof_to_json,
    prove,
    public_to_json,
    read_r1cs,
    read_wtns,
    read_zkey,
    write_json,
)
from cuzk.interop.zkey_setup import snarkjs_domain_size, write_test_zkey
from tests.interop import toolchain


@pytest.fixture(scope="module")
def our_zkey(tmp_path_factory, pool, fixtures):
    path = tmp_path_factory.mktemp("zkey-setup") / "ours.zkey"
    return write_test_zkey(read_r1cs(fixtures / "fixture.r1cs"), path, pool, seed=7)


def test_domain_size_rule():
    assert snarkjs_domain_size(395, 3) == 512  # the fixture, as snarkjs sized it
    assert snarkjs_domain_size(508, 3) == 512
    assert snarkjs_domain_size(509, 3) == 1024  # n + nPublic + 1 rows must fit


def test_reads_back_like_a_snarkjs_key(our_zkey, fixtures):
    ours, theirs = read_zkey(our_zkey), read_zkey(fixtures / "fixture.zkey")
    assert (ours.n_vars, ours.n_public, ours.domain_size) == (
        theirs.n_vars,
        theirs.n_public,
        theirs.domain_size,
    )
    w = read_wtns(fixtures / "fixture.wtns").values
    assert (ours.a.matvec(w) == theirs.a.matvec(w)).all()
    assert (ours.b.matvec(w) == theirs.b.matvec(w)).all()


def test_cuzk_proves_with_it(our_zkey, cpu_backend, fixtures):
    key = prepare(read_zkey(our_zkey))
    try:
        prove(key, read_wtns(fixtures / "fixture.wtns"), cpu_backend)  # verifies internally
    finally:
        key.evict_from(cpu_backend)
        key.close()


def test_snarkjs_proves_and_verifies_with_it(npm_bin, our_zkey, cpu_backend, fixtures, tmp_path):
    vk = tmp_path / "vk.json"
    toolchain.snarkjs("zkey", "export", "verificationkey", our_zkey, vk, cwd=tmp_path)
    toolchain.snarkjs(
        "groth16",
        "prove",
        our_zkey,
        fixtures / "fixture.wtns",
        tmp_path / "theirs.json",
        tmp_path / "public.json",
        cwd=tmp_path,
    )
    assert toolchain.snarkjs_verifies(vk, tmp_path / "public.json", tmp_path / "theirs.json")
    key = prepare(read_zkey(our_zkey))
    try:
        proof, public = prove(key, read_wtns(fixtures / "fixture.wtns"), cpu_backend)
    finally:
        key.evict_from(cpu_backend)
        key.close()
    write_json(tmp_path / "ours.json", proof_to_json(proof))
    write_json(tmp_path / "our_public.json", public_to_json(public))
    assert toolchain.snarkjs_verifies(vk, tmp_path / "our_public.json", tmp_path / "ours.json")


def test_backend_fixed_base_writes_the_same_key(our_zkey, pool, cpu_backend, fixtures, tmp_path):
    """The backend path (CUDA in benchmarks) must write the pool path's bytes exactly."""
    path = write_test_zkey(
        read_r1cs(fixtures / "fixture.r1cs"), tmp_path / "b.zkey", pool, seed=7, backend=cpu_backend
    )
    assert path.read_bytes() == our_zkey.read_bytes()
