"""The synthetic circuit's bulk witness must be exactly what witness mode builds."""

from __future__ import annotations

import pytest

from cuzk.circuits.synthetic import MIN_CONSTRAINTS, SyntheticCircuit
from cuzk.field import fr
from cuzk.r1cs import BulkWitness, check_circuit, synthesize_witness


@pytest.mark.parametrize("target", [MIN_CONSTRAINTS, 300, 1000, 4099, 20_000])
def test_bulk_assignment_equals_witness_mode(target, rng):
    for seed in (int(rng.integers(0, 2**63)), 2**64 - 1):
        circuit = SyntheticCircuit(target, seed)
        assert isinstance(circuit, BulkWitness)
        cs = synthesize_witness(circuit)
        inputs, aux = circuit.assignment()
        assert inputs == cs.inputs
        assert fr.to_ints(aux) == cs.aux
        assert check_circuit(circuit).first_failure is None


def test_seeds_change_the_witness_not_the_shape(rng):
    seed = int(rng.integers(0, 2**63))
    a, b = SyntheticCircuit(2000, seed).assignment(), SyntheticCircuit(2000, seed + 1).assignment()
    assert len(a[1]) == len(b[1]) and len(a[0]) == len(b[0])
    assert a[0] != b[0] and not fr.equal(a[1], b[1])
