"""Deferred witnesses (:mod:`cuzk.r1cs.deferred`): recording SHA-256 compressions as bit-program
runs and Poseidon hashes as preimage runs, and making their values later, gives exactly the
witness the gadgets give, on real Filecoin partitions and random compressions and preimages;
and the vector bookkeeping (host segments, block tails, concatenation) places every value where
it belongs, whatever the program kind."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.backend.cpu import CpuBackend
from cuzk.circuits import get_circuit, open_statement
from cuzk.field import fr
from cuzk.gadgets.poseidon import Strength, custom_tag
from cuzk.gadgets.poseidon.program import PoseidonProgram, poseidon_program
from cuzk.gadgets.sha256 import tape as sha256_tape
from cuzk.groth16.prover import Assignment, stage
from cuzk.r1cs import SynthesisOptions, synthesize_shape, synthesize_witness
from cuzk.r1cs.bitprog import BitProgram
from cuzk.r1cs.blocks import witness_in_blocks
from cuzk.r1cs.deferred import DeferredAux, concat, group_runs

DEFER = SynthesisOptions(defer_bit_programs=True)
#: Both program kinds deferred.
BOTH = SynthesisOptions(defer_bit_programs=True, defer_poseidon=True)


def _c1(seed: int) -> bytes:
    from cuzk.circuits.filecoin.seal import generate_c1

    return generate_c1(2048, seed).encode()


def _snap(seed: int) -> bytes:
    from cuzk.circuits.filecoin.snap_vanilla import generate_update

    return generate_update(2048, seed).encode()


def _circuit(cid: str, seed: int):  # a Filecoin partition circuit
    """Partition 0 of ``cid`` proving random data chosen by ``seed``."""
    if cid == "porep-2k":
        return open_statement(cid, payload=_c1(seed % 2**32)).circuit(0)
    if cid == "snap-2k":
        return open_statement(cid, payload=_snap(seed % 2**32)).circuit(0)
    from cuzk.circuits.filecoin.post import post_params
    from cuzk.circuits.filecoin.vanilla_json import random_request

    text, _ = random_request(post_params(cid), np.random.default_rng(seed))  # random sectors
    return open_statement(cid, payload=text.encode()).circuit(0)


def _kinds(aux: DeferredAux) -> set[str]:
    return {g.program.key.split(b":")[0].decode() for g in aux.groups}


@pytest.mark.parametrize(
    "cid, options, kinds",
    [
        ("porep-2k", DEFER, {"sha256"}),
        ("porep-2k", BOTH, {"sha256", "poseidon"}),
        ("snap-2k", BOTH, {"sha256", "poseidon"}),
        ("wpost-2k", BOTH, {"poseidon"}),
        ("winning-2k", BOTH, {"poseidon"}),
    ],
)
def test_deferred_witness_equals_the_gadgets(cid, options, kinds, seed):
    circuit = _circuit(cid, seed)
    plain = synthesize_witness(circuit)
    cs = synthesize_witness(circuit, options)
    aux = cs.aux_vector()
    assert cs.inputs == plain.inputs and cs.num_aux == plain.num_aux
    assert isinstance(aux, DeferredAux) and _kinds(aux) == kinds
    if cid == "porep-2k":  # SHA-256 labels: most of the witness is deferred
        assert aux.deferred > 4 * len(aux.host)
    if kinds == {"poseidon"}:  # PoSt: Merkle paths, nearly all Poseidon
        assert aux.deferred > 4 * len(aux.host)
    assert np.array_equal(aux.expand(), plain.aux_vector()), f"seed {seed}"


@pytest.mark.parametrize("cid, pieces", [("porep-2k", 2), ("wpost-2k", 2)])
def test_block_views_carry_their_runs(cid, pieces, seed):
    """A partition's block views (challenges, sectors), each deferred with both kinds,
    reassembled in block order."""
    circuit = _circuit(cid, seed)
    plain = synthesize_witness(circuit)
    inputs, aux = witness_in_blocks(circuit, pieces, BOTH)
    assert isinstance(aux, DeferredAux) and inputs == plain.inputs
    assert "poseidon" in _kinds(aux)
    assert np.array_equal(aux.expand(), plain.aux_vector())


def test_cpu_staging_of_a_deferred_witness(seed):
    """The prover's staging for a deferred aux (the backend makes z) gives the z the host
    staging gives, and so the same MSM scalars gathered from it by the shape's z rows."""
    circuit = open_statement("porep-2k", payload=_c1(seed % 2**32)).circuit(0)
    # The blank circuit's shape, as the engine makes it (a witness in shape mode turns the
    # SHA-256 templates off: the same rows, five times slower).
    shape = synthesize_shape(get_circuit("porep-2k"), "porep-2k")
    cs = synthesize_witness(circuit, BOTH)
    plain = synthesize_witness(circuit)
    backend = CpuBackend()
    inputs = fr.from_ints(cs.inputs)
    deferred = stage(Assignment(inputs, cs.aux_vector(), ()), shape, backend)
    host = stage(Assignment(inputs, plain.aux_vector(), ()), shape, backend)
    for name in ("z", "aux"):
        assert np.array_equal(getattr(deferred, name), getattr(host, name)), name
    for rows in (shape.a_z_rows, shape.b_z_rows):
        assert np.array_equal(backend.take(deferred.z, rows), backend.take(host.z, rows))


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


