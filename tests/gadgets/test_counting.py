"""Gadgets run in a counting mode (no values, no linear combinations) and count what shape mode
records: the hook a bounded-memory counter for the big PoSt/PoRep circuits needs."""

from __future__ import annotations

import time

from cuzk.gadgets.boolean import AllocatedBit, Boolean
from cuzk.gadgets.merkle import TreeShape
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.por import PathLevel, por
from cuzk.gadgets.sha256 import sha256
from cuzk.r1cs import ShapeCS
from tests.gadgets.helpers import CountCS


def _por(cs, shape: TreeShape) -> None:
    root = AllocatedNum.alloc(cs, None)
    por(cs, None, [PathLevel([None] * (a - 1), None) for a in shape.arities], shape, root, True)


def _sha(cs) -> None:
    sha256(cs, [Boolean(AllocatedBit.alloc(cs, None)) for _ in range(512)])


def test_counting_mode_agrees_with_shape_mode():
    for build in (lambda cs: _por(cs, TreeShape(1024, 8, 8, 2)), _sha):
        shape, count = ShapeCS(), CountCS()
        build(shape)
        t = time.perf_counter()
        build(count)
        dt = time.perf_counter() - t
        assert count.count == len(shape.names)
        assert count.num_aux == shape.num_aux and count.num_inputs == shape.num_inputs
        print(f"{count.count} constraints counted in {dt * 1e3:.0f} ms")
