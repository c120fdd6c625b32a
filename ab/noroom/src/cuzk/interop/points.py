"""snarkjs point encodings ↔ the zcash bytes the curve layer and backends read.

snarkjs writes an affine point as its coordinates in little-endian Montgomery form, x then y,
with G2 coordinates as c0‖c1 and the point at infinity as all zeros ("LEM"). zcash's
uncompressed form is canonical big-endian, G2 as c1‖c0, infinity flagged by 0x40. The
backends load MSM bases from zcash-uncompressed files (:class:`~cuzk.backend.base.PointSet`),
so a ``.zkey``'s point sections are translated once into such a file and proved from there.
"""

from __future__ import annotations

import numpy as np

from cuzk.curve import G1, G2
from cuzk.curve.encoding import FLAG_INFINITY, g1_from_bytes, g2_from_bytes
from cuzk.errors import BadInput
from cuzk.field.constants import FP_BYTES
from cuzk.interop.fp_mont import canonical_be_to_mont_le, mont_le_to_canonical_be

G1_LEM_SIZE = 2 * FP_BYTES  # x, y
G2_LEM_SIZE = 4 * FP_BYTES  # x.c0, x.c1, y.c0, y.c1
# zcash's G2 order (x.c1, x.c0, y.c1, y.c0) as indices into snarkjs's.
_G2_ZCASH_ORDER = (1, 0, 3, 2)


def lem_to_zcash(
    rows: np.ndarray, group: str, what: str = "point", first_index: int = 0
) -> np.ndarray:
    """(n, 96) G1 or (n, 192) G2 snarkjs rows → the same shape of zcash-uncompressed rows.

    Only the encoding changes; whether the points lie on the curve is checked by whoever
    decodes the result (the backend when it loads bases, :func:`g1_from_lem` for single
    points).

    Raises:
        BadInput: a coordinate ≥ p, naming ``what`` and the point's index (counted from
            ``first_index``, for callers translating a vector block by block).
    """
    k = 2 if group == "g1" else 4
    n = rows.shape[0]
    if rows.dtype != np.uint8 or rows.shape != (n, k * FP_BYTES):
        raise BadInput(f"{group} rows must be (n, {k * FP_BYTES}) uint8, got {rows.shape}")
    be = mont_le_to_canonical_be(rows.reshape(n * k, FP_BYTES), what, k, first_index)
    be = be.reshape(n, k, FP_BYTES)
    if k == 4:
        be = be[:, _G2_ZCASH_ORDER, :]
    out = np.ascontiguousarray(be).reshape(n, k * FP_BYTES)
    infinity = ~rows.view(np.uint64).any(axis=1) if n else np.zeros(0, dtype=bool)
    out[infinity, 0] = FLAG_INFINITY
    return out


def zcash_to_lem(rows: np.ndarray, group: str) -> np.ndarray:
    """(n, 96) G1 or (n, 192) G2 zcash-uncompressed rows → snarkjs rows (writing keys).

    Raises:
        BadInput: a flag other than infinity is set, or a coordinate is ≥ p.
    """
    k = 2 if group == "g1" else 4
    n = rows.shape[0]
    if rows.dtype != np.uint8 or rows.shape != (n, k * FP_BYTES):
        raise BadInput(f"{group} rows must be (n, {k * FP_BYTES}) uint8, got {rows.shape}")
    flags = rows[:, 0] & 0xE0
    if np.any((flags != 0) & (flags != FLAG_INFINITY)):
        raise BadInput(f"{group} rows must be uncompressed zcash points")
    infinity = flags == FLAG_INFINITY
    coords = rows.reshape(n, k, FP_BYTES)
    if k == 4:
        coords = coords[:, _G2_ZCASH_ORDER, :]  # the swap is its own inverse
    flat = np.array(coords, dtype=np.uint8, order="C").reshape(n * k, FP_BYTES)
    flat[np.repeat(infinity, k)] = 0  # clears the flag byte too
    out = canonical_be_to_mont_le(flat).reshape(n, k * FP_BYTES)
    out[infinity] = 0
    return out


def g1_from_lem(data: bytes | memoryview, what: str) -> G1:
    """One snarkjs G1 point, fully checked (on curve, in the subgroup); ``what`` names it in
    errors."""
    # why the ignore below: _single returns the group it is named (G1 here); its type is the union
    return _single(data, "g1", what)  # type: ignore[return-value]


def g2_from_lem(data: bytes | memoryview, what: str) -> G2:
    """One snarkjs G2 point, fully checked (on curve, in the subgroup)."""
    # why the ignore below: _single returns the group it is named (G2 here); its type is the union
    return _single(data, "g2", what)  # type: ignore[return-value]


def _single(data: bytes | memoryview, group: str, what: str) -> G1 | G2:
    size = G1_LEM_SIZE if group == "g1" else G2_LEM_SIZE
    raw = bytes(data)
    if len(raw) != size:
        raise BadInput(f"{what}: {len(raw)} bytes; a {group.upper()} point is {size}")
    row = np.frombuffer(raw, dtype=np.uint8).reshape(1, size)
    zcash = lem_to_zcash(row, group, what)[0].tobytes()
    decode = g1_from_bytes if group == "g1" else g2_from_bytes
    try:
        return decode(zcash, compressed=False)
    except BadInput as e:
        raise BadInput(f"{what}: {e}") from e
