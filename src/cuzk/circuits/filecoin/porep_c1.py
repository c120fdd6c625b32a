"""PoRep C1 output (filecoin-proofs-api ``SealCommitPhase1Output``) → checked partition witnesses
of :class:`~cuzk.circuits.filecoin.porep.StackedCircuit`.

Accepted payloads: the JSON itself::

    {"registered_proof": "StackedDrg2KiBV1_1",
     "vanilla_proofs": {"StackedDrg2KiBV1": [[challenge proof…] per partition]},
     "comm_r": [32], "comm_d": [32], "replica_id": [32], "seed": [32], "ticket": [32]}

or the wrapper Curio's Go client sends (``{"SectorNum", "Phase1Out": base64 of that JSON,
"SectorSize"}``). Registered proofs: ``StackedDrg{2KiB,8MiB,512MiB,32GiB,64GiB}`` with
``V1``, ``V1_1``, ``V1_1_Feat_SyntheticPoRep`` and ``V1_2_Feat_NonInteractivePoRep`` — all
prove the same partition circuit; they differ in graph (V1: api 1.0.0), challenge derivation
and (non-interactive) partition count.

A challenge proof (storage-proofs-porep ``vanilla::Proof``)::

    {"comm_d_proofs": MerkleProof (binary SHA-256),
     "comm_r_last_proof": MerkleProof (TreeR),
     "replica_column_proofs": {"c_x": ColumnProof, "drg_parents": [6], "exp_parents": [8]},
     "labeling_proofs": [{"parents": [37], "layer_index", "node"} per layer],
     "encoding_proof": {"parents": [37], "layer_index", "node"}}

with ``ColumnProof = {"column": {"index", "rows": [layers], "_h": null}, "inclusion_proof":
MerkleProof}`` and MerkleProofs in the layout :mod:`.vanilla_json` describes.

Everything a prover must not trust is checked before any circuit is built: JSON shape, 32-byte
canonical field elements, counts (partitions, challenges, layers, parents), every Merkle path
against its root, the roots' agreement (comm_d, one comm_r_last, one comm_c, comm_r =
Poseidon2(comm_c, comm_r_last)), the challenge each path proves, every label recomputed from the
parent columns, the encoding, the challenges (derived from seed for interactive PoRep, from
comm_r for non-interactive, by ChaCha20 selection from the synthetic set for synthetic PoRep),
and the parents against the SDR graph (the whole table up to :data:`GRAPH_MAX_NODES` nodes,
the challenged nodes' rows above). Failures raise :class:`~cuzk.errors.BadInput` naming partition,
challenge and field.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from cuzk import safejson
from cuzk.circuits.filecoin.merkle_json import (
    array,
    bytes32,
    fe,
    fe_list,
    field,
    leaf_index,
    merkle_proof_json,
    poseidon_roots,
    read_merkle_proof,
    uint,
)
from cuzk.circuits.filecoin.porep import (
    BASE_DEGREE,
    EXP_DEGREE,
    NI_PARTITIONS,
    TOTAL_PARENTS,
    ChallengeProof,
    ColumnOpening,
    PoRepParams,
    PoRepWitness,
    StackedCircuit,
    porep_params,
    porep_params_for_size,
    public_inputs,
)
from cuzk.circuits.filecoin.porep_challenges import (
    expected_label_parents,
    interactive_challenges,
    label,
    ni_challenges,
    synthetic_challenges,
)
from cuzk.circuits.filecoin.post_params import GIB, KIB, MIB, SIZE_NAMES
from cuzk.circuits.statement import WHOLE, Share, Statement, StatementShare, join, payload_digest
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.gadgets.merkle import MerklePath
from cuzk.gadgets.poseidon.native import hash_many, hash_one
from cuzk.gadgets.sha256.node import node_hash

#: Largest sector (in nodes) whose whole parent table is built to check parent indices (14 u32
#: per node); larger sectors compute the challenged nodes' rows only.
GRAPH_MAX_NODES = 1 << 18

SIZE_LABELS = {2 * KIB: "2KiB", 8 * MIB: "8MiB", 512 * MIB: "512MiB", 32 * GIB: "32GiB",
               64 * GIB: "64GiB"}  # fmt: skip

# suffix -> (api version, challenge kind, registry id offset from the size's V1 id)
_VARIANTS = {
    "V1": ("1.0.0", "interactive", 0),
    "V1_1": ("1.1.0", "interactive", 5),
    "V1_1_Feat_SyntheticPoRep": ("1.2.0", "synthetic", 10),
    "V1_2_Feat_NonInteractivePoRep": ("1.2.0", "ni", 15),
}
_SIZE_IDS = {2 * KIB: 0, 8 * MIB: 1, 512 * MIB: 2, 32 * GIB: 3, 64 * GIB: 4}


@dataclass(frozen=True)
class RegisteredPoRep:
    """What a ``RegisteredSealProof`` name fixes for C2."""

    name: str
    sector_size: int
    api_version: str
    challenge_kind: str  # "interactive", "synthetic" or "ni"
    registry_id: int

    @property
    def porep_id(self) -> bytes:
        """filecoin-proofs-api ``porep_id``: registry id u64 LE, nonce 0, zeros."""
        return self.registry_id.to_bytes(8, "little") + bytes(24)

    @property
    def vanilla_key(self) -> str:
        return f"StackedDrg{SIZE_LABELS[self.sector_size]}V1"

    @property
    def params(self) -> PoRepParams:
        return porep_params_for_size(self.sector_size)

    @property
    def partitions(self) -> int:
        if self.challenge_kind == "ni":
            return NI_PARTITIONS[self.sector_size]
        return self.params.partitions


def registered_porep(name: str) -> RegisteredPoRep:
    """Look up a registered seal proof by name.

    Raises:
        BadInput: unknown name.
    """
    if isinstance(name, str):
        for size, label in SIZE_LABELS.items():
            prefix = f"StackedDrg{label}"
            if name.startswith(prefix) and name[len(prefix) :] in _VARIANTS:
                api, kind, off = _VARIANTS[name[len(prefix) :]]
                return RegisteredPoRep(name, size, api, kind, _SIZE_IDS[size] + off)
    raise BadInput(f"registered_proof {name!r} is not a known StackedDrg seal proof")


@dataclass(frozen=True)
class C1Output:
    """A parsed and checked C1 output."""

    proof: RegisteredPoRep
    comm_r: int
    comm_d: int
    replica_id: int
    seed: bytes
    ticket: bytes
    witnesses: tuple[PoRepWitness, ...]  # one per partition read (``span``)
    sector_num: int | None = None  # from Curio's wrapper
    graph_checked: bool = False  # parent indices checked against the SDR graph
    span: range | None = None  # the partitions read (None: all of them)

    @property
    def params(self) -> PoRepParams:
        return self.proof.params

    def circuit(self, partition: int) -> StackedCircuit:
        """The circuit of the ``partition``-th partition read (of ``span``)."""
        return StackedCircuit(self.params, self.witnesses[partition])

    def public_inputs(self, partition: int) -> list[int]:
        return public_inputs(self.params, self.witnesses[partition])


# -- bulk verification ----------------------------------------------------------------------


def _column_hashes(columns: Sequence[Sequence[int]], layers: int) -> list[int]:
    if not columns:
        return []
    flat = [x for col in columns for x in col]
    return fr.to_ints(hash_many(fr.from_ints(flat), layers))


def _sha_root(mp: MerklePath) -> int:
    cur = mp.leaf
    for s, p in zip(mp.siblings, mp.positions, strict=True):
        cur = node_hash([*s[:p], cur, *s[p:]])
    return cur


def _graph(nodes: int, porep_id: bytes, api_version: str, challenged: Sequence[int]) -> Any | None:
    """The SDR parent graph from :mod:`cuzk.circuits.filecoin.seal.graph`: the whole table for
    small sectors (kept for the next request), the ``challenged`` nodes' rows otherwise; None
    where the module is missing."""
    try:
        from cuzk.circuits.filecoin.seal.graph import ParentRows
    except ImportError:
        return None
    if nodes <= GRAPH_MAX_NODES:
        return _table(nodes, porep_id, api_version)
    rows = ParentRows(nodes, porep_id, api_version)
    rows.prefetch(challenged)
    return rows


@lru_cache(maxsize=4)
def _table(nodes: int, porep_id: bytes, api_version: str) -> Any:
    from cuzk.circuits.filecoin.seal.graph import build_graph

    return build_graph(nodes, porep_id, api_version)


# -- parsing --------------------------------------------------------------------------------


@dataclass
class _RawChallenge:
    where: str
    comm_d_path: MerklePath
    comm_r_last_path: MerklePath
    c_x_rows: list[int]
    c_x_index: int
    c_x_path: MerklePath
    drg: list[tuple[int, list[int], MerklePath]]
    exp: list[tuple[int, list[int], MerklePath]]
    labeling: list[tuple[list[int], int, int]]  # (parents, layer_index, node)
    encoding: tuple[list[int], int, int]


def _read_column(obj: Any, p: PoRepParams, what: str) -> tuple[int, list[int], MerklePath]:
    col = field(obj, "column", what)
    index = uint(field(col, "index", f"{what} column"), 32, f"{what} column index")
    rows = array(field(col, "rows", f"{what} column"), p.layers, f"{what} column rows")
    vals = fe_list(rows, f"{what} column row")
    path = read_merkle_proof(field(obj, "inclusion_proof", what), p.tree,
                             f"{what} inclusion_proof")  # fmt: skip
    return index, vals, path


def _read_labeling(obj: Any, what: str) -> tuple[list[int], int, int]:
    parents = array(field(obj, "parents", what), TOTAL_PARENTS, f"{what} parents")
    vals = fe_list(parents, f"{what} parent")
    layer = uint(field(obj, "layer_index", what), 32, f"{what} layer_index")
    node = uint(field(obj, "node", what), 64, f"{what} node")
    return vals, layer, node


def _read_challenge(obj: Any, p: PoRepParams, where: str) -> _RawChallenge:
    d = read_merkle_proof(field(obj, "comm_d_proofs", where), p.tree_d,
                          f"{where} comm_d_proofs")  # fmt: skip
    r = read_merkle_proof(field(obj, "comm_r_last_proof", where), p.tree,
                          f"{where} comm_r_last_proof")  # fmt: skip
    rcp = field(obj, "replica_column_proofs", where)
    w = f"{where} replica_column_proofs"
    cx_index, cx_rows, cx_path = _read_column(field(rcp, "c_x", w), p, f"{w} c_x")
    drg_l = array(field(rcp, "drg_parents", w), BASE_DEGREE, f"{w} drg_parents")
    exp_l = array(field(rcp, "exp_parents", w), EXP_DEGREE, f"{w} exp_parents")
    drg = [_read_column(c, p, f"{w} drg_parents[{i}]") for i, c in enumerate(drg_l)]
    exp = [_read_column(c, p, f"{w} exp_parents[{i}]") for i, c in enumerate(exp_l)]
    lab_l = array(field(obj, "labeling_proofs", where), p.layers, f"{where} labeling_proofs")
    labeling = [_read_labeling(x, f"{where} labeling_proofs[{i}]") for i, x in enumerate(lab_l)]
    enc = _read_labeling(field(obj, "encoding_proof", where), f"{where} encoding_proof")
    return _RawChallenge(where, d, r, cx_rows, cx_index, cx_path, drg, exp, labeling, enc)


def _decode_payload(
    payload: bytes | str, share: Share = WHOLE
) -> tuple[Any, _Partitions | None, int | None, int | None]:
    """(SealCommitPhase1Output document, its partitions when read apart, SectorNum,
    SectorSize) from either payload form. A share of the partitions decodes only the
    document's upper levels and the partitions it asks for (:class:`_Partitions`), where
    the document can be cut there (:func:`safejson.split_array`); the partitions are then
    not in the document."""
    if share != WHOLE and isinstance(payload, bytes):
        parted = _decode_parted(payload)
        if parted is not None:
            return parted
    doc = safejson.loads(payload, "C1 output", bytes32=True)
    if not isinstance(doc, dict):
        raise BadInput("C1 output: expected a JSON object")
    if "Phase1Out" not in doc:
        return doc, None, None, None
    inner, num, size = _unwrap(doc)
    doc = safejson.loads(inner, "C1 wrapper Phase1Out", bytes32=True)
    if not isinstance(doc, dict):
        raise BadInput("C1 wrapper Phase1Out: expected a JSON object")
    return doc, None, num, size


def _unwrap(doc: dict[str, Any]) -> tuple[bytes, int, int]:
    """(SealCommitPhase1Output JSON, SectorNum, SectorSize) of Curio's wrapper."""
    num = uint(field(doc, "SectorNum", "C1 wrapper"), 64, "C1 wrapper SectorNum")
    size = uint(field(doc, "SectorSize", "C1 wrapper"), 64, "C1 wrapper SectorSize")
    raw = doc["Phase1Out"]
    if not isinstance(raw, str):
        raise BadInput("C1 wrapper Phase1Out: expected a base64 string")
    try:
        return base64.b64decode(raw, validate=True), num, size
    except (binascii.Error, ValueError) as e:
        raise BadInput(f"C1 wrapper Phase1Out: not valid base64 ({e})") from e


