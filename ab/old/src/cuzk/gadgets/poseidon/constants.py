"""Neptune's Poseidon parameters over BLS12-381 Fr, derived exactly as neptune derives them.

The legacy circuit writes neptune's *preprocessed* constants into its constraints (compressed
round constants, the pre-sparse matrix, the sparse matrices' ``w_hat``/``v_rest``), so every
value here must equal neptune's bit for bit, not merely define the same permutation:

* round numbers: the Poseidon paper's security inequalities evaluated in f32 as neptune does,
  plus its margin (R_F + 2, R_P · 1.075 rounded up); "strengthened" adds 25 % partial rounds;
* round constants: the Grain LFSR in self-shrinking mode, 255-bit big-endian draws below r;
* MDS: the Cauchy matrix 1 / (i + j + t);
* compression: round constants pushed back through the linear layers (neptune's
  ``compress_round_constants`` with every partial round preprocessed);
* sparse factorisation of the partial rounds' MDS (``factor_to_sparse_matrixes``).

Everything is plain Python ints (exact, and cached per arity: generating arity 16 takes a few
hundred milliseconds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from functools import cache

import numpy as np

from cuzk.errors import BadInput
from cuzk.field.constants import R

Matrix = list[list[int]]

FIELD_BITS = 255  # Fr's NUM_BITS
_SECURITY_BITS = 128  # M in the paper
_PRIME_BITLEN = 256  # neptune rounds n up to whole bytes


class Strength(Enum):
    STANDARD = "standard"
    STRENGTHENED = "strengthened"


# --- domain tags ---------------------------------------------------------------------------------


def merkle_tree_tag(arity: int) -> int:
    """``HashType::MerkleTree``: 2^arity − 1 (every Filecoin tree node and column hash)."""
    return (1 << arity) - 1


def custom_tag(identifier: int) -> int:
    """``HashType::Custom(CType::Arbitrary(id))``: id · 2^40, id in 1..=256 (SnapDeals uses 1)."""
    if not 1 <= identifier <= 256:
        raise BadInput(f"custom domain tag id must be in 1..=256, got {identifier}")
    return identifier << 40


def constant_length_tag(length: int) -> int:
    """``HashType::ConstantLength(n)``: n · 2^64 (a shorter preimage is zero-padded)."""
    return length << 64


# --- round numbers -------------------------------------------------------------------------------


def _rf_max(t: int) -> np.ndarray:
    """Least secure R_F for each R_P in 4..199: the paper's inequalities evaluated in f32, as
    neptune's ``round_numbers_are_secure`` does (index k is R_P = k + 4)."""
    rp = np.arange(4, 200, dtype=np.float32)
    t_, n, m = np.float32(t), np.float32(_PRIME_BITLEN), np.float32(_SECURITY_BITS)
    rf_stat = np.float32(6.0) if m <= (n - np.float32(3.0)) * (t_ + np.float32(1.0)) else 10.0
    rf_interp = np.float32(0.43) * m + np.log2(t_) - rp
    rf_grob_1 = np.float32(0.21) * n - rp
    rf_grob_2 = (np.float32(0.14) * n - np.float32(1.0) - rp) / (t_ - np.float32(1.0))
    stacked = np.stack([np.full_like(rp, rf_stat), rf_interp, rf_grob_1, rf_grob_2])
    return np.ceil(stacked).astype(np.int64).max(axis=0)


@cache
def round_numbers(arity: int, strength: Strength = Strength.STANDARD) -> tuple[int, int]:
    """(R_F, R_P) for width arity + 1: the cheapest secure pair plus neptune's margin
    (R_F + 2, R_P · 1.075 rounded up in f32); ties go to the smaller R_F."""
    t = arity + 1
    rf_max = _rf_max(t)
    best: tuple[int, int, int] | None = None  # (cost, rf, rp)
    for rf_test in range(2, 1001, 2):
        ok = np.nonzero(rf_max <= rf_test)[0]
        if ok.size == 0:
            continue
        # The smallest secure R_P is the cheapest at this R_F: ceil(1.075·rp) grows by ≥ 1 per step.
        rp_test = int(ok[0]) + 4
        rf = rf_test + 2
        rp = int(np.ceil(np.float32(1.075) * np.float32(rp_test)))
        cost = t * rf + rp
        if best is None or cost < best[0] or (cost == best[0] and rf < best[1]):
            best = (cost, rf, rp)
    assert best is not None
    _, rf, rp = best
    if strength is Strength.STRENGTHENED:
        rp = math.ceil(rp * 1.25)
    return rf, rp


# --- round constants: Grain LFSR -----------------------------------------------------------------


