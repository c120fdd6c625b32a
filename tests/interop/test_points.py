"""snarkjs point encoding (little-endian Montgomery, G2 as c0‖c1, infinity as zeros) against
known points and Python big-integer arithmetic."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuzk.curve import g1_generator, g1_identity, g1_mul, g2_generator, g2_identity, g2_mul
from cuzk.curve.encoding import g1_to_bytes, g2_to_bytes
from cuzk.errors import BadInput
from cuzk.field.constants import P
from cuzk.interop.fp_mont import canonical_to_mont_le, mont_le_to_canonical_be
from cuzk.interop.points import g1_from_lem, g2_from_lem, lem_to_zcash
from cuzk.interop.snarkjs_json import g1_to_json, g2_to_json


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, P - 1), min_size=1, max_size=40))
def test_montgomery_reduction_matches_python(values):
    raw = np.frombuffer(canonical_to_mont_le(values), dtype=np.uint8).reshape(-1, 48)
    out = mont_le_to_canonical_be(raw)
    assert [int.from_bytes(bytes(r), "big") for r in out] == values


def test_unreduced_coordinate_is_named():
    raw = bytearray(canonical_to_mont_le([1, 2, 3, 4]))
    raw[48 * 2 : 48 * 3] = (P + 5).to_bytes(48, "little")
    rows = np.frombuffer(bytes(raw), dtype=np.uint8).reshape(2, 96)
    with pytest.raises(BadInput, match="point 11: a coordinate is not a reduced"):
        lem_to_zcash(rows, "g1", "point", first_index=10)


def _lem_g1(p) -> bytes:
    """snarkjs bytes for a G1 point, built from its JSON coordinates (independent path)."""
    x, y, z = (int(v) for v in g1_to_json(p))
    return bytes(96) if z == 0 else canonical_to_mont_le([x, y])


def _lem_g2(p) -> bytes:
    (x0, x1), (y0, y1), (z0, _) = ([int(v) for v in c] for c in g2_to_json(p))
    return bytes(192) if z0 == 0 else canonical_to_mont_le([x0, x1, y0, y1])


@pytest.mark.parametrize("k", [1, 2, 12345, 2**200 + 7])
def test_g1_points(k):
    p = g1_mul(g1_generator(), k)
    assert g1_from_lem(_lem_g1(p), "p") == p
    rows = np.frombuffer(_lem_g1(p) * 3, dtype=np.uint8).reshape(3, 96)
    assert lem_to_zcash(rows, "g1")[1].tobytes() == g1_to_bytes(p, compressed=False)


@pytest.mark.parametrize("k", [1, 3, 2**100 + 1])
def test_g2_points(k):
    p = g2_mul(g2_generator(), k)
    assert g2_from_lem(_lem_g2(p), "p") == p
    rows = np.frombuffer(_lem_g2(p), dtype=np.uint8).reshape(1, 192)
    assert lem_to_zcash(rows, "g2")[0].tobytes() == g2_to_bytes(p, compressed=False)


def test_infinity_is_all_zeros():
    assert g1_from_lem(bytes(96), "p") == g1_identity()
    assert g2_from_lem(bytes(192), "p") == g2_identity()
    zero = np.zeros((2, 96), dtype=np.uint8)
    assert lem_to_zcash(zero, "g1")[0].tobytes() == g1_to_bytes(g1_identity(), compressed=False)


def test_off_curve_point_is_refused():
    with pytest.raises(BadInput, match="vk_x: .*not on curve"):
        g1_from_lem(canonical_to_mont_le([1, 1]), "vk_x")


def test_wrong_length():
    with pytest.raises(BadInput, match="bytes"):
        g1_from_lem(bytes(95), "p")
