"""Circuits made of a header and k blocks of one structure: their witness in independent pieces.

Every Filecoin partition circuit is a short header (the commitments every challenge checks
against, ONE, a few inputs) followed by one block per challenge (PoRep, SnapDeals) or per
sector (WindowPoSt). Each block allocates its own inputs and aux variables, in order, and reads
nothing of the other blocks; the header's variables are the only ones blocks share. So the
circuit restricted to its header and a few of its blocks — a *view* — allocates exactly the
header's variables and then those blocks' variables, with the same values as in the whole
circuit. A 32 GiB PoRep partition (18 challenges, 130M constraints) then synthesizes its
witness as 18 independent views, one per process, and :func:`assemble` puts the pieces back
in the whole circuit's variable order: header, block 0, block 1, …

The same structure makes the shape small (one block's rows, shifted per block); that is the
compact shape's business (:mod:`cuzk.r1cs.shape`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from cuzk.errors import InternalError
from cuzk.field import fr
from cuzk.r1cs.deferred import DeferredAux, concat
from cuzk.r1cs.system import (
    DEFAULT_OPTIONS,
    Circuit,
    ConstraintSystem,
    SynthesisOptions,
    synthesize_witness,
)

#: A view's witness: (inputs with ONE first, as canonical ints; aux as a Montgomery FrVec, or
#: deferred when the view was synthesized with ``defer_bit_programs`` or ``defer_poseidon``).
Piece = tuple[list[int], fr.FrVec | DeferredAux]


@runtime_checkable
class BlockCircuit(Protocol):
    """A circuit that is a header followed by ``block_count()`` independent blocks."""

    circuit_id: str

    def synthesize(self, cs: ConstraintSystem) -> None: ...

    def block_count(self) -> int:
        """k, the number of blocks (challenges, sectors) after the header."""
        ...

    def view(self, blocks: Sequence[int]) -> Circuit:
        """The header followed by ``blocks`` (in that order) and nothing else."""
        ...


def view_witness(
    circuit: BlockCircuit, blocks: Sequence[int], options: SynthesisOptions = DEFAULT_OPTIONS
) -> Piece:
    """The witness of ``circuit.view(blocks)`` (what one worker process computes)."""
    cs = synthesize_witness(circuit.view(blocks), options)
    return cs.inputs, cs.aux_vector()


def groups(count: int, pieces: int) -> list[tuple[int, ...]]:
    """Blocks 0…count−1 cut into at most ``pieces`` consecutive groups of near-equal size."""
    pieces = max(1, min(pieces, count))
    bounds = np.linspace(0, count, pieces + 1).round().astype(int)
    return [tuple(range(lo, hi)) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True) if hi > lo]


def assemble(header: Piece, parts: Sequence[Piece]) -> Piece:
    """The whole circuit's witness from the header-only view and the views of consecutive
    block groups, in block order.

    Raises:
        InternalError: a view's header values differ from the header's — the circuit is not
            a block circuit after all (its blocks reach into each other), so no proof may be
            made from these pieces.
    """
    h_inputs, h_aux = header
    if isinstance(h_aux, DeferredAux):
        h_aux = h_aux.expand()  # a header is short: its values compare (and travel) as plain
    n_in, n_aux = len(h_inputs), len(h_aux)
    inputs = list(h_inputs)
    tails: list[fr.FrVec | DeferredAux] = [h_aux]
    for k, (p_inputs, p_aux) in enumerate(parts):
        tail = p_aux.tail(n_aux) if isinstance(p_aux, DeferredAux) else p_aux[n_aux:]
        head = p_aux.head(n_aux).expand() if isinstance(p_aux, DeferredAux) else p_aux[:n_aux]
        if p_inputs[:n_in] != h_inputs or not np.array_equal(head, h_aux):
            raise InternalError(f"block view {k} does not reproduce the circuit's header")
        inputs.extend(p_inputs[n_in:])
        tails.append(tail)
    return inputs, concat(tails)


def witness_in_blocks(
    circuit: BlockCircuit, pieces: int = 1, options: SynthesisOptions = DEFAULT_OPTIONS
) -> Piece:
    """The whole witness, built view by view in this process (the reference for the parallel
    path, and what a caller without a process pool uses)."""
    header = view_witness(circuit, (), options)
    parts = [view_witness(circuit, g, options) for g in groups(circuit.block_count(), pieces)]
    return assemble(header, parts)