def _grain_bits(init: int, count: int) -> np.ndarray:
    """``count`` LFSR output bits after the 160-bit warm-up, as a uint8 array.

    The register holds b_i … b_{i+79} with b_i in bit 0. Since b_{i+80} depends on bits at
    distance ≥ 18 back, 18 new bits come out of one round of shifts and xors.
    """
    s = init
    chunks: list[int] = []
    mask18 = (1 << 18) - 1
    total = 160 + count
    produced = 0
    while produced < total:
        t = (s >> 62) ^ (s >> 51) ^ (s >> 38) ^ (s >> 23) ^ (s >> 13) ^ s
        new = t & mask18
        s = (s >> 18) | (new << 62)
        chunks.append(new)
        produced += 18
    arr = np.array(chunks, dtype=np.uint32)
    bits = ((arr[:, None] >> np.arange(18, dtype=np.uint32)) & 1).astype(np.uint8).ravel()
    return bits[160:total]


def _grain_init(t: int, rf: int, rp: int) -> int:
    """The 80 initial bits (field 1, S-box x^5, field size, t, R_F, R_P, thirty ones), packed
    with the first bit in bit 0."""
    fields = [(2, 1), (4, 1), (12, FIELD_BITS), (12, t), (10, rf), (10, rp), (30, (1 << 30) - 1)]
    seq: list[int] = []
    for n, v in fields:
        seq.extend((v >> i) & 1 for i in range(n - 1, -1, -1))
    assert len(seq) == 80
    return sum(b << i for i, b in enumerate(seq))


def round_constants(t: int, rf: int, rp: int) -> list[int]:
    """(R_F + R_P) · t constants: self-shrunk Grain bits in 255-bit big-endian draws, < r."""
    need = (rf + rp) * t
    init = _grain_init(t, rf, rp)
    budget = need * FIELD_BITS * 5  # ~4 raw bits per kept bit, ~10 % of draws rejected
    while True:
        raw = _grain_bits(init, budget)
        pairs = raw[: raw.size // 2 * 2].reshape(-1, 2)
        kept = pairs[pairs[:, 0] == 1, 1]
        ndraws = kept.size // FIELD_BITS
        draws = np.zeros((ndraws, 256), dtype=np.uint8)
        draws[:, 1:] = kept[: ndraws * FIELD_BITS].reshape(ndraws, FIELD_BITS)
        packed = np.packbits(draws, axis=1)
        out: list[int] = []
        for row in packed:
            x = int.from_bytes(row.tobytes(), "big")
            if x < R:
                out.append(x)
                if len(out) == need:
                    return out
        budget *= 2


# --- matrices ------------------------------------------------------------------------------------


def mds_matrix(t: int) -> Matrix:
    """Cauchy matrix M[i][j] = 1 / (x_i + y_j) with x = 0..t−1, y = t..2t−1 (symmetric)."""
    return [[pow(i + j + t, -1, R) for j in range(t)] for i in range(t)]


def invert(m: Matrix) -> Matrix:
    """Gauss–Jordan inverse mod r (the inverse is unique, so any method matches neptune)."""
    n = len(m)
    a = [row[:] + [int(i == j) for j in range(n)] for i, row in enumerate(m)]
    for col in range(n):
        piv = next((r for r in range(col, n) if a[r][col]), None)
        if piv is None:
            raise BadInput("matrix is not invertible")
        a[col], a[piv] = a[piv], a[col]
        inv = pow(a[col][col], -1, R)
        a[col] = [x * inv % R for x in a[col]]
        for r in range(n):
            if r != col and a[r][col]:
                f = a[r][col]
                a[r] = [(x - f * y) % R for x, y in zip(a[r], a[col], strict=True)]
    return [row[n:] for row in a]


def mat_mul(a: Matrix, b: Matrix) -> Matrix:
    bt = list(zip(*b, strict=True))
    return [[sum(x * y for x, y in zip(row, col, strict=True)) % R for col in bt] for row in a]


def left_apply(m: Matrix, v: list[int]) -> list[int]:
    """M · v (neptune's ``left_apply_matrix``)."""
    return [sum(x * y for x, y in zip(row, v, strict=True)) % R for row in m]


def apply(m: Matrix, v: list[int]) -> list[int]:
    """v · M, i.e. result[j] = Σ_i M[i][j] v[i] (neptune's ``apply_matrix``)."""
    t = len(v)
    return [sum(m[i][j] * v[i] for i in range(t)) % R for j in range(t)]


def transpose(m: Matrix) -> Matrix:
    return [list(col) for col in zip(*m, strict=True)]


def _minor00(m: Matrix) -> Matrix:
    return [row[1:] for row in m[1:]]


def _prime(m: Matrix) -> Matrix:
    """M': identity in row/column 0, M's lower-right block elsewhere."""
    t = len(m)
    return [[int(j == 0) for j in range(t)]] + [[0] + m[i][1:] for i in range(1, t)]


def _double_prime(m: Matrix) -> Matrix:
    """M'': M[0][0] and v = M[0][1..] in row 0, ŵ = M̂⁻¹·w in column 0, identity elsewhere."""
    t = len(m)
    w = [m[i][0] for i in range(1, t)]
    w_hat = left_apply(invert(_minor00(m)), w)
    rows = [[m[0][0], *m[0][1:]]]
    for i in range(1, t):
        row = [0] * t
        row[0] = w_hat[i - 1]
        row[i] = 1
        rows.append(row)
    return rows


def factor_to_sparse(base: Matrix, n: int) -> tuple[Matrix, list[tuple[list[int], list[int]]]]:
    """(pre-sparse matrix, [(w_hat, v_rest)] × n) with base^(n+1) = pre · sparse_1 ⋯ sparse_n
    in neptune's orientation (``w_hat`` includes the corner element M''[0][0])."""
    cur = base
    doubles: list[Matrix] = []
    for _ in range(n):
        doubles.append(_double_prime(cur))
        cur = mat_mul(base, _prime(cur))
    doubles.reverse()
    sparse = [([d[i][0] for i in range(len(d))], d[0][1:]) for d in doubles]
    return cur, sparse


def compress_round_constants(t: int, rf: int, rp: int, rc: list[int], m_inv: Matrix) -> list[int]:
    """neptune's ``compress_round_constants`` with all partial rounds preprocessed:
    8t + R_P constants, one per S-box plus the first round's t pre-adds."""
    half = rf // 2

    def keys(r: int) -> list[int]:
        return rc[r * t : (r + 1) * t]

    res = list(keys(0))
    for i in range(half - 1):
        res.extend(left_apply(m_inv, keys(i + 1)))
    partial_keys: list[int] = []
    final_round = half + rp
    acc = keys(final_round)
    for i in range(rp):
        inverted = left_apply(m_inv, acc)
        partial_keys.append(inverted[0])
        inverted[0] = 0
        acc = [(x + y) % R for x, y in zip(keys(final_round - i - 1), inverted, strict=True)]
    res.extend(left_apply(m_inv, acc))
    res.extend(reversed(partial_keys))
    for i in range(1, half):
        res.extend(left_apply(m_inv, keys(i + half + rp)))
    assert len(res) == rf * t + rp
    return res


@dataclass(frozen=True)
class PoseidonConstants:
    """Everything a Poseidon instance of one arity needs (the domain tag is chosen per hash)."""

    arity: int  # preimage length; the state has width arity + 1
    full_rounds: int  # R_F (8 for every arity Filecoin uses)
    partial_rounds: int  # R_P
    round_constants: tuple[int, ...]  # (R_F + R_P)·t Grain constants, per round
    mds: tuple[tuple[int, ...], ...]  # M (t × t, symmetric)
    compressed_round_constants: tuple[int, ...]  # 8t + R_P, in the order S-boxes use them
    pre_sparse: tuple[tuple[int, ...], ...]  # applied (as v·M) after the last initial full round
    sparse: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]  # (w_hat, v_rest) per partial

    @property
    def width(self) -> int:
        return self.arity + 1

    @property
    def half_full_rounds(self) -> int:
        return self.full_rounds // 2


