"""Compact shapes give exactly the matrices and names of the plain row lists.

Every row of A, B and C (columns, their order, coefficients), every name and random-z
evaluations are compared with :mod:`tests.r1cs.reference`, which records rows the pre-compact
way and runs SHA-256 through the gadget (so replayed templates are covered). Fast circuits in
the default run; the Filecoin 2 KiB circuits are ``heavy``.
"""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.field import fr
from cuzk.gadgets.boolean import AllocatedBit, Boolean
from cuzk.gadgets.sha256 import sha256
from cuzk.gadgets.sha256 import template as sha256_shape_tape
from cuzk.r1cs import PROCESS_CACHE, ConstraintSystem, R1CSShape, synthesize_shape
from tests.r1cs.circuits import CubeCircuit, RandomCircuit
from tests.r1cs.reference import assert_same_rows, plain_evaluate, reference


def _random_z(rng: np.random.Generator, n: int) -> fr.FrVec:
    z = fr.random(n, rng)
    z[0] = fr.from_int(1)
    return z


def _check(circuit, circuit_id: str, rng: np.random.Generator) -> R1CSShape:
    shape = synthesize_shape(circuit, circuit_id)
    cs, plain = reference(circuit)
    assert_same_rows(shape, cs, plain)
    z = _random_z(rng, shape.num_variables)
    for label, got, want in zip("abc", shape.evaluate(z), plain_evaluate(plain, z), strict=True):
        assert np.array_equal(got, want), label
    return shape


class Sha256Circuit:
    """Messages of allocated (some negated) bits hashed under nested namespaces: several
    compressions of a few patterns, so templates are recorded, verified and replayed."""

    def __init__(self, seed: int, messages: int = 3) -> None:
        self.rng = np.random.default_rng(seed)
        self.negated = self.rng.integers(0, 2, 8 * 64).astype(bool).tolist()
        self.messages = messages

    def synthesize(self, cs: ConstraintSystem) -> None:
        for k in range(self.messages):
            with cs.namespace(f"message {k}"):
                bits = [
                    Boolean(AllocatedBit.alloc(cs, None, f"bit {i}"), n)
                    for i, n in enumerate(self.negated)
                ]
                digest = sha256(cs, bits, "hash")
                cs.enforce("first digest bit", digest[0].lc(3), 1, digest[1].lc())


@pytest.mark.parametrize("n", range(4))
def test_random_circuits(rng, seed, n):
    _check(RandomCircuit(seed + n, num_constraints=200), "test:random", rng)


def test_cube_circuit(rng):
    shape = _check(CubeCircuit(3), "test:cube", rng)
    assert shape.a.coeff_ids.dtype == np.uint8 and shape.a.indices.dtype == np.uint32


def test_sha256_templates(rng, seed, monkeypatch):
    PROCESS_CACHE.clear()
    try:
        _check(Sha256Circuit(seed), "test:sha256", rng)
        assert PROCESS_CACHE.memo(sha256_shape_tape.Templates), "no template was replayed"
        assert all(t is not None for t in PROCESS_CACHE.memo(sha256_shape_tape.Templates).values())
    finally:
        PROCESS_CACHE.clear()


@pytest.mark.heavy
@pytest.mark.parametrize("circuit_id", ["porep-2k", "snap-2k", "wpost-2k", "winning-2k"])
def test_filecoin_2k_circuits(rng, circuit_id):
    """Minutes and ~4 GB each (the reference keeps Python lists and runs every SHA-256
    compression through the gadget)."""
    from cuzk.circuits import get_circuit

    _check(get_circuit(circuit_id), circuit_id, rng)
