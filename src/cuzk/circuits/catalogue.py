"""The circuit catalogue: one table of the kinds of circuit cuzk proves, and every lookup by id.

A circuit id is a kind's prefix and an argument: ``synthetic:N`` (N constraints at most),
``winning-``, ``wpost-``, ``porep-`` or ``snap-`` followed by a sector size (``2k``, ``8m``,
``512m``, ``32g``, ``64g``), and ``snarkjs:NAME`` (the key ``NAME.zkey``, proved from a circom
witness). Each row of :data:`KINDS` says, for its kind, how an id is parsed into parameters and
spelled canonically (``synthetic:0512`` and ``synthetic:512`` are one circuit with one key
file), what its key file is called, how a seed becomes a circuit, what its payload is and which
reader opens it, which of the engine's prover families proves it, and — for Filecoin kinds —
which function builds its payload from the parts a client sends. Code that needs any of this
asks the catalogue rather than testing an id's prefix itself.

A ``snarkjs:NAME`` request is opened by the engine's snarkjs family (``cuzk.engine.family``,
which may use ``cuzk.interop``, a layer above this one): its constraints live in the key and
its witness arrives whole, so it has no circuit object here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cuzk.circuits.filecoin import (
    porep,
    porep_c1,
    post,
    snap,
    snap_vanilla,
    vanilla,
    vanilla_json,
    wire,
)
from cuzk.circuits.statement import Share, Statement, StatementShare, payload_digest
from cuzk.circuits.synthetic import SyntheticCircuit
from cuzk.errors import BadInput
from cuzk.r1cs import Circuit

MAX_SEEDED_PARTITIONS = 1 << 16


@dataclass(frozen=True)
class CircuitKind:
    """One row of the catalogue. Functions taking ``params`` take what :attr:`parse`
    returned."""

    name: str  # the kind's label (metrics, the daemon's proof kinds): "synthetic", "wpost", …
    prefix: str  # every id of the kind starts with it
    pattern: str  # its ids in help texts: "synthetic:N", "wpost-SIZE"
    parse: Callable[[str], Any]  # a whole id → its parameters; BadInput naming the fault
    spell: Callable[[Any], str]  # parameters → the canonical id
    ids: Callable[[], list[str]]  # its ids, for help and errors ([pattern]: not enumerable)
    key_stem: Callable[[Any], str]  # parameters → key file name without .params/.vk/.zkey
    seeded: Callable[[Any, int], Circuit] | None  # (parameters, seed) → circuit; None: no seeds
    payload: str  # what a payload of this kind is ("" when it takes none)
    open_payload: Callable[[str, bytes], Statement] | None  # (canonical id, payload) → statement
    prover: str = "bellperson"  # the engine's prover family: "bellperson" or "snarkjs"
    for_size: Callable[[int], Any] | None = None  # Filecoin: sector size → parameters
    from_parts: Callable[[str, wire.ClientParts], bytes] | None = None  # Filecoin: → payload
    #: (canonical id, payload, share) → that share of the statement, for kinds whose payloads
    #: are large and hold many partitions (a 32 GiB C1): opened by several helpers at once
    open_share: Callable[[str, bytes, Share], StatementShare] | None = None


def _argument(circuit_id: str, pattern: re.Pattern[str], expected: str) -> str:
    """What follows the ``:`` of an id, if it matches ``pattern`` (else BadInput)."""
    arg = circuit_id.partition(":")[2]
    if not pattern.fullmatch(arg):
        raise BadInput(f"bad circuit id {circuit_id!r}: expected {expected}")
    return arg


# -- synthetic:N ------------------------------------------------------------------------------

_SYNTHETIC_SIZE = re.compile(r"[0-9]+(?:_[0-9]+)*", re.ASCII)  # Python's digit grouping


def _synthetic_target(circuit_id: str) -> int:
    arg = _argument(circuit_id, _SYNTHETIC_SIZE, "synthetic:N with N a number of constraints "
                    "(digits, single '_' between them allowed)")  # fmt: skip
    try:
        return SyntheticCircuit(int(arg.replace("_", ""))).target
    except BadInput as e:  # below the minimum
        raise BadInput(f"bad circuit id {circuit_id!r}: {e}") from None


# -- snarkjs:NAME -----------------------------------------------------------------------------

_SNARKJS_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", re.ASCII)


def _snarkjs_name(circuit_id: str) -> str:
    return _argument(circuit_id, _SNARKJS_NAME, "snarkjs:NAME with NAME of letters, digits, "
                     "'_', '.', '-' (the key is NAME.zkey in the parameter directory)")  # fmt: skip


# -- Filecoin ---------------------------------------------------------------------------------


def _filecoin_id(params: Any) -> str:
    return params.circuit_id


def _post_ids(prefix: str) -> Callable[[], list[str]]:
    return lambda: [i for i in post.post_circuit_ids() if i.startswith(prefix)]


def _filecoin(
    name: str,
    parse: Callable[[str], Any],
    ids: Callable[[], list[str]],
    key_stem: Callable[[Any], str],
    for_size: Callable[[int], Any],
    seeded: Callable[[Any, int], Circuit],
    payload: str,
    open_payload: Callable[[str, bytes], Statement],
    from_parts: Callable[[str, wire.ClientParts], bytes],
    open_share: Callable[[str, bytes, Share], StatementShare] | None = None,
) -> CircuitKind:
    """A Filecoin kind: ids ``NAME-SIZE``, whose parameters know their canonical id."""
    prefix = f"{name}-"
    return CircuitKind(name, prefix, f"{prefix}SIZE", parse, _filecoin_id, ids, key_stem, seeded,
                       payload, open_payload, "bellperson", for_size, from_parts,
                       open_share)  # fmt: skip


_POST_PAYLOAD = "a PoSt request (vanilla proofs in upstream's JSON, in our envelope)"

# name, parse, ids, key file stem, sector size → parameters, seeded circuit, payload, its
# reader, the payload from a client's parts (Filecoin rows; the others spell every field).
KINDS: tuple[CircuitKind, ...] = (
    CircuitKind(
        "synthetic", "synthetic:", "synthetic:N",
        parse=_synthetic_target,
        spell=lambda n: f"synthetic:{n}",
        ids=lambda: ["synthetic:N"],
        key_stem=lambda n: f"synthetic-{n}",
        seeded=SyntheticCircuit,
        payload="",
        open_payload=None,
    ),
    _filecoin("winning", post.post_params, _post_ids("winning-"), post.param_file_stem,
              post.winning_params, vanilla.SeededPoStCircuit, _POST_PAYLOAD,
              vanilla_json.open_statement, wire.post_payload),
    _filecoin("wpost", post.post_params, _post_ids("wpost-"), post.param_file_stem,
              post.window_params, vanilla.SeededPoStCircuit, _POST_PAYLOAD,
              vanilla_json.open_statement, wire.post_payload),
    _filecoin("porep", porep.porep_params, porep.porep_circuit_ids, porep.param_file_stem,
              porep.porep_params_for_size, porep_c1.SeededPoRepCircuit,
              "a PoRep C1 output (JSON)", porep_c1.open_statement, wire.porep_payload,
              porep_c1.open_share),
    _filecoin("snap", snap.snap_params, snap.snap_circuit_ids, snap.param_file_stem,
              snap.snap_params_for_size, snap_vanilla.SeededSnapCircuit,
              "a SnapDeals update request (JSON)", snap_vanilla.open_statement,
              wire.snap_payload),
    CircuitKind(
        "snarkjs", "snarkjs:", "snarkjs:NAME",
        parse=_snarkjs_name,
        spell=lambda name: f"snarkjs:{name}",
        ids=lambda: ["snarkjs:NAME"],
        key_stem=lambda name: name,  # the key is NAME.zkey
        seeded=None,
        payload="a circom witness (.wtns)",
        open_payload=None,  # the engine's snarkjs family reads it against the key
        prover="snarkjs",
    ),
)  # fmt: skip
_BY_NAME = {k.name: k for k in KINDS}


# -- lookups ----------------------------------------------------------------------------------


def find_kind(circuit_id: str) -> CircuitKind | None:
    """The kind whose prefix ``circuit_id`` has, or None (the id itself is not checked)."""
    return next((k for k in KINDS if circuit_id.startswith(k.prefix)), None)


def kind_of(circuit_id: str) -> CircuitKind:
    """The kind of ``circuit_id`` (BadInput naming the known ids if there is none)."""
    kind = find_kind(circuit_id) if isinstance(circuit_id, str) else None
    if kind is None:
        raise BadInput(f"unknown circuit {circuit_id!r}; known: {', '.join(circuit_ids())}")
    return kind


def _parse(circuit_id: str) -> tuple[CircuitKind, Any]:
    kind = kind_of(circuit_id)
    return kind, kind.parse(circuit_id)


def canonical_id(circuit_id: str) -> str:
    """The id's one spelling (``synthetic:0512`` → ``synthetic:512``); BadInput if it names
    no circuit. Everything keyed by circuit — key files, shapes, residency — uses it."""
    kind, params = _parse(circuit_id)
    return kind.spell(params)


def circuit_ids() -> list[str]:
    """Every id (or id pattern) the catalogue knows, for help texts and errors."""
    return [i for k in KINDS for i in k.ids()]


def prover_of(circuit_id: str) -> str:
    """The engine's prover family for a circuit (BadInput for a malformed id)."""
    kind, _ = _parse(circuit_id)
    return kind.prover


