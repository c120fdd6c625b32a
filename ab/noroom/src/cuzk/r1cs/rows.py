"""The three matrices of a shape while shape synthesis appends rows to them.

:class:`~cuzk.r1cs.system.ShapeCS` hands every row here: ``enforce`` one at a time (staged in
Python lists, flushed to numpy every few tens of thousands of entries), replayed gadget
templates a block at a time (numpy arrays straight in). Storage is the compact layout of
:class:`~cuzk.r1cs.shape.CsrMatrix` from the start — a signed 32-bit variable key and a
coefficient id per entry, a 32-bit length per row — so a 130M-constraint circuit is built in
~10 GB rather than the ~150 GB of Python lists and ints.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.r1cs.chunks import GrowArray, id_dtype, index_dtype
from cuzk.r1cs.shape import CsrMatrix

#: Entries (per matrix) staged as Python objects before they move into numpy.
STAGE = 1 << 15
_KEY_MIN, _KEY_MAX = -(1 << 31), (1 << 31) - 1

Rows = tuple[list[int], list[int], list[int]]
"""One matrix's rows: (row ends relative to the first row's start, keys, coefficients)."""


class MatrixBuilder:
    """A, B and C under construction, sharing one coefficient table.

    Keys are the builder API's variable keys (``~i`` for input i, j for aux j): the final
    column of an aux variable depends on how many inputs there are, known only at the end."""

    def __init__(self) -> None:
        self._coeff_ids: dict[int, int] = {}
        self._list_ids: dict[int, tuple[list[int], np.ndarray]] = {}
        self._lens = [GrowArray(np.uint16) for _ in range(3)]  # widened if a row is longer
        self._keys = [GrowArray(np.int32) for _ in range(3)]
        self._ids = [GrowArray(np.uint16) for _ in range(3)]  # widened past 65,536 coefficients
        # per matrix: staged row lengths, keys, coefficients (the ``enforce`` path)
        # why the ignore below: tuple() of a generator is tuple[X, ...] to mypy; this one has
        # exactly three
        self.stage: tuple[Rows, Rows, Rows] = tuple(([], [], []) for _ in range(3))  # type: ignore[assignment]
        self.num_rows = 0

    def add(self, a: dict[int, int], b: dict[int, int], c: dict[int, int]) -> None:
        """One row from three ``{key: coefficient}`` linear combinations."""
        for (lens, keys, coeffs), terms in zip(self.stage, (a, b, c), strict=True):
            keys.extend(terms)
            coeffs.extend(terms.values())
            lens.append(len(terms))
        self.num_rows += 1
        if len(self.stage[0][1]) >= STAGE:
            self.flush()

    def _intern(self, coeffs: Sequence[int]) -> np.ndarray:
        d = self._coeff_ids
        try:
            ids = list(map(d.__getitem__, coeffs))
        except KeyError:
            for c in coeffs:
                if c not in d:
                    d[c] = len(d)
            ids = list(map(d.__getitem__, coeffs))
        return np.array(ids, dtype=np.uint64)

    def _append(self, m: int, lens: np.ndarray, keys: np.ndarray, ids: np.ndarray) -> None:
        if len(keys) and (int(keys.min()) < _KEY_MIN or int(keys.max()) > _KEY_MAX):
            raise BadInput("a circuit with 2^31 or more variables of a kind is not supported")
        self._lens[m].extend(lens)
        self._keys[m].extend(keys)
        self._ids[m].extend(ids)

    def flush(self) -> None:
        """Move the staged rows into numpy storage."""
        for m, (lens, keys, coeffs) in enumerate(self.stage):
            if lens:
                k = np.array(keys, dtype=np.int64)
                self._append(m, np.array(lens, dtype=np.uint64), k, self._intern(coeffs))
                lens.clear()
                keys.clear()
                coeffs.clear()

    def extend(
        self, rows: Sequence[tuple[np.ndarray, np.ndarray | Sequence[int], list[int]]]
    ) -> None:
        """Append whole rows at once, per matrix as (row ends relative to the first row's
        start, keys, coefficients). A coefficient list that recurs as the same object (a
        replayed template's) is looked up once."""
        self.flush()
        counts = {len(ends) for ends, _, _ in rows}
        if len(counts) != 1:
            raise BadInput(f"A, B and C blocks have different row counts {sorted(counts)}")
        blocks = []  # all three checked before any is appended
        for ends, keys, coeffs in rows:
            ends = np.asarray(ends, dtype=np.int64)
            k = np.asarray(keys, dtype=np.int64)
            lens = np.diff(ends, prepend=0)
            if len(k) != len(coeffs) or (len(ends) and ends[-1] != len(k)) or np.any(lens < 0):
                raise BadInput("a block's row ends, keys and coefficients disagree")
            blocks.append((lens, k, coeffs))
        for m, (lens, k, coeffs) in enumerate(blocks):
            hit = self._list_ids.get(id(coeffs))
            if hit is None or hit[0] is not coeffs:
                hit = self._list_ids[id(coeffs)] = (coeffs, self._intern(coeffs))
            self._append(m, lens, k, hit[1])
        self.num_rows += counts.pop()

    def entries(self) -> tuple[int, int, int]:
        """Entries stored per matrix (staged rows flushed first): a block's boundary."""
        self.flush()
        return len(self._keys[0]), len(self._keys[1]), len(self._keys[2])

    def block(
        self, rows: tuple[int, int], entries: tuple[tuple[int, int], ...]
    ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per matrix (row lengths, keys, coefficient ids) of rows [rows[0], rows[1]) whose
        entries are [entries[m][0], entries[m][1]) — a block to check or replay."""
        self.flush()
        return [
            (
                self._lens[m].tail(*rows),
                self._keys[m].tail(*entries[m]),
                self._ids[m].tail(*entries[m]),
            )
            for m in range(3)
        ]

    def extend_block(self, block: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
        """Append rows given as :meth:`block` returns them (keys may be int64: range-checked)."""
        self.flush()
        counts = {len(lens) for lens, _, _ in block}
        if len(counts) != 1:
            raise BadInput(f"A, B and C blocks have different row counts {sorted(counts)}")
        for m, (lens, keys, ids) in enumerate(block):
            self._append(m, lens, keys, ids)
        self.num_rows += counts.pop()

    def rows_from(self, row: int) -> tuple[Rows, Rows, Rows]:
        """The rows from ``row`` on, per matrix as (row ends relative to the first of them,
        keys, coefficients): what a gadget appended, for recording and checking replays."""
        self.flush()
        table = list(self._coeff_ids)
        out = []
        for m in range(3):
            ends = np.cumsum(self._lens[m].tail(row), dtype=np.int64)
            n = int(ends[-1]) if len(ends) else 0
            start = len(self._keys[m]) - n
            keys = self._keys[m].tail(start).tolist()
            coeffs = [table[i] for i in self._ids[m].tail(start).tolist()]
            out.append((ends.tolist(), keys, coeffs))
        return out[0], out[1], out[2]

    def finish(self, num_inputs: int, num_aux: int) -> tuple[CsrMatrix, CsrMatrix, CsrMatrix]:
        """The three compact matrices (aux keys become columns after the inputs); the builder's
        storage is emptied on the way, each chunk freed as soon as it is copied."""
        self.flush()
        num_cols = num_inputs + num_aux
        if num_cols >= 1 << 32:
            raise BadInput(f"{num_cols} variables: at most 2^32 - 1 are supported")
        table = fr.from_ints(list(self._coeff_ids)) if self._coeff_ids else fr.zeros(0)
        ids_dt, cols_dt = id_dtype(max(1, len(table))), index_dtype(num_cols)

        def columns(keys: np.ndarray) -> np.ndarray:
            """A chunk of keys → columns, in place (no 8-byte temporaries)."""
            neg = keys < 0
            np.invert(keys, out=keys, where=neg)
            cols = keys.view(np.uint32)
            np.add(cols, np.uint32(num_inputs), out=cols, where=~neg)
            return cols

        mats = []
        for m in range(3):
            nnz = len(self._keys[m])
            indptr = np.zeros(len(self._lens[m]) + 1, dtype=index_dtype(nnz))
            self._lens[m].drain(indptr[1:])
            np.cumsum(indptr[1:], out=indptr[1:], dtype=indptr.dtype)
            cols = self._keys[m].drain(np.empty(nnz, dtype=cols_dt), columns)
            ids = self._ids[m].drain(np.empty(nnz, dtype=ids_dt))
            mats.append(CsrMatrix(indptr, cols, ids, table, num_cols))
        return mats[0], mats[1], mats[2]
