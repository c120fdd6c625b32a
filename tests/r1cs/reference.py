"""The oracle for compact shapes: a constraint system that records every row as plain Python
lists (the pre-compact layout: a key and an int coefficient per entry, a full name per row),
and comparisons of a compact :class:`R1CSShape` against it row by row.

It is not a :class:`ShapeCS`, so SHA-256 compressions run the gadget rather than a replayed
template: the comparison covers the templates too."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cuzk.field import fr
from cuzk.r1cs import ConstraintSystem, R1CSShape, Variable
from cuzk.r1cs.lc import resolve


@dataclass
class PlainCsr:
    indptr: np.ndarray  # int64
    cols: np.ndarray  # int64
    coeffs: fr.FrVec  # one Montgomery coefficient per entry


class ListShapeCS(ConstraintSystem):
    needs_values = False

    def __init__(self) -> None:
        super().__init__()
        self.num_inputs, self.num_aux = 1, 0
        self.rows: list[tuple[list[int], list[int], list[int]]] = [([0], [], []) for _ in "abc"]
        self.names: list[str] = []

    def alloc(self, name, value) -> Variable:
        self.num_aux += 1
        return Variable(self.num_aux - 1)

    def alloc_input(self, name, value) -> Variable:
        self.num_inputs += 1
        return Variable(~(self.num_inputs - 1))

    def enforce(self, name, a, b, c) -> None:
        for (ends, keys, coeffs), spec in zip(self.rows, (a, b, c), strict=True):
            for k, v in resolve(spec).terms.items():
                keys.append(k)
                coeffs.append(v)
            ends.append(len(keys))
        self.names.append(self._full_name(name))

    def finish(self) -> list[PlainCsr]:
        for i in range(self.num_inputs):
            self.enforce(f"input {i} constraint", Variable(~i), 0, 0)
        out = []
        for ends, keys, coeffs in self.rows:
            k = np.array(keys, dtype=np.int64)
            cols = np.where(k < 0, ~k, k + self.num_inputs)
            out.append(PlainCsr(np.array(ends, dtype=np.int64), cols, fr.from_ints(coeffs)))
        return out


def reference(circuit) -> tuple[ListShapeCS, list[PlainCsr]]:
    cs = ListShapeCS()
    circuit.synthesize(cs)
    return cs, cs.finish()


def assert_same_rows(shape: R1CSShape, cs: ListShapeCS, plain: list[PlainCsr]) -> None:
    """Every row of A, B and C: the same columns in the same order with the same
    coefficients; the same counts and names."""
    assert (shape.num_inputs, shape.num_aux) == (cs.num_inputs, cs.num_aux)
    for label, m, ref in zip("abc", (shape.a, shape.b, shape.c), plain, strict=True):
        assert m.num_cols == cs.num_inputs + cs.num_aux
        ends = np.asarray(m.indptr, dtype=np.int64)
        assert np.array_equal(ends, ref.indptr), f"{label}: row {_first_row(ends, ref.indptr)}"
        bad = np.flatnonzero(
            (np.asarray(m.indices, dtype=np.int64) != ref.cols)
            | np.any(m.table[m.coeff_ids] != ref.coeffs, axis=1)
        )
        if len(bad):
            row = int(np.searchsorted(ref.indptr, bad[0], side="right")) - 1
            raise AssertionError(f"{label}: row {row} ({cs.names[row]!r}) differs")
    assert shape.names is not None and len(shape.names) == len(cs.names)
    assert list(shape.names) == cs.names


def _first_row(got: np.ndarray, want: np.ndarray) -> int:
    n = min(len(got), len(want))
    diff = np.flatnonzero(got[:n] != want[:n])
    return int(diff[0]) - 1 if len(diff) else n


def plain_evaluate(plain: list[PlainCsr], z: fr.FrVec) -> list[fr.FrVec]:
    """A·z, B·z, C·z the pre-compact way: one coefficient per entry (ids are the identity)."""
    return [
        fr.spmv(p.indptr, p.cols, np.arange(len(p.cols)), p.coeffs, z, len(p.indptr) - 1)
        for p in plain
    ]
