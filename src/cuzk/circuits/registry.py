"""Circuit ids → circuit objects: ``synthetic:N`` and Filecoin's PoSt circuits
(``winning-2k`` … ``winning-64g``, ``wpost-2k`` … ``wpost-64g``)."""

from __future__ import annotations

from collections.abc import Sequence

from cuzk.circuits.statement import Statement, payload_digest
from cuzk.circuits.synthetic import SyntheticCircuit
from cuzk.errors import BadInput
from cuzk.r1cs import Circuit

MAX_SEEDED_PARTITIONS = 1 << 16


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


def open_statement(circuit_id: str, seeds: Sequence[int] = (), payload: bytes = b"") -> Statement:
    """What a request proves: one circuit per seed, or the partitions a payload describes.

    The payload is parsed and checked here, completely, so a bad one is refused before any
    work is queued for it; the per-partition circuits are built later, by ``circuit(i)``.

    Raises:
        BadInput: unknown circuit, both or neither of seeds and payload, a payload this circuit
            family does not take, or a malformed or inconsistent payload (naming where).
    """
    if bool(seeds) == bool(payload):
        raise BadInput(f"{circuit_id}: give either witness seeds or a payload")
    digest = payload_digest(circuit_id, seeds, payload)
    if seeds:
        get_circuit(circuit_id)  # unknown or malformed ids fail here
        if len(seeds) > MAX_SEEDED_PARTITIONS:
            raise BadInput(f"{len(seeds)} seeds: at most {MAX_SEEDED_PARTITIONS} partitions")
        frozen = tuple(seeds)
        return Statement(circuit_id, len(frozen), lambda i: get_circuit(circuit_id, frozen[i]),
                         digest)  # fmt: skip
    if circuit_id.startswith(("winning-", "wpost-")):
        from cuzk.circuits.filecoin.vanilla_json import read_request

        vanilla_id, circuit, inputs = read_request(payload)
        if vanilla_id != circuit_id:
            raise BadInput(f"the PoSt request is for {vanilla_id}, not {circuit_id}")
        return Statement(circuit_id, 1, lambda _i: circuit, digest, (tuple(inputs),))
    get_circuit(circuit_id)
    raise BadInput(f"{circuit_id} takes witness seeds, not a payload")
