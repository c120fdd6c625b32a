"""Sparse CSR matrix × FrVec against a dense Python evaluation."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R


def _random_csr(rng: np.random.Generator, n_rows: int, n_cols: int):
    """Rows of 0–6 entries (some empty) with coefficients 1, 0, −1 and random values."""
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
                c = int.from_bytes(rng.bytes(32), "little") % R
            indices.append(int(col))
            coeffs.append(c)
        indptr.append(len(indices))
    return np.array(indptr, dtype=np.int64), np.array(indices, dtype=np.int64), coeffs


def test_spmv_matches_dense(seeded) -> None:
    n_rows, n_cols = 700, 300
    indptr, indices, coeffs = _random_csr(seeded.rng, n_rows, n_cols)
    z = [int.from_bytes(seeded.rng.bytes(32), "little") % R for _ in range(n_cols)]
    z[0] = 1
    got = fr.spmv(indptr, indices, fr.from_ints(coeffs), fr.from_ints(z), n_rows)
    expect = [
        sum(coeffs[k] * z[indices[k]] for k in range(indptr[r], indptr[r + 1])) % R
        for r in range(n_rows)
    ]
    assert got.shape == (n_rows, 4)
    assert fr.to_ints(got) == expect, seeded.msg
    assert any(indptr[r] == indptr[r + 1] for r in range(n_rows))  # empty rows were covered


def test_spmv_empty_matrix() -> None:
    out = fr.spmv(
        np.zeros(4, dtype=np.int64), np.zeros(0, dtype=np.int64), fr.zeros(0), fr.ones(2), 3
    )
    assert fr.to_ints(out) == [0, 0, 0]
    assert fr.spmv(
        np.zeros(1, np.int64), np.zeros(0, np.int64), fr.zeros(0), fr.ones(1), 0
    ).shape == (0, 4)


def test_spmv_validates_structure() -> None:
    x = fr.ones(3)
    c = fr.ones(2)
    with pytest.raises(BadInput):
        fr.spmv(np.array([0, 2]), np.array([0, 1]), c, x, 2)  # wrong indptr length
    with pytest.raises(BadInput):
        fr.spmv(np.array([0, 1, 2]), np.array([0, 3]), c, x, 2)  # column out of range
    with pytest.raises(BadInput):
        fr.spmv(np.array([0, 2, 1]), np.array([0, 1]), c, x, 2)  # decreasing
    with pytest.raises(BadInput):
        fr.spmv(np.array([0, 1, 2]), np.array([0, 1]), fr.ones(3), x, 2)  # coeff count