_PARTITIONS = ("vanilla_proofs", None)  # where a C1 document's partitions are


def _decode_parted(payload: bytes) -> tuple[Any, _Partitions, int | None, int | None] | None:
    """:func:`_decode_payload`'s document without its partitions, and the partitions to
    decode one by one; None where the payload cannot be cut so (then it is read whole)."""
    num = size = None
    what = "C1 output"
    split = safejson.split_array(payload, _PARTITIONS)
    if split is None:
        if b'"Phase1Out"' not in payload:
            return None
        # Curio's wrapper: a few fields and the document as one base64 string
        wrapper = safejson.loads(payload, "C1 output")
        if not isinstance(wrapper, dict) or "Phase1Out" not in wrapper:
            return None
        payload, num, size = _unwrap(wrapper)
        what = "C1 wrapper Phase1Out"
        split = safejson.split_array(payload, _PARTITIONS)
        if split is None:
            return None
    doc = safejson.loads(split.head, what, bytes32=True)
    if not isinstance(doc, dict):
        return None
    return doc, _Partitions(payload, split.items, what), num, size


class _Partitions:
    """A C1 document's partitions, each decoded when first asked for."""

    def __init__(self, body: bytes, items: tuple[range, ...], what: str) -> None:
        self._body, self._items, self._what = body, items, what
        self._decoded: dict[int, Any] = {}

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, k: int) -> Any:
        if k not in self._decoded:
            r = self._items[k]
            self._decoded[k] = safejson.loads(self._body[r.start : r.stop], self._what,
                                              bytes32=True)  # fmt: skip
        return self._decoded[k]

    def first_of(self, k: int) -> Any:
        """Partition ``k``'s first element, decoding only that where its bytes can be cut
        (a share not holding partition 0 needs only its first challenge: a tenth of a share's
        decoding saved), else partition ``k`` whole. Its other elements go unchecked here,
        as the share holding them checks them."""
        if k not in self._decoded:
            r = self._items[k]
            body = self._body[r.start : r.stop]
            split = safejson.split_array(body, ())
            if split is not None and split.items:
                first = split.items[0]
                return safejson.loads(body[first.start : first.stop], self._what, bytes32=True)
        element = self[k]
        if not isinstance(element, list) or not element:
            raise BadInput(f"partition {k} challenges: expected a non-empty array")
        return element[0]


