"""The bulk PoSt witness (a template learned from the gadgets) gives exactly the gadgets'
inputs and values, for every PoSt tree shape up to 32 GiB, with random positions; a template
that disagrees on its first use is never used; without deferred Poseidon the gadgets run."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from cuzk.circuits.filecoin import post_witness
from cuzk.circuits.filecoin.post import (
    FallbackPoStCircuit,
    SectorProof,
    pad_sectors,
    post_params,
    synthesize_sector,
)
from cuzk.circuits.filecoin.post_params import PoStParams
from cuzk.field import fr
from cuzk.gadgets.merkle import MerklePath, PathBatch
from cuzk.r1cs import SynthesisCache, SynthesisOptions, WitnessCS, synthesize_witness
from cuzk.r1cs.deferred import DeferredAux

DEFERRED = SynthesisOptions(defer_poseidon=True)


def _sector(params: PoStParams, rng: np.random.Generator, batch: bool) -> SectorProof:
    """Random values and random positions (the witness does not need them to hash up)."""

    def rand(n: int) -> list[int]:
        return fr.to_ints(fr.random(n, rng))

    arities = params.tree.arities
    paths = [
        MerklePath(
            rand(1)[0],
            [rand(a - 1) for a in arities],
            [int(rng.integers(0, a)) for a in arities],
            rand(1)[0],
        )  # fmt: skip
        for _ in range(params.challenge_count)
    ]
    comm_c, comm_r_last, comm_r = rand(3)
    return SectorProof(comm_r, comm_c, comm_r_last, PathBatch.of(paths) if batch else tuple(paths))


def _gadgets(params: PoStParams, sectors, options=DEFERRED):
    cs = WitnessCS(options)
    for s in sectors:
        synthesize_sector(cs, params, s)
    made = cs.aux_vector()
    return cs.inputs[1:], made.expand() if isinstance(made, DeferredAux) else made


@pytest.mark.parametrize("cid", ["wpost-2k", "winning-2k", "wpost-8m", "wpost-32g", "winning-32g"])
def test_bulk_witness_equals_the_gadgets(cid, rng):
    params = post_params(cid)
    sectors = [_sector(params, rng, batch=i % 2 == 0) for i in range(3)]
    made = post_witness.sectors_witness(params, sectors, DEFERRED, SynthesisCache())
    assert made is not None
    inputs, aux = made
    want_inputs, want_aux = _gadgets(params, sectors)
    assert inputs == want_inputs
    assert np.array_equal(aux.expand(), want_aux)


def test_a_circuit_takes_the_bulk_witness_through_its_system(rng):
    """FallbackPoStCircuit.synthesize in witness mode: the same vector either way, and the
    deferred runs where the gadgets would have recorded them."""
    params = post_params("wpost-2k")
    circuit = FallbackPoStCircuit(params, pad_sectors([_sector(params, rng, True)], params))
    bulk = synthesize_witness(circuit, DEFERRED, SynthesisCache())
    assert bulk._groups  # the bulk path ran
    key = (dataclasses.replace(params, sector_count=1), DEFERRED)
    gadgets = SynthesisCache()
    gadgets.memo(post_witness.Templates).learned[key] = None  # the gadgets, for the reference
    slow = synthesize_witness(circuit, DEFERRED, gadgets)
    assert not slow._groups
    assert bulk.inputs == slow.inputs
    assert np.array_equal(bulk.aux_vector().expand(), slow.aux_vector().expand())


def test_a_template_that_disagrees_is_never_used(rng, monkeypatch, caplog):
    cache = SynthesisCache()
    params = post_params("wpost-2k")
    sectors = [_sector(params, rng, True)]
    real = post_witness._apply

    def wrong(*args):
        inputs, aux = real(*args)
        aux.host[0, 0] ^= 1
        return inputs, aux

    monkeypatch.setattr(post_witness, "_apply", wrong)
    assert post_witness.sectors_witness(params, sectors, DEFERRED, cache) is None
    assert "disagrees with the gadgets" in caplog.text
    monkeypatch.setattr(post_witness, "_apply", real)
    assert post_witness.sectors_witness(params, sectors, DEFERRED, cache) is None  # for good


def test_paths_of_the_wrong_shape_leave_the_fault_to_the_gadgets(rng):
    """No bulk witness for them, and the template stays in use for good data."""
    cache = SynthesisCache()
    params = post_params("wpost-2k")
    good = _sector(params, rng, True)
    short = SectorProof(good.comm_r, good.comm_c, good.comm_r_last, good.inclusion_proofs[:-1])
    assert post_witness.sectors_witness(params, [short], DEFERRED, cache) is None
    assert post_witness.sectors_witness(params, [good], DEFERRED, cache) is not None


def test_without_deferred_poseidon_the_gadgets_run(rng):
    params = post_params("wpost-2k")
    sectors = [_sector(params, rng, True)]
    assert (
        post_witness.sectors_witness(params, sectors, SynthesisOptions(), SynthesisCache()) is None
    )
