"""Block circuits (:mod:`cuzk.r1cs.blocks`): a witness assembled from views equals the whole
circuit's, and a view that does not reproduce the header is refused."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pytest

from cuzk.errors import InternalError
from cuzk.field import fr
from cuzk.r1cs import ConstraintSystem, synthesize_witness
from cuzk.r1cs.blocks import BlockCircuit, assemble, groups, witness_in_blocks


@dataclass(frozen=True)
class Chain:
    """A header (one input, two aux) and one block per value: an input, three aux and a
    constraint tying the block to the header."""

    values: tuple[int, ...]
    header: int = 5
    circuit_id: str = "test:chain"

    def block_count(self) -> int:
        return len(self.values)

    def view(self, blocks: Sequence[int]) -> Chain:
        return Chain(tuple(self.values[i] for i in blocks), self.header)

    def synthesize(self, cs: ConstraintSystem) -> None:
        h = cs.alloc_input("h", self.header)
        h2 = cs.alloc("h2", self.header * self.header)
        cs.alloc("h3", self.header + 1)
        cs.enforce("h2", h, h, h2)
        for i, v in enumerate(self.values):
            x = cs.alloc_input(f"x{i}", v)
            y = cs.alloc(f"y{i}", v * self.header)
            cs.alloc(f"z{i}", v + 1)
            cs.alloc(f"w{i}", v * v)
            cs.enforce(f"y{i}", x, h, y)


def test_groups_cover_every_block_in_order() -> None:
    for count in (1, 2, 7, 18):
        for pieces in (1, 3, 16, 40):
            gs = groups(count, pieces)
            assert [b for g in gs for b in g] == list(range(count))
            assert len(gs) == min(count, pieces)
            assert max(map(len, gs)) - min(map(len, gs)) <= 1


@pytest.mark.parametrize("pieces", [1, 2, 5, 9])
def test_views_assemble_to_the_whole(rng, pieces) -> None:
    circuit = Chain(tuple(int(v) for v in rng.integers(0, 2**60, 9)))
    assert isinstance(circuit, BlockCircuit)
    whole = synthesize_witness(circuit)
    inputs, aux = witness_in_blocks(circuit, pieces)
    assert inputs == whole.inputs
    assert np.array_equal(aux, fr.from_ints(whole.aux))


def test_a_view_with_another_header_is_refused(rng) -> None:
    circuit = Chain(tuple(int(v) for v in rng.integers(0, 2**60, 3)))
    header = synthesize_witness(circuit.view(()))
    wrong = synthesize_witness(Chain(circuit.values, header=6).view((0,)))
    with pytest.raises(InternalError, match="header"):
        assemble(
            (header.inputs, fr.from_ints(header.aux)),
            [(wrong.inputs, fr.from_ints(wrong.aux))],
        )