def parse_c1(payload: bytes | str, check_graph: bool = True, share: Share = WHOLE) -> C1Output:
    """Parse and check a C1 output (either payload form).

    ``check_graph=False`` skips comparing parent indices with the SDR graph (for hand-made test
    sectors whose parents are arbitrary); everything else is always checked. ``share`` decodes,
    reads and checks only its run of partitions and partition 0 (the document's fields and
    partition count are still checked whole): the C1Output then holds those partitions'
    witnesses, ``span``. Every share checks its roots against partition 0's first challenge,
    so shares that all pass are exactly as consistent as the whole read once.

    Raises:
        BadInput: malformed or inconsistent input, naming partition, challenge and field.
    """
    doc, parted, sector_num, sector_size = _decode_payload(payload, share)
    proof = registered_porep(field(doc, "registered_proof", "C1 output"))
    if sector_size is not None and sector_size != proof.sector_size:
        raise BadInput(f"C1 wrapper: SectorSize {sector_size} does not match {proof.name} "
                       f"({proof.sector_size} bytes)")  # fmt: skip
    p = proof.params
    comm_r = fe(field(doc, "comm_r", "C1 output"), "comm_r")
    comm_d = fe(field(doc, "comm_d", "C1 output"), "comm_d")
    replica_id = fe(field(doc, "replica_id", "C1 output"), "replica_id")
    seed = bytes32(field(doc, "seed", "C1 output"), "seed")
    ticket = bytes32(field(doc, "ticket", "C1 output"), "ticket")
    vp = field(doc, "vanilla_proofs", "C1 output")
    if not isinstance(vp, dict) or set(vp) != {proof.vanilla_key}:
        raise BadInput(f"vanilla_proofs: expected one {proof.vanilla_key!r} entry for "
                       f"{proof.name}")  # fmt: skip
    parts: Any = array(vp[proof.vanilla_key], None if parted else proof.partitions,
                       "vanilla_proofs partitions")  # fmt: skip
    if parted is not None:
        parts = parted
        if len(parts) != proof.partitions:
            raise BadInput(f"vanilla_proofs partitions: expected {proof.partitions} entries, "
                           f"got {len(parts)}")  # fmt: skip
    span = share.of(len(parts))
    if not span:  # more shares than partitions: nothing to read here
        return C1Output(proof, comm_r, comm_d, replica_id, seed, ticket, (), sector_num,
                        check_graph, span)  # fmt: skip

    def read(k: int) -> list[_RawChallenge]:
        chs = array(parts[k], p.challenge_count, f"partition {k} challenges")
        return [_read_challenge(c, p, f"partition {k} challenge {j}") for j, c in enumerate(chs)]

    raw = [read(k) for k in span]
    if span.start == 0:
        reference = raw[0][0]
    else:  # the document's first challenge, read (and checked below) by every share
        if isinstance(parts, _Partitions):
            first = parts.first_of(0)
        else:
            first = array(parts[0], p.challenge_count, "partition 0 challenges")[0]
        reference = _read_challenge(first, p, "partition 0 challenge 0")
    challenged = [c.c_x_index for part in raw for c in part]
    graph = _graph(p.nodes, proof.porep_id, proof.api_version, challenged) if check_graph else None
    witnesses = _verify(proof, span, raw, reference, comm_r, comm_d, replica_id, seed, graph)
    return C1Output(proof, comm_r, comm_d, replica_id, seed, ticket, witnesses, sector_num,
                    graph is not None, None if share == WHOLE else span)  # fmt: skip


