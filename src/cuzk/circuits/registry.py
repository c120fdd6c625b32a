"""Circuit ids → circuit objects. Later issues register Filecoin kinds here."""

from __future__ import annotations

from cuzk.circuits.synthetic import SyntheticCircuit
from cuzk.errors import BadInput
from cuzk.r1cs import Circuit


def circuit_ids() -> list[str]:
    """Id patterns accepted by :func:`get_circuit`, for help texts and errors."""
    return ["synthetic:N"]


def get_circuit(circuit_id: str, seed: int = 0) -> Circuit:
    """The circuit named ``circuit_id``; ``seed`` selects the witness, never the shape."""
    kind, _, arg = circuit_id.partition(":")
    if kind == "synthetic":
        try:
            target = int(arg.replace("_", ""))
        except ValueError:
            raise BadInput(f"bad circuit id {circuit_id!r}: expected synthetic:N") from None
        return SyntheticCircuit(target, seed)
    raise BadInput(f"unknown circuit {circuit_id!r}; known: {', '.join(circuit_ids())}")
