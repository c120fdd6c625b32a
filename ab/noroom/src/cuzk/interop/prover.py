"""Groth16 proofs for snarkjs keys and circom witnesses, through cuzk's one prover.

Notation (snarkjs ``groth16_prove.js``): z is the full wire assignment (ONE, public signals,
private wires); a = A·z and b = B·z over the m QAP rows come from the key's coefficient section
and c = a∘b (the key has no C matrix); h' are the values of A·B − C on the odd points of the
2m-domain (:mod:`cuzk.poly.snarkjs_h`), with no division by Z. Then, with fresh r, s:

    A  = α₁ + Σ zⱼ·Aⱼ + r·δ₁
    B  = β₂ + Σ zⱼ·B₂ⱼ + s·δ₂          (B₁ = β₁ + Σ zⱼ·B₁ⱼ + s·δ₁ in G1)
    C  = Σ_{j>ℓ} zⱼ·Cⱼ + Σ h'ᵢ·Hᵢ + s·A + r·B₁ − r·s·δ₁

which is bellperson's assembly with the C query in the role of L and another QAP reduction
(:data:`~cuzk.groth16.qap.ODD_COSET`). So :func:`prepare` turns a key into
:class:`~cuzk.groth16.keys.Parameters` (its bases translated into bellperson's layout,
:mod:`.bases`) and an :class:`~cuzk.r1cs.R1CSShape` holding its A and B, and
:mod:`cuzk.groth16.prover` proves with them, staging included; this module adds what is
snarkjs's own: the optional ``.r1cs`` check that names a violated constraint, and errors that
name the key's sections.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from cuzk.backend.base import Backend, PointSet
from cuzk.errors import BadInput, UnsatisfiedConstraint
from cuzk.groth16 import prover
from cuzk.groth16.keys import Parameters, VerifyingKey
from cuzk.groth16.proof import Proof
from cuzk.groth16.prover import Timings
from cuzk.groth16.qap import ODD_COSET
from cuzk.groth16.verifier import verify
from cuzk.interop.bases import ZkeyBases, section_error, translate_bases
from cuzk.interop.bases_cache import cached_bases
from cuzk.interop.r1cs import CircomR1cs
from cuzk.interop.wtns import Witness
from cuzk.interop.zkey import Zkey
from cuzk.r1cs import CsrMatrix, R1CSShape


@dataclass(frozen=True)
class PreparedKey:
    """A snarkjs key ready for the prover: its QAP as a shape, its bases as Parameters."""

    zkey: Zkey
    shape: R1CSShape  # A and B from the key; C empty (derived as a∘b)
    bases: ZkeyBases
    params: Parameters  # the translated bases; reduction ODD_COSET

    @property
    def vk(self) -> VerifyingKey:
        """The key's own verifying key (what every proof made with it is checked against)."""
        return self.zkey.vk

    @property
    def vectors(self) -> tuple[PointSet, ...]:
        """The five bases a backend keeps resident (the engine preloads and evicts these)."""
        return self.params.vectors

    def preload_on(self, backend: Backend) -> None:
        """Make the bases resident on ``backend``; a bad point is reported by key section."""
        for ps in self.vectors:
            with self.section_errors(ps):
                backend.preload(ps)

    @contextmanager
    def section_errors(self, vector: PointSet | None = None) -> Iterator[None]:
        """A backend's complaint about a translated vector (``vector``, when known) as one
        naming the key's section: the translated file means nothing to the user."""
        try:
            yield
        except BadInput as e:
            key = vector.key if vector is not None else ""
            raise section_error(self.zkey, self.bases, key, e) from e

    def evict_from(self, backend: Backend) -> None:
        """Drop this key's bases from ``backend`` (before :meth:`close`, when the backend
        lives on)."""
        for ps in self.vectors:
            backend.evict(ps)

    def close(self) -> None:
        """Delete the translated bases (evict them from long-lived backends first)."""
        self.bases.remove()


