"""Parameter files: the lazy reader, its refusals (each naming the file and the section), the
streaming writer (byte for byte what the previous whole-vector writer made), the vector views
backends load from, and where official Filecoin files are looked for."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from cuzk.circuits import circuit_ids, key_file_stem
from cuzk.circuits.synthetic import SyntheticCircuit
from cuzk.cli.main import main
from cuzk.curve import g1_generator, g1_mul, g2_generator, g2_mul
from cuzk.curve.encoding import g1_array_to_uncompressed, g2_array_to_uncompressed
from cuzk.curve.points import P
from cuzk.errors import BadInput
from cuzk.field.constants import R
from cuzk.groth16 import read_params, read_params_unchecked, read_vk
from cuzk.groth16 import setup as setup_mod
from cuzk.groth16.keys import VerifyingKey
from cuzk.groth16.locate import FIL_CACHE_ENV, locate_params
from cuzk.groth16.params_io import (
    VECTOR_NAMES,
    VK_FIXED_SIZE,
    ParamsWriter,
    iter_vector_chunks,
    params_file_size,
    read_header,
    sample_indices,
    vector_rows,
    write_vk,
)
from cuzk.groth16.prover import check_compatible
from cuzk.groth16.setup import generate_parameters
from cuzk.r1cs import synthesize_shape
from tests.r1cs.circuits import CubeCircuit

DATA = Path(__file__).parent / "data"
SIZES = {"g1": 96, "g2": 192}

# sha256 of the files the previous writer (whole vectors joined in memory, then written) made
# for these circuits and seeds, before the streaming writer replaced it.
GOLDEN = {
    ("synthetic:300", 5): (
        186360,
        "3daa5fa7236225bead1aa88ebf84a383d5ddba37773f8e3ac88c86bd24a57fd8",
        "b4243e0f360c4973c3330cf017bf9fe053b5328878878ea79874dacf76d879b4",
    ),
    ("test:cube", 9): (
        3096,
        "6f5da6f5e566e601f7f795517962bb6efd68d1d7e2a2c0265f0bb2738141ed44",
        "be46fd1d5d63e8c560b1742b402dfeea583c6007cec0374fa22085b27984324d",
    ),
}


def _shape(circuit_id: str):
    circuit = SyntheticCircuit(300) if circuit_id == "synthetic:300" else CubeCircuit(2)
    return synthesize_shape(circuit, circuit_id)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def keys(tmp_path_factory, pool):
    """synthetic:300, seed 5: (shape, params, directory)."""
    out = tmp_path_factory.mktemp("keys")
    shape = _shape("synthetic:300")
    return shape, generate_parameters(shape, out, "syn", seed=5, pool=pool), out


def _walk(data: bytes) -> dict[str, tuple[int, int]]:
    """(offset, count) of each vector, by walking the bytes here (independent of the reader)."""
    (num_ic,) = struct.unpack_from(">I", data, VK_FIXED_SIZE - 4)
    pos = VK_FIXED_SIZE + 96 * num_ic
    found = {}
    for name, group in VECTOR_NAMES:
        (count,) = struct.unpack_from(">I", data, pos)
        found[name] = (pos + 4, count)
        pos += 4 + count * SIZES[group]
    assert pos == len(data)
    return found


def _copy(src: Path, dst: Path, edit=None) -> Path:
    data = bytearray(src.read_bytes())
    if edit is not None:
        data = edit(data)
    dst.write_bytes(bytes(data))
    return dst


def _points(group: str, n: int, rng: np.random.Generator) -> bytes:
    ks = [int.from_bytes(rng.bytes(32), "little") % R or 1 for _ in range(n)]
    if group == "g1":
        return g1_array_to_uncompressed([g1_mul(g1_generator(), k) for k in ks])
    return g2_array_to_uncompressed([g2_mul(g2_generator(), k) for k in ks])


def _off_subgroup_g1() -> bytes:
    """An uncompressed point on y² = x³ + 4 outside the r-torsion (almost every curve point)."""
    x = 5
    while True:
        rhs = (x**3 + 4) % P
        y = pow(rhs, (P + 1) // 4, P)  # p ≡ 3 (mod 4)
        if y * y % P == rhs:
            return x.to_bytes(48, "big") + y.to_bytes(48, "big")
        x += 1


# -- the streaming writer ---------------------------------------------------------------------


@pytest.mark.parametrize("circuit_id,seed", sorted(GOLDEN))
def test_setup_writes_what_the_previous_writer_wrote(tmp_path, pool, circuit_id, seed):
    size, params_sha, vk_sha = GOLDEN[(circuit_id, seed)]
    generate_parameters(_shape(circuit_id), tmp_path, "k", seed=seed, pool=pool)
    assert (tmp_path / "k.params").stat().st_size == size
    assert _digest(tmp_path / "k.params") == params_sha
    assert _digest(tmp_path / "k.vk") == vk_sha
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.params", "k.vk"]  # no leftovers


@pytest.mark.parametrize("via", ["pool", "backend"])
def test_setup_in_small_chunks_writes_the_same_file(tmp_path, pool, cpu_backend, monkeypatch, via):
    """Many fixed-base requests per vector (a chunk size that divides no vector, few in
    flight) change no byte, and progress rises chunk by chunk to the total."""
    monkeypatch.setattr(setup_mod, "BACKEND_CHUNK", 37)
    monkeypatch.setattr(setup_mod, "CHUNK", 37)
    monkeypatch.setattr(setup_mod, "POOL_IN_FLIGHT", 2)
    _, params_sha, vk_sha = GOLDEN[("synthetic:300", 5)]
    seen: list[tuple[int, int]] = []
    where = {"pool": pool} if via == "pool" else {"backend": cpu_backend}
    params = generate_parameters(
        _shape("synthetic:300"), tmp_path, "k", seed=5, progress=lambda *a: seen.append(a), **where
    )
    assert _digest(tmp_path / "k.params") == params_sha and _digest(tmp_path / "k.vk") == vk_sha
    chunks = sum(-(-ps.count // 37) for ps in params.vectors)
    assert len(seen) == 1 + chunks and seen[0][0] == 0 and seen[-1][0] == seen[-1][1]
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_writer_chunking_is_invisible(tmp_path, keys, rng):
    """The file is the same whatever chunks the points arrive in, and equals the bytes laid
    out by hand: vk, then count + points per vector."""
    _, params, out = keys
    src = (out / "syn.params").read_bytes()
    vectors = [bytes(vector_rows(ps)) for ps in params.vectors]
    counts = [ps.count for ps in params.vectors]
    with ParamsWriter(tmp_path / "k.params", params.vk, counts) as w:
        for (_, group), data in zip(VECTOR_NAMES, vectors, strict=True):
            size, pos = SIZES[group], 0
            while pos < len(data):
                n = int(rng.integers(1, 40)) * size
                w.write(np.frombuffer(data[pos : pos + n], dtype=np.uint8))
                pos += n
        assert w.commit() == tmp_path / "k.params"
    assert (tmp_path / "k.params").read_bytes() == src
    manual = (out / "syn.vk").read_bytes() + b"".join(
        struct.pack(">I", n) + d for n, d in zip(counts, vectors, strict=True)
    )
    assert manual == src and len(src) == params_file_size(len(params.vk.ic), counts)


def test_writer_refuses_wrong_chunks_and_leaves_nothing(tmp_path, keys):
    _, params, _ = keys
    counts = [3, 2, 1, 0, 0]
    target = tmp_path / "k.params"
    with pytest.raises(ValueError, match="not whole points"):
        with ParamsWriter(target, params.vk, counts) as w:
            w.write(bytes(95))
    with pytest.raises(ValueError, match="vector h: 4 points given, 3 still expected"):
        with ParamsWriter(target, params.vk, counts) as w:
            w.write(bytes(4 * 96))
    with pytest.raises(ValueError, match="vector l is missing 1 points"):
        with ParamsWriter(target, params.vk, counts) as w:
            w.write(bytes(3 * 96))
            w.write(bytes(96))
            w.commit()
    with pytest.raises(RuntimeError, match="producer failed"):
        with ParamsWriter(target, params.vk, counts) as w:
            w.write(bytes(96))
            raise RuntimeError("producer failed")
    with pytest.raises(ValueError, match="already written"):
        with ParamsWriter(target, params.vk, [0, 0, 1, 0, 0]) as w:
            w.write(bytes(96))
            w.write(bytes(96))
    assert list(tmp_path.iterdir()) == []  # no file, no .partial
    with pytest.raises(BadInput, match="cannot write"):
        ParamsWriter(tmp_path / "no" / "such" / "dir.params", params.vk, counts)


def test_writer_refuses_a_full_disk_before_any_work(tmp_path, keys, monkeypatch):
    _, params, _ = keys

    def no_space(fd, offset, length):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", no_space)
    with pytest.raises(BadInput, match=r"it needs 201,328,[0-9,]+ bytes, [0-9,]+ are free"):
        ParamsWriter(tmp_path / "k.params", params.vk, [(1 << 21) - 1, 5, 5, 0, 0])
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_reports_the_room_without_the_failed_reservation(tmp_path, keys, monkeypatch):
    """A reservation that fails part way may hold what it got until the file goes: the room
    named is measured after the partial file is removed (it once said "0 are free" on a disk
    with 52 GB free, for a 60.8 GB key)."""
    _, params, _ = keys

    def partial_then_no_space(fd, offset, length):
        os.write(fd, bytes(4096))
        raise OSError(28, "No space left on device")

    def usage(path):  # free only once no partial file holds the disk
        held = any(p.name.endswith(".partial") for p in tmp_path.iterdir())
        return shutil._ntuple_diskusage(10**9, 10**9 if held else 10**6, 0 if held else 123_456)

    monkeypatch.setattr(os, "posix_fallocate", partial_then_no_space)
    monkeypatch.setattr(shutil, "disk_usage", usage)
    with pytest.raises(BadInput, match=r"bytes, 123,456 are free"):
        ParamsWriter(tmp_path / "k.params", params.vk, [(1 << 21) - 1, 5, 5, 0, 0])
    assert list(tmp_path.iterdir()) == []


def test_a_failing_disk_surfaces_as_bad_input(tmp_path, keys):
    """A write error in the writer thread reaches the producer; the partial file goes."""
    _, params, _ = keys

    class Failing:
        def __init__(self, real):
            self.real = real

        def write(self, data):
            raise OSError(5, "Input/output error")

        def close(self):
            self.real.close()

    with pytest.raises(BadInput, match="cannot write .*k.params: Input/output error"):
        with ParamsWriter(tmp_path / "k.params", params.vk, [3, 5, 5, 0, 0]) as w:
            w._file._f = Failing(w._file._f)
            for _ in range(13):
                w.write(bytes(96))
            w.commit()
    assert list(tmp_path.iterdir()) == []


def test_written_files_are_readable_by_others(tmp_path, keys):
    """The temporary file is not created private (mkstemp would): keys are shared."""
    _, params, _ = keys
    write_vk(tmp_path / "k.vk", params.vk)
    umask = os.umask(0o022)
    os.umask(umask)
    assert (tmp_path / "k.vk").stat().st_mode & 0o777 == 0o666 & ~umask


# -- opening: layout ---------------------------------------------------------------------------


def test_reader_locates_every_vector_without_decoding(keys):
    shape, params, out = keys
    data = (out / "syn.params").read_bytes()
    expected = _walk(data)
    for (name, group), ps in zip(VECTOR_NAMES, params.vectors, strict=True):
        assert (ps.group, ps.offset, ps.count) == (group, *expected[name])
        assert ps.path == str((out / "syn.params").resolve())
        rows = vector_rows(ps)
        assert rows.shape == (ps.count, SIZES[group]) and not rows.flags.writeable
        assert rows.tobytes() == data[ps.offset : ps.offset + ps.count * SIZES[group]]
    assert params.vk == read_vk(out / "syn.vk")
    check_compatible(params, shape)
    assert read_params_unchecked(out / "syn.params") == params


@pytest.mark.parametrize("chunk", [1, 7, 64, 10_000])
def test_vector_chunks_cover_the_vector_in_order(keys, chunk):
    _, params, _ = keys
    for ps in params.vectors:
        parts = list(iter_vector_chunks(ps, chunk))
        assert [start for start, _ in parts] == list(range(0, ps.count, chunk))
        assert all(len(rows) == min(chunk, ps.count - s) for s, rows in parts)
        assert b"".join(rows.tobytes() for _, rows in parts) == vector_rows(ps).tobytes()
    with pytest.raises(ValueError, match="positive"):
        next(iter_vector_chunks(params.h, 0))


def test_vector_view_of_a_file_that_shrank_is_refused(tmp_path, keys):
    _, _, out = keys
    p = _copy(out / "syn.params", tmp_path / "k.params")
    params = read_params(p)
    os.truncate(p, params.b_g2.offset + 10)
    with pytest.raises(BadInput, match="cannot map g2 points"):
        vector_rows(params.b_g2)


def test_sparse_multi_gigabyte_file_opens_lazily(tmp_path, keys):
    """A 6 GB file that is all holes past its header: the counts are read without touching
    the vectors; the sampled point check finds the zeros (as in an interrupted download)."""
    _, params, _ = keys
    counts = [(1 << 24) - 1, 20_000_000, 20_000_000, 3_000_000, 3_000_000]
    p = tmp_path / "big.params"
    with open(p, "wb") as f:
        pos = f.write(Path(params.path).read_bytes()[: params.h.offset - 4])
        for (_, group), n in zip(VECTOR_NAMES, counts, strict=True):
            f.seek(pos)
            pos += f.write(struct.pack(">I", n)) + n * SIZES[group]
        f.truncate(pos)
    assert pos == params_file_size(len(params.vk.ic), counts) > 6 * 10**9
    header = read_header(p)
    assert header.counts == dict(zip((n for n, _ in VECTOR_NAMES), counts, strict=True))
    big = read_params_unchecked(p)
    assert big.h.count == counts[0] and big.b_g2.offset + counts[4] * 192 == pos
    with pytest.raises(BadInput, match=r"vector h: G1 point 0: point not on curve \(sampled"):
        read_params(p)


# -- opening: refusals -------------------------------------------------------------------------


def test_truncated_files_name_the_section(tmp_path, keys):
    _, params, out = keys
    data = (out / "syn.params").read_bytes()
    cuts = {
        10: "truncated verifying key",
        VK_FIXED_SIZE + 5: "truncated in the verifying key's ic",
        params.h.offset - 2: "truncated before the length of vector h",
    }
    for (name, _), ps in zip(VECTOR_NAMES, params.vectors, strict=True):
        cuts[ps.offset + 1] = f"truncated in vector {name}"
        cuts[ps.offset - 1] = f"truncated (in|before the length of) vector {name}"
    cuts[len(data) - 1] = "truncated in vector b_g2"
    for cut, why in cuts.items():
        p = tmp_path / f"cut{cut}.params"
        p.write_bytes(data[:cut])
        for reader in (read_params, read_params_unchecked, read_header):
            with pytest.raises(BadInput, match=why) as e:
                reader(p)
            assert str(p) in str(e.value), cut


def test_length_fields_past_the_end_are_refused(tmp_path, keys):
    _, params, out = keys
    for name, ps in zip(("h", "a", "b_g2"), (params.h, params.a, params.b_g2), strict=True):
        p = _copy(
            out / "syn.params",
            tmp_path / f"{name}.params",
            lambda d, o=ps.offset: d[: o - 4] + struct.pack(">I", 0xFFFFFFFF) + d[o:],
        )
        with pytest.raises(BadInput, match=f"vector {name}: its length field says 4,294,967,295"):
            read_params(p)
    p = _copy(
        out / "syn.params",
        tmp_path / "ic.params",
        lambda d: d[: VK_FIXED_SIZE - 4] + struct.pack(">I", 10**8) + d[VK_FIXED_SIZE:],
    )
    with pytest.raises(BadInput, match="verifying key's ic: 100000000 points"):
        read_header(p)


def test_trailing_bytes_are_refused(tmp_path, keys):
    _, _, out = keys
    for extra in (b"\0", bytes(96), b"garbage"):
        p = _copy(out / "syn.params", tmp_path / "x.params", lambda d, e=extra: d + e)
        for reader in (read_params, read_header):
            with pytest.raises(BadInput, match=f"{len(extra)} unexpected bytes after the last"):
                reader(p)


def test_shifted_counts_are_refused(tmp_path, keys):
    """One count off by one shifts everything after it: refused, however it lands."""
    _, params, out = keys
    for ps in params.vectors:
        for delta in (-1, 1):
            p = _copy(
                out / "syn.params",
                tmp_path / "bad.params",
                lambda d, o=ps.offset, n=ps.count + delta: (
                    d[: o - 4] + struct.pack(">I", n) + d[o:]
                ),
            )
            with pytest.raises(BadInput, match=str(p)):
                read_params(p)


@pytest.mark.parametrize(
    "counts,why",
    [
        ([6, 10, 5, 4, 4], "h has 6 points; expected 2\\^k − 1"),
        ([7, 10, 5, 4, 3], "b_g1 has 4 points but b_g2 3"),
        ([7, 10, 2, 4, 4], "a has 2 points; expected 5 to 15"),
        ([7, 10, 16, 4, 4], "a has 16 points"),
        ([7, 10, 5, 16, 16], "b_g1 has 16 points, more than the 15 variables"),
        ([3, 10, 5, 4, 4], "domain of 4 is smaller than the 5 input rows"),
    ],
)
def test_impossible_counts_are_refused(tmp_path, keys, rng, counts, why):
    _, params, _ = keys
    assert len(params.vk.ic) == 5
    p = tmp_path / "k.params"
    with ParamsWriter(p, params.vk, counts) as w:
        for (_, group), n in zip(VECTOR_NAMES, counts, strict=True):
            w.write(_points(group, n, rng))
        w.commit()
    for reader in (read_params, read_header):
        with pytest.raises(BadInput, match=f"inconsistent vector counts: .*{why}"):
            reader(p)


def test_counts_of_another_circuit_are_refused(keys, tmp_path, pool):
    shape, params, _ = keys
    cube = _shape("test:cube")
    with pytest.raises(BadInput, match=r"not made for circuit 'test:cube': ic: 5 \(circuit needs"):
        check_compatible(params, cube)


def test_what_is_not_a_params_file_is_refused(tmp_path, keys, rng):
    _, params, out = keys
    cases = {
        "dir": ("is a directory", None),
        "missing.params": ("cannot read .*No such file", None),
        "text.params": ("truncated verifying key", b"hello, parameters\n"),
        "random.params": ("not a .params or .vk file", b"\xff" + rng.bytes(5000)),
        "key.zkey": ("snarkjs .zkey", b"zkey\x01\0\0\0" + bytes(2000)),
    }
    (tmp_path / "dir").mkdir()
    for name, (why, data) in cases.items():
        if data is not None:
            (tmp_path / name).write_bytes(data)
        for reader in (read_params, read_params_unchecked, read_header, read_vk):
            with pytest.raises(BadInput, match=why):
                reader(tmp_path / name)
    with pytest.raises(BadInput, match=r"is a verifying key \(.vk\), not a proving key"):
        read_params(out / "syn.vk")
    with pytest.raises(BadInput, match="is a .params file; its verifying key is the .vk"):
        read_vk(out / "syn.params")
    p = _copy(out / "syn.vk", tmp_path / "long.vk", lambda d: d + b"\1\2")
    with pytest.raises(BadInput, match="or 2 bytes of trailing garbage after a .vk file's"):
        read_vk(p)


# -- point checks ------------------------------------------------------------------------------


def test_sample_positions(keys):
    assert list(sample_indices(0)) == []
    assert list(sample_indices(1)) == [0]
    assert list(sample_indices(5)) == [0, 1, 2, 3, 4]
    idx = sample_indices(10**9)
    assert len(idx) == 16 and idx[0] == 0 and idx[-1] == 10**9 - 1
    assert np.all(np.diff(idx) > 0)


def test_points_are_sampled_at_open_and_checked_in_full_on_request(tmp_path, keys, rng):
    _, params, out = keys
    for name, ps in zip((n for n, _ in VECTOR_NAMES), params.vectors, strict=True):
        size = ps.point_size
        sampled = set(sample_indices(ps.count).tolist())
        inside = [i for i in range(ps.count) if i not in sampled]
        for where in (int(rng.choice(sorted(sampled))), int(rng.choice(inside))):
            p = _copy(
                out / "syn.params",
                tmp_path / "bad.params",
                lambda d, o=ps.offset + where * size + size - 1: (
                    d[:o] + bytes([d[o] ^ 1]) + d[o + 1 :]
                ),
            )
            read_params_unchecked(p)  # trusts the vectors
            with pytest.raises(BadInput, match=f"vector {name}: G[12] point {where}: not on"):
                read_params(p, points="all")
            if where in sampled:
                with pytest.raises(BadInput, match=f"vector {name}: .*{where}.*sampled check"):
                    read_params(p)
            else:
                read_params(p)  # between the samples: only the full check sees it


def test_points_outside_the_subgroup_are_caught(tmp_path, keys):
    _, params, out = keys
    bad = _off_subgroup_g1()
    last = params.l.offset + (params.l.count - 1) * 96
    p = _copy(out / "syn.params", tmp_path / "b.params", lambda d: d[:last] + bad + d[last + 96 :])
    read_params_unchecked(p)
    with pytest.raises(BadInput, match=f"vector l: G1 point {params.l.count - 1}: not in subgroup"):
        read_params(p)
    ic0 = VK_FIXED_SIZE
    p = _copy(out / "syn.params", tmp_path / "i.params", lambda d: d[:ic0] + bad + d[ic0 + 96 :])
    with pytest.raises(BadInput, match="verifying key ic: G1 point 0: not in subgroup"):
        read_params(p)
    q = _copy(out / "syn.vk", tmp_path / "i.vk", lambda d: d[:ic0] + bad + d[ic0 + 96 :])
    with pytest.raises(BadInput, match="verifying key ic: G1 point 0: not in subgroup"):
        read_vk(q)


def test_fixed_verifying_key_points_are_always_checked(tmp_path, keys):
    _, _, out = keys
    p = _copy(out / "syn.params", tmp_path / "a.params", lambda d: d[:95] + b"\x07" + d[96:])
    for reader in (read_params, read_params_unchecked):
        with pytest.raises(BadInput, match="verifying key alpha_g1: G1 point not on curve"):
            reader(p)
    vk = read_vk(out / "syn.vk")
    degenerate = VerifyingKey(
        vk.alpha_g1, vk.beta_g1, vk.beta_g2, vk.gamma_g2, vk.delta_g1.identity(), vk.delta_g2, vk.ic
    )
    write_vk(tmp_path / "d.vk", degenerate)
    with pytest.raises(BadInput, match="delta is the identity"):
        read_vk(tmp_path / "d.vk")


def test_reader_argument_is_checked(keys):
    _, params, _ = keys
    with pytest.raises(ValueError, match="'sample' or 'all'"):
        read_params(params.path, points="none")  # type: ignore[arg-type]


# -- cuzk info ---------------------------------------------------------------------------------


def test_info_reads_the_header_and_refuses_a_directory(tmp_path, keys, capsys):
    _, params, out = keys
    assert main(["info", str(out / "syn.params"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["counts"] == {
        n: ps.count for (n, _), ps in zip(VECTOR_NAMES, params.vectors, strict=True)
    }
    assert main(["info", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "is a directory" in err and "Traceback" not in err


# -- official file names and where they are found ------------------------------------------------


def test_official_names_are_in_parameters_json():
    """Every Filecoin circuit id maps to a file of rust-fil-proofs' parameters.json of its
    sector size; the only official files without a circuit here are SnapDeals' Poseidon
    variant (the newer update circuit) at 32 and 64 GiB."""
    official = json.loads((DATA / "parameters.json").read_text())
    sector = {"2k": 2048, "8m": 8 << 20, "512m": 512 << 20, "32g": 32 << 30, "64g": 64 << 30}
    ids = [c for c in circuit_ids() if ":" not in c]
    assert len(ids) == 20
    mapped = set()
    for cid in ids:
        stem = key_file_stem(cid)
        assert stem.startswith("v28-")
        for ext in ("params", "vk"):
            assert official[f"{stem}.{ext}"]["sector_size"] == sector[cid.rsplit("-", 1)[1]], cid
        mapped |= {f"{stem}.params", f"{stem}.vk"}
    rest = set(official) - mapped
    assert len(rest) == 4 and all("empty-sector-update-poseidon" in n for n in rest)


def test_official_files_are_found_where_filecoin_keeps_them(tmp_path, monkeypatch):
    stem = key_file_stem("porep-32g")
    own, fil = tmp_path / "own", tmp_path / "fil"
    own.mkdir(), fil.mkdir()
    monkeypatch.setenv(FIL_CACHE_ENV, str(fil))
    assert locate_params(own, stem) == own / f"{stem}.params"  # nowhere: where setup writes
    (fil / f"{stem}.params").write_bytes(b"")
    assert locate_params(own, stem) == fil / f"{stem}.params"
    (own / f"{stem}.params").write_bytes(b"")
    assert locate_params(own, stem) == own / f"{stem}.params"  # our own key wins
    (fil / "synthetic-300.params").write_bytes(b"")
    assert locate_params(own, "synthetic-300") == own / "synthetic-300.params"  # not official


def test_engine_config_finds_official_files(tmp_path, monkeypatch):
    from cuzk.engine.config import EngineConfig

    stem = key_file_stem("wpost-2k")
    monkeypatch.setenv(FIL_CACHE_ENV, str(tmp_path / "fil"))
    (tmp_path / "fil").mkdir()
    (tmp_path / "fil" / f"{stem}.params").write_bytes(b"")
    cfg = EngineConfig(param_dir=tmp_path / "own")
    assert cfg.params_path("wpost-2k") == tmp_path / "fil" / f"{stem}.params"


# -- GPU ---------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_cuda_setup_in_chunks_writes_the_previous_bytes(tmp_path, cuda_backend, monkeypatch):
    monkeypatch.setattr(setup_mod, "BACKEND_CHUNK", 1000)
    _, params_sha, vk_sha = GOLDEN[("synthetic:300", 5)]
    generate_parameters(_shape("synthetic:300"), tmp_path, "k", seed=5, backend=cuda_backend)
    assert _digest(tmp_path / "k.params") == params_sha and _digest(tmp_path / "k.vk") == vk_sha
