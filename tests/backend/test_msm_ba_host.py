"""The batch-affine bucket accumulation (msm_ba.cu) modelled on the host and checked with real
curve arithmetic: the round schedule of msm_ba.py, the per-thread forward/backward passes and
the block's inversion tree run here on Python integers in the kernel's order, and every bucket
sum, window sum and the whole MSM are compared with py-arkworks on small random MSMs."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.backend.cuda import msm_ba
from cuzk.curve import g1_generator
from cuzk.curve.encoding import g1_from_bytes, g1_to_bytes
from cuzk.curve.msm import g1_fixed_base_batch, g1_msm
from cuzk.curve.points import g1_identity
from cuzk.field.constants import P, R

Affine = tuple[int, int] | None  # None: the point at infinity


def to_affine(point) -> Affine:
    raw = g1_to_bytes(point, compressed=False)
    if raw[0] & 0x40:
        return None
    return int.from_bytes(raw[:48], "big") & ((1 << 381) - 1), int.from_bytes(raw[48:], "big")


def from_affine(a: Affine):
    if a is None:
        return g1_identity()
    raw = a[0].to_bytes(48, "big") + a[1].to_bytes(48, "big")
    return g1_from_bytes(raw, compressed=False)


def task_operands(level: list[Affine], in_off, out_off, t: int):
    """The kernel's ba_task: (kind, a, b, denominator)."""
    k, j = msm_ba.locate(out_off, t)
    pa = int(in_off[k]) + 2 * j
    a = level[pa]
    b = level[pa + 1] if pa + 1 < int(in_off[k + 1]) else False
    kind = msm_ba.classify(a, b)
    d = None
    if kind == msm_ba.ADD:
        d = (b[0] - a[0]) % P
    elif kind == msm_ba.DOUBLE:
        d = 2 * a[1] % P
    return kind, a, b, d


