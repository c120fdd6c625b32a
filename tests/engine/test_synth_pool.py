"""Witnesses from worker processes must equal the ones built in this process."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.circuits import open_statement
from cuzk.circuits.filecoin.post import post_params
from cuzk.circuits.filecoin.vanilla_json import random_request
from cuzk.circuits.synthetic import SyntheticCircuit
from cuzk.engine.synth_pool import SynthesisPool
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.r1cs import SynthesisOptions, synthesize_witness
from cuzk.r1cs.deferred import DeferredAux


def _blank(cid: str):
    """The circuit without a witness: a worker's synthesis fails with BadInput."""
    if cid.startswith("porep"):
        from cuzk.circuits.filecoin.porep import blank_circuit

        return blank_circuit(cid)
    from cuzk.circuits.filecoin.post import FallbackPoStCircuit

    return FallbackPoStCircuit(post_params(cid))


PLAIN = SynthesisOptions()
SHA256 = SynthesisOptions(defer_bit_programs=True)
POSEIDON = SynthesisOptions(defer_poseidon=True)


@pytest.fixture(scope="module")
def synth_pool():
    pool = SynthesisPool(1)
    yield pool
    pool.close()


def test_remote_witness_equals_local(synth_pool, seed):
    text, _ = random_request(post_params("wpost-2k"), np.random.default_rng(seed))
    payload = text.encode()
    local = synthesize_witness(open_statement("wpost-2k", payload=payload).circuit(0))
    inputs, aux = synth_pool.synthesize(
        open_statement("wpost-2k", payload=payload).circuit(0), PLAIN
    )
    assert inputs == local.inputs
    assert fr.to_ints(aux) == local.aux_ints()
    # seeded (bulk-witness) circuits take the same path
    seeded = open_statement("synthetic:1000", seeds=(seed % 2**63, 5)).circuit(1)
    inputs, aux = synth_pool.synthesize(seeded, PLAIN)
    local = synthesize_witness(open_statement("synthetic:1000", seeds=(seed % 2**63, 5)).circuit(1))
    assert inputs == local.inputs and fr.to_ints(aux) == local.aux_ints()


def test_worker_errors_come_back_as_they_were_raised(synth_pool):
    with pytest.raises(BadInput):
        synth_pool.synthesize(_blank("wpost-2k"), PLAIN)  # a witness without values
    inputs, _ = synth_pool.synthesize(SyntheticCircuit(300, seed=1), PLAIN)  # the worker lives on
    assert inputs[0] == 1


def test_block_witness_from_views_equals_the_whole(synth_pool):
    """A 2 KiB PoRep partition (two challenges, one block each) synthesized as a header view
    and one view per challenge, in the pool, reassembled: the same witness as in one piece."""
    from cuzk.circuits.filecoin.seal import generate_c1

    payload = generate_c1(2048, 11).encode()
    circuit = open_statement("porep-2k", payload=payload).circuit(0)
    assert circuit.block_count() == 2
    local = synthesize_witness(circuit)
    inputs, aux = synth_pool.synthesize_blocks(circuit, PLAIN)
    assert inputs == local.inputs
    assert np.array_equal(aux, local.aux_vector())
    # deferred: the SHA-256 runs come back as runs, and expand to the same vector
    inputs, deferred = synth_pool.synthesize_blocks(circuit, SHA256)
    assert isinstance(deferred, DeferredAux) and deferred.deferred > len(deferred.host)
    assert inputs == local.inputs
    assert np.array_equal(deferred.expand(), local.aux_vector())
    with pytest.raises(BadInput):  # a failing view fails the whole, and frees the others
        synth_pool.synthesize_blocks(_blank("porep-2k"), PLAIN)


def test_post_sectors_are_blocks_too(synth_pool, seed):
    """WindowPoSt: the header is ONE alone and each sector a block."""
    text, _ = random_request(post_params("wpost-2k"), np.random.default_rng(seed))
    payload = text.encode()
    circuit = open_statement("wpost-2k", payload=payload).circuit(0)
    local = synthesize_witness(circuit)
    count = circuit.block_count()
    assert count == 2
    inputs, aux = synth_pool.synthesize_blocks(circuit, PLAIN)
    assert inputs == local.inputs
    assert np.array_equal(aux, local.aux_vector())
    # Poseidon hashes deferred: their runs come back from the views and expand in place
    inputs, deferred = synth_pool.synthesize_blocks(circuit, POSEIDON)
    assert isinstance(deferred, DeferredAux) and deferred.deferred > len(deferred.host)
    assert inputs == local.inputs
    assert np.array_equal(deferred.expand(), local.aux_vector())


@pytest.mark.parametrize("failure", ["open", "assemble"])
def test_block_witness_frees_every_segment_when_gathering_fails(synth_pool, monkeypatch, failure):
    """The workers' shared-memory segments are removed however gathering them fails: a segment
    that will not open (the second here), or an error while assembling the views."""
    import os
    from multiprocessing import shared_memory

    from cuzk.circuits.filecoin.seal import generate_c1
    from cuzk.engine import synth_pool as module

    circuit = open_statement("porep-2k", payload=generate_c1(2048, 11).encode()).circuit(0)
    names: list[str] = []
    real = shared_memory.SharedMemory

    def opening(name: str, *args, **kwargs):
        names.append(name)
        if failure == "open" and len(names) == 2:
            raise OSError(24, "Too many open files")
        return real(name, *args, **kwargs)

    def assembling(*args, **kwargs):
        raise MemoryError("no room for the partition")

    monkeypatch.setattr(module.shared_memory, "SharedMemory", opening)
    if failure == "assemble":
        monkeypatch.setattr(module, "assemble", assembling)
    with pytest.raises(OSError if failure == "open" else MemoryError):
        synth_pool.synthesize_blocks(circuit, SHA256)
    monkeypatch.undo()
    assert len(names) == 3 + (failure == "open")  # header + two challenges (+ one retry)
    assert not [n for n in set(names) if os.path.exists(f"/dev/shm/{n.lstrip('/')}")]


def _caches_in_worker() -> tuple[int, int]:
    """(memos in the worker's own synthesis cache, memos in its process default), read in a
    pool worker."""
    from cuzk.engine import synth_pool as module
    from cuzk.r1cs import PROCESS_CACHE

    assert module._cache is not None and module._cache is not PROCESS_CACHE
    return len(module._cache._memos), len(PROCESS_CACHE._memos)


def test_a_worker_synthesizes_with_its_own_cache(synth_pool, seed):
    """What a worker's syntheses learn goes into the cache the worker made, not the default."""
    text, _ = random_request(post_params("wpost-2k"), np.random.default_rng(seed))
    synth_pool.synthesize(open_statement("wpost-2k", payload=text.encode()).circuit(0), PLAIN)
    own, default = synth_pool._pool.submit(_caches_in_worker).result()
    assert own and not default
