"""Fixed-base scalar multiplication k_i·G of a group generator on one CUDA device (key generation).

Setup multiplies the generators by tens of millions of scalars (five vectors of the size of the
circuit); on the host that is minutes even with a window table per worker. Here the table of
d·2^(c·w)·G (w < ⌈256/c⌉, 1 ≤ d ≤ 2^(c−1); signed digits halve it) is built on the device
once per group and window and kept, then one thread per scalar adds its ⌈256/c⌉ table entries
(mixed XYZZ additions, no doublings) and a second kernel converts the results to affine with
one inversion per 32 points (Montgomery's trick) and writes them zcash-uncompressed, the
encoding of a ``.params`` file. Kernels: ``fixed_base.cu``.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np

from cuzk.backend.cuda.device import Gpu
from cuzk.backend.cuda.points import zcash_to_limbs
from cuzk.errors import BadInput
from cuzk.field import fr

KERNEL_FILE = "fixed_base.cu"
BLOCK = 128
#: Scalars per pass: bounds the XYZZ buffer (2^22 G2 points are 1.6 GB).
PASS = 1 << 22
#: Points per thread in the affine conversion (one Fermat inversion, ~570 products, each).
AFFINE_K = 32
MIN_WINDOW, MAX_WINDOW = 4, 16
#: Cost of one table entry in mixed additions: ~c doublings and c/2 additions, plus the
#: conversion to affine.
_ENTRY_COST = (1.5, 2.0)
_GROUPS = {"g1": (1, 96), "g2": (2, 192)}  # Fp elements per coordinate, bytes per point


def choose_window(n: int) -> int:
    """The window c minimising n·W + W·2^(c−1)·(1.5c + 2) mixed additions, W = ⌈256/c⌉."""
    best_c, best = MIN_WINDOW, math.inf
    for c in range(MIN_WINDOW, MAX_WINDOW + 1):
        w = -(-256 // c)
        cost = n * w + w * (1 << (c - 1)) * (_ENTRY_COST[0] * c + _ENTRY_COST[1])
        if cost < best:
            best_c, best = c, cost
    return best_c


def _window_bases(group: str, c: int, nwin: int) -> np.ndarray:
    """2^(c·w)·G for w < nwin as canonical device limbs (nwin, 24|48) uint32."""
    from cuzk.curve import g1_generator, g2_generator
    from cuzk.curve.encoding import g1_array_to_uncompressed, g2_array_to_uncompressed

    def doublings(p: Any) -> list[Any]:
        pts = []
        for _ in range(nwin):
            pts.append(p)
            for _ in range(c):
                p = p + p
        return pts

    if group == "g1":
        enc = g1_array_to_uncompressed(doublings(g1_generator()))
    else:
        enc = g2_array_to_uncompressed(doublings(g2_generator()))
    rows = np.frombuffer(enc, dtype=np.uint8).reshape(nwin, _GROUPS[group][1])
    return zcash_to_limbs(group, rows)


class GpuFixedBase:
    """k_i·G for the generator G of G1 or G2 on the device of ``gpu`` (its stream)."""

    def __init__(self, gpu: Gpu) -> None:
        self.gpu = gpu
        self._tables: dict[str, tuple[int, Any]] = {}  # group → (window, device table)
        self._lock = threading.Lock()  # one multiplication at a time: they share the tables

    def multiply(self, group: str, scalars: fr.FrVec, *, window: int | None = None) -> np.ndarray:
        """(n, 96|192) uint8: k_i·G zcash-uncompressed (scalar 0 → the point at infinity)."""
        if group not in _GROUPS:
            raise BadInput(f"unknown group {group!r}")
        s = np.asarray(scalars)
        if s.ndim != 2 or s.shape[1] != 4 or s.dtype != np.uint64:
            raise BadInput(f"scalars must be an (n, 4) uint64 FrVec, got {s.shape} {s.dtype}")
        nfp, size = _GROUPS[group]
        n = s.shape[0]
        out = np.empty((n, size), dtype=np.uint8)
        if n == 0:
            return out
        c = window or choose_window(n)
        if not MIN_WINDOW <= c <= 20:
            raise BadInput(f"fixed-base window {c} out of range")
        u32 = np.uint32
        with self._lock:
            c, table = self._table(group, c, force=window is not None)
            nwin = -(-256 // c)
            for lo in range(0, n, PASS):
                hi = min(n, lo + PASS)
                m = hi - lo
                d_s = self.gpu.upload(np.ascontiguousarray(s[lo:hi]))
                pts = self.gpu.empty(m, np.uint32, 4 * nfp * 12)
                self.gpu.launch(KERNEL_FILE, f"fixed_base_mul_{group}", -(-m // BLOCK), BLOCK,
                                (d_s, u32(m), u32(c), u32(nwin), table, pts))  # fmt: skip
                del d_s
                enc = self._to_affine(group, pts, m, zcash=True)
                del pts
                out[lo:hi] = self.gpu.download(enc).view(np.uint8).reshape(m, size)
        return out

    def _table(self, group: str, c: int, *, force: bool) -> tuple[int, Any]:
        """The device table for window c, or a cached wider one (fewer additions per scalar)."""
        cached = self._tables.get(group)
        if cached is not None and (cached[0] == c or (cached[0] > c and not force)):
            return cached
        nfp = _GROUPS[group][0]
        nwin, half = -(-256 // c), 1 << (c - 1)
        bases = self.gpu.upload(_window_bases(group, c, nwin))
        xyzz = self.gpu.empty(nwin * half, np.uint32, 4 * nfp * 12)
        u32 = np.uint32
        self.gpu.launch(KERNEL_FILE, f"fixed_base_table_{group}", -(-nwin * half // BLOCK), BLOCK,
                        (bases, u32(nwin), u32(half), xyzz))  # fmt: skip
        table = self._to_affine(group, xyzz, nwin * half, zcash=False)
        self._tables[group] = (c, table)
        return c, table

    def _to_affine(self, group: str, xyzz: Any, n: int, *, zcash: bool) -> Any:
        """XYZZ rows → affine: Montgomery limbs (the table) or zcash bytes as uint32 words."""
        nfp = _GROUPS[group][0]
        scratch = self.gpu.empty(n, np.uint32, nfp * 12)
        out = self.gpu.empty(n, np.uint32, 2 * nfp * 12)
        threads = -(-n // AFFINE_K)
        self.gpu.launch(KERNEL_FILE, f"fixed_base_affine_{group}", -(-threads // BLOCK), BLOCK,
                        (xyzz, np.uint64(n), np.uint32(AFFINE_K), scratch, out,
                         np.uint32(1 if zcash else 0)))  # fmt: skip
        return out

    def forget(self) -> None:
        """Drop the cached tables (tens of MB of VRAM)."""
        with self._lock:
            self._tables.clear()
