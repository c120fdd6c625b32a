"""Repeated blocks: shape mode replays blocks 3… from block 0 when blocks 0–2 follow one
affine law, and the result is exactly what running every block gives (row by row against the
plain-list reference, which runs every block); anything else runs every block."""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import pytest

from cuzk.field import fr
from cuzk.gadgets.boolean import AllocatedBit, Boolean
from cuzk.gadgets.sha256 import compression, iv
from cuzk.r1cs import (
    ONE,
    PROCESS_CACHE,
    ConstraintSystem,
    repeat,
    synthesize_shape,
    synthesize_witness,
)
from cuzk.r1cs.system import DEFAULT_OPTIONS, SynthesisOptions
from tests.r1cs.reference import assert_same_rows, plain_evaluate, reference

#: Every block run, none replayed: the reference the replay is compared with.
NO_REPLAY = SynthesisOptions(replay_blocks=False)


@dataclasses.dataclass
class BlocksCircuit:
    """Shared variables, per-block slices of an earlier vector, per-block inputs and aux, a
    SHA-256 compression (replayed template) and nested namespaces in every block.

    ``twist`` breaks the affine law from block ``at`` on: "rows" adds a constraint, "coeff"
    changes a coefficient, "slice" uses a variable at a non-affine offset, "name" names a row
    outside the block's namespace."""

    count: int = 6
    twist: str = ""
    at: int = 2
    sha: bool = True
    calls: int = 0

    def synthesize(self, cs: ConstraintSystem) -> None:
        shared = cs.alloc("shared", 3)
        vec = [cs.alloc(f"v{j}", j + 1) for j in range(3 * self.count + 10)]
        cs.enforce("shared square", shared, shared, lambda lc: lc.add_term(ONE, 9))

        def body(i: int) -> None:
            self.calls += 1
            twisted = self.twist if i >= self.at else ""
            x = cs.alloc_input("x", i + 2)
            with cs.namespace("inner"):
                y = cs.alloc("y", 5)
                k = 2 if twisted != "coeff" else 3
                v = vec[3 * i + 1] if twisted != "slice" else vec[i * i % len(vec)]
                cs.enforce("mix", lambda lc: lc.add_term(x).add_term(v, k), shared,
                           lambda lc: lc.add_term(y).add_term(shared, 7))  # fmt: skip
                if twisted == "rows":
                    cs.enforce("extra", y, y, y)
            if self.sha:
                bits = [Boolean(AllocatedBit.alloc(cs, None, f"b{j}")) for j in range(512)]
                out = compression(cs, bits, iv(), "sha")
                cs.enforce("digest bit", out[0].bits[0].lc(), ONE, out[1].bits[3].lc())
            if twisted == "name":
                cs._path.append("elsewhere")
                cs.enforce("outside", x, ONE, x)
                cs._path.pop()

        repeat(cs, self.count, "block {}".format, body)
        cs.enforce("after", vec[-1], ONE, vec[-1])


@pytest.fixture(autouse=True)
def templates():
    PROCESS_CACHE.clear()
    yield
    PROCESS_CACHE.clear()


def _compare(circuit: BlocksCircuit, rng, options: SynthesisOptions = DEFAULT_OPTIONS) -> None:
    shape = synthesize_shape(circuit, "test:blocks", options)
    cs, plain = reference(dataclasses.replace(circuit, calls=0))
    assert_same_rows(shape, cs, plain)
    z = fr.random(shape.num_variables, rng)
    for got, want in zip(shape.evaluate(z), plain_evaluate(plain, z), strict=True):
        assert np.array_equal(got, want)


@pytest.mark.parametrize("count", [4, 7])
def test_affine_blocks_are_replayed_exactly(rng, count):
    circuit = BlocksCircuit(count)
    _compare(circuit, rng)
    assert circuit.calls == 3  # blocks 3… came from block 0


@pytest.mark.parametrize("twist", ["rows", "coeff", "slice", "name"])
def test_broken_law_runs_every_block(rng, twist, caplog):
    circuit = BlocksCircuit(6, twist, at=2, sha=False)
    with caplog.at_level(logging.WARNING, logger="cuzk.r1cs.repeat"):
        _compare(circuit, rng)
    assert circuit.calls == 6 and "every block runs" in caplog.text


def test_a_law_broken_after_block_2_is_the_callers_promise(rng):
    """Three blocks pin the law; a body whose structure changes later is outside the
    contract — documented, and shown here so a change of MIN_BLOCKS/three-block rule is
    deliberate."""
    circuit = BlocksCircuit(5, "rows", at=3, sha=False)
    shape = synthesize_shape(circuit, "test:blocks")
    cs, _ = reference(dataclasses.replace(circuit, calls=0))
    assert shape.num_constraints == len(cs.names) - 2


def test_other_modes_and_small_counts_run_every_block(monkeypatch, rng):
    circuit = BlocksCircuit(6, sha=False)
    w = synthesize_witness(circuit)
    assert circuit.calls == 6 and len(w.inputs) == 7
    small = BlocksCircuit(3, sha=False)
    synthesize_shape(small)
    assert small.calls == 3
    off = BlocksCircuit(6, sha=False)
    _compare(off, rng, NO_REPLAY)
    assert off.calls == 6


def _same_shape(a, b) -> None:
    assert (a.num_inputs, a.num_aux, a.num_constraints) == (
        b.num_inputs,
        b.num_aux,
        b.num_constraints,
    )
    for x, y in zip((a.a, a.b, a.c), (b.a, b.b, b.c), strict=True):
        assert np.array_equal(x.indptr, y.indptr) and np.array_equal(x.indices, y.indices)
        assert np.array_equal(x.coeffs, y.coeffs)
    assert a.names == b.names


def _replayed_vs_run(circuit_factory, monkeypatch) -> None:
    replayed = synthesize_shape(circuit_factory(), "t")
    _same_shape(replayed, synthesize_shape(circuit_factory(), "t", NO_REPLAY))


def test_window_post_sectors(monkeypatch):
    from cuzk.circuits.filecoin.post import FallbackPoStCircuit, post_params

    p = dataclasses.replace(post_params("wpost-2k"), sector_count=6)
    _replayed_vs_run(lambda: FallbackPoStCircuit(p), monkeypatch)


@pytest.mark.heavy
def test_porep_challenges(monkeypatch):
    """PoRep at 2 KiB with 5 challenges (~6.7M constraints; two minutes, ~2 GB)."""
    from cuzk.circuits.filecoin.porep import StackedCircuit, porep_params

    p = dataclasses.replace(porep_params("porep-2k"), challenge_count=5)
    _replayed_vs_run(lambda: StackedCircuit(p), monkeypatch)