def _verify(
    proof: RegisteredPoRep,
    span: range,
    raw: list[list[_RawChallenge]],
    reference: _RawChallenge,
    comm_r: int,
    comm_d: int,
    replica_id: int,
    seed: bytes,
    graph: Any | None,
) -> tuple[PoRepWitness, ...]:
    """Check partitions ``span`` (read into ``raw``) against the roots of ``reference``, the
    document's first challenge."""
    p = proof.params
    flat = [c for part in raw for c in part]
    comm_r_last, comm_c = reference.comm_r_last_path.root, reference.c_x_path.root
    if hash_one([comm_c, comm_r_last]) != comm_r:
        raise BadInput("comm_r is not Poseidon(comm_c, comm_r_last) of the proofs' roots")

    # Column hashes and every Poseidon path, in bulk.
    columns: list[tuple[str, list[int], MerklePath]] = []
    for c in flat:
        w = f"{c.where} replica_column_proofs"
        columns.append((f"{w} c_x", c.c_x_rows, c.c_x_path))
        columns += [(f"{w} drg_parents[{i}]", rows, mp) for i, (_, rows, mp) in enumerate(c.drg)]
        columns += [(f"{w} exp_parents[{i}]", rows, mp) for i, (_, rows, mp) in enumerate(c.exp)]
    hashes = _column_hashes([rows for _, rows, _ in columns], p.layers)
    for (what, _, mp), h in zip(columns, hashes, strict=True):
        if mp.leaf != h:
            raise BadInput(f"{what}: inclusion_proof leaf is not the column's hash")
        if mp.root != comm_c:
            raise BadInput(f"{what}: inclusion_proof root differs from comm_c")
    tree_r = [(f"{c.where} comm_r_last_proof", c.comm_r_last_path) for c in flat]
    for what, mp in tree_r:
        if mp.root != comm_r_last:
            raise BadInput(f"{what}: root differs from comm_r_last (the first challenge's root)")
    checked = [(f"{w} inclusion_proof", mp) for w, _, mp in columns] + tree_r
    roots = poseidon_roots([mp for _, mp in checked], p.tree)
    for (what, mp), root in zip(checked, roots, strict=True):
        if root != mp.root:
            raise BadInput(f"{what}: path does not hash to its root")

    witnesses = []
    per = p.challenge_count
    for k, part in zip(span, raw, strict=True):
        if proof.challenge_kind == "interactive":
            want = interactive_challenges(replica_id, seed, p.nodes, per, k)
        elif proof.challenge_kind == "ni":
            want = ni_challenges(replica_id, comm_r, p.nodes, per, k)
        else:
            want = synthetic_challenges(replica_id, comm_r, seed, p.nodes, per, k)
        proofs = []
        for j, c in enumerate(part):
            proofs.append(_check_challenge(p, c, comm_d, replica_id, graph, want[j]))
        witnesses.append(PoRepWitness(replica_id, comm_d, comm_r, comm_r_last, comm_c,
                                      tuple(proofs)))  # fmt: skip
    return tuple(witnesses)


