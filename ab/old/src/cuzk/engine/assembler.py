"""The assembler: a job's partition proofs in order, checked before anything is returned.

All partitions of a job share one verifying key, so they are checked together with
``verify_batch`` (k + 3 pairings instead of 4k). Only if the batch fails is each partition
verified alone, to name the bad one; the job then fails with InternalError and its proof bytes
are dropped — a bad proof is never returned.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cuzk.errors import BadInput, InternalError
from cuzk.groth16.keys import VerifyingKey
from cuzk.groth16.proof import Proof, proofs_to_bytes
from cuzk.groth16.verifier import verify, verify_batch


@dataclass(frozen=True)
class PartitionProof:
    """One partition's output, as a device worker hands it to the assembler."""

    index: int  # partition index within the job
    proof: Proof
    public_inputs: tuple[int, ...]  # without ONE


def assemble_job(
    vk: VerifyingKey,
    parts: Sequence[PartitionProof | None],
    unverified: Callable[[int], Exception] | None = None,
) -> tuple[bytes, tuple[tuple[int, ...], ...]]:
    """Verify every partition and return (concatenated proof bytes, inputs per partition).

    Raises InternalError naming the first partition that is missing or does not verify, or
    for a proof that does not verify, ``unverified(index)`` when given (the prover family
    knows whether that means a fault or a client's bad witness).
    """
    missing = [i for i, p in enumerate(parts) if p is None]
    if missing:
        raise InternalError(f"partition {missing[0]}: no proof was produced")
    done = [p for p in parts if p is not None]
    if [p.index for p in done] != list(range(len(done))):
        raise InternalError("partitions arrived out of order in the assembler")
    statements = [(p.public_inputs, p.proof) for p in done]
    try:
        ok = verify_batch(vk, statements)
    except BadInput as e:
        ok = False
        batch_error: Exception | None = e
    else:
        batch_error = None
    if not ok:
        for p in done:
            try:
                good = verify(vk, p.public_inputs, p.proof)
            except BadInput as e:
                raise InternalError(
                    f"partition {p.index}: its statement does not fit the key ({e}); "
                    "the proof was discarded"
                ) from e
            if not good:
                if unverified is not None:
                    raise unverified(p.index)
                raise InternalError(
                    f"partition {p.index}: the proof did not verify (prover, device or key "
                    "fault); it was discarded"
                )
        raise InternalError(
            "the batch check failed but every partition verified alone"
        ) from batch_error
    return proofs_to_bytes([p.proof for p in done]), tuple(p.public_inputs for p in done)