def model_round(level: list[Affine], in_off: np.ndarray, block: int) -> tuple[list, np.ndarray]:
    """One msm_ba_round on the host: the same tasks per thread, prefix products, block tree
    and backward pass. Returns (next level, its offsets)."""
    out_off = msm_ba.next_offsets(np, in_off)
    ntasks = int(out_off[-1])
    k = msm_ba.batch_size(ntasks)
    threads = -(-ntasks // (k * block)) * block
    out: list[Affine] = [None] * ntasks
    for b0 in range(0, threads, block):
        accs, prefixes = [], []
        for g in range(b0, b0 + block):
            acc, pre = 1, {}
            for t in range(g * k, min(g * k + k, ntasks)):
                _, _, _, d = task_operands(level, in_off, out_off, t)
                if d is not None:
                    pre[t], acc = acc, acc * d % P
            accs.append(acc)
            prefixes.append(pre)
        invs = msm_ba.inversion_tree_model(accs, P)
        for g, inv, pre in zip(range(b0, b0 + block), invs, prefixes, strict=True):
            for t in reversed(range(g * k, min(g * k + k, ntasks))):
                kind, a, b, d = task_operands(level, in_off, out_off, t)
                if kind == msm_ba.COPY:
                    out[t] = a
                elif kind == msm_ba.TAKE_B:
                    out[t] = b
                elif kind == msm_ba.INFINITY:
                    out[t] = None
                else:
                    inv_d, inv = inv * pre[t] % P, inv * d % P
                    num = (b[1] - a[1]) if kind == msm_ba.ADD else 3 * a[0] * a[0]
                    lam = num * inv_d % P
                    x3 = (lam * lam - a[0] - b[0]) % P
                    out[t] = (x3, (lam * (a[0] - x3) - a[1]) % P)
    return out, out_off


def signed_digits(s: int, c: int, nwin: int) -> list[int]:
    """scalar.cuh's signed_digit over all windows."""
    out, carry = [], 0
    for w in range(nwin):
        v = ((s >> (w * c)) & ((1 << c) - 1)) + carry
        carry = int(v > 1 << (c - 1))
        out.append(v - (carry << c))
    return out


def random_points(n: int, rng: np.random.Generator):
    """n G1 points with identities, repeats and negations among them (the exceptional pairs)."""
    ks = [int.from_bytes(rng.bytes(32), "little") % R for _ in range(n)]
    for i in rng.choice(n, size=n // 5, replace=False):
        j = int(rng.integers(n))
        ks[i] = ks[j] if rng.random() < 0.5 else (R - ks[j]) % R
    for i in rng.choice(n, size=n // 20, replace=False):
        ks[i] = 0
    raw = g1_fixed_base_batch(g1_generator(), b"".join(k.to_bytes(32, "little") for k in ks))
    from cuzk.curve.encoding import g1_array_from_uncompressed

    return g1_array_from_uncompressed(raw)


def test_next_offsets_rounds_and_bounds(rng):
    for _ in range(50):
        nk = int(rng.integers(1, 40))
        counts = rng.integers(0, 5, nk) * rng.integers(0, 2, nk) + rng.integers(0, 70, nk) * (
            rng.random(nk) < 0.2
        )
        off = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        tasks, rounds = int(off[-1]), 0
        while int(np.diff(off).max(initial=0)) > 1:
            nxt = msm_ba.next_offsets(np, off)
            assert list(np.diff(nxt)) == [(int(n) + 1) // 2 for n in np.diff(off)]
            tasks = msm_ba.task_bound(tasks, nk)
            assert tasks >= int(nxt[-1])
            off, rounds = nxt, rounds + 1
        assert rounds == msm_ba.rounds_for(int(counts.max(initial=0)))
    assert [msm_ba.rounds_for(n) for n in (0, 1, 2, 3, 4, 5, 1 << 20)] == [0, 0, 1, 2, 2, 3, 20]


def test_locate_matches_a_direct_search(rng):
    counts = rng.integers(0, 4, 60)
    off = np.concatenate(([0], np.cumsum(counts)))
    for t in range(int(off[-1])):
        k, j = msm_ba.locate(off, t)
        assert off[k] <= t < off[k + 1] and j == t - off[k]


@pytest.mark.parametrize("block", [1, 2, 8, 256])
def test_inversion_tree(rng, block):
    values = [int.from_bytes(rng.bytes(48), "little") % (P - 1) + 1 for _ in range(block)]
    values[0] = 1  # a thread without tasks
    assert msm_ba.inversion_tree_model(values, P) == [pow(v, -1, P) for v in values]
    with pytest.raises(ValueError):
        msm_ba.inversion_tree_model([1, 2, 3], P)


def test_batch_size_and_window_groups():
    assert msm_ba.batch_size(1) == msm_ba.MIN_BATCH
    assert msm_ba.batch_size(1 << 40) == msm_ba.MAX_BATCH
    assert msm_ba.batch_size(msm_ba.TARGET_THREADS * 10) == 10
    groups = msm_ba.window_groups(13, 1 << 27)
    assert groups[0] == (0, 1) and groups[-1] == (12, 13) and len(groups) == 13
    assert msm_ba.window_groups(13, 1 << 20) == [(0, 13)]


@pytest.mark.parametrize("c,block,small", [(4, 4, False), (6, 8, True), (3, 2, False)])
def test_model_msm_against_arkworks(rng, c, block, small):
    """The whole batch-affine MSM on the host: digits, a counting sort with the bucket order
    shuffled (the device scatters by atomics), the model's rounds, each bucket's sum checked,
    then Σ (b+1)·V_b per window and Horner against py-arkworks' MSM."""
    n = 60
    points = random_points(n, rng)
    affine = [to_affine(q) for q in points]
    bits = 9 if small else 255
    scalars = [int.from_bytes(rng.bytes(32), "little") % min(R, 1 << bits) for _ in range(n)]
    scalars[:3] = [0, 1, R - 1]
    nwin, nb = -(-256 // c), 1 << (c - 1)
    buckets: list[list[int]] = [[] for _ in range(nwin * nb)]  # signed point indices
    for i, s in enumerate(scalars):
        for w, d in enumerate(signed_digits(s, c, nwin)):
            if d:
                buckets[w * nb + abs(d) - 1].append(i if d > 0 else ~i)
    for b in buckets:
        rng.shuffle(b)
    off = np.concatenate(([0], np.cumsum([len(b) for b in buckets]))).astype(np.int64)

    def signed(v: int) -> Affine:
        a = affine[v if v >= 0 else ~v]
        return a if v >= 0 or a is None else (a[0], (-a[1]) % P)

    level = [signed(v) for b in buckets for v in b]
    rounds = msm_ba.rounds_for(int(np.diff(off).max()))
    for _ in range(rounds):
        level, off = model_round(level, off, block)
    assert int(np.diff(off).max()) <= 1
    sums = [level[int(off[k])] if off[k + 1] > off[k] else None for k in range(nwin * nb)]
    for k, b in enumerate(buckets):
        direct = g1_identity()
        for v in b:
            direct = direct + (points[v] if v >= 0 else -points[~v])
        assert from_affine(sums[k]) == direct, f"bucket {k} ({len(b)} points)"
    total = g1_identity()
    for w in reversed(range(nwin)):
        for _ in range(c):
            total = total + total
        for b in range(nb):
            total = total + from_affine(sums[w * nb + b]) * _scalar(b + 1)
    want = g1_msm(points, b"".join(s.to_bytes(32, "little") for s in scalars))
    assert total == want


def test_model_round_exceptional_pairs(rng):
    """Every task kind in one round, checked point by point: P + P, P + (−P), ∞ + Q, Q + ∞,
    an ordinary addition, and the copy of an odd bucket's last point."""
    p_, q_ = (g1_generator() * _scalar(int(rng.integers(2, 1 << 60))) for _ in range(2))
    pa, qa = to_affine(p_), to_affine(q_)
    neg = (pa[0], (-pa[1]) % P)
    level = [pa, pa, pa, neg, None, qa, qa, None, pa, qa, qa]
    off = np.array([0, 2, 4, 6, 8, 11])
    out, out_off = model_round(level, off, 2)
    assert list(out_off) == [0, 1, 2, 3, 4, 6]
    want = [p_ + p_, g1_identity(), q_, q_, p_ + q_, q_]
    assert [from_affine(a) for a in out] == want
    kinds = [task_operands(level, off, out_off, t)[0] for t in range(6)]
    assert kinds == [msm_ba.DOUBLE, msm_ba.INFINITY, msm_ba.TAKE_B, msm_ba.COPY, msm_ba.ADD,
                     msm_ba.COPY]  # fmt: skip


def _scalar(v: int):
    from py_arkworks_bls12381 import Scalar

    return Scalar(v)


def test_cost_model_prefers_batch_affine_at_the_32g_size():
    """The prediction the kernels were built on (numbers in the report): at 2^27 batch-affine
    accumulation beats XYZZ, and 4 precomputed copies save less than it does."""
    from cuzk.backend.cuda.msm_bases import MAX_WINDOW, MIN_WINDOW, choose_window

    m = 1 << 27
    cost = msm_ba.accumulation_cost(m, choose_window(m))
    assert cost.batch_affine_s < 0.9 * cost.xyzz_s
    _, today, _, with_copies = msm_ba.precompute_saving(m, 4, range(MIN_WINDOW, MAX_WINDOW + 5))
    assert 1 - with_copies / today < 1 - cost.batch_affine_s / cost.xyzz_s