def _check_challenge(
    p: PoRepParams,
    c: _RawChallenge,
    comm_d: int,
    replica_id: int,
    graph: Any | None,
    want: int,
) -> ChallengeProof:
    where = c.where
    node = c.labeling[0][2]
    if not 0 < node < p.nodes:
        raise BadInput(f"{where} labeling_proofs[0]: node {node} out of range 1…{p.nodes - 1}")
    if node != want:
        raise BadInput(f"{where}: proves node {node}, the derived challenge is {want}")
    d = c.comm_d_path
    if d.root != comm_d:
        raise BadInput(f"{where} comm_d_proofs: root differs from comm_d")
    if _sha_root(d) != d.root:
        raise BadInput(f"{where} comm_d_proofs: path does not hash to its root")
    if leaf_index(d, p.tree_d) != node:
        raise BadInput(f"{where} comm_d_proofs: proves leaf {leaf_index(d, p.tree_d)}, "
                       f"not the challenge {node}")  # fmt: skip
    for what, mp in (("comm_r_last_proof", c.comm_r_last_path),
                     ("replica_column_proofs c_x inclusion_proof", c.c_x_path)):  # fmt: skip
        if leaf_index(mp, p.tree) != node:
            raise BadInput(f"{where} {what}: proves leaf {leaf_index(mp, p.tree)}, not the "
                           f"challenge {node}")  # fmt: skip
    if c.c_x_index != node:
        raise BadInput(f"{where} replica_column_proofs c_x: column index {c.c_x_index} is not "
                       f"the challenge {node}")  # fmt: skip
    cols = [("drg_parents", i, col) for i, col in enumerate(c.drg)]
    cols += [("exp_parents", i, col) for i, col in enumerate(c.exp)]
    want_parents = None
    if graph is not None:
        want_parents = graph.base(node) + graph.expander(node)
    for n, (kind, i, (index, _, mp)) in enumerate(cols):
        what = f"{where} replica_column_proofs {kind}[{i}]"
        if leaf_index(mp, p.tree) != index:
            raise BadInput(f"{what}: inclusion_proof proves leaf {leaf_index(mp, p.tree)}, the "
                           f"column index is {index}")  # fmt: skip
        if index >= p.nodes:
            raise BadInput(f"{what}: column index {index} out of range")
        if want_parents is not None and index != want_parents[n]:
            raise BadInput(f"{what}: column {index} is not parent {want_parents[n]} of node "
                           f"{node} in the SDR graph")  # fmt: skip
    drg_rows = [rows for _, rows, _ in c.drg]
    exp_rows = [rows for _, rows, _ in c.exp]
    for li, (parents, layer, lnode) in enumerate(c.labeling):
        what = f"{where} labeling_proofs[{li}]"
        if layer != li + 1:
            raise BadInput(f"{what}: layer_index {layer}, expected {li + 1}")
        if lnode != node:
            raise BadInput(f"{what}: node {lnode} differs from the challenge {node}")
        if parents != expected_label_parents(drg_rows, exp_rows, layer):
            raise BadInput(f"{what}: parents differ from the parent columns' labels")
        if label(replica_id, layer, node, parents) != c.c_x_rows[li]:
            raise BadInput(f"{what}: the recomputed label differs from the challenged column's "
                           f"row {li}")  # fmt: skip
    eparents, elayer, enode = c.encoding
    if elayer != p.layers or enode != node or eparents != c.labeling[-1][0]:
        raise BadInput(f"{where} encoding_proof: layer, node or parents differ from the last "
                       "labeling proof")  # fmt: skip
    key = c.c_x_rows[-1]
    if (key + d.leaf) % R != c.comm_r_last_path.leaf:
        raise BadInput(f"{where} comm_r_last_proof: leaf is not the encoding of the data leaf "
                       "(last label + data)")  # fmt: skip
    return ChallengeProof(
        challenge=node,
        comm_d_path=d,
        comm_r_last_path=c.comm_r_last_path,
        comm_c_path=c.c_x_path,
        drg_parents=tuple(ColumnOpening(tuple(rows), mp) for _, rows, mp in c.drg),
        exp_parents=tuple(ColumnOpening(tuple(rows), mp) for _, rows, mp in c.exp),
    )


