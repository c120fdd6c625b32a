"""Circuit ids → circuit objects: ``synthetic:N`` and Filecoin's circuits (``winning-``,
``wpost-``, ``porep-`` and ``snap-`` followed by ``2k``, ``8m``, ``512m``, ``32g`` or ``64g``).

``snarkjs:NAME`` names a snarkjs key (``NAME.zkey``) proved from a circom witness. It has no
circuit object here: its constraints live in the key and its witness arrives whole, so the
engine's snarkjs prover family (:mod:`cuzk.engine.family`, which may use :mod:`cuzk.interop`,
a layer above this one) opens those requests; this module only checks the name."""

from __future__ import annotations

import re
from collections.abc import Sequence

from cuzk.circuits.statement import Statement, payload_digest
from cuzk.circuits.synthetic import SyntheticCircuit
from cuzk.errors import BadInput
from cuzk.r1cs import Circuit

MAX_SEEDED_PARTITIONS = 1 << 16
SNARKJS_PREFIX = "snarkjs:"
_SNARKJS_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


def snarkjs_name(circuit_id: str) -> str | None:
    """NAME of a ``snarkjs:NAME`` id (its key is ``NAME.zkey``), None for other ids.

    Raises:
        BadInput: a snarkjs id whose name could leave the parameter directory or is empty.
    """
    if not circuit_id.startswith(SNARKJS_PREFIX):
        return None
    name = circuit_id[len(SNARKJS_PREFIX) :]
    if not _SNARKJS_NAME.fullmatch(name):
        raise BadInput(
            f"bad circuit id {circuit_id!r}: expected snarkjs:NAME with NAME of letters, "
            "digits, '_', '.', '-' (the key is NAME.zkey in the parameter directory)"
        )
    return name


def circuit_ids() -> list[str]:
    """Id patterns accepted by :func:`get_circuit`, for help texts and errors."""
    from cuzk.circuits.filecoin.porep import porep_circuit_ids
    from cuzk.circuits.filecoin.post import post_circuit_ids
    from cuzk.circuits.filecoin.snap import snap_circuit_ids

    return ["synthetic:N", *post_circuit_ids(), *porep_circuit_ids(), *snap_circuit_ids(),
            "snarkjs:NAME"]  # fmt: skip


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
    if circuit_id.startswith("porep-"):
        from cuzk.circuits.filecoin.porep import porep_params
        from cuzk.circuits.filecoin.porep_c1 import SeededPoRepCircuit

        return SeededPoRepCircuit(porep_params(circuit_id), seed)
    if circuit_id.startswith("snap-"):
        from cuzk.circuits.filecoin.snap import snap_params
        from cuzk.circuits.filecoin.snap_vanilla import SeededSnapCircuit

        return SeededSnapCircuit(snap_params(circuit_id), seed)
    if snarkjs_name(circuit_id) is not None:
        raise BadInput(
            f"{circuit_id} is a snarkjs key proved from a circom witness (.wtns payload) by the "
            "engine; it has no built-in circuit"
        )
    raise BadInput(f"unknown circuit {circuit_id!r}; known: {', '.join(circuit_ids())}")


def key_file_stem(circuit_id: str) -> str:
    """File name (without ``.params``/``.vk``) of a circuit's keys: the official v28 name for
    Filecoin circuits, so a directory of official parameters and one of test parameters are
    used the same way; the id with ``:`` → ``-`` otherwise."""
    if circuit_id.startswith(("winning-", "wpost-")):
        from cuzk.circuits.filecoin.post import param_file_stem, post_params

        return param_file_stem(post_params(circuit_id))
    if circuit_id.startswith("porep-"):
        from cuzk.circuits.filecoin import porep

        return porep.param_file_stem(porep.porep_params(circuit_id))
    if circuit_id.startswith("snap-"):
        from cuzk.circuits.filecoin import snap

        return snap.param_file_stem(snap.snap_params(circuit_id))
    name = snarkjs_name(circuit_id)
    if name is not None:
        return name  # the key is NAME.zkey
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
    if snarkjs_name(circuit_id) is not None:
        raise BadInput(
            f"{circuit_id}: snarkjs requests are opened by the engine's snarkjs family "
            "(cuzk.engine.family), which reads the .wtns payload against the key"
        )
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
    if circuit_id.startswith("porep-"):
        from cuzk.circuits.filecoin import porep_c1

        return porep_c1.open_statement(circuit_id, payload)
    if circuit_id.startswith("snap-"):
        from cuzk.circuits.filecoin import snap_vanilla

        return snap_vanilla.open_statement(circuit_id, payload)
    get_circuit(circuit_id)
    raise BadInput(f"{circuit_id} takes witness seeds, not a payload")
