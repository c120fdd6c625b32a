"""Batched equality checks: bellperson's ``MultiEq``.

``addmany`` proves "Σ operands = Σ 2^i result_bit_i" for each 32-bit addition. Each such
equality spans at most 36 bits, so several fit side by side in one field element: MultiEq shifts
each new equality past the bits already used and enforces the whole batch as one constraint
``lhs · 1 = rhs``. A batch is flushed when the next equality would reach 254 bits (Fr's capacity)
— *before* that equality joins, so the flush constraint lands right after the new sum's bit
allocations — and once more when the owner finishes (bellperson does it on ``Drop``, at the end of
each SHA-256 compression). Those flush points fix where the constraints sit in the R1CS.
"""

from __future__ import annotations

from collections.abc import Callable

from cuzk.gadgets.multipack import FR_CAPACITY
from cuzk.r1cs import ONE, ConstraintSystem, LinearCombination

AddInto = Callable[[dict[int, int], int], None]
"""Adds ``multiplier · side`` into a raw ``{key: coeff}`` dict: one side of an equality, built
only when a flush is actually read (never in witness mode)."""


class MultiEq:
    """Accumulates equalities of ``num_bits``-bit quantities into shared constraints."""

    def __init__(self, cs: ConstraintSystem) -> None:
        self.cs = cs
        self.ops = 0
        self.bits_used = 0
        self._pending: list[tuple[int, AddInto, AddInto]] = []

    def enforce_equal(self, num_bits: int, lhs: AddInto, rhs: AddInto) -> None:
        """Queue ``lhs = rhs`` (both < 2^num_bits), flushing first if it would not fit."""
        if FR_CAPACITY <= self.bits_used + num_bits:
            self._accumulate()
        assert FR_CAPACITY > self.bits_used + num_bits, "one equality wider than a field element"
        self._pending.append((1 << self.bits_used, lhs, rhs))
        self.bits_used += num_bits

    def finish(self) -> None:
        """Flush what is left (bellperson's ``Drop``)."""
        if self.bits_used > 0:
            self._accumulate()

    def _accumulate(self) -> None:
        pending = self._pending

        def side(index: int) -> Callable[[LinearCombination], LinearCombination]:
            def build(lc: LinearCombination) -> LinearCombination:
                for shift, *fns in pending:
                    fns[index](lc.terms, shift)
                return lc

            return build

        self.cs.enforce(f"multieq {self.ops}", side(0), ONE, side(1))
        self._pending = []
        self.bits_used = 0
        self.ops += 1