# -- the engine's entry point ---------------------------------------------------------------


def open_statement(circuit_id: str, payload: bytes) -> Statement:
    """Parse and check a C1 payload once; partitions' circuits are built on demand.

    Raises:
        BadInput: unknown circuit, a payload for another sector size, or any check failing.
    """
    return join([open_share(circuit_id, payload, WHOLE)], payload_digest(circuit_id, (), payload))


def open_share(circuit_id: str, payload: bytes, share: Share) -> StatementShare:
    """:func:`open_statement`'s work for one share of the partitions (:func:`join` of every
    share's is the statement): how several helper processes open one large C1 at once."""
    params = porep_params(circuit_id)
    c1 = parse_c1(payload, share=share)
    if c1.proof.sector_size != params.sector_size:
        raise BadInput(f"{circuit_id}: the C1 output is a {c1.proof.name} "
                       f"({SIZE_NAMES[c1.proof.sector_size]}) proof")  # fmt: skip
    n = len(c1.witnesses)
    span = range(n) if c1.span is None else c1.span
    return StatementShare(
        circuit_id=circuit_id,
        total=c1.proof.partitions,
        span=span,
        build=c1.circuit,
        expected_inputs=tuple(tuple(c1.public_inputs(i)) for i in range(n)),
    )


@dataclass(frozen=True)
class SeededPoRepCircuit:
    """A registry circuit: blank in shape mode; in witness/check mode it proves partition 0 of
    a random sector sealed for ``seed`` by :mod:`cuzk.circuits.filecoin.seal` (2 KiB, 8 MiB
    and 512 MiB; sealing is built on first use)."""

    params: PoRepParams
    seed: int = 0

    @property
    def circuit_id(self) -> str:
        return self.params.circuit_id

    def with_witness(self) -> tuple[StackedCircuit, list[int]]:
        """The circuit holding this seed's sector, and its public inputs (no ONE).

        Raises:
            BadInput: a size the sealer does not seal.
        """
        from cuzk.circuits.filecoin.seal import generate_c1

        c1 = parse_c1(generate_c1(self.params.sector_size, self.seed))
        return c1.circuit(0), c1.public_inputs(0)

    def synthesize(self, cs: Any) -> None:
        if not cs.needs_values:
            StackedCircuit(self.params).synthesize(cs)
            return
        self.with_witness()[0].synthesize(cs)