def _poseidon_runs(rng: np.random.Generator, program: PoseidonProgram, m: int) -> np.ndarray:
    return fr.random(m * program.arity, rng).reshape(m, program.arity, 4)


def test_mixed_program_kinds_place_every_value(rng):
    """Bit-program and Poseidon runs interleaved with host values: each run's values are its
    program's (checked one instance at a time), host values fill the rest, and concatenation
    and tails keep both kinds."""
    bits = _random_program(rng)
    hashes = poseidon_program(4, Strength.STANDARD, custom_tag(int(rng.integers(1, 257))))
    order = [bits, hashes, hashes, bits, hashes]
    gaps = rng.integers(0, 4, size=len(order) + 1)
    runs, at = [], 0
    for prog, g in zip(order, gaps[:-1], strict=True):
        at += int(g)
        inputs = (rng.integers(0, 2, 768, dtype=np.uint8) if prog is bits
                  else _poseidon_runs(rng, hashes, 1)[0])  # fmt: skip
        runs.append((prog, at, inputs))
        at += prog.n_aux
    n = at + int(gaps[-1])
    host = fr.random(int(gaps.sum()), rng)
    aux = group_runs(n, host, runs)
    assert {g.program.key for g in aux.groups} == {bits.key, hashes.key}
    out = aux.expand()
    is_host = np.ones(n, bool)
    for prog, start, inputs in runs:
        is_host[start : start + prog.n_aux] = False
        want = np.empty((prog.n_aux, 4), np.uint64)
        prog.expand(inputs[None], np.zeros(1, np.int64), want)
        assert np.array_equal(out[start : start + prog.n_aux], want)
    assert np.array_equal(out[is_host], host)
    both = concat([aux, host[:2], aux])
    assert np.array_equal(both.expand(), np.concatenate([out, host[:2], out]))
    first = int(gaps[0])
    assert np.array_equal(aux.tail(first).expand(), out[first:])
    cut = runs[2][1]  # the head up to the third run keeps two runs, one of each kind
    head = aux.head(cut)
    assert len(head.groups) == 2 and np.array_equal(head.expand(), out[:cut])


@pytest.mark.parametrize("arity, strength", [(2, Strength.STANDARD), (8, Strength.STANDARD),
                                             (11, Strength.STRENGTHENED)])  # fmt: skip
