"""Groth16 proofs for snarkjs keys and circom witnesses, the way snarkjs computes them.

Notation (snarkjs ``groth16_prove.js``): z is the full wire assignment (ONE, public signals,
private wires); a = A·z and b = B·z over the m QAP rows come from the key's coefficient section
and c = a∘b (the key has no C matrix); h' are the values of A·B − C on the odd points of the
2m-domain (:mod:`cuzk.poly.snarkjs_h`), with no division by Z. Then, with fresh r, s:

    A  = α₁ + Σ zⱼ·Aⱼ + r·δ₁
    B  = β₂ + Σ zⱼ·B₂ⱼ + s·δ₂          (B₁ = β₁ + Σ zⱼ·B₁ⱼ + s·δ₁ in G1)
    C  = Σ_{j>ℓ} zⱼ·Cⱼ + Σ h'ᵢ·Hᵢ + s·A + r·B₁ − r·s·δ₁

which is bellperson's assembly with the C query in the role of L. The flow mirrors
:mod:`cuzk.groth16.prover`: MSMs over the witness are submitted first, the H pipeline runs
while they do, and the proof is verified before it is returned.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuzk.backend.base import Backend, PointSet
from cuzk.curve import g1_mul, g2_mul
from cuzk.errors import BadInput, UnsatisfiedConstraint
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.groth16.keys import VerifyingKey
from cuzk.groth16.proof import Proof
from cuzk.groth16.prover import Timings
from cuzk.groth16.verifier import verify
from cuzk.interop.bases import ZkeyBases, section_error, translate_bases
from cuzk.interop.bases_cache import cached_bases
from cuzk.interop.kernels import odd_coset_h, odd_coset_h_device
from cuzk.interop.r1cs import CircomR1cs
from cuzk.interop.wtns import Witness
from cuzk.interop.zkey import Zkey
from cuzk.poly import Domain
from cuzk.r1cs import CsrMatrix, R1CSShape


@dataclass(frozen=True)
class PreparedKey:
    """A snarkjs key ready for a backend: its QAP as a shape, its bases as PointSets."""

    zkey: Zkey
    shape: R1CSShape  # A and B from the key; C empty (derived as a∘b)
    bases: ZkeyBases
    domain: Domain
    a_wires: np.ndarray  # bool per wire: has an A entry (other A points are infinity)
    b_wires: np.ndarray  # bool per wire: has a B entry

    @property
    def vk(self) -> VerifyingKey:
        """The key's own verifying key (what every proof made with it is checked against)."""
        return self.zkey.vk

    @property
    def vectors(self) -> tuple[PointSet, ...]:
        """The five bases a backend keeps resident (the engine preloads and evicts these)."""
        return tuple(self.bases.sets().values())

    def evict_from(self, backend: Backend) -> None:
        """Drop this key's bases from ``backend`` (before :meth:`close`, when the backend
        lives on)."""
        for ps in self.bases.sets().values():
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
    return PreparedKey(
        zkey, shape, bases, Domain(zkey.domain_size), zkey.a.column_mask(), zkey.b.column_mask()
    )


@dataclass
class PendingSnarkjsProof:
    """Submitted work of one proof; the futures may still be running."""

    key: PreparedKey
    public: list[int]
    r: int
    s: int
    msms: dict[str, Future]  # "a", "b1", "b2", "c", "h" → point of the group
    timings: Timings


def start(
    key: PreparedKey,
    witness: Witness,
    backend: Backend,
    r1cs: CircomR1cs | None = None,
    timings: Timings | None = None,
) -> PendingSnarkjsProof:
    """Evaluate a, b; submit the four witness MSMs; run H; submit the H MSM.

    Raises:
        BadInput: the witness length differs from the key's nVars.
        UnsatisfiedConstraint: with ``r1cs``, the first constraint the witness violates.
    """
    timings = timings if timings is not None else Timings()
    zkey = key.zkey
    z = witness.values
    if len(witness) != zkey.n_vars:
        raise BadInput(
            f"{witness.path} has {len(witness)} values; {zkey.path} expects nVars = {zkey.n_vars}"
        )
    if r1cs is not None:
        t0 = time.perf_counter()
        bad = r1cs.first_unsatisfied(z)
        timings.record("check", time.perf_counter() - t0)
        if bad is not None:
            raise UnsatisfiedConstraint(bad, f"constraint {bad} of {r1cs.path}")

    # A backend with device arrays (CUDA) gets the witness once: a, b, the masked MSM scalars,
    # the split plans and h are made on the device and nothing of n size crosses PCIe again.
    on_device = hasattr(backend, "evaluate_abc_device")
    t0 = time.perf_counter()
    if on_device:
        z = backend.upload(z)  # type: ignore[attr-defined]
        a, b, _ = backend.evaluate_abc_device(key.shape, z)  # type: ignore[attr-defined]
    else:
        a, b, _ = backend.evaluate_abc(key.shape, z)
    timings.record("abc", time.perf_counter() - t0)

    t1 = time.perf_counter()
    # wires without an A (B) entry have infinity as their A (B) point: let the MSM skip them
    za, zb = _masked(z, key.a_wires, backend), _masked(z, key.b_wires, backend)
    if on_device:
        backend.synchronize()  # type: ignore[attr-defined]  # the MSM stream reads these
    msms = {
        name: _submit(key, name, backend.split_msm, scalars)
        for name, scalars in (("c", z[zkey.n_public + 1 :]), ("a", za), ("b1", zb), ("b2", zb))
    }
    for name, f in msms.items():
        timings.watch(f"msm_{name}", f, t1)

    t2 = time.perf_counter()
    if on_device:
        h = odd_coset_h_device(backend, a, b, key.domain)
        backend.synchronize()  # type: ignore[attr-defined]
    else:
        h = odd_coset_h(backend, a, b, key.domain)
    timings.record("h", time.perf_counter() - t2)
    t3 = time.perf_counter()
    msms["h"] = _submit(key, "h", backend.msm, h)
    timings.watch("msm_h", msms["h"], t3)
    return PendingSnarkjsProof(
        key,
        witness.public(zkey.n_public),
        secrets.randbelow(R - 1) + 1,
        secrets.randbelow(R - 1) + 1,
        msms,
        timings,
    )