def snarkjs_name(circuit_id: str) -> str | None:
    """NAME of a ``snarkjs:NAME`` id (its key is ``NAME.zkey``), None for other ids.

    Raises:
        BadInput: a snarkjs id whose name could leave the parameter directory or is empty.
    """
    kind = find_kind(circuit_id)
    return kind.parse(circuit_id) if kind is not None and kind.prover == "snarkjs" else None


def get_circuit(circuit_id: str, seed: int = 0) -> Circuit:
    """The circuit named ``circuit_id``; ``seed`` selects the witness, never the shape.

    Filecoin circuits are blank in shape mode; in witness mode they prove random sectors
    chosen by ``seed`` (the small sizes only; real proofs take a payload, :func:`open_statement`).
    """
    kind, params = _parse(circuit_id)
    if kind.seeded is None:
        raise BadInput(
            f"{circuit_id} is proved from {kind.payload} by the engine's {kind.prover} prover "
            "family; it has no built-in circuit"
        )
    return kind.seeded(params, seed)


def key_file_stem(circuit_id: str) -> str:
    """File name (without ``.params``/``.vk``; ``.zkey`` for snarkjs) of a circuit's keys: the
    official v28 name for Filecoin circuits, so a directory of official parameters and one of
    test parameters are used the same way; ``synthetic-N`` (canonical N) otherwise."""
    kind, params = _parse(circuit_id)
    return kind.key_stem(params)


