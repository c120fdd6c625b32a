"""The pre-compiled constraint system: A, B, C as CSR matrices plus density bitmaps.

Recorded once per circuit type by shape-mode synthesis and saved as plain ``.npy`` files, it lets
proving skip per-constraint Python entirely: the witness vector z = (inputs ‖ aux) goes in, and
a = A·z, b = B·z, c = C·z come out of one sparse matrix-vector product each.

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

SHAPE_FORMAT_VERSION = 1


def _kept(obj: object, name: str, make: Callable[[], np.ndarray]) -> np.ndarray:
    """``make()`` once per (frozen) object, kept read-only in its ``__dict__``: derived arrays
    the prover asks for on every proof."""
    value = obj.__dict__.get(name)
    if value is None:
        value = make()
        value.flags.writeable = False
        object.__setattr__(obj, name, value)  # frozen dataclass: a cache, not a field
    return value


@dataclass(frozen=True)
class CsrMatrix:
    """A sparse Fr matrix in compressed-sparse-row form."""

    indptr: np.ndarray  # int64 (rows + 1): row i's entries are [indptr[i], indptr[i+1])
    indices: np.ndarray  # int64 (nnz): column (variable) of each entry
    coeffs: np.ndarray  # FrVec (nnz, 4): Montgomery coefficient of each entry
    num_cols: int  # number of variables (inputs + aux)

    @property
    def num_rows(self) -> int:
        return len(self.indptr) - 1

    @property
    def nnz(self) -> int:
        return len(self.indices)

    def matvec(self, z: fr.FrVec) -> fr.FrVec:
        """M·z over Fr."""
        return fr.spmv(self.indptr, self.indices, self.coeffs, z, self.num_rows)

    def transpose(self) -> CsrMatrix:
        """Mᵀ, used by setup to turn Lagrange evaluations into per-variable polynomial values."""
        rows = np.repeat(np.arange(self.num_rows, dtype=np.int64), np.diff(self.indptr))
        order = np.argsort(self.indices, kind="stable")
        counts = np.bincount(self.indices, minlength=self.num_cols)
        indptr = np.zeros(self.num_cols + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return CsrMatrix(indptr, rows[order], self.coeffs[order], self.num_rows)

    def column_mask(self) -> np.ndarray:
        """Which variables appear (with a non-zero coefficient) somewhere in the matrix.

        Made once per matrix and kept (read-only): it is a scatter over every entry, 0.1–0.3 s
        at 2^24 constraints, and the prover asks for it on every proof (three times to check
        the parameters, three times to gather the MSM scalars)."""

        def make() -> np.ndarray:
            mask = np.zeros(self.num_cols, dtype=bool)
            mask[self.indices] = True
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
    names: tuple[str, ...] | None  # constraint names (None when loaded without them)

    @property
    def num_constraints(self) -> int:
        """Rows including the appended ``input_i · 0 = 0`` ones (the prover's n)."""
        return self.a.num_rows

    @property
    def num_variables(self) -> int:
        return self.num_inputs + self.num_aux

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

    # The same sets as sorted row indices (made once): the prover's MSM-scalar gathers.
    @property
    def a_aux_rows(self) -> np.ndarray:
        return _kept(self, "_a_aux_rows", lambda: np.flatnonzero(self.a_aux_density))

    @property
    def b_input_rows(self) -> np.ndarray:
        return _kept(self, "_b_input_rows", lambda: np.flatnonzero(self.b_input_density))

    @property
    def b_aux_rows(self) -> np.ndarray:
        return _kept(self, "_b_aux_rows", lambda: np.flatnonzero(self.b_aux_density))

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

    @classmethod
    def from_rows(
        cls,
        *,
        circuit_id: str,
        num_inputs: int,
        num_aux: int,
        rows: tuple[tuple[list[int], list[int], list[int]], ...],
        names: list[str],
    ) -> R1CSShape:
        """Build from shape-mode row lists whose column keys are ``~i`` (input) or ``j`` (aux)."""
        num_cols = num_inputs + num_aux
        mats = []
        for indptr, keys, coeffs in rows:
            k = np.asarray(keys, dtype=np.int64)
            cols = np.where(k < 0, ~k, k + num_inputs)
            mats.append(
                CsrMatrix(np.asarray(indptr, dtype=np.int64), cols, fr.from_ints(coeffs), num_cols)
            )
        return cls(circuit_id, num_inputs, num_aux, *mats, names=tuple(names))

    # -- persistence -------------------------------------------------------------------------

    def save(self, directory: str | os.PathLike[str]) -> None:
        """Write the shape as ``.npy`` files plus ``meta.json`` (and ``names.txt``)."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        for label, m in zip("abc", (self.a, self.b, self.c), strict=True):
            np.save(d / f"{label}_indptr.npy", m.indptr)
            np.save(d / f"{label}_indices.npy", m.indices)
            np.save(d / f"{label}_coeffs.npy", m.coeffs)
        if self.names is not None:
            (d / "names.txt").write_text("\n".join(n.replace("\n", " ") for n in self.names))
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
        """Read a saved shape, memory-mapping the matrices."""
        d = Path(directory)
        try:
            meta = json.loads((d / "meta.json").read_text())
            if meta.get("format") != SHAPE_FORMAT_VERSION:
                raise BadInput(f"{d}: shape format {meta.get('format')} is not supported")
            num_cols = meta["num_inputs"] + meta["num_aux"]
            mats = [
                CsrMatrix(
                    np.load(d / f"{label}_indptr.npy", mmap_mode="r"),
                    np.load(d / f"{label}_indices.npy", mmap_mode="r"),
                    np.load(d / f"{label}_coeffs.npy", mmap_mode="r"),
                    num_cols,
                )
                for label in "abc"
            ]
        except (OSError, ValueError, KeyError) as e:
            raise BadInput(f"{d}: not a usable shape directory ({e})") from e
        names = None
        if with_names and (d / "names.txt").exists():
            names = tuple((d / "names.txt").read_text().split("\n"))
        shape = cls(meta["circuit_id"], meta["num_inputs"], meta["num_aux"], *mats, names=names)
        if any(m.num_rows != meta["num_constraints"] for m in mats):
            raise BadInput(f"{d}: matrices disagree with meta.json on the number of rows")
        return shape