def prepare(
    zkey: Zkey, bases_path: str | None = None, cache_dir: str | os.PathLike[str] | None = None
) -> PreparedKey:
    """Translate ``zkey``'s bases (into a temporary file unless ``bases_path`` is given), or
    with ``cache_dir`` reuse the translation stored there by an earlier call
    (:mod:`.bases_cache`; the file outlives :meth:`PreparedKey.close`).

    Raises:
        BadInput: a point coordinate in the key is not reduced.
    """
    n_in = zkey.n_public + 1
    empty = CsrMatrix.empty(zkey.domain_size, zkey.n_vars)
    shape = R1CSShape(
        f"snarkjs:{zkey.path}", n_in, zkey.n_vars - n_in, zkey.a, zkey.b, empty, names=None
    )
    if cache_dir is not None:
        bases, _ = cached_bases(zkey, cache_dir)
    else:
        bases = translate_bases(zkey, bases_path)
    params = Parameters(
        zkey.vk, bases.path, bases.h, bases.c, bases.a, bases.b1, bases.b2, reduction=ODD_COSET
    )
    return PreparedKey(zkey, shape, bases, params)


def check_witness(key: PreparedKey, witness: Witness) -> None:
    """BadInput unless ``witness`` has one value per wire of ``key``."""
    zkey = key.zkey
    if len(witness) != zkey.n_vars:
        raise BadInput(
            f"{witness.path} has {len(witness)} values; {zkey.path} expects nVars = {zkey.n_vars}"
        )


def assignment(key: PreparedKey, witness: Witness) -> prover.Assignment:
    """The witness as the prover's assignment (ONE and the public signals, then the rest)."""
    check_witness(key, witness)
    n_public = key.zkey.n_public
    return prover.Assignment.split(witness.values, n_public + 1, tuple(witness.public(n_public)))


def unverified_error(key_path: str) -> BadInput:
    """What a proof that fails the final check means for a snarkjs key: the key has no C
    matrix, so an unsatisfying witness is first seen there."""
    return BadInput(
        f"the proof did not verify against {key_path}: the witness does not satisfy the key's "
        "circuit (or the key is inconsistent); give the .r1cs to find the failing constraint"
    )


def start(
    key: PreparedKey,
    witness: Witness,
    backend: Backend,
    r1cs: CircomR1cs | None = None,
    timings: Timings | None = None,
) -> prover.PendingProof:
    """Stage and start the proof (evaluate a, b; submit the MSMs; run H).

    Raises:
        BadInput: the witness length differs from the key's nVars; a point section of the
            key failed to load, naming it.
        UnsatisfiedConstraint: with ``r1cs``, the first constraint the witness violates.
    """
    timings = timings if timings is not None else Timings()
    inputs = assignment(key, witness)
    if r1cs is not None:
        t0 = time.perf_counter()
        bad = r1cs.first_unsatisfied(witness.values)
        timings.record("check", time.perf_counter() - t0)
        if bad is not None:
            raise UnsatisfiedConstraint(bad, f"constraint {bad} of {r1cs.path}")
    key.preload_on(backend)
    with key.section_errors():
        return prover.start(inputs, key.shape, key.params, backend, timings=timings)


def finalize(key: PreparedKey, pending: prover.PendingProof) -> Proof:
    """Join the MSMs, assemble A, B, C, and verify against the key's own verifying key.

    Raises:
        BadInput: a point section of the key failed to load, naming it; or the proof does not
            verify, which for a well-formed key means the witness does not satisfy the circuit.
    """
    with key.section_errors():
        proof = prover.finalize(pending)
    t0 = time.perf_counter()
    ok = verify(key.vk, pending.public_inputs, proof)
    pending.timings.record("verify", time.perf_counter() - t0)
    if not ok:
        raise unverified_error(key.zkey.path)
    return proof


def prove(
    key: PreparedKey,
    witness: Witness,
    backend: Backend,
    r1cs: CircomR1cs | None = None,
    timings: Timings | None = None,
) -> tuple[Proof, list[int]]:
    """A verified proof and its public signals (wires 1…nPublic), as snarkjs returns them."""
    pending = start(key, witness, backend, r1cs, timings)
    return finalize(key, pending), list(pending.public_inputs)