def _masked(z: Any, wires: np.ndarray, backend: Backend) -> Any:
    """z with the values of wires outside ``wires`` zeroed: on the host, or on the device
    (and its stream) of a backend with device arrays."""
    if isinstance(z, np.ndarray):
        out = z.copy()
        out[~wires] = 0
        return out
    gpu = backend.gpu  # type: ignore[attr-defined]
    with gpu.context():
        out = z.copy()
        out[gpu.cp.asarray(~wires)] = 0
        return out


def _submit(key: PreparedKey, name: str, msm: Callable[..., Future], scalars: fr.FrVec) -> Future:
    """Start the MSM over the key's vector ``name``; a backend that loads bases eagerly
    reports a bad point section here, named after the key's section, not the translated file."""
    try:
        return msm(getattr(key.bases, name), scalars)
    except BadInput as e:
        raise section_error(key.zkey, key.bases, getattr(key.bases, name).key, e) from e


def finalize(pending: PendingSnarkjsProof) -> Proof:
    """Join the MSMs, assemble A, B, C, and verify against the key's own verifying key.

    Raises:
        BadInput: a point section of the key failed to load (off the curve…), naming it; or
            the proof does not verify, which for a well-formed key means the witness does
            not satisfy the circuit (the key has no C matrix to name the constraint: pass
            the ``.r1cs`` to :func:`start` for that).
    """
    key = pending.key
    proof = assemble(pending, wait_msms(pending))
    t2 = time.perf_counter()
    ok = verify(key.vk, pending.public, proof)
    pending.timings.record("verify", time.perf_counter() - t2)
    if not ok:
        raise BadInput(
            f"the proof did not verify against {key.zkey.path}: the witness does not satisfy "
            "the key's circuit (or the key is inconsistent); give the .r1cs to find the "
            "failing constraint"
        )
    return proof


def wait_msms(pending: PendingSnarkjsProof) -> dict[str, object]:
    """Join the five MSMs (the end of the device's work for this proof).

    Raises:
        BadInput: a point section of the key failed to load, naming the key's section.
    """
    key, t0 = pending.key, time.perf_counter()
    sums = {}
    for name, f in pending.msms.items():
        try:
            sums[name] = f.result()
        except BadInput as e:
            raise section_error(key.zkey, key.bases, getattr(key.bases, name).key, e) from e
    pending.timings.record("wait_msm", time.perf_counter() - t0)
    return sums


def drain(pending: PendingSnarkjsProof) -> None:
    """Wait for every MSM, ignoring failures (after the first one was reported)."""
    for f in pending.msms.values():
        try:
            f.result()
        except BaseException:  # noqa: BLE001, S110 - the first failure is already reported
            pass


def assemble(pending: PendingSnarkjsProof, sums: dict[str, object]) -> Proof:
    """A, B, C from the MSM sums and the blinding r, s (unverified: callers verify)."""
    t1 = time.perf_counter()
    vk, r, s = pending.key.vk, pending.r, pending.s
    proof_a = vk.alpha_g1 + sums["a"] + g1_mul(vk.delta_g1, r)
    proof_b = vk.beta_g2 + sums["b2"] + g2_mul(vk.delta_g2, s)
    b1 = vk.beta_g1 + sums["b1"] + g1_mul(vk.delta_g1, s)
    proof_c = (
        sums["c"] + sums["h"] + g1_mul(proof_a, s) + g1_mul(b1, r) - g1_mul(vk.delta_g1, r * s % R)
    )
    proof = Proof(proof_a, proof_b, proof_c)
    pending.timings.record("assemble", time.perf_counter() - t1)
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
    return finalize(pending), pending.public
