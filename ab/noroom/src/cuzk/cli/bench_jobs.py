"""What ``cuzk bench``'s clients submit and what they get back, shared by its load and its
urgent probe (:mod:`cuzk.cli.bench_urgent`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Outcome:
    """One job as the bench saw it."""

    index: int
    job_id: str | None
    state: str  # "succeeded", "failed" or "cancelled"
    error: str | None
    proof: bytes | None
    public_inputs: tuple[tuple[int, ...], ...] | None


def curio_request(message: Any, request_id: str) -> Any:
    """The engine's request for a copy of a Curio ``SubmitProofRequest`` under ``request_id``
    (the message's own id would make every proof one deduplicated job), converted the way the
    daemon converts it, so the conversion's time counts."""
    from cuzk.server.convert import to_engine

    msg = type(message)()
    msg.CopyFrom(message)
    msg.request_id = request_id
    return to_engine(msg).request
