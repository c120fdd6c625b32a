"""FrVec construction and conversions: ints, bytes, limbs, against Python big ints."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import MONT_R, R

EDGES = [
    0,
    1,
    2,
    R - 1,
    R - 2,
    (R - 1) // 2,
    2**64 - 1,
    2**64,
    2**128 - 1,
    2**192,
    2**254,
    2**254 + 12345,
    R - 2**64,
    MONT_R,
]


def _random_ints(rng: np.random.Generator, n: int) -> list[int]:
    return [int.from_bytes(rng.bytes(32), "little") % R for _ in range(n)]


def test_from_ints_round_trip_reduces_every_integer(seeded) -> None:
    vals = EDGES + _random_ints(seeded.rng, 200) + [-1, -R, -(R + 5), R, R + 7, 2**256, 3**300]
    v = fr.from_ints(vals)
    assert v.shape == (len(vals), 4) and v.dtype == np.uint64 and v.flags.c_contiguous
    assert fr.to_ints(v) == [x % R for x in vals], seeded.msg


def test_from_ints_stores_montgomery_form() -> None:
    v = fr.from_ints([1, 2])
    limbs = [sum(int(v[i, k]) << (64 * k) for k in range(4)) for i in range(2)]
    assert limbs == [MONT_R, 2 * MONT_R % R]
    assert fr.equal(fr.ones(2), fr.from_ints([1, 1]))
    assert fr.to_ints(fr.zeros(3)) == [0, 0, 0]


def test_from_ints_accepts_numpy_integers() -> None:
    arr = np.array([-5, 0, 7, 2**62], dtype=np.int64)
    assert fr.to_ints(fr.from_ints(arr)) == [(int(x)) % R for x in arr]
    assert fr.to_ints(fr.from_ints(np.array([2**64 - 1], dtype=np.uint64))) == [2**64 - 1]
    assert fr.to_ints(fr.from_ints([np.int64(-3), 4])) == [R - 3, 4]
    assert fr.to_ints(fr.from_ints([])) == []


def test_single_element_helpers(seeded) -> None:
    for x in EDGES + _random_ints(seeded.rng, 20) + [-9]:
        row = fr.from_int(x)
        assert row.shape == (4,)
        assert fr.to_int(row) == x % R, seeded.msg
        assert np.array_equal(row, fr.from_ints([x])[0])


def test_bytes_round_trip(seeded) -> None:
    vals = EDGES + _random_ints(seeded.rng, 100)
    v = fr.from_ints(vals)
    b = fr.to_bytes_le(v)
    assert b.shape == (len(vals), 32) and b.dtype == np.uint8
    assert [int.from_bytes(row.tobytes(), "little") for row in b] == vals, seeded.msg
    for data in (b.tobytes(), bytearray(b.tobytes()), memoryview(b.tobytes()), b, b.reshape(-1)):
        assert fr.equal(fr.from_bytes_le(data), v), seeded.msg


def test_from_bytes_unaligned_buffer(seeded) -> None:
    vals = _random_ints(seeded.rng, 5)
    raw = b"\x00" + b"".join(x.to_bytes(32, "little") for x in vals)
    assert fr.to_ints(fr.from_bytes_le(memoryview(raw)[1:])) == vals, seeded.msg


@pytest.mark.parametrize("bad", [R, R + 1, 2**255, 2**256 - 1])
def test_from_bytes_rejects_non_canonical_naming_index(bad: int) -> None:
    good = [5, R - 1, 0]
    data = b"".join(x.to_bytes(32, "little") for x in good + [bad, 7, bad])
    with pytest.raises(BadInput, match=r"scalar 3\b"):
        fr.from_bytes_le(data)
    # Unchecked reads reduce instead.
    assert fr.to_ints(fr.from_bytes_le(data, check=False)) == [x % R for x in good + [bad, 7, bad]]


def test_from_bytes_rejects_bad_shapes() -> None:
    with pytest.raises(BadInput):
        fr.from_bytes_le(b"\x00" * 33)
    with pytest.raises(BadInput):
        fr.from_bytes_le(np.zeros((2, 16), dtype=np.uint8))
    with pytest.raises(BadInput):
        fr.from_bytes_le(np.zeros((2, 32), dtype=np.int16))
    assert fr.from_bytes_le(b"").shape == (0, 4)


def test_canonical_limbs_round_trip(seeded) -> None:
    vals = EDGES + _random_ints(seeded.rng, 50)
    v = fr.from_ints(vals)
    limbs = fr.to_canonical_limbs(v)
    expect = np.array(
        [[(x >> (64 * k)) & (2**64 - 1) for k in range(4)] for x in vals], dtype=np.uint64
    )
    assert np.array_equal(limbs, expect), seeded.msg
    assert fr.equal(fr.from_canonical_limbs(limbs), v)


def test_random_is_uniform_looking_and_canonical(seeded) -> None:
    v = fr.random(4000, seeded.rng)
    ints = fr.to_ints(v)
    assert all(0 <= x < R for x in ints)
    assert len(set(ints)) == len(ints), seeded.msg
    # Top bits are spread over [0, r): roughly half the values above r/2.
    above = sum(x > R // 2 for x in ints)
    assert 1700 < above < 2300, seeded.msg
    assert fr.random(0, seeded.rng).shape == (0, 4)


def test_non_frvec_inputs_are_bad_input() -> None:
    with pytest.raises(BadInput):
        fr.add(np.zeros((3, 4), dtype=np.int64), fr.zeros(3))
    with pytest.raises(BadInput):
        fr.add(fr.zeros(3), fr.zeros(4))
    with pytest.raises(BadInput):
        fr.neg([1, 2, 3])  # type: ignore[arg-type]
    with pytest.raises(BadInput):
        fr.add_inplace(fr.zeros(8)[::2], fr.zeros(4))


def test_take_into_gathers_rows_by_mask_and_index(rng):
    v = fr.random(1000, rng)
    mask = rng.random(1000) < 0.3
    idx = rng.integers(0, 1000, size=77)
    out = np.zeros((20 + int(mask.sum()) + 77, 4), dtype=np.uint64)
    fr.take_into(v, mask, out, 20)
    fr.take_into(v, idx, out, 20 + int(mask.sum()))
    assert np.array_equal(out[20 : 20 + mask.sum()], v[mask])
    assert np.array_equal(out[20 + mask.sum() :], v[idx])
    assert not out[:20].any()
    with pytest.raises(IndexError):
        fr.take_into(v, np.array([1000]), out)
    with pytest.raises(IndexError):
        fr.take_into(v, np.array([3, -1, 5]), out)
    with pytest.raises(ValueError):
        fr.take_into(v, mask, out, len(out) - 1)


def test_take_into_copies_everything_without_rows(rng):
    v = fr.random(1000, rng)
    out = np.zeros((1010, 4), dtype=np.uint64)
    fr.take_into(v, None, out, 7)
    assert np.array_equal(out[7:1007], v) and not out[:7].any() and not out[1007:].any()
    with pytest.raises(ValueError):
        fr.take_into(v, None, out, 11)
