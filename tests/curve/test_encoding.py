"""zcash encodings against known answers and py_ecc, and every rejection path."""

from __future__ import annotations

import mmap
import random

import numpy as np
import pytest

from cuzk.curve import (
    R,
    g1_generator,
    g1_identity,
    g1_mul,
    g2_generator,
    g2_identity,
    g2_mul,
)
from cuzk.curve.encoding import (
    g1_array_from_uncompressed,
    g1_array_to_uncompressed,
    g1_from_bytes,
    g1_to_bytes,
    g2_array_from_uncompressed,
    g2_array_to_uncompressed,
    g2_from_bytes,
    g2_to_bytes,
)
from cuzk.curve.points import P
from cuzk.errors import BadInput

from ._oracle import (
    ecc_g1,
    ecc_g2,
    fp,
    g1_off_curve,
    g1_off_subgroup,
    g1_x_without_y,
    g2_off_subgroup,
    g2_uncompressed_from_coords,
    zcash_g1,
    zcash_g2,
)

G1_GEN_COMPRESSED = bytes.fromhex(
    "97f1d3a73197d7942695638c4fa9ac0fc3688c4f9774b905a14e3a3f171bac586c55e83ff97a1aeffb3af00adb22c6bb"
)
G2_GEN_COMPRESSED = bytes.fromhex(
    "93e02b6052719f607dacd3a088274f65596bd0d09920b61ab5da61bbdc7f5049334cf11213945d57e5ac7d055d042b7e"
    "024aa2b2f08f0a91260805272dc51051c6e47ad4fa403b02b4510b647ae3d1770bac0326a805bbefd48056c8c121bdb8"
)

G1_CODEC = (g1_to_bytes, g1_from_bytes, 48, 96)
G2_CODEC = (g2_to_bytes, g2_from_bytes, 96, 192)


def test_generators_match_known_answers_and_py_ecc() -> None:
    assert g1_to_bytes(g1_generator(), compressed=True) == G1_GEN_COMPRESSED
    assert g2_to_bytes(g2_generator(), compressed=True) == G2_GEN_COMPRESSED
    for compressed in (True, False):
        assert g1_to_bytes(g1_generator(), compressed=compressed) == zcash_g1(ecc_g1(1), compressed)
        assert g2_to_bytes(g2_generator(), compressed=compressed) == zcash_g2(ecc_g2(1), compressed)
    assert g1_from_bytes(G1_GEN_COMPRESSED, compressed=True) == g1_generator()
    assert g2_from_bytes(G2_GEN_COMPRESSED, compressed=True) == g2_generator()


def test_identity_encodings() -> None:
    assert g1_to_bytes(g1_identity(), compressed=True) == b"\xc0" + bytes(47)
    assert g1_to_bytes(g1_identity(), compressed=False) == b"\x40" + bytes(95)
    assert g2_to_bytes(g2_identity(), compressed=True) == b"\xc0" + bytes(95)
    assert g2_to_bytes(g2_identity(), compressed=False) == b"\x40" + bytes(191)
    assert g1_from_bytes(b"\xc0" + bytes(47), compressed=True) == g1_identity()
    assert g1_from_bytes(b"\x40" + bytes(95), compressed=False) == g1_identity()
    assert g2_from_bytes(b"\xc0" + bytes(95), compressed=True) == g2_identity()
    assert g2_from_bytes(b"\x40" + bytes(191), compressed=False) == g2_identity()


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_random_points_round_trip_and_match_py_ecc(group: str, prng: random.Random) -> None:
    mul, gen, ecc, zcash = (
        (g1_mul, g1_generator, ecc_g1, zcash_g1)
        if group == "g1"
        else (g2_mul, g2_generator, ecc_g2, zcash_g2)
    )
    to_bytes, from_bytes, _, _ = G1_CODEC if group == "g1" else G2_CODEC
    for _ in range(4):
        k = prng.randrange(1, R)
        pt = mul(gen(), k)
        for compressed in (True, False):
            enc = to_bytes(pt, compressed=compressed)
            assert enc == zcash(ecc(k), compressed), f"k={k} compressed={compressed}"
            for checked in (True, False):
                assert from_bytes(enc, compressed=compressed, checked=checked) == pt


def test_larger_y_flag_follows_zcash_rule(prng: random.Random) -> None:
    for _ in range(3):
        k = prng.randrange(1, R)
        p = g1_mul(g1_generator(), k)
        y = int.from_bytes(g1_to_bytes(p, compressed=False)[48:], "big")
        flags = {g1_to_bytes(q, compressed=True)[0] & 0x20 for q in (p, -p)}
        assert flags == {0, 0x20}
        assert bool(g1_to_bytes(p, compressed=True)[0] & 0x20) == (y > P - y)
        q = g2_mul(g2_generator(), k)
        unc = g2_to_bytes(q, compressed=False)
        y1, y0 = int.from_bytes(unc[96:144], "big"), int.from_bytes(unc[144:], "big")
        larger = y1 > P - y1 if y1 else y0 > P - y0
        assert bool(g2_to_bytes(q, compressed=True)[0] & 0x20) == larger
        flags2 = {g2_to_bytes(x, compressed=True)[0] & 0x20 for x in (q, -q)}
        assert flags2 == {0, 0x20}


