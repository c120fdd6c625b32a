"""circom's ``.r1cs`` constraint files, read into cuzk's CSR matrices.

Sections: 1 header (u32 n8, prime, u32 nWires, nOutputs, nPubInputs, nPrvInputs, u64 nLabels,
u32 nConstraints); 2 constraints, each three linear combinations A, B, C written as a u32 term
count then (u32 wire, n8-byte canonical coefficient) per term; 3 the wire → label map (u64 per
wire); 4 and 5 custom gates (PLONK only). Columns of the matrices are wires, in circom's order:
ONE, outputs, public inputs, private inputs, internal signals — the witness's order too.

snarkjs's Groth16 prover never reads this file (the ``.zkey`` carries A and B); cuzk uses it to
name the first unsatisfied constraint before proving and in tests.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from numba import njit

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import FR_BYTES, R
from cuzk.interop.binfile import BinFile, Cursor
from cuzk.interop.curves import describe_prime
from cuzk.r1cs import CsrMatrix

R1CS_SECTIONS = {
    1: "header",
    2: "constraints",
    3: "wire-to-label map",
    4: "custom gates list",
    5: "custom gates uses",
}
_TERM = 4 + FR_BYTES  # u32 wire + coefficient


@dataclass(frozen=True)
class CircomR1cs:
    """A circom constraint system: A·z ∘ B·z = C·z for the wire assignment z."""

    path: str  # the .r1cs file (for messages)
    num_wires: int  # variables, including wire 0 = ONE
    num_outputs: int  # public outputs (wires 1…)
    num_pub_inputs: int  # public inputs (after the outputs)
    num_prv_inputs: int  # private inputs
    num_labels: int  # signals before optimisation (for the .sym file)
    a: CsrMatrix  # one row per constraint, one column per wire
    b: CsrMatrix
    c: CsrMatrix

    @property
    def num_constraints(self) -> int:
        return self.a.num_rows

    @property
    def num_public(self) -> int:
        """Public signals without ONE: outputs then public inputs (snarkjs's nPublic)."""
        return self.num_outputs + self.num_pub_inputs

    def first_unsatisfied(self, z: fr.FrVec) -> int | None:
        """Index of the first constraint with ⟨A,z⟩·⟨B,z⟩ ≠ ⟨C,z⟩, or None."""
        if z.shape[0] != self.num_wires:
            raise BadInput(
                f"the witness has {z.shape[0]} values; {self.path} has {self.num_wires} wires"
            )
        a, b, c = self.a.matvec(z), self.b.matvec(z), self.c.matvec(z)
        bad = np.flatnonzero(np.any(fr.mul(a, b) != c, axis=1))
        return int(bad[0]) if bad.size else None


@njit(cache=True, nogil=True)
def _k_count_terms(buf, n_constraints, term_size):  # pragma: no cover - compiled
    """Terms per (constraint, matrix), walking the variable-length records.

    Returns (counts (n, 3), bytes consumed); consumed = −1 − k when constraint k runs past
    the end of the section.
    """
    counts = np.zeros((n_constraints, 3), dtype=np.int64)
    pos = 0
    end = buf.shape[0]
    for i in range(n_constraints):
        for m in range(3):
            if pos + 4 > end:
                return counts, -1 - i
            k = (
                np.int64(buf[pos])
                | (np.int64(buf[pos + 1]) << 8)
                | (np.int64(buf[pos + 2]) << 16)
                | (np.int64(buf[pos + 3]) << 24)
            )
            pos += 4 + k * term_size
            if pos > end:
                return counts, -1 - i
            counts[i, m] = k
    return counts, pos


@njit(cache=True, nogil=True)
def _k_gather_terms(buf, counts, term_size, wires, coeffs, starts):  # pragma: no cover
    """Copy every term's wire and coefficient bytes into per-matrix arrays (CSR order)."""
    pos = 0
    fill = starts.copy()
    for i in range(counts.shape[0]):
        for m in range(3):
            pos += 4
            for _ in range(counts[i, m]):
                j = fill[m]
                wires[j] = (
                    np.int64(buf[pos])
                    | (np.int64(buf[pos + 1]) << 8)
                    | (np.int64(buf[pos + 2]) << 16)
                    | (np.int64(buf[pos + 3]) << 24)
                )
                for b in range(term_size - 4):
                    coeffs[j, b] = buf[pos + 4 + b]
                fill[m] = j + 1
                pos += term_size


def read_r1cs(path: str | os.PathLike[str]) -> CircomR1cs:
    """Read and validate a ``.r1cs`` file.

    Raises:
        BadInput: naming the file and section: wrong magic/version, a prime other than
            BLS12-381's r, truncated or overlong sections, a wire index ≥ nWires, a
            coefficient ≥ r, a label map of the wrong size, or custom gates.
    """
    with BinFile(path, "r1cs", 1, R1CS_SECTIONS) as f:
        cur = Cursor(f, 1)
        n8 = cur.u32("the field size n8")
        prime = cur.bigint(n8, "the prime")
        num_wires = cur.u32("nWires")
        num_outputs = cur.u32("nOutputs")
        num_pub = cur.u32("nPubInputs")
        num_prv = cur.u32("nPrvInputs")
        num_labels = cur.u64("nLabels")
        num_constraints = cur.u32("nConstraints")
        cur.expect_end()
        if prime != R or n8 != FR_BYTES:
            raise f.error(
                1,
                f"the circuit is over {describe_prime(prime)}; cuzk proves over BLS12-381 "
                "(compile with `circom --prime bls12381`)",
            )
        if num_wires < 1 + num_outputs + num_pub + num_prv:
            raise f.error(
                1,
                f"{num_wires} wires cannot hold ONE, {num_outputs} outputs, {num_pub} public "
                f"and {num_prv} private inputs",
            )
        if f.has(4) or f.has(5):
            raise f.error(4, "the circuit uses custom gates, which only PLONK supports")
        if f.has(3):
            f.body(3, 8 * num_wires)  # checks the size only; labels are for debugging
        body = np.frombuffer(f.body(2), dtype=np.uint8)
        counts, used = _k_count_terms(body, num_constraints, _TERM)
        if used < 0:
            raise f.error(2, f"truncated in constraint {-1 - used} of {num_constraints}")
        if used != body.shape[0]:
            raise f.error(2, f"has {body.shape[0] - used} unexpected trailing bytes")
        totals = counts.sum(axis=0)
        starts = np.concatenate([[0], np.cumsum(totals)[:-1]]).astype(np.int64)
        wires = np.empty(int(totals.sum()), dtype=np.int64)
        raw = np.empty((wires.shape[0], FR_BYTES), dtype=np.uint8)
        _k_gather_terms(body, counts, _TERM, wires, raw, starts)

    if wires.size and wires.max() >= num_wires:
        k = int(np.argmax(wires >= num_wires))
        raise BadInput(
            f"{path}: section 2 (constraints): term {k} uses wire {int(wires[k])}, but the "
            f"circuit has {num_wires} wires"
        )
    try:
        coeffs = fr.from_bytes_le(raw)
    except BadInput as e:
        raise BadInput(f"{path}: section 2 (constraints): coefficient of term {e}") from e
    mats = []
    for m in range(3):
        lo, hi = int(starts[m]), int(starts[m] + totals[m])
        indptr = np.zeros(num_constraints + 1, dtype=np.int64)
        np.cumsum(counts[:, m], out=indptr[1:])
        mats.append(CsrMatrix.from_coeffs(indptr, wires[lo:hi], coeffs[lo:hi], num_wires))
    return CircomR1cs(str(path), num_wires, num_outputs, num_pub, num_prv, num_labels, *mats)
