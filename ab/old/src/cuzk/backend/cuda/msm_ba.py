"""Batch-affine bucket accumulation for :class:`~cuzk.backend.cuda.msm.GpuMsm`: the schedule
shared by the driver (CuPy arrays) and the host model of the tests (NumPy arrays), and the
cost model that decided to build it.

Why: the XYZZ accumulation pays 10 Fp products per mixed addition; an affine addition pays 3
(λ, λ², λ·(x₁ − x₃)) once its denominator's inverse is known, and Montgomery's trick shares one
inversion among many denominators for 3 more products each. The additions of one bucket form a
chain, so independent additions come from a pairwise tree instead:

* a *level* is a bucket-sorted list of affine points, bucket k owning positions
  ``off[k] … off[k+1] − 1`` (level 0: the sorted entries of the counting sort, gathered from
  the bases with their signs);
* one *round* turns a level into the next: bucket k's points 2j and 2j + 1 are added (or the
  last one copied when its count is odd) into position ``off'[k] + j`` of the next level, where
  ``off'`` is the exclusive scan of ⌈count/2⌉ (:func:`next_offsets`) — one *task* per output;
* after ⌈log₂(largest bucket)⌉ rounds (:func:`rounds_for`) every bucket holds at most one point,
  which becomes the bucket sum of the existing reduction.

Thread t of a round takes the tasks ``t·K … t·K + K − 1`` (K from :func:`batch_size`); a block
multiplies its threads' denominator products by a tree in shared memory and one thread inverts
the root, so one inversion serves ``block·K`` additions (:func:`inversion_tree_model` is that
tree on the host). Exceptional pairs (an operand at infinity, P = −P, P = P) are classified the
same way by every thread and on the host (:func:`classify`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

#: Threads per block of the round kernel (a power of two: the inversion tree is binary).
BA_BLOCK = 256
#: Tasks per thread: at most this many (the inversion is shared by BA_BLOCK·K additions)...
MAX_BATCH = 64
#: ...at least this many, and fewer than TARGET_THREADS threads only when K is at its maximum.
MIN_BATCH = 4
TARGET_THREADS = 1 << 18
#: Round-0 entries processed per group of windows (bounds the two point buffers: 2^27 entries
#: → 2^26 outputs, 6.4 GB G1 / 12.9 GB G2 per buffer).
MAX_GROUP_ENTRIES = 1 << 27

# Task kinds (what classify returns; the kernel's BA_* constants are the same numbers).
COPY, ADD, DOUBLE, TAKE_B, INFINITY = 0, 1, 2, 3, 4


def next_offsets(xp: Any, off: Any) -> Any:
    """The next level's bucket offsets (from 0) for a level with offsets ``off`` (nk + 1,
    ascending): each bucket keeps ⌈count/2⌉ points. ``xp`` is numpy or cupy."""
    half = (off[1:] - off[:-1] + 1) // 2
    out = xp.zeros(len(off), dtype=xp.int64)
    out[1:] = xp.cumsum(half)
    return out


def rounds_for(max_count: int) -> int:
    """Rounds until no bucket holds more than one point."""
    return max(0, math.ceil(math.log2(max_count))) if max_count > 1 else 0


def task_bound(tasks: int, nkeys: int) -> int:
    """An upper bound on the next round's tasks, Σ ⌈n_k/2⌉ ≤ (Σ n_k + nkeys)/2, without
    reading the device (the round kernel reads the exact count there)."""
    return min(tasks, (tasks + nkeys + 1) // 2)


def batch_size(tasks: int) -> int:
    """Tasks per thread: enough threads to fill the device, as many tasks per inversion as that
    allows."""
    return max(MIN_BATCH, min(MAX_BATCH, -(-tasks // TARGET_THREADS)))


def window_groups(nwin: int, m: int) -> list[tuple[int, int]]:
    """Consecutive windows [w0, w1) processed together, each at most MAX_GROUP_ENTRIES
    round-0 entries (a window has at most m)."""
    per = max(1, MAX_GROUP_ENTRIES // max(1, m))
    return [(w, min(nwin, w + per)) for w in range(0, nwin, per)]


def locate(off: Any, task: int) -> tuple[int, int]:
    """(bucket, j) of output ``task`` for the next level's offsets ``off``: the kernel's
    binary search, off[k] ≤ task < off[k+1] over non-empty buckets."""
    lo, hi = 0, len(off) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if off[mid] <= task:
            lo = mid
        else:
            hi = mid
    return lo, task - int(off[lo])


def classify(a: tuple[int, int] | None, b: tuple[int, int] | None | Literal[False]) -> int:
    """What a task does with its input points (affine (x, y) pairs, None at infinity; b is
    absent — pass ``False`` — for the copy of an odd bucket's last point)."""
    if b is False:
        return COPY
    if a is None:
        return TAKE_B
    if b is None:
        return COPY  # a + ∞ = a
    if a[0] != b[0]:
        return ADD
    return DOUBLE if a[1] == b[1] else INFINITY


def inversion_tree_model(values: list[int], p: int) -> list[int]:
    """1/v for every v of one block (len a power of two, all non-zero mod p) by the kernel's
    tree: up-sweep products, one inversion of the root, down-sweep; the host model of the
    shared-memory code, level by level in the same order."""
    n = len(values)
    if n & (n - 1):
        raise ValueError("the block size must be a power of two")
    tree = [0] * (2 * n)
    tree[n:] = [v % p for v in values]
    s = n // 2
    while s >= 1:
        for i in range(s, 2 * s):
            tree[i] = tree[2 * i] * tree[2 * i + 1] % p
        s //= 2
    tree[1] = pow(tree[1], p - 2, p)
    s = 1
    while s < n:
        for i in range(s, 2 * s):
            inv, left, right = tree[i], tree[2 * i], tree[2 * i + 1]
            tree[2 * i], tree[2 * i + 1] = inv * right % p, inv * left % p
        s *= 2
    return tree[n:]


# -- cost model --------------------------------------------------------------------------------
#: Fp products of one Fermat inversion (≈ 380 squarings + 190 products).
INVERSION_PRODUCTS = 570
#: Measured on the H200 (bench/NOTES.md): mixed XYZZ additions at 2.2·10^10 products/s in the
#: accumulation; a share of the HBM bandwidth the kernels reach (3.5 TB/s assumed).
PRODUCT_RATE = 2.2e10
BANDWIDTH = 3.5e12
G1_AFFINE_BYTES, FIELD_BYTES = 96, 48


@dataclass(frozen=True)
class AccumulationCost:
    """Predicted accumulation time of one G1 MSM (seconds), by the two designs."""

    entries: float
    xyzz_s: float
    batch_affine_compute_s: float
    batch_affine_memory_s: float

    @property
    def batch_affine_s(self) -> float:
        # Compute and memory traffic overlap only partly: charge the larger plus a third of
        # the smaller (a guess, to be replaced by the first measurement).
        hi = max(self.batch_affine_compute_s, self.batch_affine_memory_s)
        lo = min(self.batch_affine_compute_s, self.batch_affine_memory_s)
        return hi + lo / 3


def accumulation_cost(m: int, c: int) -> AccumulationCost:
    """The accumulation of a full-width G1 MSM of m points at window c by both designs.

    XYZZ: one 10-product mixed addition per entry. Batch-affine: entries − buckets additions
    at 6 products plus the shared inversion (one per BA_BLOCK·K additions, its tree ≈ 3
    products per thread and level), and per addition ≈ 480 bytes of traffic (two points read
    twice, the prefix product written and read, the sum written), plus ≈ 192 bytes per copied
    point in rounds after the first."""
    nwin = -(-256 // c)
    buckets = nwin * (1 << (c - 1))
    entries = m * nwin * (1 - 2.0**-c)
    nonempty = buckets * (1 - math.exp(-min(50.0, m / (1 << c))))
    additions = max(0.0, entries - nonempty)
    k = batch_size(int(entries // 2))
    per_add = 6 + (INVERSION_PRODUCTS * 32 + 36 * 32) / (BA_BLOCK * k)
    rounds = rounds_for(max(2, int(2 * m / (1 << c))))
    traffic = additions * 480 + rounds * nonempty * 2 * G1_AFFINE_BYTES
    return AccumulationCost(
        entries=entries,
        xyzz_s=entries * 10 / PRODUCT_RATE,
        batch_affine_compute_s=additions * per_add / PRODUCT_RATE,
        batch_affine_memory_s=traffic / BANDWIDTH,
    )


def precompute_saving(
    m: int, copies: int, windows: range, f: float = 3.0
) -> tuple[int, float, int, float]:
    """What ``copies`` precomputed shifted copies of the bases save, in choose_window's units
    (additions): (best c, cost) today and (best c, cost) with the copies, over the windows c
    in ``windows``, where an MSM over copies·m points needs ⌈W/copies⌉ windows of buckets and
    so that many bucket reductions."""

    def best(t: int) -> tuple[int, float]:
        out = (windows[0], math.inf)
        for c in windows:
            w = -(-256 // c)
            cost = m * w + -(-w // t) * (f * (1 << (c - 1)) + 500)
            if cost < out[1]:
                out = (c, cost)
        return out

    return (*best(1), *best(copies))