# -- writing (tests, tools) -----------------------------------------------------------------


def _enc(x: int) -> list[int]:
    return list(int(x).to_bytes(32, "little"))


def challenge_proof_json(
    p: PoRepParams, cp: ChallengeProof, c_x_rows: Sequence[int]
) -> dict[str, Any]:
    """A vanilla ``Proof`` for one challenge (labeling and encoding proofs rebuilt from the
    parent columns, as upstream's ``Proof::from_parts`` does)."""

    def col(index: int, rows: Sequence[int], mp: MerklePath) -> dict[str, Any]:
        return {"column": {"index": index, "rows": [_enc(r) for r in rows], "_h": None},
                "inclusion_proof": merkle_proof_json(mp, p.tree)}  # fmt: skip

    drg_rows = [o.rows for o in cp.drg_parents]
    exp_rows = [o.rows for o in cp.exp_parents]
    labeling = [
        {
            "parents": [_enc(x) for x in expected_label_parents(drg_rows, exp_rows, layer)],
            "layer_index": layer,
            "node": cp.challenge,
        }  # fmt: skip
        for layer in range(1, p.layers + 1)
    ]
    return {
        "comm_d_proofs": merkle_proof_json(cp.comm_d_path, p.tree_d),
        "comm_r_last_proof": merkle_proof_json(cp.comm_r_last_path, p.tree),
        "replica_column_proofs": {
            "c_x": col(cp.challenge, c_x_rows, cp.comm_c_path),
            "drg_parents": [
                col(leaf_index(o.path, p.tree), o.rows, o.path) for o in cp.drg_parents
            ],  # fmt: skip
            "exp_parents": [
                col(leaf_index(o.path, p.tree), o.rows, o.path) for o in cp.exp_parents
            ],  # fmt: skip
        },
        "labeling_proofs": labeling,
        "encoding_proof": dict(labeling[-1]),
    }