def _expect_bad(fn, data: bytes, compressed: bool, reason: str, checked: bool = True) -> None:
    with pytest.raises(BadInput, match=reason):
        fn(data, compressed=compressed, checked=checked)


@pytest.mark.parametrize("codec", [G1_CODEC, G2_CODEC], ids=["g1", "g2"])
def test_rejects_wrong_length_and_flags(codec: tuple) -> None:
    to_bytes, from_bytes, csize, usize = codec
    gen = g1_generator() if csize == 48 else g2_generator()
    comp, unc = to_bytes(gen, compressed=True), to_bytes(gen, compressed=False)
    for checked in (True, False):
        _expect_bad(from_bytes, comp[:-1], True, "must be", checked)
        _expect_bad(from_bytes, comp + b"\0", True, "must be", checked)
        _expect_bad(from_bytes, unc[:-1], False, "must be", checked)
        _expect_bad(from_bytes, b"", False, "must be", checked)
        # compression flag disagreeing with the requested form
        flag = "compression flag"
        _expect_bad(from_bytes, bytes([comp[0] & 0x7F]) + comp[1:], True, flag, checked)
        _expect_bad(from_bytes, bytes([unc[0] | 0x80]) + unc[1:], False, flag, checked)
        # larger-y flag on an uncompressed encoding
        _expect_bad(from_bytes, bytes([unc[0] | 0x20]) + unc[1:], False, "larger-y", checked)
        # infinity with stray bits
        _expect_bad(from_bytes, b"\xe0" + bytes(csize - 1), True, "stray bits", checked)
        _expect_bad(from_bytes, b"\xc0" + bytes(csize - 2) + b"\1", True, "stray bits", checked)
        _expect_bad(from_bytes, b"\xc1" + bytes(csize - 1), True, "stray bits", checked)
        _expect_bad(from_bytes, b"\x40" + bytes(usize - 2) + b"\1", False, "stray bits", checked)
        _expect_bad(from_bytes, b"\x60" + bytes(usize - 1), False, "stray bits", checked)
        # infinity flag on a real point
        _expect_bad(from_bytes, bytes([comp[0] | 0x40]) + comp[1:], True, "stray bits", checked)
        # (0, 0) without the infinity flag is not on the curve (arkworks alone reads it as ∞)
        _expect_bad(from_bytes, bytes(usize), False, "not on curve", checked)


def test_rejects_g1_coordinates_not_less_than_p(prng: random.Random) -> None:
    x = 4  # 4³ + 4 = 68 is a square mod p, so x + p is a non-canonical x on the curve
    big_x = x + P
    assert big_x < 1 << 381
    comp = bytearray(fp(big_x))
    comp[0] |= 0x80
    for checked in (True, False):
        _expect_bad(g1_from_bytes, bytes(comp), True, "not less than the field modulus", checked)
    gen_unc = g1_to_bytes(g1_generator(), compressed=False)
    y = int.from_bytes(gen_unc[48:], "big")
    if y + P < 1 << 381:
        bad = gen_unc[:48] + fp(y + P)
        _expect_bad(g1_from_bytes, bad, False, "not less than the field modulus")
    _expect_bad(g1_from_bytes, fp((1 << 381) - 1) + gen_unc[48:], False, "not less than")


def test_rejects_g2_coordinates_not_less_than_p() -> None:
    comp = bytearray(g2_to_bytes(g2_generator(), compressed=True))
    comp[48:] = fp((1 << 384) - 1)  # x.c0 = 2^384 − 1 ≥ p
    for checked in (True, False):
        _expect_bad(g2_from_bytes, bytes(comp), True, "not less than the field modulus", checked)


def test_rejects_points_off_the_curve(prng: random.Random) -> None:
    x, y = g1_off_curve(prng)
    for checked in (True, False):
        _expect_bad(g1_from_bytes, fp(x) + fp(y), False, "not on curve", checked)
        c = bytearray(fp(g1_x_without_y(prng)))
        c[0] |= 0x80
        _expect_bad(g1_from_bytes, bytes(c), True, "not on curve", checked)
    unc = bytearray(g2_to_bytes(g2_generator(), compressed=False))
    unc[-1] ^= 1
    _expect_bad(g2_from_bytes, bytes(unc), False, "not on curve")