def open_statement(circuit_id: str, seeds: Sequence[int] = (), payload: bytes = b"") -> Statement:
    """What a request proves: one circuit per seed, or the partitions a payload describes.

    The payload is parsed and checked here, completely, by its kind's reader, so a bad one is
    refused before any work is queued for it; the per-partition circuits are built later, by
    ``circuit(i)``. The statement names the circuit by its canonical id.

    Raises:
        BadInput: unknown circuit, both or neither of seeds and payload, a payload this circuit
            kind does not take, or a malformed or inconsistent payload (naming where).
    """
    if bool(seeds) == bool(payload):
        raise BadInput(f"{circuit_id}: give either witness seeds or a payload")
    kind, params = _parse(circuit_id)
    cid = kind.spell(params)
    if kind.prover != "bellperson":
        raise BadInput(
            f"{cid}: {kind.name} requests are opened by the engine's {kind.prover} family "
            f"(cuzk.engine.family), which reads {kind.payload} against the key"
        )
    if seeds:
        seeded = kind.seeded
        assert seeded is not None  # every bellperson kind builds seeded circuits
        if len(seeds) > MAX_SEEDED_PARTITIONS:
            raise BadInput(f"{len(seeds)} seeds: at most {MAX_SEEDED_PARTITIONS} partitions")
        frozen = tuple(seeds)
        digest = payload_digest(cid, frozen, b"")
        return Statement(cid, len(frozen), lambda i: seeded(params, frozen[i]), digest)
    if kind.open_payload is None:
        raise BadInput(f"{cid} takes witness seeds, not a payload")
    return kind.open_payload(cid, payload)


def opens_in_shares(circuit_id: str) -> bool:
    """Whether a payload of this circuit can be opened in shares (:func:`open_share`)."""
    kind = find_kind(circuit_id)
    return kind is not None and kind.open_share is not None


def open_share(circuit_id: str, payload: bytes, share: Share) -> StatementShare:
    """One share of :func:`open_statement`'s work on a payload: its run of partitions parsed
    and checked (the document's own fields are checked by every share). The
    :func:`~cuzk.circuits.statement.join` of every share of a ``count`` is the statement.

    Raises:
        BadInput: as :func:`open_statement`; also for a kind not opened in shares.
    """
    kind, params = _parse(circuit_id)
    cid = kind.spell(params)
    if kind.open_share is None:
        raise BadInput(f"{cid}: {kind.name} payloads are opened whole")
    if not payload:
        raise BadInput(f"{cid}: give a payload")
    return kind.open_share(cid, payload, share)


def filecoin_circuit(kind: str, sector_size: int) -> str:
    """The id of Filecoin kind ``kind`` ("winning", "wpost", "porep", "snap") at a sector
    size in bytes (BadInput for a size the kind does not support)."""
    row = _BY_NAME.get(kind)
    if row is None or row.for_size is None:
        raise BadInput(f"{kind!r} is not a Filecoin proof kind")
    return row.spell(row.for_size(sector_size))


def payload_from_parts(circuit_id: str, parts: wire.ClientParts) -> bytes:
    """A Filecoin circuit's payload from the parts a client sent
    (:class:`cuzk.circuits.filecoin.wire.ClientParts`); BadInput naming a missing or
    unexpected part."""
    kind, params = _parse(circuit_id)
    if kind.from_parts is None:
        raise BadInput(f"{circuit_id} is not a Filecoin circuit")
    return kind.from_parts(kind.spell(params), parts)


def official_circuits() -> list[str]:
    """The catalogue's circuits whose keys are official Filecoin files (``porep-32g``, …)."""
    return [c for c in circuit_ids() if ":" not in c and key_file_stem(c).startswith("v28-")]
