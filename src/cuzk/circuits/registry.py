"""Circuit ids → circuit objects: ``synthetic:N`` and Filecoin's PoSt circuits
(``winning-2k`` … ``winning-64g``, ``wpost-2k`` … ``wpost-64g``)."""

from __future__ import annotations

from cuzk.circuits.synthetic import SyntheticCircuit
from cuzk.errors import BadInput
from cuzk.r1cs import Circuit


def circuit_ids() -> list[str]:
    """Id patterns accepted by :func:`get_circuit`, for help texts and errors."""
    from cuzk.circuits.filecoin.post import post_circuit_ids

    return ["synthetic:N", *post_circuit_ids()]


def get_circuit(circuit_id: str, seed: int = 0) -> Circuit:
    """The circuit named ``circuit_id``; ``seed`` selects the witness, never the shape.

    PoSt circuits are blank in shape mode; in witness mode they prove random sectors chosen by
    ``seed`` (2 KiB and 8 MiB only; real proofs take vanilla proofs through
    :class:`cuzk.circuits.filecoin.FallbackPoStCircuit`).
    """
    kind, _, arg = circuit_id.partition(":")
    if kind == "synthetic":
        try:
            target = int(arg.replace("_", ""))
        except ValueError:
            raise BadInput(f"bad circuit id {circuit_id!r}: expected synthetic:N") from None
        return SyntheticCircuit(target, seed)
    if circuit_id.startswith(("winning-", "wpost-")):
        from cuzk.circuits.filecoin.post import post_params
        from cuzk.circuits.filecoin.vanilla import SeededPoStCircuit

        return SeededPoStCircuit(post_params(circuit_id), seed)
    raise BadInput(f"unknown circuit {circuit_id!r}; known: {', '.join(circuit_ids())}")


def key_file_stem(circuit_id: str) -> str:
    """File name (without ``.params``/``.vk``) of a circuit's keys: the official v28 name for
    Filecoin circuits, so a directory of official parameters and one of test parameters are
    used the same way; the id with ``:`` → ``-`` otherwise."""
    if circuit_id.startswith(("winning-", "wpost-")):
        from cuzk.circuits.filecoin.post import param_file_stem, post_params

        return param_file_stem(post_params(circuit_id))
    return circuit_id.replace(":", "-")