def c1_json(
    proof_name: str,
    witnesses: Sequence[PoRepWitness],
    c_x_rows: Sequence[Sequence[Sequence[int]]],
    seed: bytes,
    ticket: bytes,
) -> dict[str, Any]:
    """A ``SealCommitPhase1Output`` document from partition witnesses (``c_x_rows[k][j]``: the
    challenged column of partition k's challenge j, i.e. its labels)."""
    proof = registered_porep(proof_name)
    p = proof.params
    w0 = witnesses[0]
    return {
        "registered_proof": proof_name,
        "vanilla_proofs": {
            proof.vanilla_key: [
                [challenge_proof_json(p, cp, c_x_rows[k][j]) for j, cp in enumerate(w.proofs)]
                for k, w in enumerate(witnesses)
            ]
        },
        "comm_r": _enc(w0.comm_r),
        "comm_d": _enc(w0.comm_d),
        "replica_id": _enc(w0.replica_id),
        "seed": list(seed),
        "ticket": list(ticket),
    }


def wrap_for_curio(c1_text: str | bytes, sector_num: int, sector_size: int) -> str:
    """Curio's wrapper around a C1 JSON byte for byte: Go's ``json.Marshal`` of
    ``{SectorNum, Phase1Out []byte, SectorSize}`` (no spaces; ``[]byte`` as standard base64)."""
    raw = c1_text.encode() if isinstance(c1_text, str) else c1_text
    return json.dumps({"SectorNum": sector_num, "Phase1Out": base64.b64encode(raw).decode(),
                       "SectorSize": sector_size}, separators=(",", ":"))  # fmt: skip
