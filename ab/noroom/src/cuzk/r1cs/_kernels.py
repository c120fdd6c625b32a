"""Index kernels of the compact CSR matrices (numba; no field arithmetic).

Written as loops rather than numpy fancy indexing because numpy widens a uint32 index array to
intp first: at 2^27 constraints that is a transient copy of gigabytes per call.
"""

from __future__ import annotations

from numba import njit


@njit(cache=True, nogil=True)
def k_mark(indices, mask):
    """mask[c] = True for every column c in ``indices``."""
    for k in range(indices.shape[0]):
        mask[indices[k]] = True


@njit(cache=True, nogil=True)
def k_transpose(indptr, indices, ids, t_indptr, t_indices, t_ids):
    """The transpose by counting sort: ``t_indptr`` (zeros in, row pointers out), then every
    entry (row r, column c, id) scattered to the next free place of transposed row c.

    Rows are visited in order, so every transposed row lists its entries by increasing
    original row — what a stable sort by column gives, without the O(nnz log nnz) sort and its
    8-byte permutation."""
    for k in range(indices.shape[0]):
        t_indptr[indices[k] + 1] += 1
    for c in range(1, t_indptr.shape[0]):
        t_indptr[c] += t_indptr[c - 1]
    cursor = t_indptr[:-1].copy()
    for r in range(indptr.shape[0] - 1):
        for k in range(indptr[r], indptr[r + 1]):
            c = indices[k]
            p = cursor[c]
            t_indices[p] = r
            t_ids[p] = ids[k]
            cursor[c] = p + 1
