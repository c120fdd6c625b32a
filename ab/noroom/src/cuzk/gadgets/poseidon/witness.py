"""Poseidon in witness mode without running the gadget.

In witness mode the legacy circuit (:mod:`.circuit`) only appends values: per S-box its input
(after the first round), x², x⁴ and the output, then the digest — always the same count and
order for an arity, each value a function of the preimage. The numba kernel that hashes Merkle
trees runs the same schedule, so it can write those values directly
(``_kernels.k_poseidon_witness``): ≈ 0.1 ms per hash instead of ≈ 7 ms of Python, and Poseidon
was two thirds of a PoRep witness once SHA-256 ran from tapes.

The first hash of each (arity, strength) in a synthesis cache is checked value for value
against the gadget; one that disagrees is never replayed again (and says so once in the log).
Both the kernel and that check are the constraint system's choice (``poseidon_kernel`` and
``verify_first_use`` of :class:`~cuzk.r1cs.SynthesisOptions`, both on by default).

With ``defer_poseidon`` a hash of a checked (arity, strength) appends nothing: the system
records the preimage as a run of :mod:`.program` for the backend to make, and the host
computes only the digest (later gadgets read it). An unchecked arity is never deferred — with
``verify_first_use`` off, none is, and the kernel's values are appended as without deferral.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from cuzk.field import fr
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.poseidon.constants import Strength, constraint_count
from cuzk.gadgets.poseidon.native import kernel_args
from cuzk.gadgets.poseidon.program import poseidon_program
from cuzk.r1cs import Variable, WitnessCS

log = logging.getLogger(__name__)


@dataclass
class Checks:
    """Which (arity, strength) passed or failed the first-use check, in a
    :class:`~cuzk.r1cs.memo.SynthesisCache`."""

    checked: set[tuple[int, Strength]] = field(default_factory=set)
    refused: set[tuple[int, Strength]] = field(default_factory=set)


def hash_witness(
    cs: WitnessCS,
    preimage: Sequence[AllocatedNum],
    tag: int,
    strength: Strength,
    gadget: Callable[[], AllocatedNum],
) -> AllocatedNum:
    """The digest of ``preimage`` with the circuit's values appended to ``cs``: from the
    kernel, or by ``gadget()`` (the kernel off in ``cs.options``, a value missing, a first use
    being checked), or deferred (``defer_poseidon``, the arity checked)."""
    options = cs.options
    values = [p.value for p in preimage if p.value is not None]
    key = (len(preimage), strength)
    checks = cs.cache.memo(Checks)
    if not options.poseidon_kernel or key in checks.refused or len(values) < len(preimage):
        return gadget()  # (a value missing: the gadget reports it)
    if options.defer_poseidon and key in checks.checked:
        return _defer(cs, values, tag, strength)
    appended = _values(values, tag, strength)
    if options.verify_first_use and key not in checks.checked:
        base = len(cs.aux)
        digest = gadget()
        if cs.aux[base:] == fr.to_ints(appended) and digest.variable.key == cs.num_aux - 1:
            checks.checked.add(key)
        else:
            checks.refused.add(key)
            log.warning(
                "Poseidon arity %d: kernel values disagree with the gadget; not used", key[0]
            )
        return digest
    cs.extend_mont(appended)
    return AllocatedNum(Variable(cs.num_aux - 1), fr.to_int(appended[-1]))


def _defer(cs: WitnessCS, preimage: list[int], tag: int, strength: Strength) -> AllocatedNum:
    """Record the hash as a run; only its digest is computed here."""
    from cuzk.gadgets.poseidon import _kernels

    pre = fr.from_ints(preimage)
    digest = _kernels.k_poseidon_digest(pre, *kernel_args(len(preimage), strength, tag))
    cs.defer(poseidon_program(len(preimage), strength, tag), pre)
    return AllocatedNum(Variable(cs.num_aux - 1), fr.to_int(np.array(digest, dtype=np.uint64)))


def _values(preimage: list[int], tag: int, strength: Strength) -> fr.FrVec:
    """The values the gadget appends, as the Montgomery vector the kernel wrote."""
    from cuzk.gadgets.poseidon import _kernels

    arity = len(preimage)
    rec = np.empty((constraint_count(arity, strength), 4), dtype=np.uint64)
    n = _kernels.k_poseidon_witness(fr.from_ints(preimage), *kernel_args(arity, strength, tag), rec)
    assert n == len(rec), "the kernel's allocation count is the circuit's constraint count"
    return rec
