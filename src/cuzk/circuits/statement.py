"""What one proving job proves: a circuit id and, per partition, the circuit with its witness.

A client names a circuit and hands over either witness seeds (the synthetic benchmark circuits
and the seeded Filecoin test circuits) or a *payload*: bytes in the circuit family's own format
(a PoSt request with vanilla proofs, a PoRep C1 output, a SnapDeals vanilla proof…). Opening a
statement parses and checks that payload completely — a bad one is refused with BadInput when it
is submitted, before it holds any resources — and fixes the number of partitions. Building each
partition's circuit (``circuit(i)``) is deferred to the synthesis workers, so a large payload is
parsed once and the witnesses are built in parallel.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from cuzk.errors import BadInput
from cuzk.r1cs import Circuit


@dataclass(frozen=True)
class Statement:
    """``partitions`` circuits of the same shape (``circuit_id``), built on demand.

    ``expected_inputs[i]``, when not None, is the public-input vector (without ONE) that
    partition ``i``'s payload states; the engine refuses a proof whose witness proves anything
    else. ``digest`` identifies the payload for request-id deduplication.
    """

    circuit_id: str
    partitions: int
    build: Callable[[int], Circuit] = field(repr=False)
    digest: str
    expected_inputs: tuple[tuple[int, ...] | None, ...] = ()

    def __post_init__(self) -> None:
        if self.partitions < 1:
            raise BadInput(f"{self.circuit_id}: a request needs at least one partition")
        if self.expected_inputs and len(self.expected_inputs) != self.partitions:
            raise ValueError("expected_inputs needs one entry per partition")

    def circuit(self, index: int) -> Circuit:
        """Partition ``index``'s circuit with its witness (may raise BadInput)."""
        if not 0 <= index < self.partitions:
            raise IndexError(f"partition {index} of {self.partitions}")
        return self.build(index)

    def expected(self, index: int) -> tuple[int, ...] | None:
        return self.expected_inputs[index] if self.expected_inputs else None


@dataclass(frozen=True)
class Built:
    """The ``build`` of a statement whose circuits were made while it was opened (a PoSt
    request's one partition). Unlike a lambda it pickles, so the engine's payload opener can
    send the statement back from its helper process instead of opening it again in the
    engine's own, where the parse would hold the GIL the device workers need."""

    circuits: tuple[Circuit, ...]

    def __call__(self, index: int) -> Circuit:
        return self.circuits[index]


@dataclass(frozen=True)
class Share:
    """Which of a payload's partitions one reader checks: the ``index``-th of ``count``
    contiguous runs of near-equal length. A payload with many partitions (a 32 GiB PoRep C1:
    10) can be opened by ``count`` helper processes at once, each reading and checking only
    its run (a reader may also decode only that run: a PoRep C1 is cut at its partitions);
    :func:`join` makes the statement of the runs."""

    index: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        if not 0 <= self.index < self.count:
            raise ValueError(f"share {self.index} of {self.count}")

    def of(self, partitions: int) -> range:
        """This share's partitions of ``partitions`` (empty when there are fewer partitions
        than shares)."""
        return range(partitions * self.index // self.count,
                     partitions * (self.index + 1) // self.count)  # fmt: skip


WHOLE = Share()


@dataclass(frozen=True)
class StatementShare:
    """The partitions ``span`` (of ``total``) of a statement, opened by one reader.
    ``build(i)`` and ``expected_inputs[i]`` are those of partition ``span[i]``. The payload's
    digest is the joiner's to give (:func:`join`): one hash of a 38 MB payload, not one a
    share."""

    circuit_id: str
    total: int
    span: range
    build: Callable[[int], Circuit] = field(repr=False)
    expected_inputs: tuple[tuple[int, ...] | None, ...] = ()


@dataclass(frozen=True)
class Joined:
    """The ``build`` of a statement opened in shares: partition ``i`` is built by the share
    whose span holds it (``starts``: each share's first partition, ascending)."""

    starts: tuple[int, ...]
    builds: tuple[Callable[[int], Circuit], ...]

    def __call__(self, index: int) -> Circuit:
        k = bisect.bisect_right(self.starts, index) - 1
        return self.builds[k](index - self.starts[k])


def join(shares: Sequence[StatementShare], digest: str) -> Statement:
    """The statement whose partitions the ``shares`` opened (in any order) from the payload
    whose :func:`payload_digest` is ``digest``. Raises ValueError unless they agree on the
    circuit and partition count and their spans tile the partitions."""
    parts = sorted((s for s in shares if s.span), key=lambda s: s.span.start)
    if not parts:
        raise ValueError("no share holds a partition")
    first = parts[0]
    if any((s.circuit_id, s.total) != (first.circuit_id, first.total) for s in parts):
        raise ValueError("shares of different statements")
    tiled = [i for s in parts for i in s.span]
    if tiled != list(range(first.total)):
        raise ValueError(f"shares hold partitions {tiled}, not 0…{first.total - 1}")
    with_inputs = [bool(s.expected_inputs) for s in parts]
    if any(with_inputs) and not all(with_inputs):
        raise ValueError("some shares state their public inputs and some do not")
    if len(parts) == 1:
        build: Callable[[int], Circuit] = first.build
    else:
        build = Joined(tuple(s.span.start for s in parts), tuple(s.build for s in parts))
    inputs = tuple(x for s in parts for x in s.expected_inputs)
    return Statement(first.circuit_id, first.total, build, digest, inputs)


def payload_digest(circuit_id: str, seeds: Sequence[int], payload: bytes) -> str:
    """SHA-256 over what a request asks to prove (never over how urgently)."""
    h = hashlib.sha256()
    h.update(circuit_id.encode())
    h.update(b"\0seeds:" + ",".join(str(s) for s in seeds).encode())
    h.update(b"\0payload:" + hashlib.sha256(payload).digest())
    return h.hexdigest()