def test_subgroup_check(prng: random.Random) -> None:
    x, y = g1_off_subgroup(prng)
    unc = fp(x) + fp(y)
    p = g1_from_bytes(unc, compressed=False, checked=False)  # trusted input skips the check
    assert not p.is_in_subgroup()
    comp = g1_to_bytes(p, compressed=True)
    assert comp[0] & 0x80 and int.from_bytes(bytes([comp[0] & 0x1F]) + comp[1:], "big") == x
    _expect_bad(g1_from_bytes, unc, False, "G1 point not in subgroup")
    _expect_bad(g1_from_bytes, comp, True, "G1 point not in subgroup")
    assert g1_from_bytes(comp, compressed=True, checked=False) == p

    gx, gy = g2_off_subgroup(prng)
    unc2 = g2_uncompressed_from_coords(gx, gy)
    q = g2_from_bytes(unc2, compressed=False, checked=False)
    assert not q.is_in_subgroup()
    assert g2_to_bytes(q, compressed=False) == unc2
    _expect_bad(g2_from_bytes, unc2, False, "G2 point not in subgroup")
    _expect_bad(g2_from_bytes, g2_to_bytes(q, compressed=True), True, "G2 point not in subgroup")


def test_never_leaks_arkworks_errors() -> None:
    with pytest.raises(BadInput, match="expected a G1 point"):
        g1_to_bytes(g2_generator(), compressed=True)  # type: ignore[arg-type]


# -- arrays -----------------------------------------------------------------------------------


def _mixed_points(prng: random.Random, n: int, mul, gen, ident) -> list:
    """n points with identities and repeats mixed in; random ones cost a multiplication each, the
    rest are sums of earlier ones."""
    base = [mul(gen(), prng.randrange(1, R)) for _ in range(3)]
    pts = list(base)
    while len(pts) < n:
        pts.append(pts[-1] + pts[-3])
    pts[1] = ident()
    pts[n // 2] = pts[0]
    pts[-1] = ident()
    return pts[:n]


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_array_round_trip(group: str, prng: random.Random, tmp_path) -> None:
    if group == "g1":
        pts = _mixed_points(prng, 70, g1_mul, g1_generator, g1_identity)
        to_arr, from_arr, one = g1_array_to_uncompressed, g1_array_from_uncompressed, g1_to_bytes
        size = 96
    else:
        pts = _mixed_points(prng, 20, g2_mul, g2_generator, g2_identity)
        to_arr, from_arr, one = g2_array_to_uncompressed, g2_array_from_uncompressed, g2_to_bytes
        size = 192
    raw = to_arr(pts)
    assert raw == b"".join(one(p, compressed=False) for p in pts)
    assert from_arr(raw) == pts
    assert from_arr(raw, checked=True) == pts
    assert from_arr(memoryview(raw)[size:]) == pts[1:]
    assert to_arr([]) == b"" and from_arr(b"") == []
    path = tmp_path / "pts.bin"
    path.write_bytes(b"junk" + raw)
    mm = np.memmap(path, dtype=np.uint8, mode="r", offset=4, shape=(len(raw),))
    assert from_arr(mm) == pts
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        assert from_arr(m[4:]) == pts


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_array_rejections_name_the_point(group: str, prng: random.Random) -> None:
    if group == "g1":
        pts = _mixed_points(prng, 10, g1_mul, g1_generator, g1_identity)
        raw = bytearray(g1_array_to_uncompressed(pts))
        from_arr, size, name = g1_array_from_uncompressed, 96, "G1"
        x, y = g1_off_subgroup(prng)
        off_subgroup = fp(x) + fp(y)
    else:
        pts = _mixed_points(prng, 6, g2_mul, g2_generator, g2_identity)
        raw = bytearray(g2_array_to_uncompressed(pts))
        from_arr, size, name = g2_array_from_uncompressed, 192, "G2"
        off_subgroup = g2_uncompressed_from_coords(*g2_off_subgroup(prng))

    def with_point(i: int, enc: bytes) -> bytes:
        out = bytearray(raw)
        out[i * size : (i + 1) * size] = enc
        return bytes(out)

    with pytest.raises(BadInput, match="not a multiple"):
        from_arr(bytes(raw[:-1]))
    with pytest.raises(BadInput, match=f"{name} point 4: flags 0x80"):
        from_arr(with_point(4, bytes([raw[4 * size] | 0x80]) + raw[4 * size + 1 : 5 * size]))
    with pytest.raises(BadInput, match=f"{name} point 3: point at infinity has stray bits"):
        from_arr(with_point(3, b"\x40" + bytes(size - 2) + b"\x01"))
    with pytest.raises(BadInput, match=f"{name} point 2: point not on curve"):
        from_arr(with_point(2, bytes(size)))
    bad = bytearray(raw[4 * size : 5 * size])
    bad[-1] ^= 1
    with pytest.raises(BadInput, match=f"{name} point 4: not on curve"):
        from_arr(with_point(4, bytes(bad)))
    with pytest.raises(BadInput, match="not less than the field modulus"):
        from_arr(with_point(0, fp((1 << 381) - 1) + bytes(size - 48)))
    subgroup_bad = with_point(2, off_subgroup)
    assert len(from_arr(subgroup_bad)) == len(pts)  # unchecked: trusted
    with pytest.raises(BadInput, match=f"{name} point 2: not in subgroup"):
        from_arr(subgroup_bad, checked=True)
