"""The three synthesis modes agree with each other and with direct evaluation."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.r1cs import (
    CheckCS,
    R1CSShape,
    ShapeCS,
    check_circuit,
    synthesize_shape,
    synthesize_witness,
)
from cuzk.r1cs.cache import ShapeCache
from cuzk.r1cs.lc import LinearCombination, resolve
from tests.r1cs.circuits import CubeCircuit, RandomCircuit


class RecordingCS(CheckCS):
    """Keeps every resolved linear combination, to evaluate constraints the slow, obvious way."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[LinearCombination, LinearCombination, LinearCombination]] = []

    def enforce(self, name, a, b, c):
        self.rows.append((resolve(a), resolve(b), resolve(c)))


def _z(cs) -> fr.FrVec:
    return fr.from_ints(cs.inputs + cs.aux)


def test_csr_evaluation_equals_linear_combination_evaluation(seed):
    circuit = RandomCircuit(seed)
    shape = synthesize_shape(circuit, "test:random")
    rec = RecordingCS()
    circuit.synthesize(rec)
    a, b, c = shape.evaluate(_z(rec))
    n_circuit = len(rec.rows)
    for i, row in enumerate(rec.rows):
        for got, lc in zip((a, b, c), row, strict=True):
            assert fr.to_int(got[i]) == rec._eval(lc), f"row {i} (seed {seed})"
    # Appended input rows: A = input_i, B = C = 0.
    for i in range(shape.num_inputs):
        assert fr.to_int(a[n_circuit + i]) == rec.inputs[i]
        assert fr.to_int(b[n_circuit + i]) == 0 and fr.to_int(c[n_circuit + i]) == 0


def test_shape_counts_and_density():
    shape = synthesize_shape(CubeCircuit(3), "test:cube")
    assert shape.num_inputs == 2 and shape.num_aux == 3
    assert shape.num_constraints == 3 + 2  # three constraints + one row per input
    # x appears in A (square, cube), x^2 in A (cube); x^3 only in A of "sum".
    assert shape.a_aux_density.tolist() == [True, True, True]
    # B holds x (square, cube) and ONE ("sum"); not y, x^2 or x^3.
    assert shape.b_input_density.tolist() == [True, False]
    assert shape.b_aux_density.tolist() == [True, False, False]
    assert shape.names[0] == "cube/square" and shape.names[2] == "sum"
    assert shape.names[-1] == "input 1 constraint"


def test_witness_mode_builds_no_linear_combinations(monkeypatch):
    def boom(*_a, **_k):
        raise AssertionError("witness mode resolved a linear combination")

    monkeypatch.setattr("cuzk.r1cs.system.resolve", boom)
    cs = synthesize_witness(CubeCircuit(5))
    assert cs.inputs == [1, 5**3 + 5 + 5] and cs.aux == [5, 25, 125]


def test_check_mode_names_first_unsatisfied_constraint():
    assert check_circuit(CubeCircuit(11)).is_satisfied()
    cs = check_circuit(CubeCircuit(11, cheat=True))
    assert cs.first_failure == (1, "cube/cube")


def test_bulk_check_agrees_with_check_mode(seed):
    rng_x = seed % R
    shape = synthesize_shape(CubeCircuit(rng_x), "test:cube")
    good = synthesize_witness(CubeCircuit(rng_x))
    assert shape.first_unsatisfied(_z(good)) is None
    bad = synthesize_witness(CubeCircuit(rng_x, cheat=True))
    row = shape.first_unsatisfied(_z(bad))
    assert row == 1 and shape.constraint_name(row) == "cube/cube"


def test_evaluate_rejects_wrong_length():
    shape = synthesize_shape(CubeCircuit(1), "test:cube")
    with pytest.raises(ValueError, match="variables"):
        shape.evaluate(fr.zeros(3))


