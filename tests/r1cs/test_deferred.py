"""Deferred witnesses (:mod:`cuzk.r1cs.deferred`): recording SHA-256 compressions as bit-program
runs and making their values later gives exactly the witness the gadgets give, on real
Filecoin partitions and random compressions; and the vector bookkeeping (host segments, block
tails, concatenation) places every value where it belongs."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.backend.cpu import CpuBackend
from cuzk.circuits import open_statement
from cuzk.field import fr
from cuzk.gadgets import sha256_tape
from cuzk.groth16.prover import Assignment, stage
from cuzk.r1cs import SynthesisOptions, synthesize_shape, synthesize_witness
from cuzk.r1cs.bitprog import BitProgram
from cuzk.r1cs.blocks import witness_in_blocks
from cuzk.r1cs.deferred import DeferredAux, concat, group_runs

DEFER = SynthesisOptions(defer_bit_programs=True)


def _c1(seed: int) -> bytes:
    from cuzk.circuits.filecoin.seal import generate_c1

    return generate_c1(2048, seed).encode()


def _snap(seed: int) -> bytes:
    from cuzk.circuits.filecoin.snap_vanilla import generate_update

    return generate_update(2048, seed).encode()


@pytest.mark.parametrize("cid, make", [("porep-2k", _c1), ("snap-2k", _snap)])
def test_deferred_witness_equals_the_gadgets(cid, make, seed):
    circuit = open_statement(cid, payload=make(seed % 2**32)).circuit(0)
    plain = synthesize_witness(circuit)
    cs = synthesize_witness(circuit, DEFER)
    aux = cs.aux_vector()
    assert cs.inputs == plain.inputs and cs.num_aux == len(plain.aux)
    assert isinstance(aux, DeferredAux)
    if cid == "porep-2k":  # SHA-256 labels: most of the witness is deferred
        assert aux.deferred > 4 * len(aux.host)
    assert aux.deferred > 0
    assert np.array_equal(aux.expand(), fr.from_ints(plain.aux)), f"seed {seed}"


def test_block_views_carry_their_runs(seed):
    """A PoRep partition's challenge views, each deferred, reassembled in block order."""
    circuit = open_statement("porep-2k", payload=_c1(seed % 2**32)).circuit(0)
    plain = synthesize_witness(circuit)
    inputs, aux = witness_in_blocks(circuit, 2, DEFER)
    assert isinstance(aux, DeferredAux) and inputs == plain.inputs
    assert np.array_equal(aux.expand(), fr.from_ints(plain.aux))


def test_cpu_staging_of_a_deferred_witness(seed):
    """The prover's staging for a deferred aux (backend makes z, gathers the MSM scalars by
    the shape's z rows) gives the vectors the host staging gives."""
    circuit = open_statement("porep-2k", payload=_c1(seed % 2**32)).circuit(0)
    shape = synthesize_shape(circuit, "porep-2k")
    cs = synthesize_witness(circuit, DEFER)
    plain = synthesize_witness(circuit)
    backend = CpuBackend()
    inputs = fr.from_ints(cs.inputs)
    deferred = stage(Assignment(inputs, cs.aux_vector(), ()), shape, backend)
    host = stage(Assignment(inputs, fr.from_ints(plain.aux), ()), shape, backend)
    for name in ("z", "aux", "a_scalars", "b_scalars"):
        assert np.array_equal(getattr(deferred, name), getattr(host, name)), name


def _random_program(rng: np.random.Generator) -> BitProgram:
    """A SHA-256 compression tape for a random input pattern (constants, negations)."""
    codes = rng.choice([0, 1, 2, 2, 2, 3], size=768).astype(np.uint8)
    return sha256_tape.record(bytes(codes)).program


def test_segments_place_host_values_around_runs(rng):
    prog = _random_program(rng)
    n_aux = prog.n_aux
    gaps = rng.integers(0, 5, size=4)  # host values before each of three runs, and after
    starts, at = [], 0
    for g in gaps[:3]:
        at += int(g)
        starts.append(at)
        at += n_aux
    n = at + int(gaps[3])
    host = fr.random(int(gaps.sum()), rng)
    inputs = [rng.integers(0, 2, 768, dtype=np.uint8) for _ in starts]
    aux = group_runs(n, host, [(prog, s, i) for s, i in zip(starts, inputs, strict=True)])
    out = aux.expand()
    want_host = np.ones(n, bool)
    for s, i in zip(starts, inputs, strict=True):
        want_host[s : s + n_aux] = False
        bits = prog.run(i)[1 + 768 :]
        assert np.array_equal(fr.to_ints(out[s : s + n_aux]), bits.astype(int).tolist())
    assert np.array_equal(out[want_host], host)
    # concatenation shifts the second vector's runs; a tail renumbers from its offset
    both = concat([aux, host[:3], aux])
    assert np.array_equal(both.expand(), np.concatenate([out, host[:3], out]))
    head = int(gaps[0])
    assert np.array_equal(aux.tail(head).expand(), out[head:])


def test_overlapping_runs_are_refused(rng):
    from cuzk.errors import InternalError

    prog = _random_program(rng)
    runs = [(prog, 0, np.zeros(768, np.uint8)), (prog, prog.n_aux - 1, np.zeros(768, np.uint8))]
    aux = group_runs(2 * prog.n_aux - 1, fr.zeros(0), runs)
    with pytest.raises(InternalError):
        aux.expand()