def test_poseidon_runs_are_the_gadgets_values(rng, arity, strength):
    """Each hash's run, expanded, is what the legacy gadget appends (its per-constraint Python),
    wherever the runs sit in the vector."""
    from cuzk.gadgets.num import AllocatedNum
    from cuzk.gadgets.poseidon import poseidon_hash
    from cuzk.r1cs import PYTHON_GADGETS, WitnessCS

    tag = custom_tag(int(rng.integers(1, 257)))
    program = poseidon_program(arity, strength, tag)
    m = 3
    inputs = _poseidon_runs(rng, program, m)
    starts = np.sort(rng.choice(5, m, replace=False)) + np.arange(m) * program.n_aux
    out = fr.random(int(starts[-1]) + program.n_aux + 2, rng)
    untouched = out.copy()
    program.expand(inputs, starts, out)
    covered = np.zeros(len(out), bool)
    for i, s in enumerate(starts):
        cs = WitnessCS(PYTHON_GADGETS)
        pre = [AllocatedNum.alloc(cs, v) for v in fr.to_ints(inputs[i])]
        digest = poseidon_hash(cs, pre, tag=tag, strength=strength)
        want = cs.aux[arity:]
        assert len(want) == program.n_aux and want[-1] == digest.value
        assert fr.to_ints(out[s : s + program.n_aux]) == want
        covered[s : s + program.n_aux] = True
    assert np.array_equal(out[~covered], untouched[~covered])


def test_poseidon_runs_refuse_wrong_inputs(rng):
    from cuzk.errors import InternalError

    program = poseidon_program(2, Strength.STANDARD, 3)
    out = np.zeros((program.n_aux, 4), np.uint64)
    with pytest.raises(InternalError):
        program.expand(fr.random(3, rng).reshape(1, 3, 4), np.zeros(1, np.int64), out)


def test_montgomery_chunks_interleave_with_ints_and_runs(rng):
    """Values appended as field elements (``extend_mont``), as ints and as deferred runs, in a
    random order: the host vector, the variables' indices and the expanded whole are those of
    appending every value as an int; ``out`` receives the same host values."""
    from cuzk.r1cs import WitnessCS

    program = poseidon_program(2, Strength.STANDARD, custom_tag(3))
    for deferring in (False, True):
        cs, ref = WitnessCS(), WitnessCS()
        kinds = 3 if deferring else 2
        order = [*range(kinds), *rng.integers(0, kinds, int(rng.integers(3, 9)))]
        for kind in rng.permutation(order):  # every kind at least once
            if kind == 0:
                for v in fr.to_ints(fr.random(int(rng.integers(1, 4)), rng)):
                    assert cs.alloc("x", v).key == ref.alloc("x", v).key
            elif kind == 1:
                chunk = fr.random(int(rng.integers(1, 6)), rng)
                first = cs.num_aux
                cs.extend_mont(chunk)
                keys = [ref.alloc("y", v).key for v in fr.to_ints(chunk)]
                assert keys == list(range(first, cs.num_aux))
            else:
                pre = fr.random(2, rng)
                start = cs.defer(program, pre)
                want = np.empty((program.n_aux, 4), np.uint64)
                program.expand(pre[None], np.zeros(1, np.int64), want)
                assert start == ref.num_aux
                for v in fr.to_ints(want):
                    ref.alloc("z", v)
        assert cs.num_aux == ref.num_aux
        whole = ref.aux_vector()
        aux = cs.aux_vector()
        out = np.empty((cs.host_len, 4), np.uint64)
        again = cs.aux_vector(out)
        if isinstance(aux, DeferredAux):
            assert np.array_equal(aux.expand(), whole)
            assert np.array_equal(again.host, aux.host) and again.host is out
            with pytest.raises(ValueError, match="deferred"):
                cs.aux_ints()
        else:
            assert np.array_equal(aux, whole) and again is out and np.array_equal(out, whole)
            assert cs.aux_ints() == ref.aux_ints() == fr.to_ints(whole)
        with pytest.raises(ValueError, match="out must be"):
            cs.aux_vector(np.empty((cs.host_len + 1, 4), np.uint64))
