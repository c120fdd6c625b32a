"""Run one gadget through all three constraint-system modes and check they agree.

``synthesize_all(build)`` calls ``build(cs, values)`` in check mode and witness mode (with
values) and in shape mode (without), then asserts: the witness satisfies every constraint; check
and witness modes allocate the same values; the shape has the same counts, and its recorded
A/B/C rows (built with no values at all) are satisfied by that witness. That last point is what
ties the shape — what a parameter file fixes — to the values the prover computes.

``tampered(build, aux_index, new_value)`` reruns check mode with one allocated value replaced and
returns the first failing constraint's name: the negative tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.r1cs import CheckCS, ConstraintSystem, R1CSShape, ShapeCS, WitnessCS

Build = Callable[[ConstraintSystem, bool], Any]


@dataclass
class Run:
    check: CheckCS
    shape: R1CSShape
    witness: WitnessCS
    result: Any  # what build returned in check mode
    witness_result: Any  # ... and in witness mode

    @property
    def num_constraints(self) -> int:
        return self.check.num_constraints


def synthesize_all(build: Build) -> Run:
    check = CheckCS()
    result = build(check, True)
    assert check.is_satisfied(), f"unsatisfied: {check.first_failure}"
    witness = WitnessCS()
    witness_result = build(witness, True)
    assert witness.aux_ints() == check.aux, "witness and check modes allocated different values"
    assert witness.inputs == check.inputs
    scs = ShapeCS()
    build(scs, False)
    shape = scs.finish("test:gadget")
    assert shape.num_aux == witness.num_aux
    assert shape.num_inputs == len(witness.inputs)
    assert shape.num_constraints == check.num_constraints + shape.num_inputs
    z = fr.from_ints(witness.inputs + witness.aux_ints())
    bad = shape.first_unsatisfied(z)
    assert bad is None, f"shape row {bad} ({shape.constraint_name(bad)}) fails on the witness"
    return Run(check, shape, witness, result, witness_result)


class TamperCS(CheckCS):
    """CheckCS that replaces the value of one auxiliary variable as it is allocated."""

    def __init__(self, aux_index: int, new_value: Callable[[int], int]) -> None:
        super().__init__()
        self.aux_index = aux_index
        self.new_value = new_value

    def alloc(self, name, value):
        var = super().alloc(name, value)
        if var.index == self.aux_index:
            self.aux[-1] = self.new_value(self.aux[-1]) % R
        return var


def tampered(build: Build, aux_index: int, new_value: Callable[[int], int]) -> tuple[int, str]:
    """(index, name) of the first constraint a corrupted witness breaks; fails if none does."""
    cs = TamperCS(aux_index, new_value)
    build(cs, True)
    assert cs.first_failure is not None, f"corrupting aux {aux_index} went unnoticed"
    return cs.first_failure


def flip(v: int) -> int:
    """A bit's other value."""
    return 1 - v


def plus_one(v: int) -> int:
    return v + 1


class CountCS(ShapeCS):
    """Counts constraints without building them: ``needs_constraints = False`` tells gadgets to
    skip linear combinations, as a future counting mode for the 100M-constraint circuits
    would."""

    needs_constraints = False

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def enforce(self, name, a, b, c):
        self.count += 1


def bit_key(b: Any) -> tuple:
    """What identifies a gadget Boolean: a constant's value, or its variable, value and
    negation (two runs agree on a bit exactly when these do)."""
    if b.bit is None:
        return ("const", b.constant)
    return (b.bit.variable.key, b.bit.value, b.negated)
