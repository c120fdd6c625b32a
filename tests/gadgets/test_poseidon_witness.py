"""Poseidon in witness mode from the numba kernel (cuzk.gadgets.poseidon.witness): the values
appended and the digest returned must be exactly the legacy gadget's, for every arity Filecoin
uses, both strengths and any tag; a kernel that disagrees is refused after its first hash."""

from __future__ import annotations

import random

import numpy as np
import pytest

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.poseidon import Strength, custom_tag, poseidon_hash, witness
from cuzk.gadgets.poseidon import circuit as poseidon_circuit
from cuzk.r1cs import DEFAULT_OPTIONS, PROCESS_CACHE, CheckCS, SynthesisOptions, WitnessCS

#: The kernel, used from the first hash on (its values are compared here instead).
UNCHECKED = SynthesisOptions(verify_first_use=False)
#: The gadget (SHA-256 tapes stay as they are: these tests are about Poseidon).
GADGET = SynthesisOptions(poseidon_kernel=False)


@pytest.fixture(autouse=True)
def fresh_checks():
    PROCESS_CACHE.clear()
    yield
    PROCESS_CACHE.clear()


def _run(
    values: list[int], kernel: bool, options: SynthesisOptions = UNCHECKED, **kw
) -> tuple[list[int], AllocatedNum]:
    cs = WitnessCS(options if kernel else GADGET)
    cs.alloc("unrelated", 12345)  # the digest's variable must be counted from the right base
    digest = poseidon_hash(cs, [AllocatedNum.alloc(cs, v) for v in values], **kw)
    aux = cs.aux_vector()  # the kernel's values stay Montgomery: read the whole vector back
    assert isinstance(aux, np.ndarray) and len(aux) == cs.num_aux
    return fr.to_ints(aux), digest


@pytest.mark.parametrize("arity", [1, 2, 4, 8, 11, 16])
@pytest.mark.parametrize("strength", list(Strength))
def test_kernel_values_equal_the_gadget(arity: int, strength: Strength, seed: int) -> None:
    rnd = random.Random(seed)
    for values in ([rnd.randrange(R) for _ in range(arity)], [0] * arity, [R - 1] * arity):
        aux, digest = _run(values, True, strength=strength)
        ref_aux, ref_digest = _run(values, False, strength=strength)
        assert aux == ref_aux, f"arity {arity} {strength} seed {seed}"
        assert (digest.variable.key, digest.value) == (ref_digest.variable.key, ref_digest.value)


def test_custom_tag(seed: int) -> None:
    values = [random.Random(seed).randrange(R) for _ in range(4)]
    tag = custom_tag(7)
    assert _run(values, True, tag=tag)[0] == _run(values, False, tag=tag)[0]


def test_first_use_is_checked_then_the_kernel_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def counting(cs, preimage, tag, strength, gadget):
        calls.append(1)
        return real(cs, preimage, tag, strength, lambda: (calls.append("gadget"), gadget())[1])

    real = witness.hash_witness
    monkeypatch.setattr(poseidon_circuit, "hash_witness", counting)  # where the gadget calls it
    for _ in range(3):
        _run([1, 2], True, DEFAULT_OPTIONS)
    assert calls.count("gadget") == 1 and len(calls) == 4  # three hashes, one gadget run
    assert (2, Strength.STANDARD) in PROCESS_CACHE.memo(witness.Checks).checked


def test_a_wrong_kernel_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    real_values = witness._values
    monkeypatch.setattr(witness, "_values", lambda *a: real_values(*a) ^ np.uint64(1))
    ref = _run([3, 4], False)[0]
    assert _run([3, 4], True, DEFAULT_OPTIONS)[0] == ref  # checked: the gadget's values are kept
    assert (2, Strength.STANDARD) in PROCESS_CACHE.memo(witness.Checks).refused
    assert _run([3, 4], True, DEFAULT_OPTIONS)[0] == ref  # refused: the gadget runs from then on


