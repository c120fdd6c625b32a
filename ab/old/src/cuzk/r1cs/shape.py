"""The pre-compiled constraint system: A, B, C as compact CSR matrices plus density bitmaps.

Recorded once per circuit type by shape-mode synthesis and saved as plain ``.npy`` files, it lets
proving skip per-constraint Python entirely: the witness vector z = (inputs ‖ aux) goes in, and
a = A·z, b = B·z, c = C·z come out of one sparse matrix-vector product each.

Compact because a 32 GiB PoRep partition has 130M constraints and 720M entries: an entry is a
32-bit column and a coefficient *id* into a small table of the circuit's distinct coefficients
(2,466 in porep-32g: ±1, powers of two, Poseidon constants), 1–4 bytes wide as the table needs,
instead of an 8-byte column and a 32-byte field element. Row pointers are 32-bit below 2^32
entries. porep-32g's matrices take 45 bytes per constraint (5.9 GB), against ~1.2 KB before.

Column order is bellperson's variable order: inputs first (ONE at 0), then aux.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.r1cs._kernels import k_mark, k_transpose
from cuzk.r1cs.chunks import id_dtype, index_dtype
from cuzk.r1cs.names import ConstraintNames, StringTable

SHAPE_FORMAT_VERSION = 2  # 1: int64 columns and 32-byte coefficients per entry (no longer read)
_MATRIX_FILES = ("indptr", "indices", "ids", "table")
_NAME_FILES = ("prefix_ids", "leaf_ids", "prefix_blob", "prefix_offsets", "leaf_blob",
               "leaf_offsets")  # fmt: skip


def _kept(obj: object, name: str, make: Callable[[], np.ndarray]) -> np.ndarray:
    """``make()`` once per (frozen) object, kept read-only in its ``__dict__``: derived arrays
    the prover asks for on every proof."""
    value = obj.__dict__.get(name)
    if value is None:
        value = make()
        value.flags.writeable = False
        object.__setattr__(obj, name, value)  # frozen dataclass: a cache, not a field
    return value


def _check_index(name: str, v: np.ndarray) -> None:
    if v.ndim != 1 or v.dtype.kind != "u":
        raise BadInput(f"{name} must be a 1-D unsigned integer array, got {v.shape} {v.dtype}")


@dataclass(frozen=True)
class CsrMatrix:
    """A sparse Fr matrix in compressed-sparse-row form with dictionary-coded coefficients.

    Entry k of the matrix is ``table[coeff_ids[k]]`` at column ``indices[k]``. Construction
    checks dtypes and lengths only (a 2^27 matrix is gigabytes); :func:`cuzk.field.fr.spmv` and
    the CUDA upload check the values before their unchecked loads."""

    indptr: np.ndarray  # uint32/uint64 (rows + 1): row i's entries are [indptr[i], indptr[i+1])
    indices: np.ndarray  # uint32/uint64 (nnz): column (variable) of each entry
    coeff_ids: np.ndarray  # uint8/uint16/uint32 (nnz): each entry's row of ``table``
    table: np.ndarray  # FrVec (k, 4): the distinct coefficients, Montgomery form
    num_cols: int  # number of variables (inputs + aux)

    def __post_init__(self) -> None:
        for name in ("indptr", "indices", "coeff_ids"):
            _check_index(name, getattr(self, name))
        if len(self.indptr) < 1:
            raise BadInput("indptr must have rows + 1 entries")
        if len(self.coeff_ids) != len(self.indices):
            raise BadInput(f"{len(self.coeff_ids)} coefficient ids for {len(self.indices)} entries")
        t = self.table
        if t.ndim != 2 or t.shape[1:] != (4,) or t.dtype != np.uint64:
            raise BadInput(f"table must be an (k, 4) uint64 FrVec, got {t.shape} {t.dtype}")

    @classmethod
    def from_coeffs(
        cls, indptr: np.ndarray, indices: np.ndarray, coeffs: fr.FrVec, num_cols: int
    ) -> CsrMatrix:
        """From plain CSR arrays (any integer dtypes, one coefficient per entry): the
        coefficients become a table of their distinct values plus an id per entry."""
        indptr, indices = np.asarray(indptr), np.asarray(indices)
        if len(indices) and int(indices.min()) < 0:
            raise BadInput("negative column index")
        coeffs = np.ascontiguousarray(coeffs, dtype=np.uint64).reshape(-1, 4)
        table, inverse = np.unique(coeffs, axis=0, return_inverse=True)
        return cls(
            indptr.astype(index_dtype(len(indices)), copy=False),
            indices.astype(index_dtype(num_cols), copy=False),
            inverse.reshape(-1).astype(id_dtype(len(table))),
            np.ascontiguousarray(table),
            num_cols,
        )

    @classmethod
    def empty(cls, num_rows: int, num_cols: int) -> CsrMatrix:
        """A matrix with no entries."""
        z = np.zeros(0, dtype=np.uint8)
        return cls(np.zeros(num_rows + 1, np.uint32), z.astype(np.uint32), z, fr.zeros(0), num_cols)

    @property
    def num_rows(self) -> int:
        return len(self.indptr) - 1

    @property
    def nnz(self) -> int:
        return len(self.indices)

    @property
    def nbytes(self) -> int:
        """Host bytes of the four arrays."""
        return sum(int(x.nbytes) for x in (self.indptr, self.indices, self.coeff_ids, self.table))

    @property
    def coeffs(self) -> fr.FrVec:
        """Every entry's coefficient, (nnz, 4): 32 bytes per entry, so for small matrices only
        (interop writers, tests); the kernels read the table through the ids."""
        return self.table[self.coeff_ids]

    def row(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(columns, coefficient ids) of row i."""
        lo, hi = int(self.indptr[i]), int(self.indptr[i + 1])
        return self.indices[lo:hi], self.coeff_ids[lo:hi]

    def matvec(self, z: fr.FrVec) -> fr.FrVec:
        """M·z over Fr."""
        return fr.spmv(self.indptr, self.indices, self.coeff_ids, self.table, z, self.num_rows)

    def transpose(self) -> CsrMatrix:
        """Mᵀ, used by setup to turn Lagrange evaluations into per-variable polynomial values.
        Same table; one counting-sort pass (no sort, no 8-byte permutation)."""
        if self.nnz and int(self.indices.max()) >= self.num_cols:
            raise BadInput(f"column index out of range for {self.num_cols} columns")
        t_indptr = np.zeros(self.num_cols + 1, dtype=index_dtype(self.nnz))
        t_indices = np.empty(self.nnz, dtype=index_dtype(self.num_rows))
        t_ids = np.empty_like(self.coeff_ids)
        k_transpose(self.indptr, self.indices, self.coeff_ids, t_indptr, t_indices, t_ids)
        return CsrMatrix(t_indptr, t_indices, t_ids, self.table, self.num_rows)

    def column_mask(self) -> np.ndarray:
        """Which variables appear somewhere in the matrix (coefficients are never zero: linear
        combinations drop zero terms, and :meth:`from_coeffs` callers pass non-zero ones).

        Made once per matrix and kept (read-only): it is a scatter over every entry, 0.1–0.3 s
        at 2^24 constraints, and the prover asks for it on every proof (three times to check
        the parameters, three times to gather the MSM scalars)."""

        def make() -> np.ndarray:
            mask = np.zeros(self.num_cols, dtype=bool)
            if self.nnz:
                if int(self.indices.max()) >= self.num_cols:
                    raise BadInput(f"column index out of range for {self.num_cols} columns")
                k_mark(self.indices, mask)
            return mask

        return _kept(self, "_column_mask", make)


