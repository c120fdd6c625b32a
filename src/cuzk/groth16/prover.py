"""The Groth16 prover, in three stages the engine can pipeline.

Notation (Groth16 §3.2 / bellperson): z = (1, x₁…xₗ, w₁…wₙ) is the assignment (inputs then
aux); a, b, c = A·z, B·z, C·z are the constraint evaluations; h are the coefficients of
(a·b − c)/Z; r, s are fresh per proof. The proof is

    A = α + Σ zⱼ·[Aⱼ(τ)]₁ + r·δ                  (the "a" query, over A-dense variables)
    B = β + Σ zⱼ·[Bⱼ(τ)]₂ + s·δ                  (the "b_g2" query; B₁ likewise in G1)
    C = s·A + r·B₁ − r·s·δ + Σ hᵢ·[hᵢ]₁ + Σ wⱼ·[lⱼ]₁

The same prover serves bellperson and snarkjs keys: they differ only in the key's
:class:`~cuzk.groth16.qap.QapReduction` (how h is made) — a snarkjs key's C query plays L's
role, and its A/B points are filtered to the dense variables like bellperson's when it is
prepared (:mod:`cuzk.interop.prover`). Every vector crosses into the backend once, as a handle
(:data:`~cuzk.backend.base.Vec`), and stays there: a, b, c, h and the MSM scalars never come
back to the host.

Stages:
1. :func:`synthesize` — run the circuit in witness mode (CPU, Python).
2. :func:`stage` — put the assignment where the kernels read it (the engine may do this
   outside the compute lock), then :func:`start` — the backend's kernels: a/b/c, the H
   pipeline and five MSMs, all submitted without waiting (MSMs are futures, so they overlap
   with the H pipeline). The A and B MSMs' scalars are gathered from z there, where z lives,
   in the order that keeps the fewest vectors alive at once (see :func:`start`).
3. :func:`finalize` — join the MSMs and assemble A, B, C with r and s; outside any device lock.
   The engine calls its two halves separately: :func:`wait_kernels` (the end of the device
   work, still inside the compute lock) and :func:`assemble` (CPU only, outside it).

:func:`prove` runs all three and verifies the result before returning it.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field

import numpy as np

from cuzk.backend.base import Backend, Vec
from cuzk.curve import G1, G2, g1_mul, g2_mul
from cuzk.errors import BadInput, DeviceFault, InternalError, UnsatisfiedConstraint
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.groth16.keys import Parameters
from cuzk.groth16.proof import Proof
from cuzk.groth16.verifier import verify
from cuzk.poly import Domain
from cuzk.r1cs import (
    DEFAULT_OPTIONS,
    BulkWitness,
    Circuit,
    R1CSShape,
    SynthesisOptions,
    check_circuit,
    synthesize_witness,
)
from cuzk.r1cs.deferred import DeferredAux


@dataclass
class Timings:
    """Wall-clock seconds per stage; MSMs are measured from submission to completion."""

    stages: dict[str, float] = field(default_factory=dict)

    def record(self, name: str, seconds: float) -> None:
        self.stages[name] = self.stages.get(name, 0.0) + seconds

    def watch(self, name: str, future: Future, since: float) -> None:
        future.add_done_callback(lambda _: self.record(name, time.perf_counter() - since))


@dataclass(frozen=True)
class Assignment:
    """A satisfying assignment: public inputs (ONE first) and aux values, Montgomery form."""

    inputs: fr.FrVec
    aux: fr.FrVec | DeferredAux  # deferred: its bit-program runs are made by the backend
    public_inputs: tuple[int, ...]  # canonical values without ONE: the statement

    @property
    def z(self) -> fr.FrVec:
        aux = self.aux.expand() if isinstance(self.aux, DeferredAux) else self.aux
        return np.concatenate([self.inputs, aux])

    @classmethod
    def split(cls, z: fr.FrVec, num_inputs: int, public_inputs: tuple[int, ...]) -> Assignment:
        """A whole wire vector (ONE, the public inputs, then aux) as an assignment."""
        return cls(z[:num_inputs], z[num_inputs:], public_inputs)


def synthesize(
    circuit: Circuit,
    timings: Timings | None = None,
    options: SynthesisOptions = DEFAULT_OPTIONS,
) -> Assignment:
    """Stage 1: the witness, converted to field vectors in bulk (with
    ``options.defer_bit_programs`` or ``defer_poseidon``, its SHA-256 or Poseidon bulk left
    to the backend at staging)."""
    t0 = time.perf_counter()
    if isinstance(circuit, BulkWitness):
        inputs, aux = circuit.assignment()
        assignment = Assignment(fr.from_ints(inputs), aux, tuple(inputs[1:]))
    else:
        cs = synthesize_witness(circuit, options)
        assignment = Assignment(fr.from_ints(cs.inputs), cs.aux_vector(), tuple(cs.inputs[1:]))
    if timings is not None:
        timings.record("synthesis", time.perf_counter() - t0)
    return assignment


def check_compatible(params: Parameters, shape: R1CSShape) -> None:
    """Refuse parameters made for another circuit before any work is spent on them."""
    domain = Domain.for_size(shape.num_constraints)
    expected = {
        "ic": shape.num_inputs,
        "h": params.reduction.h_length(domain),
        "l": shape.num_aux,
        "a": shape.num_inputs + len(shape.a_aux_rows),
        "b_g1": len(shape.b_input_rows) + len(shape.b_aux_rows),
    }
    found = {
        "ic": params.vk.num_inputs,
        "h": params.h.count,
        "l": params.l.count,
        "a": params.a.count,
        "b_g1": params.b_g1.count,
    }
    wrong = [f"{k}: {found[k]} (circuit needs {v})" for k, v in expected.items() if found[k] != v]
    if params.b_g2.count != params.b_g1.count:
        wrong.append(f"b_g2: {params.b_g2.count} ≠ b_g1: {params.b_g1.count}")
    if wrong:
        raise BadInput(
            f"parameters {params.path} were not made for circuit {shape.circuit_id!r}: "
            + "; ".join(wrong)
        )


@dataclass
class PendingProof:
    """Everything stage 3 needs; the MSM futures may still be running."""

    params: Parameters
    public_inputs: tuple[int, ...]
    r: int
    s: int
    h: Future
    l: Future  # noqa: E741
    a: Future
    b_g1: Future
    b_g2: Future
    timings: Timings
    abc_check: DeferredCheck | None = None  # settled by wait_kernels


@dataclass
class DeferredCheck:
    """An a·b = c check the backend finishes in the H pipeline
    (:meth:`~cuzk.backend.base.Backend.defer_abc_check`). Its verdict is read once the
    witness's MSMs are done, while z still lives: a failure is then named by evaluating a, b
    and c again from z for the exact check."""

    satisfied: Callable[[], bool]
    backend: Backend
    shape: R1CSShape
    z: Vec | None  # dropped once settled: the engine frees z right after
    circuit: Circuit | None

    def failure(self) -> Exception:
        """After a False verdict: the UnsatisfiedConstraint naming the first bad row (call it
        once the partition's device work is done: a, b and c are made again beside
        nothing). Drops z."""
        z, self.z = self.z, None
        if z is None:
            return InternalError("the a·b = c check failed and its witness is gone")
        a, b, c = self.backend.evaluate_abc(self.shape, z)
        bad = self.backend.unsatisfied_rows(a, b, c)
        del a, b, c, z
        if len(bad):
            return _unsatisfied(int(bad[0]), self.shape, self.circuit)
        return DeviceFault("the random combination of a·b = c failed but every row holds")


Allocate = Callable[[int], fr.FrVec]
"""Returns an uninitialised (n, 4) uint64 host vector (pinned, from a pool, or plain)."""


@dataclass
class StagedInputs:
    """A partition's kernel input, prepared before the device is free.

    ``z`` is the whole assignment and ``aux`` its tail. A witness made on the host is gathered
    into a buffer from ``allocate`` (page-locked ones upload at full bus speed) and handed to
    the backend, so the kernels start without a PCIe transfer. Making this is the *staging*
    step the engine may run outside the compute lock. Only z is staged: the A and B scalars
    are gathered from it by the kernels (a device gather takes milliseconds), so a staged
    partition holds one vector of the device's memory, not three.
    """

    z: Vec
    aux: Vec
    public_inputs: tuple[int, ...]
    host_buffers: tuple[fr.FrVec, ...]  # what came from ``allocate`` (the engine returns it)


def staged_bytes(num_variables: int, deferred: bool = False) -> tuple[int, int]:
    """(device bytes, host buffer bytes) :func:`stage` needs for ``num_variables``: z, in a
    pinned host buffer and, on a backend that uploads, on the device. A deferred witness is
    made where the kernels read it (:func:`_stage_deferred`): no host buffer."""
    return 32 * num_variables, 0 if deferred else 32 * num_variables


def stage(
    assignment: Assignment,
    shape: R1CSShape,
    backend: Backend,
    allocate: Allocate | None = None,
    timings: Timings | None = None,
) -> StagedInputs:
    """Stage 2a: put the assignment where the kernels read it."""
    t0 = time.perf_counter()
    allocate = allocate or backend.host_vector
    inputs, aux = assignment.inputs, assignment.aux
    if len(inputs) + len(aux) != shape.num_variables:
        raise BadInput(
            f"assignment has {len(inputs) + len(aux)} values, circuit {shape.circuit_id!r} "
            f"has {shape.num_variables} variables"
        )
    if isinstance(aux, DeferredAux):
        return _stage_deferred(assignment, shape, backend, t0, timings)
    # z = inputs ‖ aux in one allocated buffer, each copy on all cores (at 2^24 a
    # single-threaded copy of z alone was ≈ 50 ms); it goes to the backend here, outside the
    # compute lock: no upload is left between one partition's kernels and the next's.
    host = allocate(len(inputs) + len(aux))
    fr.take_into(inputs, None, host, 0)
    fr.take_into(aux, None, host, len(inputs))
    z = backend.upload(host)
    staged = StagedInputs(z, z[len(inputs) :], assignment.public_inputs, (host,))
    if timings is not None:
        timings.record("stage", time.perf_counter() - t0)
    return staged


def _stage_deferred(
    assignment: Assignment,
    shape: R1CSShape,
    backend: Backend,
    t0: float,
    timings: Timings | None,
) -> StagedInputs:
    """Staging for a deferred aux: the backend makes z (on a GPU, there)."""
    assert isinstance(assignment.aux, DeferredAux)
    z = backend.upload_witness(assignment.inputs, assignment.aux)
    staged = StagedInputs(z, z[len(assignment.inputs) :], assignment.public_inputs, ())
    if timings is not None:
        timings.record("stage", time.perf_counter() - t0)
    return staged


def start(
    inputs: Assignment | StagedInputs,
    shape: R1CSShape,
    params: Parameters,
    backend: Backend,
    circuit: Circuit | None = None,
    timings: Timings | None = None,
) -> PendingProof:
    """Stage 2b: submit the witness MSMs, evaluate and check a, b, c, run the H pipeline and
    submit its MSM (staging first if given a bare assignment).

    Raises UnsatisfiedConstraint (naming the constraint, via a check-mode run of ``circuit``
    when given) if the witness does not satisfy the circuit — no proof is ever made for it;
    the MSMs already submitted are waited out first. Where the backend defers the check
    (:class:`DeferredCheck`), :func:`wait_kernels` raises it instead.
    """
    timings = timings if timings is not None else Timings()
    check_compatible(params, shape)
    staged = (
        inputs
        if isinstance(inputs, StagedInputs)
        else stage(inputs, shape, backend, timings=timings)
    )
    domain = Domain.for_size(shape.num_constraints)

    # The order keeps few vectors alive at once and the MSM stream busy. L's MSM reads z's tail
    # and B's MSMs a small gather of z (a quarter of it for PoRep): they go first and run while
    # a, b, c are evaluated and checked and the H pipeline runs (on a GPU, the check's wait for
    # its answer does not leave the MSM stream idle). A's scalars — nearly all of z — are
    # gathered only once a, b and c have become h, so they never share the device with them.
    # (Under a memory cap the CUDA backend gathers and plans each MSM pass by pass instead.)
    t1 = time.perf_counter()
    futures: dict[str, Future] = {}
    z, b_rows = staged.z, shape.b_z_rows
    _submit(futures, "l", backend.split_msm(params.l, staged.aux), timings, t1)
    _submit(futures, "b_g1", backend.split_msm(params.b_g1, z, b_rows), timings, t1)
    _submit(futures, "b_g2", backend.split_msm(params.b_g2, z, b_rows), timings, t1)

    t0 = time.perf_counter()
    deferred: DeferredCheck | None = None
    try:
        a, b, c = backend.evaluate_abc(shape, staged.z)
        if params.reduction.checks_constraints:
            # A backend whose c costs a pass over C each time (CUDA under a cap) finishes the
            # check where the H pipeline makes c; the others check every row now.
            satisfied = backend.defer_abc_check(a, b, c)
            if satisfied is not None:
                deferred = DeferredCheck(satisfied, backend, shape, staged.z, circuit)
            else:
                bad = backend.unsatisfied_rows(a, b, c)
                if len(bad):
                    raise _unsatisfied(int(bad[0]), shape, circuit)
    except BaseException:
        _wait_out(futures.values())  # no device work of this partition outlives its failure
        raise
    timings.record("abc", time.perf_counter() - t0)

    t2 = time.perf_counter()
    h = params.reduction.h(backend, a, b, c, domain)
    del a, b, c  # consumed: h may live in their memory
    timings.record("h", time.perf_counter() - t2)
    t3 = time.perf_counter()
    _submit(futures, "a", backend.split_msm(params.a, z, shape.a_z_rows), timings, t3)
    _submit(futures, "h", backend.msm(params.h, h), timings, t3)

    return PendingProof(
        params=params,
        public_inputs=staged.public_inputs,
        r=secrets.randbelow(R - 1) + 1,
        s=secrets.randbelow(R - 1) + 1,
        timings=timings,
        abc_check=deferred,
        **futures,
    )


def _submit(
    futures: dict[str, Future], name: str, future: Future, timings: Timings, since: float
) -> None:
    futures[name] = future
    timings.watch(f"msm_{name}", future, since)


def _unsatisfied(row: int, shape: R1CSShape, circuit: Circuit | None) -> UnsatisfiedConstraint:
    if circuit is not None:
        checked = check_circuit(circuit)
        if checked.first_failure is not None:
            return UnsatisfiedConstraint(*checked.first_failure)
    return UnsatisfiedConstraint(row, shape.constraint_name(row))


@dataclass(frozen=True)
class MsmSums:
    """The five MSM results of one proof: everything the device work produces for assembly."""

    h: G1  # Σ hᵢ·[hᵢ]₁
    l: G1  # Σ wⱼ·[lⱼ]₁  # noqa: E741
    a: G1  # Σ zⱼ·[Aⱼ(τ)]₁
    b_g1: G1  # Σ zⱼ·[Bⱼ(τ)]₁
    b_g2: G2  # Σ zⱼ·[Bⱼ(τ)]₂


def wait_kernels(
    pending: PendingProof,
    witness_read: Callable[[], None] | None = None,
    h_done: Callable[[], None] | None = None,
) -> MsmSums:
    """Stage 3a: wait for the MSMs :func:`start` submitted (the end of the device work).

    ``witness_read`` is called once the MSMs over the witness (L, B and A) are done, while
    H's may still run: nothing reads the staged z after them (A's MSM is submitted after the
    H quotient, the last of the compute stream's readers of z, and waits for it), so the
    caller may free z then and let the device's next partition stage in its place.
    ``h_done`` is called first if H's MSM ends, without an error, before A's (the last MSM
    over the witness): h and the H MSM's scratch are gone then, and only split MSMs still run.

    Raises whatever an MSM raised (DeviceFault when a worker or kernel died), and
    UnsatisfiedConstraint where the backend deferred the a·b = c check
    (:class:`DeferredCheck`) and it failed.
    """
    t0 = time.perf_counter()
    if h_done is not None:
        wait_futures((pending.h, pending.a), return_when=FIRST_COMPLETED)
        if pending.h.done() and not pending.a.done() and pending.h.exception() is None:
            h_done()
    l_sum, b_g1, b_g2, a = (f.result() for f in (pending.l, pending.b_g1, pending.b_g2, pending.a))
    check, pending.abc_check = pending.abc_check, None
    if check is not None:
        if not check.satisfied():
            _wait_out([pending.h])  # H's MSM reads h, made where a and b are made again
            raise check.failure()
        del check  # it holds z, which the caller frees next
    if witness_read is not None:
        witness_read()
    sums = MsmSums(h=pending.h.result(), l=l_sum, a=a, b_g1=b_g1, b_g2=b_g2)
    pending.timings.record("wait_msm", time.perf_counter() - t0)
    return sums


def drain(pending: PendingProof) -> None:
    """After a failure: wait out every MSM still running, ignoring their errors (the first
    one was already reported), so the device's work ends before the next partition's."""
    pending.abc_check = None  # (it holds z)
    _wait_out((pending.h, pending.l, pending.a, pending.b_g1, pending.b_g2))


def _wait_out(futures: Iterable[Future]) -> None:
    for f in futures:
        try:
            f.result()
        except BaseException:  # the first failure is already reported
            pass


def assemble(pending: PendingProof, sums: MsmSums) -> Proof:
    """Stage 3b: A, B, C from the MSM sums with the proof's r and s (CPU only, no device)."""
    t0 = time.perf_counter()
    vk = pending.params.vk
    r, s = pending.r, pending.s
    proof_a = vk.alpha_g1 + sums.a + g1_mul(vk.delta_g1, r)
    proof_b = vk.beta_g2 + sums.b_g2 + g2_mul(vk.delta_g2, s)
    b1 = vk.beta_g1 + sums.b_g1 + g1_mul(vk.delta_g1, s)
    proof_c = g1_mul(proof_a, s) + g1_mul(b1, r) - g1_mul(vk.delta_g1, r * s % R) + sums.h + sums.l
    pending.timings.record("assemble", time.perf_counter() - t0)
    return Proof(proof_a, proof_b, proof_c)


def finalize(pending: PendingProof) -> Proof:
    """Stage 3: wait for the MSMs and assemble the proof."""
    return assemble(pending, wait_kernels(pending))


def prove(
    circuit: Circuit,
    shape: R1CSShape,
    params: Parameters,
    backend: Backend,
    timings: Timings | None = None,
) -> tuple[Proof, tuple[int, ...]]:
    """Prove ``circuit`` and verify the proof; returns (proof, public inputs without ONE)."""
    timings = timings if timings is not None else Timings()
    assignment = synthesize(circuit, timings)
    proof = finalize(start(assignment, shape, params, backend, circuit, timings))
    t0 = time.perf_counter()
    ok = verify(params.vk, assignment.public_inputs, proof)
    timings.record("verify", time.perf_counter() - t0)
    if not ok:
        raise InternalError("the proof did not verify; it was discarded (prover or key fault)")
    return proof, assignment.public_inputs
