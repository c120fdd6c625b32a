"""zcash/bellperson point encodings, translated to and from arkworks' own byte layout.

Arkworks' compressed bytes already are zcash's, but its uncompressed ("xy") layout differs in
two ways this module hides: G2 coordinates are written c0‖c1 (zcash: c1‖c0) and the point at
infinity is all zeros (zcash: the 0x40 flag). Single points are validated field by field so a
bad input gets a one-line reason; arrays are translated for all points at once with numpy and
then handed to one arkworks constructor call per point.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cuzk.curve.points import BytesLike, G1Point, G2Point, P
from cuzk.errors import BadInput

FLAG_COMPRESSED = 0x80
FLAG_INFINITY = 0x40
FLAG_LARGER_Y = 0x20
FLAG_MASK = 0xE0

FP_BYTES = 48
G1_COMPRESSED_SIZE = 48
G1_UNCOMPRESSED_SIZE = 96
G2_COMPRESSED_SIZE = 96
G2_UNCOMPRESSED_SIZE = 192

# Decoding converts this many points per numpy pass, bounding the transient copies (a full
# 2^20-point G2 vector would otherwise double its 200 MB footprint while loading).
_BLOCK = 1 << 16

# zcash G2 (x.c1 x.c0 y.c1 y.c0) <-> arkworks (x.c0 x.c1 y.c0 y.c1): swapping the 48-byte halves
# of each coordinate is an involution, so one function serves both directions.
_G2_ORDER = (1, 0, 3, 2)


def _swap_g2_rows(rows: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of (n, 192) rows with each coordinate's Fp halves swapped."""
    out = np.empty(rows.shape, dtype=np.uint8)
    h = FP_BYTES
    for dst, src in enumerate(_G2_ORDER):
        out[:, dst * h : (dst + 1) * h] = rows[:, src * h : (src + 1) * h]
    return out


class _Group:
    """Per-group constants so G1 and G2 share every code path below."""

    def __init__(self, name: str, cls: type[G1Point] | type[G2Point], fp_per_coord: int) -> None:
        self.name = name
        self.cls = cls
        self.compressed_size = FP_BYTES * fp_per_coord
        self.uncompressed_size = 2 * self.compressed_size
        self.swap = fp_per_coord == 2
        # Where zcash's flag byte lands after translation to arkworks order.
        self.flag_pos = FP_BYTES if self.swap else 0
        self.zero_xy = bytes(self.uncompressed_size)
        self.from_xy_unchecked: Callable[[bytes], G1Point | G2Point] = (
            cls.from_xy_bytes_unchecked_be
        )
        self.from_compressed_unchecked: Callable[[bytes], G1Point | G2Point] = (
            cls.from_compressed_bytes_unchecked
        )


_G1 = _Group("G1", G1Point, 1)
_G2 = _Group("G2", G2Point, 2)
_GROUPS = {"g1": _G1, "g2": _G2}


# -- single points ---------------------------------------------------------------------------


def g1_to_bytes(p: G1Point, *, compressed: bool) -> bytes:
    """zcash encoding of a G1 point: 48 bytes compressed, 96 uncompressed."""
    return _to_bytes(_G1, p, compressed)


def g2_to_bytes(p: G2Point, *, compressed: bool) -> bytes:
    """zcash encoding of a G2 point: 96 bytes compressed, 192 uncompressed."""
    return _to_bytes(_G2, p, compressed)


def g1_from_bytes(data: BytesLike, *, compressed: bool, checked: bool = True) -> G1Point:
    """Decode a zcash G1 encoding; BadInput with a one-line reason if it is not a valid point.

    ``checked=False`` skips the subgroup test (the expensive part, ~0.1 ms) for trusted input;
    length, flags and the curve equation are still enforced.
    """
    return _from_bytes(_G1, data, compressed, checked)


def g2_from_bytes(data: BytesLike, *, compressed: bool, checked: bool = True) -> G2Point:
    """Decode a zcash G2 encoding; see :func:`g1_from_bytes`."""
    return _from_bytes(_G2, data, compressed, checked)


