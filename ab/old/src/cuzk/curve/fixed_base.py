"""Many scalar multiplications of one base point, for Groth16 parameter generation.

A single arkworks ``p * k`` costs ~0.3 ms (G1) because it doubles 255 times; setup needs
millions of them, all of the same few bases (the generators). A window table of the multiples
d·2^(c·j)·B turns each product into one table lookup and one addition per c-bit window, with no
doublings at all: about 20 additions plus the affine conversion of the result.
"""

from __future__ import annotations

import math
from operator import getitem
from typing import Any

import numpy as np

from cuzk.curve.encoding import g1_array_to_uncompressed, g2_array_to_uncompressed
from cuzk.curve.points import SCALAR_BYTES, BytesLike, G1Point, G2Point, as_scalar_rows

SCALAR_BITS = 8 * SCALAR_BYTES

# Table memory cap per group (entries): ~30 MB of G1 or ~30 MB of G2 point objects.
_MAX_ENTRIES = {"g1": 190_000, "g2": 100_000}
_MAX_WINDOW = 16
# Digits are extracted this many scalars at a time so the (n, 256) bit matrix stays small.
_DIGIT_BLOCK = 4096


def choose_window(n: int, group: str) -> int:
    """Window width minimising n·W + W·2^c additions (W = ⌈256/c⌉) within the memory cap."""
    best_c, best_cost = 1, math.inf
    for c in range(1, _MAX_WINDOW + 1):
        windows = math.ceil(SCALAR_BITS / c)
        if windows * (1 << c) > _MAX_ENTRIES[group] and c > 1:
            break
        cost = n * windows + windows * (1 << c)
        if cost < best_cost:
            best_c, best_cost = c, cost
    return best_c


class FixedBaseTable:
    """Every d·2^(c·j)·B for window j and digit d; reusable for any number of scalars."""

    def __init__(self, base: G1Point | G2Point, window: int) -> None:
        self.base = base
        self.window = window
        self.windows = math.ceil(SCALAR_BITS / window)
        # Any: every point of a table is of the base's group, which a union type cannot say.
        ident: Any = type(base).identity()
        self.identity = ident
        tables: list[list[Any]] = []
        step: Any = base  # 2^(c·j)·B
        for j in range(self.windows):
            # The top window only needs the digits that 256-bit scalars can produce.
            size = 1 << min(window, SCALAR_BITS - window * j)
            row = [ident]
            acc = ident
            for _ in range(1, size):
                acc = acc + step
                row.append(acc)
            tables.append(row)
            step = acc + step  # 2^c·step; unused after the (possibly short) top window
        self.tables = tables

    def digits(self, rows: np.ndarray) -> np.ndarray:
        """(n, W) window digits of (n, 32) little-endian scalar rows."""
        c, w = self.window, self.windows
        bits = np.unpackbits(rows, axis=1, bitorder="little")
        pad = w * c - SCALAR_BITS
        if pad:
            bits = np.pad(bits, ((0, 0), (0, pad)))
        weights = 1 << np.arange(c, dtype=np.int64)
        return bits.reshape(len(rows), w, c).astype(np.int64) @ weights

    def multiply(self, scalars_le: BytesLike) -> list:
        """k·B for every scalar row (any 256-bit value, reduced or not)."""
        rows = as_scalar_rows(scalars_le)
        tables, ident = self.tables, self.identity
        out: list = []
        for start in range(0, len(rows), _DIGIT_BLOCK):
            digits = self.digits(rows[start : start + _DIGIT_BLOCK]).tolist()
            # sum() over a map keeps the per-window loop in C: one lookup and one add each.
            out.extend([sum(map(getitem, tables, d), ident) for d in digits])
        return out


def fixed_base_points(base: G1Point | G2Point, scalars_le: BytesLike) -> list:
    """k·B as point objects, with a window sized for this batch."""
    rows = as_scalar_rows(scalars_le)
    if len(rows) == 0:
        return []
    group = "g1" if isinstance(base, G1Point) else "g2"
    return FixedBaseTable(base, choose_window(len(rows), group)).multiply(rows)


def g1_fixed_base_batch(base: G1Point, scalars_le: BytesLike) -> bytes:
    """n·96 bytes: zcash-uncompressed k_i·B for every scalar row, in order."""
    return g1_array_to_uncompressed(fixed_base_points(base, scalars_le))


def g2_fixed_base_batch(base: G2Point, scalars_le: BytesLike) -> bytes:
    """n·192 bytes: zcash-uncompressed k_i·B for every scalar row, in order."""
    return g2_array_to_uncompressed(fixed_base_points(base, scalars_le))
