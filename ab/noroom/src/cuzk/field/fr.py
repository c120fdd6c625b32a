"""Bulk vectors of Fr scalars: the representation every CPU-side prover stage shares.

An :data:`FrVec` is a C-contiguous ``(n, 4)`` ``uint64`` array of elements in Montgomery form
(x·2^256 mod r), limbs little-endian. Montgomery form is kept throughout so chains of products
never convert; only the edges (ints, bytes, canonical limbs) convert. Every function returns a
new array unless its name ends in ``_inplace``; the heavy loops are numba kernels in
:mod:`cuzk.field._kernels` that release the GIL and use all numba threads.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from itertools import repeat
from typing import Any, Literal

import numpy as np

from cuzk.errors import BadInput
from cuzk.field import _kernels as K
from cuzk.field._arith import limbs
from cuzk.field.constants import FR_BYTES, MONT_R, R

#: (n, 4) uint64, C-contiguous, Montgomery form. A plain alias: kernels need the raw ndarray.
FrVec = np.ndarray

_MASK64 = (1 << 64) - 1
_INV_MONT = pow(2, -256, R)
_LITTLE: Literal["little"] = "little"  # typed, so map(int.to_bytes, ...) type-checks

if sys.byteorder != "little":  # pragma: no cover - every supported host is little-endian
    raise ImportError("cuzk.field.fr assumes a little-endian host (limb arrays are byte views)")


# --- validation ----------------------------------------------------------------------------------


def _vec(v: Any, name: str = "v") -> FrVec:
    """Accept an FrVec (copying only if it is not C-contiguous); reject anything else."""
    if not isinstance(v, np.ndarray) or v.dtype != np.uint64 or v.ndim != 2 or v.shape[1] != 4:
        shape = getattr(v, "shape", None)
        dtype = getattr(v, "dtype", type(v).__name__)
        raise BadInput(f"{name} must be an (n, 4) uint64 FrVec, got shape {shape} dtype {dtype}")
    return np.ascontiguousarray(v)


def _pair(a: Any, b: Any) -> tuple[FrVec, FrVec]:
    a, b = _vec(a, "a"), _vec(b, "b")
    if a.shape != b.shape:
        raise BadInput(f"length mismatch: {a.shape[0]} vs {b.shape[0]}")
    return a, b


def _mont_tuple(x: int) -> tuple[np.uint64, ...]:
    """A single scalar as the limb tuple the kernels take for constants."""
    return tuple(np.uint64(w) for w in limbs((x % R) * MONT_R % R))


# --- construction and conversion -------------------------------------------------------------


def zeros(n: int) -> FrVec:
    return np.zeros((n, 4), dtype=np.uint64)


def ones(n: int) -> FrVec:
    out = np.empty((n, 4), dtype=np.uint64)
    out[:] = np.array(limbs(MONT_R), dtype=np.uint64)
    return out


def random(n: int, rng: np.random.Generator) -> FrVec:
    """Uniform elements of Fr.

    Draws 256 random bits per element and masks to 255 bits (r ≈ 0.91·2^255, so most survive),
    then redraws the rejected rows; uniform canonical values stay uniform in Montgomery form.
    """
    out = np.empty((n, 4), dtype=np.uint64)
    todo = np.arange(n)
    while todo.size:
        cand = rng.integers(0, 2**64, size=(todo.size, 4), dtype=np.uint64)
        cand[:, 3] &= np.uint64((1 << 63) - 1)
        ok = below_r(cand)
        out[todo[ok]] = cand[ok]
        todo = todo[~ok]
    return from_canonical_limbs(out)


def below_r(words: np.ndarray) -> np.ndarray:
    """Per row of (n, 4) little-endian uint64 limbs: whether it is below r (vectorised,
    most significant limb first)."""
    q = limbs(R)
    less = np.zeros(words.shape[0], dtype=bool)
    same = np.ones(words.shape[0], dtype=bool)
    for k in (3, 2, 1, 0):
        qk = np.uint64(q[k])
        less |= same & (words[:, k] < qk)
        same &= words[:, k] == qk
    return less


def from_canonical_limbs(words: np.ndarray) -> FrVec:
    """(n, 4) uint64 limbs → FrVec. Values ≥ r are reduced (callers check when it matters)."""
    src = _vec(words, "limbs")
    out = np.empty_like(src)
    K.k_to_mont(src, out)
    return out


def to_canonical_limbs(v: FrVec) -> np.ndarray:
    """FrVec → (n, 4) uint64 canonical limbs (< r)."""
    v = _vec(v)
    out = np.empty_like(v)
    K.k_from_mont(v, out)
    return out


def _all_canonical(values: list) -> bool:
    """Whether every element is a Python int in [0, r) (min/max run in C)."""
    try:
        return type(values[0]) is int and min(values) >= 0 and max(values) < R
    except TypeError:  # mixed types: let the general path sort them out
        return False


def from_ints(values: Sequence[int] | np.ndarray) -> FrVec:
    """Python ints (any sign or size) → FrVec, each reduced mod r.

    Vectorised over an object array: ``%``, ``>>`` and ``&`` run in numpy's loops, not a Python
    ``for``. numpy integer scalars are widened to Python ints first (their own ``%`` would
    overflow on r).
    """
    if isinstance(values, list) and values and _all_canonical(values):
        # The witness path: a list of already-reduced ints. int.to_bytes driven by map() runs
        # in C (~0.2 µs per value, 3× faster than the object-array route below).
        try:
            raw = b"".join(map(int.to_bytes, values, repeat(32), repeat(_LITTLE)))
        except TypeError:  # e.g. numpy integers among the ints: the general path takes them
            pass
        else:
            # A writable buffer: read-only arrays would compile (and load) a second kernel.
            words = np.frombuffer(bytearray(raw), dtype=np.uint64).reshape(-1, 4)
            return from_canonical_limbs(words)
    if isinstance(values, np.ndarray) and values.dtype != object:
        if values.dtype.kind not in "iu":
            raise BadInput(f"from_ints needs integers, got dtype {values.dtype}")
        arr = values.reshape(-1).astype(object)
    else:
        arr = np.array(values, dtype=object).reshape(-1)
    try:
        red = arr % R
    except (OverflowError, TypeError):
        red = np.frompyfunc(int, 1, 1)(arr) % R
    words = np.empty((arr.shape[0], 4), dtype=np.uint64)
    for k in range(4):
        words[:, k] = ((red >> (64 * k)) & _MASK64).astype(np.uint64)
    return from_canonical_limbs(words)


def take_into(v: FrVec, rows: np.ndarray | None, out: FrVec, offset: int = 0) -> FrVec:
    """``out[offset : offset + len(rows)] = v[rows]`` in parallel without the GIL (``rows``:
    int64 or uint32 indices — a shape's row arrays are uint32, and widening them would copy
    gigabytes per proof at 2^27 —, a boolean mask over ``v``, or None for all of ``v``).
    Returns ``out``."""
    v = _vec(v)
    if rows is None:
        idx = None
        count = len(v)
    else:
        if rows.dtype == np.bool_:
            idx = np.flatnonzero(rows)
        else:
            keep = rows.dtype if rows.dtype in (np.int64, np.uint32) else np.int64
            idx = np.ascontiguousarray(rows, dtype=keep)
        if rows.dtype == np.bool_ and len(rows) != len(v):
            raise ValueError(f"mask of {len(rows)} for {len(v)} rows")
        if len(idx):
            lo, hi = K.k_index_bounds(idx)
            if lo < 0 or hi >= len(v):
                raise IndexError("row index out of range")
        count = len(idx)
    if out.dtype != np.uint64 or out.ndim != 2 or out.shape[1] != 4 or not out.flags.c_contiguous:
        raise ValueError("out must be a C-contiguous (n, 4) uint64 array")
    if not 0 <= offset <= len(out) - count:
        raise ValueError(f"{count} rows at {offset} do not fit {len(out)}")
    if idx is None:
        K.k_copy_rows(v, out, offset)
    else:
        K.k_take_rows(v, idx, out, offset)
    return out


def to_ints(v: FrVec) -> list[int]:
    """FrVec → canonical Python ints."""
    return limbs_to_ints(to_canonical_limbs(v))


def limbs_to_ints(words: np.ndarray) -> list[int]:
    """(…, 4) little-endian uint64 limbs → Python ints, row by row (through an object array,
    so the shifts run in numpy's loops rather than a Python ``for``)."""
    w = np.asarray(words, dtype=np.uint64).reshape(-1, 4).astype(object)
    if w.shape[0] == 0:
        return []
    return (w[:, 0] | (w[:, 1] << 64) | (w[:, 2] << 128) | (w[:, 3] << 192)).tolist()


def from_int(x: int) -> np.ndarray:
    """One scalar (reduced mod r) → a single Montgomery element, shape (4,)."""
    return np.array(limbs((x % R) * MONT_R % R), dtype=np.uint64)


def to_int(row: np.ndarray) -> int:
    """One Montgomery element, shape (4,) → canonical int."""
    w = [int(x) for x in np.asarray(row, dtype=np.uint64).reshape(4)]
    return (w[0] | w[1] << 64 | w[2] << 128 | w[3] << 192) * _INV_MONT % R


def from_bytes_le(data: Any, *, check: bool = True) -> FrVec:
    """Concatenated 32-byte little-endian scalars → FrVec.

    Args:
        data: bytes-like of length 32·n, or a uint8 array of shape (n, 32).
        check: reject non-canonical scalars (≥ r) instead of reducing them.
    Raises:
        BadInput: wrong length/shape, or (with ``check``) a scalar ≥ r; names the first index.
    """
    if isinstance(data, np.ndarray):
        if data.dtype != np.uint8 or data.ndim not in (1, 2) or data.size % FR_BYTES:
            raise BadInput(f"scalar bytes must be uint8 (n, 32), got {data.dtype} {data.shape}")
        if data.ndim == 2 and data.shape[1] != FR_BYTES:
            raise BadInput(f"scalar bytes must be uint8 (n, 32), got shape {data.shape}")
        buf = np.ascontiguousarray(data).reshape(-1)
    else:
        buf = np.frombuffer(data, dtype=np.uint8)
        if buf.size % FR_BYTES:
            raise BadInput(f"scalar bytes length {buf.size} is not a multiple of {FR_BYTES}")
    if buf.ctypes.data % 8:
        buf = buf.copy()  # the kernels read whole 64-bit words
    words = buf.view(np.uint64).reshape(-1, 4)
    if check:
        bad = int(K.k_first_non_canonical(words))
        if bad >= 0:
            raise BadInput(f"scalar {bad} is not canonical (≥ r)")
    out = np.empty(words.shape, dtype=np.uint64)
    K.k_to_mont(words, out)
    return out


def to_bytes_le(v: FrVec) -> np.ndarray:
    """FrVec → uint8 (n, 32) canonical little-endian scalars."""
    words = to_canonical_limbs(v)
    return words.view(np.uint8).reshape(words.shape[0], FR_BYTES)


# --- elementwise arithmetic --------------------------------------------------------------------


def add(a: FrVec, b: FrVec) -> FrVec:
    a, b = _pair(a, b)
    out = np.empty_like(a)
    K.k_add(a, b, out)
    return out


def sub(a: FrVec, b: FrVec) -> FrVec:
    a, b = _pair(a, b)
    out = np.empty_like(a)
    K.k_sub(a, b, out)
    return out


def mul(a: FrVec, b: FrVec) -> FrVec:
    a, b = _pair(a, b)
    out = np.empty_like(a)
    K.k_mul(a, b, out)
    return out


def _inplace_pair(a: Any, b: Any) -> tuple[FrVec, FrVec]:
    """In-place targets must be writable and already C-contiguous: a silent copy would drop
    the result."""
    if not (isinstance(a, np.ndarray) and a.flags.c_contiguous and a.flags.writeable):
        raise BadInput("in-place target must be a writable C-contiguous FrVec")
    return _pair(a, b)


def add_inplace(a: FrVec, b: FrVec) -> FrVec:
    """a += b; returns a."""
    a, b = _inplace_pair(a, b)
    K.k_add(a, b, a)
    return a


def sub_inplace(a: FrVec, b: FrVec) -> FrVec:
    """a −= b; returns a."""
    a, b = _inplace_pair(a, b)
    K.k_sub(a, b, a)
    return a


def mul_inplace(a: FrVec, b: FrVec) -> FrVec:
    """a *= b; returns a."""
    a, b = _inplace_pair(a, b)
    K.k_mul(a, b, a)
    return a


def neg(a: FrVec) -> FrVec:
    a = _vec(a, "a")
    out = np.empty_like(a)
    K.k_sub(zeros(a.shape[0]), a, out)  # not hot: no kernel of its own to compile
    return out


def square(a: FrVec) -> FrVec:
    a = _vec(a, "a")
    out = np.empty_like(a)
    K.k_mul(a, a, out)
    return out


def scale(a: FrVec, k: int) -> FrVec:
    """Every element times the integer constant k (reduced mod r)."""
    a = _vec(a, "a")
    out = np.empty_like(a)
    K.k_scale(a, _mont_tuple(k), out)
    return out


def scale_inplace(a: FrVec, k: int) -> FrVec:
    """a *= k for an integer constant k; returns a."""
    a, _ = _inplace_pair(a, a)
    K.k_scale(a, _mont_tuple(k), a)
    return a


def _check_no_zero(a: FrVec) -> None:
    z = int(K.k_first_zero(a))
    if z >= 0:
        raise ZeroDivisionError(f"element {z} is zero and has no inverse")


def inverse(a: FrVec) -> FrVec:
    """Elementwise inverse by Fermat, independently per element (no shared block).

    Raises:
        ZeroDivisionError: naming the first zero element.
    """
    a = _vec(a, "a")
    _check_no_zero(a)
    out = np.empty_like(a)
    K.k_inverse(a, out)
    return out


def batch_inverse(a: FrVec) -> FrVec:
    """Elementwise inverse with Montgomery's trick: ~3 products per element, one inversion
    per 4096-element block.

    Raises:
        ZeroDivisionError: naming the first zero element.
    """
    a = _vec(a, "a")
    _check_no_zero(a)
    out = np.empty_like(a)
    K.k_batch_inverse(a, out)
    return out


def powers(base: int, n: int, start: int = 1) -> FrVec:
    """[start·base^i for i < n]."""
    if n < 0:
        raise BadInput(f"powers: n must be ≥ 0, got {n}")
    out = ones(n)
    K.k_scale_by_powers(out, _mont_tuple(base), _mont_tuple(start), out)
    return out


def scale_by_powers(v: FrVec, base: int, start: int = 1) -> FrVec:
    """v[i]·start·base^i, the coset shift, without materialising the powers."""
    v = _vec(v)
    out = np.empty_like(v)
    K.k_scale_by_powers(v, _mont_tuple(base), _mont_tuple(start), out)
    return out


def scale_by_powers_inplace(v: FrVec, base: int, start: int = 1) -> FrVec:
    """v[i] *= start·base^i; returns v."""
    v, _ = _inplace_pair(v, v)
    K.k_scale_by_powers(v, _mont_tuple(base), _mont_tuple(start), v)
    return v


# --- predicates and reductions ----------------------------------------------------------------


def equal(a: FrVec, b: FrVec) -> bool:
    """Same length and same elements (Montgomery forms are unique, so limbs compare)."""
    a, b = _vec(a, "a"), _vec(b, "b")
    return a.shape == b.shape and bool(np.array_equal(a, b))


def is_zero(a: FrVec) -> np.ndarray:
    """bool array, True where the element is zero."""
    return ~np.any(_vec(a, "a"), axis=1)


def classify(v: FrVec) -> np.ndarray:
    """int8 per element: 0 for zero, 1 for one, 2 otherwise (lets an MSM add the
    scalar-one bases without multiplying and skip the zeros)."""
    v = _vec(v)
    out = np.empty(v.shape[0], dtype=np.int8)
    K.k_classify(v, out)
    return out


def dot(a: FrVec, b: FrVec) -> np.ndarray:
    """Σ a[i]·b[i] as one element, shape (4,)."""
    a, b = _pair(a, b)
    return np.array(K.k_dot(a, b), dtype=np.uint64)


def sum(a: FrVec) -> np.ndarray:
    """Σ a[i] as one element, shape (4,)."""
    a = _vec(a, "a")
    return dot(a, ones(a.shape[0]))  # not hot: reuses dot rather than compiling a kernel


# --- sparse matrix × vector ---------------------------------------------------------------------


def spmv(
    indptr: np.ndarray,
    indices: np.ndarray,
    coeff_ids: np.ndarray,
    table: FrVec,
    x: FrVec,
    n_rows: int,
) -> FrVec:
    """CSR matrix × vector over Fr: the ⟨A_row, z⟩ evaluations of every constraint.

    Args:
        indptr: integers (n_rows + 1,), non-decreasing, indptr[0] = 0, indptr[-1] = nnz.
        indices: integers (nnz,), column of each entry, each < len(x).
        coeff_ids: integers (nnz,), each entry's coefficient as a row of ``table``.
        table: FrVec of the distinct coefficients (Montgomery form).
        x: FrVec, the assignment z.
        n_rows: number of rows.
    Raises:
        BadInput: inconsistent CSR structure (validated because the kernel's loads are
        unchecked and would read out of bounds).
    """
    table, x = _vec(table, "table"), _vec(x, "x")
    indptr, indices, coeff_ids = (
        _index_array(v, name)
        for v, name in ((indptr, "indptr"), (indices, "indices"), (coeff_ids, "coeff_ids"))
    )
    nnz = indices.shape[0]
    if indptr.shape != (n_rows + 1,):
        raise BadInput(f"indptr must have n_rows + 1 = {n_rows + 1} entries, has {indptr.shape}")
    if coeff_ids.shape[0] != nnz:
        raise BadInput(f"{coeff_ids.shape[0]} coefficient ids for {nnz} indices")
    if indptr[0] != 0 or indptr[-1] != nnz or np.any(indptr[1:] < indptr[:-1]):
        raise BadInput("indptr must be non-decreasing from 0 to nnz")
    for v, bound, what in ((indices, x.shape[0], "column index"), (coeff_ids, len(table), "id")):
        if nnz:
            lo, hi = K.k_index_bounds(v)
            if lo < 0 or hi >= bound:
                raise BadInput(f"{what} out of range (must be < {bound})")
    out = np.empty((n_rows, 4), dtype=np.uint64)
    K.k_spmv(indptr, indices, coeff_ids, table, x, out)
    return out


def _index_array(v: Any, name: str) -> np.ndarray:
    """A 1-D integer array as it is (no widening copy: shapes store the narrowest dtype)."""
    v = np.ascontiguousarray(v)
    if v.ndim != 1 or v.dtype.kind not in "iu":
        raise BadInput(f"{name} must be a 1-D integer array, got {v.shape} {v.dtype}")
    return v