def _to_bytes(g: _Group, p: object, compressed: bool) -> bytes:
    if not isinstance(p, g.cls):
        raise BadInput(f"expected a {g.name} point, got {type(p).__name__}")
    if compressed:
        # why the ignore below: py-arkworks-bls12381 ships no type stubs for its points' methods
        return p.to_compressed_bytes()  # type: ignore[attr-defined]
    xy = p.to_xy_bytes_be()  # type: ignore[attr-defined]
    if xy == g.zero_xy:
        return bytes([FLAG_INFINITY]) + bytes(g.uncompressed_size - 1)
    return _swap_g2(xy) if g.swap else xy


def _swap_g2(xy: bytes) -> bytes:
    h = FP_BYTES
    return xy[h : 2 * h] + xy[:h] + xy[3 * h :] + xy[2 * h : 3 * h]


def _from_bytes(g: _Group, data: BytesLike, compressed: bool, checked: bool) -> Any:
    data = bytes(data)
    kind = "compressed" if compressed else "uncompressed"
    size = g.compressed_size if compressed else g.uncompressed_size
    if len(data) != size:
        raise BadInput(f"{g.name} {kind} encoding must be {size} bytes, got {len(data)}")
    flags = data[0] & FLAG_MASK
    if bool(flags & FLAG_COMPRESSED) != compressed:
        raise BadInput(
            f"{g.name} {kind} encoding has the compression flag {'clear' if compressed else 'set'}"
        )
    if flags & FLAG_INFINITY:
        if flags & FLAG_LARGER_Y or data[0] & ~FLAG_MASK or any(data[1:]):
            raise BadInput(f"{g.name} point at infinity has stray bits set")
        return g.cls.identity()
    if not compressed and flags & FLAG_LARGER_Y:
        raise BadInput(f"{g.name} uncompressed encoding has the larger-y flag set")
    body = bytes([data[0] & ~FLAG_MASK]) + data[1:]
    if checked and not _coordinates_canonical(body):
        raise BadInput(f"{g.name} point {_NOT_CANONICAL}")
    try:
        if compressed:
            point = g.from_compressed_unchecked(data)
        else:
            point = g.from_xy_unchecked(_swap_g2(body) if g.swap else body)
    except (ValueError, TypeError):
        raise BadInput(f"{g.name} point {_diagnose(body, compressed)}") from None
    if not compressed and body == g.zero_xy:
        # (0, 0) without the infinity flag: arkworks would read it as infinity.
        raise BadInput(f"{g.name} point not on curve")
    if checked and not point.is_in_subgroup():
        raise BadInput(f"{g.name} point not in subgroup")
    return point


_NOT_CANONICAL = "has a coordinate not less than the field modulus p"


def _coordinates_canonical(body: bytes) -> bool:
    return all(
        int.from_bytes(body[k : k + FP_BYTES], "big") < P for k in range(0, len(body), FP_BYTES)
    )


def _diagnose(body: bytes, compressed: bool) -> str:
    """Why arkworks refused flag-valid bytes: a non-canonical coordinate, else off the curve."""
    if not _coordinates_canonical(body):
        return _NOT_CANONICAL
    return "not on curve (no y for this x)" if compressed else "not on curve"


# -- arrays ----------------------------------------------------------------------------------


def g1_array_from_uncompressed(buf: BytesLike, *, checked: bool = False) -> list[G1Point]:
    """Points from n·96 bytes of zcash-uncompressed G1 points (a parameter-file vector).

    ``buf`` may be any buffer (bytes, memoryview or mmap slice, np.memmap); it is read, never
    kept. Unchecked (the default) validates flags and the curve equation only, ~1 µs a point.
    """
    return _array_from_uncompressed(_G1, buf, checked)


def g2_array_from_uncompressed(buf: BytesLike, *, checked: bool = False) -> list[G2Point]:
    """Points from n·192 bytes of zcash-uncompressed G2 points; see the G1 variant."""
    return _array_from_uncompressed(_G2, buf, checked)


def g1_array_to_uncompressed(points: Sequence[G1Point]) -> bytes:
    """n·96 bytes of zcash-uncompressed points (~17 µs a point: one field inversion each)."""
    return _array_to_uncompressed(_G1, points)


def g2_array_to_uncompressed(points: Sequence[G2Point]) -> bytes:
    """n·192 bytes of zcash-uncompressed points."""
    return _array_to_uncompressed(_G2, points)


