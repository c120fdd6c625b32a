"""Bit programs: a gadget's witness values as a straight-line program over bits.

A SHA-256 compression appends ~26,000 witness values, every one a bit computed from earlier
bits by xor / and / ch / maj or taken from a sum of 32-bit words. Which operation makes which
value depends only on which of the inputs are constant or negated (the *pattern*), never on
the values, so :mod:`cuzk.gadgets.sha256.tape` records one program per pattern. This module is
the program's format and its reference executor; the CUDA backend runs the same programs on
the device (``backend/cuda/witness.cu``), one thread per instance, and is checked against
:func:`execute`.

Values are numbered as *nodes*: node 0 is the constant 0, nodes 1…n_in are the inputs, and the
program's k-th appended value is node 1 + n_in + k. Operands are *literals*
``node << 1 | negated``. Rows of ``ops`` are (opcode, x, y, z):

* ``XOR``, ``AND``: one value, lit x op lit y;
* ``CH``, ``MAJ``: one value, SHA-256's choose / majority of lits x, y, z;
* ``ADD``: z values, the low z bits of the sum of y 32-bit words whose 32·y literals (least
  significant first) start at ``words[x]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numba import njit

from cuzk.field import fr

XOR, AND, CH, MAJ, ADD = 0, 1, 2, 3, 4
_ONE = fr.ones(1)[0]


@dataclass(frozen=True, eq=False)
class BitProgram:
    """One recorded program. ``key`` names it (equal keys: equal programs), so runs of one
    program group together and a device can remember which programs it has checked."""

    key: bytes
    ops: np.ndarray  # (n, 4) int32
    words: np.ndarray  # int32 literals of ADD operands
    n_in: int
    n_aux: int

    #: The device kernel (``backend/cuda/witness.cu``).
    kernel: ClassVar[str] = "witness_bitprog"

    def run(self, inputs: np.ndarray) -> np.ndarray:
        """All node values (uint8, 1 + n_in + n_aux) for one instance's input bits."""
        return execute(self.ops, self.words, self.n_aux, np.ascontiguousarray(inputs, np.uint8))

    def expand(self, inputs: np.ndarray, starts: np.ndarray, out: fr.FrVec) -> None:
        """Runs' values (inputs: (m, n_in) bits) as Montgomery 0/1 at ``out[starts[i]…]``
        (:class:`~cuzk.r1cs.deferred.Program`)."""
        expand_runs(self.ops, self.words, self.n_aux, inputs, starts, _ONE, out)

    def tables(self) -> tuple[np.ndarray | np.generic, ...]:
        """(ops, their count, words, input bits): the kernel's arguments before the runs'
        (a program without additions still hands over one word: a device array is never
        empty)."""
        words = self.words if len(self.words) else np.zeros(1, np.int32)
        ops = np.asarray(self.ops, np.int32)
        return ops, np.int32(len(ops)), np.asarray(words, np.int32), np.int32(self.n_in)


@njit(cache=True, nogil=True)
def execute(ops, words, n_aux, inputs):  # pragma: no cover - numba
    n_in = inputs.shape[0]
    v = np.empty(1 + n_in + n_aux, dtype=np.uint8)
    v[0] = 0
    v[1 : 1 + n_in] = inputs
    k = 1 + n_in
    for i in range(ops.shape[0]):
        op = ops[i, 0]
        x = ops[i, 1]
        y = ops[i, 2]
        if op == 4:  # ADD
            total = np.int64(0)
            for j in range(32 * y):
                lit = words[x + j]
                total += np.int64(v[lit >> 1] ^ (lit & 1)) << (j & 31)
            for j in range(ops[i, 3]):
                v[k] = (total >> j) & 1
                k += 1
            continue
        xv = v[x >> 1] ^ (x & 1)
        yv = v[y >> 1] ^ (y & 1)
        if op == 0:
            r = xv ^ yv
        elif op == 1:
            r = xv & yv
        else:
            z = ops[i, 3]
            zv = v[z >> 1] ^ (z & 1)
            if op == 2:
                r = (xv & yv) ^ ((xv ^ 1) & zv)
            else:
                r = (xv & yv) ^ (xv & zv) ^ (yv & zv)
        v[k] = r
        k += 1
    return v


@njit(cache=True, nogil=True)
def expand_runs(ops, words, n_aux, inputs, starts, one, out):  # pragma: no cover - numba
    """Every instance's appended values as Montgomery field elements (``one`` or 0) at
    ``out[starts[i] + k]``: the CPU model of the device kernel."""
    for i in range(starts.shape[0]):
        v = execute(ops, words, n_aux, inputs[i])
        base = 1 + inputs.shape[1]
        s = starts[i]
        for k in range(n_aux):
            if v[base + k]:
                out[s + k, 0] = one[0]
                out[s + k, 1] = one[1]
                out[s + k, 2] = one[2]
                out[s + k, 3] = one[3]
            else:
                out[s + k, 0] = 0
                out[s + k, 1] = 0
                out[s + k, 2] = 0
                out[s + k, 3] = 0
