"""BLS12-381 point types, constants and the scalar conversions every curve module shares.

This is the one place that decides how Python-side values become arkworks objects: points are
the arkworks classes themselves (re-exported as ``G1``/``G2``), and scalars arrive as canonical
32-byte little-endian rows so the curve layer never depends on the field module's Montgomery
representation.
"""

from __future__ import annotations

import mmap
from typing import TypeAlias

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from cuzk.errors import BadInput

G1 = G1Point
G2 = G2Point

#: Order of the prime subgroup (the scalar field Fr).
R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
#: Base field modulus.
P = int(
    "1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab",
    16,
)

SCALAR_BYTES = 32

#: Anything exposing raw bytes: what scalar and point arrays may be given as.
BytesLike: TypeAlias = bytes | bytearray | memoryview | mmap.mmap | np.ndarray

# Scalar.from_le_bytes is 20x cheaper than Scalar(int), so even ints go through bytes.
_from_le = Scalar.from_le_bytes


def g1_generator() -> G1Point:
    return G1Point()


def g2_generator() -> G2Point:
    return G2Point()


def g1_identity() -> G1Point:
    return G1Point.identity()


def g2_identity() -> G2Point:
    return G2Point.identity()


def scalar_from_int(k: int) -> Scalar:
    """An arkworks scalar for any Python int, reduced mod r."""
    return _from_le((k % R).to_bytes(SCALAR_BYTES, "little"))


def g1_mul(p: G1Point, k: int) -> G1Point:
    """k·p for any int k (reduced mod r); ~0.3 ms, so never use it in a loop over many points."""
    return p * scalar_from_int(k)


def g2_mul(p: G2Point, k: int) -> G2Point:
    """k·p for any int k (reduced mod r); ~0.9 ms."""
    return p * scalar_from_int(k)


def as_scalar_rows(scalars_le: BytesLike) -> np.ndarray:
    """View canonical little-endian scalars as a C-contiguous (n, 32) uint8 array.

    Accepts the (n, 32) uint8 array ``fr.to_bytes_le`` produces or any buffer of 32·n bytes, so
    callers can pass whatever they already hold without copying.
    """
    if isinstance(scalars_le, np.ndarray):
        if scalars_le.dtype != np.uint8:
            raise BadInput(f"scalars must be uint8 bytes, got dtype {scalars_le.dtype}")
        if scalars_le.ndim == 1:
            arr = scalars_le
        elif scalars_le.ndim == 2 and scalars_le.shape[1] == SCALAR_BYTES:
            return np.ascontiguousarray(scalars_le)
        else:
            raise BadInput(f"scalars must have shape (n, 32), got {scalars_le.shape}")
    else:
        arr = np.frombuffer(scalars_le, dtype=np.uint8)
    if arr.size % SCALAR_BYTES:
        raise BadInput(f"scalar bytes length {arr.size} is not a multiple of 32")
    return np.ascontiguousarray(arr).reshape(-1, SCALAR_BYTES)


def scalar_rows_to_bytes_list(rows: np.ndarray) -> list[bytes]:
    """One bytes object per row in a single C-level call (a void view's tolist keeps NULs)."""
    if len(rows) == 0:
        return []
    return rows.view(f"V{rows.shape[1]}").ravel().tolist()


def to_arkworks_scalars(scalars_le: BytesLike) -> list[Scalar]:
    """Arkworks scalars for canonical LE rows; a row ≥ r raises BadInput naming its index."""
    rows = as_scalar_rows(scalars_le)
    raw = scalar_rows_to_bytes_list(rows)
    try:
        return list(map(_from_le, raw))
    except ValueError:
        bad = [i for i, b in enumerate(raw) if int.from_bytes(b, "little") >= R]
        where = f"scalar {bad[0]}" if bad else "a scalar"
        raise BadInput(f"{where} is not canonical (≥ r)") from None