@dataclass(frozen=True)
class R1CSShape:
    """A circuit's constraint matrices, input rows included, independent of any witness."""

    circuit_id: str  # e.g. "synthetic:65536"; names the cache entry
    num_inputs: int  # public inputs including ONE
    num_aux: int  # private variables
    a: CsrMatrix
    b: CsrMatrix
    c: CsrMatrix
    names: ConstraintNames | None  # constraint names (None when loaded without them)

    def __post_init__(self) -> None:
        rows = {m.num_rows for m in (self.a, self.b, self.c)}
        cols = {m.num_cols for m in (self.a, self.b, self.c)}
        if len(rows) != 1 or cols != {self.num_inputs + self.num_aux}:
            raise BadInput(
                f"A, B, C have {sorted(rows)} rows and {sorted(cols)} columns; "
                f"{self.num_inputs} inputs + {self.num_aux} aux"
            )
        if self.names is not None and len(self.names) != self.a.num_rows:
            raise BadInput(f"{len(self.names)} names for {self.a.num_rows} constraints")

    @property
    def num_constraints(self) -> int:
        """Rows including the appended ``input_i · 0 = 0`` ones (the prover's n)."""
        return self.a.num_rows

    @property
    def num_variables(self) -> int:
        return self.num_inputs + self.num_aux

    @property
    def nbytes(self) -> int:
        """Host bytes of the three matrices (names are not counted: mapped, read on errors)."""
        return self.a.nbytes + self.b.nbytes + self.c.nbytes

    @property
    def a_aux_density(self) -> np.ndarray:
        """Aux variables with a point in the A query (inputs always have one)."""
        return self.a.column_mask()[self.num_inputs :]

    @property
    def b_input_density(self) -> np.ndarray:
        return self.b.column_mask()[: self.num_inputs]

    @property
    def b_aux_density(self) -> np.ndarray:
        return self.b.column_mask()[self.num_inputs :]

    # The same sets as sorted row indices (made once, uint32 below 2^32 variables): the
    # prover's MSM-scalar gathers.
    def _rows(self, mask: np.ndarray) -> np.ndarray:
        return np.flatnonzero(mask).astype(index_dtype(len(mask)))

    @property
    def a_aux_rows(self) -> np.ndarray:
        return _kept(self, "_a_aux_rows", lambda: self._rows(self.a_aux_density))

    @property
    def b_input_rows(self) -> np.ndarray:
        return _kept(self, "_b_input_rows", lambda: self._rows(self.b_input_density))

    @property
    def b_aux_rows(self) -> np.ndarray:
        return _kept(self, "_b_aux_rows", lambda: self._rows(self.b_aux_density))

    # The A and B MSM scalars as rows of the whole z (inputs then aux): the gathers a backend
    # makes when z exists only on its side (a deferred witness, :mod:`cuzk.r1cs.deferred`).
    @property
    def a_z_rows(self) -> np.ndarray:
        return _kept(self, "_a_z_rows", lambda: self._z_rows(None, self.a_aux_rows))

    @property
    def b_z_rows(self) -> np.ndarray:
        return _kept(self, "_b_z_rows", lambda: self._z_rows(self.b_input_rows, self.b_aux_rows))

    def _z_rows(self, inputs: np.ndarray | None, aux: np.ndarray) -> np.ndarray:
        dtype = index_dtype(self.num_variables)
        head = np.arange(self.num_inputs, dtype=dtype) if inputs is None else inputs.astype(dtype)
        return np.concatenate([head, aux.astype(dtype) + dtype.type(self.num_inputs)])

    def evaluate(self, z: fr.FrVec) -> tuple[fr.FrVec, fr.FrVec, fr.FrVec]:
        """a = A·z, b = B·z, c = C·z for a full assignment z = inputs ‖ aux."""
        if z.shape != (self.num_variables, 4):
            raise BadInput(
                f"assignment has {z.shape[0]} values, circuit {self.circuit_id!r} "
                f"has {self.num_variables} variables"
            )
        return self.a.matvec(z), self.b.matvec(z), self.c.matvec(z)

    def first_unsatisfied(self, z: fr.FrVec) -> int | None:
        """Index of the first row with a·b ≠ c, or None: the prover's cheap bulk check."""
        a, b, c = self.evaluate(z)
        bad = np.flatnonzero(np.any(fr.mul(a, b) != c, axis=1))
        return int(bad[0]) if len(bad) else None

    def constraint_name(self, index: int) -> str:
        if self.names is not None and 0 <= index < len(self.names):
            return self.names[index]
        return f"#{index}"

    # -- persistence -------------------------------------------------------------------------

    def save(self, directory: str | os.PathLike[str]) -> None:
        """Write the shape as ``.npy`` files (memory-mappable) plus ``meta.json``."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        for label, m in zip("abc", (self.a, self.b, self.c), strict=True):
            for part, arr in zip(
                _MATRIX_FILES, (m.indptr, m.indices, m.coeff_ids, m.table), strict=True
            ):
                np.save(d / f"{label}_{part}.npy", arr)
        if self.names is not None:
            n = self.names
            arrays = (n.prefix_ids, n.leaf_ids, n.prefixes.blob, n.prefixes.offsets,
                      n.leaves.blob, n.leaves.offsets)  # fmt: skip
            for part, arr in zip(_NAME_FILES, arrays, strict=True):
                np.save(d / f"names_{part}.npy", arr)
        meta = {
            "format": SHAPE_FORMAT_VERSION,
            "circuit_id": self.circuit_id,
            "num_inputs": self.num_inputs,
            "num_aux": self.num_aux,
            "num_constraints": self.num_constraints,
        }
        # meta.json last: its presence marks a complete entry.
        (d / "meta.json").write_text(json.dumps(meta, indent=1))

    @classmethod
    def load(cls, directory: str | os.PathLike[str], *, with_names: bool = True) -> R1CSShape:
        """Read a saved shape, memory-mapping every array.

        Raises:
            BadInput: no complete entry, another format (1 is the pre-compact layout: the
                shape cache rebuilds such entries), or arrays that disagree with each other.
        """
        d = Path(directory)
        fmt = shape_format(d)
        if fmt is None:
            raise BadInput(f"{d}: not a usable shape directory (no readable meta.json)")
        if fmt != SHAPE_FORMAT_VERSION:
            raise BadInput(
                f"{d}: shape format {fmt} is not supported (this build reads format "
                f"{SHAPE_FORMAT_VERSION}); delete the directory to have it rebuilt"
            )

        def arr(name: str) -> np.ndarray:
            return np.load(d / f"{name}.npy", mmap_mode="r", allow_pickle=False)

        try:
            meta = json.loads((d / "meta.json").read_text())
            num_cols = meta["num_inputs"] + meta["num_aux"]
            mats = [
                CsrMatrix(
                    arr(f"{label}_indptr"),
                    arr(f"{label}_indices"),
                    arr(f"{label}_ids"),
                    arr(f"{label}_table"),
                    num_cols,
                )
                for label in "abc"
            ]
            names = None
            if with_names and (d / "names_prefix_ids.npy").exists():
                p_ids, l_ids, p_blob, p_off, l_blob, l_off = (
                    arr(f"names_{part}") for part in _NAME_FILES
                )
                names = ConstraintNames(
                    StringTable(p_blob, p_off), StringTable(l_blob, l_off), p_ids, l_ids
                )
        except (OSError, ValueError, KeyError) as e:
            raise BadInput(f"{d}: not a usable shape directory ({e})") from e
        if any(m.num_rows != meta["num_constraints"] for m in mats):
            raise BadInput(f"{d}: matrices disagree with meta.json on the number of rows")
        if names is not None and len(names) != meta["num_constraints"]:
            raise BadInput(f"{d}: {len(names)} names for {meta['num_constraints']} constraints")
        a, b, c = mats
        return cls(meta["circuit_id"], meta["num_inputs"], meta["num_aux"], a, b, c, names)


def shape_format(directory: str | os.PathLike[str]) -> int | None:
    """The format number of a saved shape, or None where there is no complete, readable
    entry (no ``meta.json``, or one that does not parse)."""
    try:
        meta = json.loads((Path(directory) / "meta.json").read_text())
        fmt = meta.get("format") if isinstance(meta, dict) else None
    except (OSError, ValueError):
        return None
    return fmt if isinstance(fmt, int) else None


def matrix_files(directory: str | os.PathLike[str]) -> list[Path]:
    """The files of a saved shape that are resident while it is in use (its matrices)."""
    d = Path(directory)
    return [d / f"{label}_{part}.npy" for label in "abc" for part in _MATRIX_FILES]