def test_missing_values_and_other_modes_run_the_gadget() -> None:
    cs = CheckCS()
    pre = [AllocatedNum.alloc(cs, v) for v in (5, 6)]
    digest = poseidon_hash(cs, pre)
    assert cs.is_satisfied() and digest.value is not None
    assert not PROCESS_CACHE.memo(witness.Checks).checked  # check mode never asks the kernel
    with pytest.raises(BadInput):  # the gadget's report of a value missing in witness mode
        poseidon_hash(WitnessCS(UNCHECKED), [AllocatedNum(v.variable, None) for v in pre])


def test_snapdeals_2k_witness_equals_the_gadget_path(seed: int) -> None:
    from cuzk.circuits import open_statement
    from cuzk.circuits.filecoin.snap_vanilla import generate_update
    from cuzk.r1cs import synthesize_witness

    circuit = open_statement("snap-2k", payload=generate_update(2048, seed).encode()).circuit(0)
    fast = synthesize_witness(circuit, DEFAULT_OPTIONS)  # as in production: first uses checked
    assert PROCESS_CACHE.memo(witness.Checks).checked, "the circuit hashed nothing with Poseidon"
    ref = synthesize_witness(circuit, GADGET)
    fast_aux, ref_aux = fast.aux_vector(), ref.aux_vector()
    assert fast.inputs == ref.inputs and np.array_equal(fast_aux, ref_aux)


#: Hashes deferred to the backend once their arity is checked (production's first-use check).
DEFERRED = SynthesisOptions(defer_poseidon=True)


def _hashes(options: SynthesisOptions, preimages: list[list[int]], **kw) -> WitnessCS:
    cs = WitnessCS(options)
    cs.alloc("unrelated", 12345)
    for values in preimages:
        digest = poseidon_hash(cs, [AllocatedNum.alloc(cs, v) for v in values], **kw)
        cs.alloc("reads the digest", digest.value)  # what a later gadget sees of the digest
    return cs


@pytest.mark.parametrize("arity, strength", [(2, Strength.STANDARD), (8, Strength.STRENGTHENED)])
def test_deferred_hashes_equal_the_gadget(arity: int, strength: Strength, seed: int) -> None:
    from cuzk.r1cs.deferred import DeferredAux

    rnd = random.Random(seed)
    preimages = [[rnd.randrange(R) for _ in range(arity)] for _ in range(4)]
    tag = custom_tag(rnd.randrange(1, 257))
    cs = _hashes(DEFERRED, preimages, tag=tag, strength=strength)
    ref = _hashes(GADGET, preimages, tag=tag, strength=strength)
    aux = cs.aux_vector()
    assert isinstance(aux, DeferredAux) and cs.num_aux == ref.num_aux
    (group,) = aux.groups  # the first hash was checked through the gadget, the others deferred
    assert len(group.starts) == 3 and group.inputs.shape == (3, arity, 4)
    assert np.array_equal(aux.expand(), ref.aux_vector()), f"seed {seed}"


def test_unchecked_or_refused_arities_are_never_deferred(monkeypatch: pytest.MonkeyPatch) -> None:
    unchecked = SynthesisOptions(defer_poseidon=True, verify_first_use=False)
    ref = _hashes(GADGET, [[1, 2], [3, 4]]).aux
    plain = _hashes(unchecked, [[1, 2], [3, 4]]).aux_vector()  # kernel values, appended
    assert isinstance(plain, np.ndarray) and np.array_equal(plain, fr.from_ints(ref))
    real_values = witness._values
    monkeypatch.setattr(witness, "_values", lambda *a: real_values(*a) ^ np.uint64(1))
    refused = _hashes(DEFERRED, [[1, 2], [3, 4]]).aux_vector()  # first check fails
    assert (2, Strength.STANDARD) in PROCESS_CACHE.memo(witness.Checks).refused
    assert isinstance(refused, np.ndarray) and np.array_equal(refused, fr.from_ints(ref))
