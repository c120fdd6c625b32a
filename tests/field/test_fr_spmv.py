"""Sparse CSR matrix × FrVec against a dense Python evaluation."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R


def _random_csr(rng: np.random.Generator, n_rows: int, n_cols: int):
    """Rows of 0–6 entries (some empty) with coefficients 1, 0, −1 and random values (from a
    pool of 200, as circuits reuse theirs: a table of distinct ones fits 8-bit ids)."""
    pool = [int.from_bytes(rng.bytes(32), "little") % R for _ in range(200)]
    indptr, indices, coeffs = [0], [], []
    for _ in range(n_rows):
        k = int(rng.integers(0, 7)) if rng.random() > 0.2 else 0
        for col in rng.integers(0, n_cols, size=k):
            kind = rng.random()
            if kind < 0.5:
                c = 1
            elif kind < 0.6:
                c = 0
            elif kind < 0.75:
                c = R - 1
            else:
                c = pool[int(rng.integers(0, len(pool)))]
            indices.append(int(col))
            coeffs.append(c)
        indptr.append(len(indices))
    return np.array(indptr, dtype=np.int64), np.array(indices, dtype=np.int64), coeffs


@pytest.mark.parametrize(
    ("ptr_dt", "col_dt", "id_dt"),
    [
        (np.int64, np.int64, np.int64),
        (np.uint32, np.uint32, np.uint8),
        (np.uint64, np.uint32, np.uint16),
    ],
)
def test_spmv_matches_dense(seeded, ptr_dt, col_dt, id_dt) -> None:
    """Coefficients through a table of their distinct values (shuffled) and an id per entry,
    every index dtype a shape stores."""
    n_rows, n_cols = 700, 300
    indptr, indices, coeffs = _random_csr(seeded.rng, n_rows, n_cols)
    distinct = sorted(set(coeffs))
    seeded.rng.shuffle(distinct)
    where = {c: i for i, c in enumerate(distinct)}
    ids = np.array([where[c] for c in coeffs], dtype=id_dt)
    z = [int.from_bytes(seeded.rng.bytes(32), "little") % R for _ in range(n_cols)]
    z[0] = 1
    got = fr.spmv(
        indptr.astype(ptr_dt),
        indices.astype(col_dt),
        ids,
        fr.from_ints(distinct),
        fr.from_ints(z),
        n_rows,
    )
    expect = [
        sum(coeffs[k] * z[indices[k]] for k in range(indptr[r], indptr[r + 1])) % R
        for r in range(n_rows)
    ]
    assert got.shape == (n_rows, 4)
    assert fr.to_ints(got) == expect, seeded.msg
    assert any(indptr[r] == indptr[r + 1] for r in range(n_rows))  # empty rows were covered


def test_spmv_empty_matrix() -> None:
    none = np.zeros(0, dtype=np.int64)
    out = fr.spmv(np.zeros(4, dtype=np.int64), none, none, fr.zeros(0), fr.ones(2), 3)
    assert fr.to_ints(out) == [0, 0, 0]
    assert fr.spmv(np.zeros(1, np.uint32), none, none, fr.zeros(0), fr.ones(1), 0).shape == (0, 4)


def test_spmv_validates_structure() -> None:
    x = fr.ones(3)
    t = fr.ones(2)
    ids = np.array([0, 1])
    with pytest.raises(BadInput):
        fr.spmv(np.array([0, 2]), np.array([0, 1]), ids, t, x, 2)  # wrong indptr length
    with pytest.raises(BadInput):
        fr.spmv(np.array([0, 1, 2]), np.array([0, 3]), ids, t, x, 2)  # column out of range
    with pytest.raises(BadInput):
        fr.spmv(np.array([0, 2, 1]), np.array([0, 1]), ids, t, x, 2)  # decreasing
    with pytest.raises(BadInput):
        fr.spmv(np.array([0, 2, 1], np.uint32), np.array([0, 1]), ids, t, x, 2)  # decreasing
    with pytest.raises(BadInput):
        fr.spmv(np.array([0, 1, 2]), np.array([0, 1]), np.array([0, 2]), t, x, 2)  # id ≥ table
    with pytest.raises(BadInput):
        fr.spmv(np.array([0, 1, 2]), np.array([0, 1]), np.array([0]), t, x, 2)  # id count
    with pytest.raises(BadInput):
        fr.spmv(np.array([0, 1, 2]), np.array([0.0, 1.0]), ids, t, x, 2)  # not integers