@cache
def poseidon_constants(arity: int, strength: Strength = Strength.STANDARD) -> PoseidonConstants:
    """neptune's ``PoseidonConstants::<Fr, U{arity}>::new_with_strength(strength)``.

    Raises:
        BadInput: arity < 1.
    """
    if arity < 1:
        raise BadInput(f"Poseidon arity must be ≥ 1, got {arity}")
    t = arity + 1
    rf, rp = round_numbers(arity, strength)
    rc = round_constants(t, rf, rp)
    m = mds_matrix(t)
    m_inv = invert(m)
    crc = compress_round_constants(t, rf, rp, rc, m_inv)
    pre, sparse = factor_to_sparse(transpose(m), rp)
    return PoseidonConstants(
        arity=arity,
        full_rounds=rf,
        partial_rounds=rp,
        round_constants=tuple(rc),
        mds=tuple(tuple(r) for r in m),
        compressed_round_constants=tuple(crc),
        pre_sparse=tuple(tuple(r) for r in pre),
        sparse=tuple((tuple(w), tuple(v)) for w, v in sparse),
    )


def constraint_count(arity: int, strength: Strength = Strength.STANDARD) -> int:
    """Constraints the legacy circuit (:func:`~cuzk.gadgets.poseidon.circuit.poseidon_hash`) adds
    for one hash of this arity. A function of the round numbers alone, so it sits here, under
    both the circuit and its witness kernel (:mod:`~cuzk.gadgets.poseidon.witness`)."""
    c = poseidon_constants(arity, strength)
    return 3 * arity + 4 * (c.width * (c.full_rounds - 1) + c.partial_rounds) + 1