def test_save_load_round_trip(tmp_path, seed):
    circuit = RandomCircuit(seed)
    shape = synthesize_shape(circuit, "test:random")
    shape.save(tmp_path / "s")
    loaded = R1CSShape.load(tmp_path / "s")
    assert (loaded.num_inputs, loaded.num_aux) == (shape.num_inputs, shape.num_aux)
    assert loaded.names == shape.names
    z = _z(synthesize_witness(circuit))
    for x, y in zip(shape.evaluate(z), loaded.evaluate(z), strict=True):
        assert np.array_equal(x, y)


def test_load_refuses_broken_directory(tmp_path):
    (tmp_path / "meta.json").write_text("{not json")
    with pytest.raises(ValueError, match="not a usable shape"):
        R1CSShape.load(tmp_path)


def test_cache_synthesizes_once(tmp_path, monkeypatch):
    cache = ShapeCache(tmp_path)
    first = cache.get("test:cube", CubeCircuit(2))
    monkeypatch.setattr("cuzk.r1cs.cache.synthesize_shape", lambda *a: pytest.fail("resynth"))
    again = cache.get("test:cube", CubeCircuit(2))
    assert again.num_constraints == first.num_constraints


def test_transpose_matches_dense(seed):
    shape = synthesize_shape(RandomCircuit(seed), "test:random")
    m = shape.a
    t = m.transpose()
    dense = np.zeros((m.num_rows, m.num_cols), dtype=object)
    coeffs = fr.to_ints(m.coeffs)
    for i in range(m.num_rows):
        for k in range(m.indptr[i], m.indptr[i + 1]):
            dense[i, m.indices[k]] = (dense[i, m.indices[k]] + coeffs[k]) % R
    dense_t = np.zeros((m.num_cols, m.num_rows), dtype=object)
    t_coeffs = fr.to_ints(t.coeffs)
    for j in range(t.num_rows):
        for k in range(t.indptr[j], t.indptr[j + 1]):
            dense_t[j, t.indices[k]] = (dense_t[j, t.indices[k]] + t_coeffs[k]) % R
    assert (dense.T == dense_t).all()


def test_shape_mode_never_asks_for_values():
    cs = ShapeCS()

    def no_value():
        raise AssertionError("shape mode computed a value")

    cs.alloc("x", no_value)
    cs.alloc_input("y", no_value)
    assert (cs.num_aux, cs.num_inputs) == (1, 2)


def test_witness_synthesis_pauses_cyclic_gc_and_restores_it():
    """The collector is off inside a witness synthesis, back on after it (also after an error),
    stays off when it was off before, and one synthesis ending does not re-enable it under
    another still running (nested here, as two threads would overlap)."""
    import gc

    from cuzk.r1cs.system import gc_paused

    seen = []

    class Probe:
        def synthesize(self, cs):
            seen.append(gc.isenabled())
            cs.alloc("x", 3)

    class Failing:
        def synthesize(self, cs):
            raise BadInput("no")

    assert gc.isenabled()
    try:
        synthesize_witness(Probe())
        assert seen == [False] and gc.isenabled()
        with pytest.raises(BadInput):
            synthesize_witness(Failing())
        assert gc.isenabled()
        with gc_paused():
            synthesize_witness(Probe())
            assert not gc.isenabled()
        assert gc.isenabled()
        gc.disable()
        synthesize_witness(Probe())
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_syntheses_still_collect_cycles():
    """Syntheses that overlap without a break keep the collector off; every
    GC_EVERY_SYNTHESES of them ending, a full collection runs anyway."""
    import gc
    import weakref

    from cuzk.r1cs.system import GC_EVERY_SYNTHESES, gc_paused

    class Cycle:
        pass

    assert gc.isenabled()
    try:
        with gc_paused():  # another thread's synthesis, running throughout
            cycle = Cycle()
            cycle.me = cycle
            alive = weakref.ref(cycle)
            del cycle
            for _ in range(GC_EVERY_SYNTHESES - 1):
                with gc_paused():
                    pass
            assert alive() is not None and not gc.isenabled()
            with gc_paused():
                pass
            assert alive() is None and not gc.isenabled()
        assert gc.isenabled()
    finally:
        gc.enable()