def _as_rows(buf: BytesLike, size: int, name: str) -> np.ndarray:
    arr = buf if isinstance(buf, np.ndarray) else np.frombuffer(buf, dtype=np.uint8)
    arr = arr.reshape(-1) if arr.dtype == np.uint8 else arr.view(np.uint8).reshape(-1)
    if arr.size % size:
        raise BadInput(f"{name} point array of {arr.size} bytes is not a multiple of {size}")
    return arr.reshape(-1, size)


def zcash_to_arkworks_rows(g: _Group, rows: np.ndarray, first_index: int = 0) -> np.ndarray:
    """Translate zcash-uncompressed rows to arkworks xy rows, validating flags on the way.

    Returns a fresh C-contiguous array; ``first_index`` only shifts indices in error messages.
    """
    flags = rows[:, 0] & FLAG_MASK
    bad = (flags != 0) & (flags != FLAG_INFINITY)
    if bad.any():
        i = int(np.argmax(bad))
        raise BadInput(
            f"{g.name} point {first_index + i}: flags 0x{int(flags[i]):02x} are invalid for an "
            "uncompressed encoding"
        )
    out = _swap_g2_rows(rows) if g.swap else np.array(rows, dtype=np.uint8, order="C")
    out[:, g.flag_pos] &= ~np.uint8(FLAG_MASK)
    zero = ~out.view(np.uint64).any(axis=1)
    mismatch = zero != (flags == FLAG_INFINITY)
    if mismatch.any():
        i = int(np.argmax(mismatch))
        reason = "point at infinity has stray bits set" if flags[i] else "point not on curve"
        raise BadInput(f"{g.name} point {first_index + i}: {reason}")
    return out


def points_from_uncompressed(
    group: str, buf: BytesLike, *, checked: bool = False, first_index: int = 0
) -> list:
    """``g1_``/``g2_array_from_uncompressed`` by group name ("g1"/"g2"); ``first_index`` is
    added to point indices in error messages (for callers decoding a vector piecewise)."""
    return _array_from_uncompressed(_GROUPS[group], buf, checked, first_index)


def _array_from_uncompressed(
    g: _Group, buf: BytesLike, checked: bool, first_index: int = 0
) -> list:
    rows = _as_rows(buf, g.uncompressed_size, g.name)
    points: list = []
    for start in range(0, len(rows), _BLOCK):
        xy = zcash_to_arkworks_rows(g, rows[start : start + _BLOCK], first_index + start)
        raw = xy.view(f"V{g.uncompressed_size}").ravel().tolist()
        del xy
        try:
            block = list(map(g.from_xy_unchecked, raw))
        except (ValueError, TypeError):
            raise BadInput(_locate_failure(g, raw, first_index + start)) from None
        if checked:
            for i, p in enumerate(block):
                if not p.is_in_subgroup():
                    raise BadInput(f"{g.name} point {first_index + start + i}: not in subgroup")
        points.extend(block)
    return points


def _locate_failure(g: _Group, raw: list[bytes], start: int) -> str:
    """Slow path, only after a bulk failure: find and explain the first bad point."""
    for i, xy in enumerate(raw):
        try:
            g.from_xy_unchecked(xy)
        except (ValueError, TypeError):
            body = _swap_g2(xy) if g.swap else xy
            return f"{g.name} point {start + i}: {_diagnose(body, False)}"
    return f"{g.name} point array: arkworks refused a block starting at point {start}"


def _array_to_uncompressed(g: _Group, points: Sequence) -> bytes:
    if len(points) == 0:
        return b""
    try:
        raw = b"".join([p.to_xy_bytes_be() for p in points])
    except AttributeError:
        raise BadInput(f"expected {g.name} points") from None
    if len(raw) != len(points) * g.uncompressed_size:
        raise BadInput(f"expected {g.name} points")
    rows = np.frombuffer(raw, dtype=np.uint8).reshape(-1, g.uncompressed_size)
    zero = ~rows.view(np.uint64).any(axis=1)
    if g.swap:
        rows = _swap_g2_rows(rows)
    elif zero.any():
        rows = rows.copy()
    else:
        return raw
    rows[zero, 0] = FLAG_INFINITY
    return rows.tobytes()
