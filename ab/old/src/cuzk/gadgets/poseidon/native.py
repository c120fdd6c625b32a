"""Poseidon outside the circuit: a textbook reference, neptune's optimised schedule, and bulk
hashing of many preimages at once.

* :func:`hash_reference` is the plain permutation (add round constants, S-boxes, MDS every
  round) — neptune's ``HashMode::Correct``, the yardstick for everything else.
* :func:`hash_one` follows neptune's ``OptimizedStatic`` schedule (compressed constants, sparse
  partial rounds); its intermediate states are the circuit's S-box inputs.
* :func:`hash_many` runs that schedule in a numba kernel over an (n·arity) FrVec: how Merkle
  trees of millions of leaves get built.

The state is [tag, m_1, …, m_arity] and the digest is state[1] after the permutation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.gadgets.poseidon.constants import (
    PoseidonConstants,
    Strength,
    apply,
    left_apply,
    merkle_tree_tag,
    poseidon_constants,
)


def _sbox(x: int) -> int:
    x2 = x * x % R
    return x2 * x2 % R * x % R


def _state(c: PoseidonConstants, preimage: Sequence[int], tag: int) -> list[int]:
    if len(preimage) != c.arity:
        raise BadInput(f"Poseidon arity {c.arity} needs {c.arity} elements, got {len(preimage)}")
    return [tag % R, *(x % R for x in preimage)]


def hash_reference(
    preimage: Sequence[int], tag: int | None = None, strength: Strength = Strength.STANDARD
) -> int:
    """The textbook permutation (neptune ``HashMode::Correct``); ``tag`` defaults to the
    Merkle-tree tag of this arity."""
    c = poseidon_constants(len(preimage), strength)
    st = _state(c, preimage, merkle_tree_tag(c.arity) if tag is None else tag)
    t, half = c.width, c.half_full_rounds
    m = [list(r) for r in c.mds]
    rc = c.round_constants
    for r in range(c.full_rounds + c.partial_rounds):
        st = [(x + k) % R for x, k in zip(st, rc[r * t : (r + 1) * t], strict=True)]
        if half <= r < half + c.partial_rounds:
            st[0] = _sbox(st[0])
        else:
            st = [_sbox(x) for x in st]
        st = left_apply(m, st)
    return st[1]


def hash_one(
    preimage: Sequence[int], tag: int | None = None, strength: Strength = Strength.STANDARD
) -> int:
    """neptune's ``OptimizedStatic`` schedule in Python ints (same digest as the reference)."""
    c = poseidon_constants(len(preimage), strength)
    st = _state(c, preimage, merkle_tree_tag(c.arity) if tag is None else tag)
    t, half, rp = c.width, c.half_full_rounds, c.partial_rounds
    crc = c.compressed_round_constants
    st = [(x + k) % R for x, k in zip(st, crc[:t], strict=True)]
    off = t
    rnd = 0

    def mix(st: list[int]) -> list[int]:
        if rnd == half - 1:
            return apply([list(r) for r in c.pre_sparse], st)
        if half - 1 < rnd < half + rp:
            w_hat, v_rest = c.sparse[rnd - half]
            first = sum(w * x for w, x in zip(w_hat, st, strict=True)) % R
            return [first, *((st[j] + v_rest[j - 1] * st[0]) % R for j in range(1, t))]
        return left_apply([list(r) for r in c.mds], st)

    for _ in range(half):
        st = [(_sbox(x) + k) % R for x, k in zip(st, crc[off : off + t], strict=True)]
        off += t
        st = mix(st)
        rnd += 1
    for _ in range(rp):
        st[0] = (_sbox(st[0]) + crc[off]) % R
        off += 1
        st = mix(st)
        rnd += 1
    for _ in range(half - 1):
        st = [(_sbox(x) + k) % R for x, k in zip(st, crc[off : off + t], strict=True)]
        off += t
        st = mix(st)
        rnd += 1
    st = mix([_sbox(x) for x in st])
    assert off == len(crc)
    return st[1]


@dataclass(frozen=True)
class _KernelConstants:
    """One arity's constants as Montgomery FrVecs, laid out for the kernel."""

    crc: np.ndarray  # (8t + R_P, 4)
    pre_sparse: np.ndarray  # (t·t, 4), row-major M[i][j]
    w_hat: np.ndarray  # (R_P·t, 4)
    v_rest: np.ndarray  # (R_P·(t − 1), 4)
    mds: np.ndarray  # (t·t, 4), row-major


@cache
def _kernel_constants(arity: int, strength: Strength) -> _KernelConstants:
    c = poseidon_constants(arity, strength)
    return _KernelConstants(
        crc=fr.from_ints(list(c.compressed_round_constants)),
        pre_sparse=fr.from_ints([x for row in c.pre_sparse for x in row]),
        w_hat=fr.from_ints([x for w, _ in c.sparse for x in w]),
        v_rest=fr.from_ints([x for _, v in c.sparse for x in v]),
        mds=fr.from_ints([x for row in c.mds for x in row]),
    )


#: (arity, tag, crc, pre_sparse, w_hat, v_rest, mds, half full rounds, partial rounds).
KernelArgs = tuple[
    int, tuple[np.uint64, ...], np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int
]


@cache
def kernel_args(arity: int, strength: Strength, tag: int) -> KernelArgs:
    """The Poseidon kernels' trailing arguments, made once: (arity, tag as a Montgomery tuple,
    crc, pre_sparse, w_hat, v_rest, mds, half full rounds, partial rounds)."""
    c = poseidon_constants(arity, strength)
    k = _kernel_constants(arity, strength)
    tag_t = tuple(np.uint64(x) for x in fr.from_int(tag))
    return (arity, tag_t, k.crc, k.pre_sparse, k.w_hat, k.v_rest, k.mds,
            c.half_full_rounds, c.partial_rounds)  # fmt: skip


def hash_many(
    preimages: fr.FrVec,
    arity: int,
    tag: int | None = None,
    strength: Strength = Strength.STANDARD,
) -> fr.FrVec:
    """Digests of ``n`` preimages given as one (n·arity, 4) FrVec, preimage i in rows
    i·arity … i·arity + arity − 1; returns an (n, 4) FrVec. Runs on all numba threads.

    Raises:
        BadInput: the row count is not a multiple of ``arity``.
    """
    from cuzk.gadgets.poseidon import _kernels

    pre = np.ascontiguousarray(preimages)
    if pre.ndim != 2 or pre.shape[1] != 4 or pre.dtype != np.uint64:
        raise BadInput("preimages must be an (n·arity, 4) uint64 FrVec")
    if pre.shape[0] % arity:
        raise BadInput(f"{pre.shape[0]} preimage elements is not a multiple of arity {arity}")
    out = np.empty((pre.shape[0] // arity, 4), dtype=np.uint64)
    args = kernel_args(arity, strength, merkle_tree_tag(arity) if tag is None else tag)
    _kernels.k_poseidon(pre, np.zeros(0, np.int64), out, False, *args)
    return out
