"""The FallbackPoSt circuit that WinningPoSt and WindowPoSt share (storage-proofs-post
``FallbackPoStCircuit``), its ids (the parameters per size are :mod:`.post_params`'s), and its
counts without synthesis.

Per sector, under ``outer namespace/sector_i``: allocate comm_r_last, comm_c and comm_r (private),
inputize comm_r (1 constraint), hash ``Poseidon2(comm_c, comm_r_last)`` (Merkle tag, 311),
enforce ``comm_r · 1 = hash`` (1), then per challenge a private-root PoR of the challenged TreeR
leaf against comm_r_last (``challenge_inclusion_j``), whose packed path bits are the challenge's
public input. Public inputs, in order: per sector comm_r, then its challenges' leaf indices.

WinningPoSt is this circuit with 66 "sectors" of 1 challenge each (filecoin-proofs'
``winning_post_setup_params`` turns 66 challenges of one sector into that); WindowPoSt has
``WINDOW_POST_SECTOR_COUNT`` sectors of 10 challenges. A partition with fewer real sectors repeats
its last one (witness and public inputs alike).

Sectors allocate disjoint variables, so a whole circuit's counts are one sector's times the
sector count: :func:`post_counts` uses that to count the 125M-constraint WindowPoSt in seconds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from cuzk.circuits.filecoin.post_params import (
    SIZE_NAMES,
    PoStParams,
    window_params,
    winning_params,
)
from cuzk.circuits.filecoin.post_sector import SectorProof, synthesize_sector
from cuzk.errors import BadInput
from cuzk.gadgets.merkle import PathBatch, TreeShape
from cuzk.gadgets.poseidon import constraint_count
from cuzk.r1cs import Circuit, ConstraintSystem, R1CSShape, ShapeCS, repeat, witness_mode


def post_params(circuit_id: str) -> PoStParams:
    """``winning-2k`` … ``winning-64g``, ``wpost-2k`` … ``wpost-64g``."""
    kind, _, size = circuit_id.partition("-")
    by_name = {v: k for k, v in SIZE_NAMES.items()}
    if size not in by_name or kind not in ("winning", "wpost"):
        known = ", ".join(post_circuit_ids())
        raise BadInput(f"unknown circuit {circuit_id!r}; PoSt circuits are {known}")
    return winning_params(by_name[size]) if kind == "winning" else window_params(by_name[size])


def post_circuit_ids() -> list[str]:
    names = list(SIZE_NAMES.values())
    return [f"winning-{n}" for n in names] + [f"wpost-{n}" for n in names]


# -- witness data ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FallbackPoStCircuit:
    """One partition of WinningPoSt/WindowPoSt. ``sectors`` None: the blank circuit (shape
    mode); otherwise exactly ``params.sector_count`` proofs (see :func:`pad_sectors`)."""

    params: PoStParams
    sectors: tuple[SectorProof, ...] | None = None

    def __post_init__(self) -> None:
        p = self.params
        if self.sectors is None:
            return
        if len(self.sectors) != p.sector_count:
            raise BadInput(f"{p.circuit_id}: {len(self.sectors)} sector proofs, the circuit "
                           f"takes {p.sector_count} (pad with pad_sectors)")  # fmt: skip
        for i, s in enumerate(self.sectors):
            if len(s.inclusion_proofs) != p.challenge_count:
                raise BadInput(f"sector {i}: {len(s.inclusion_proofs)} inclusion proofs, "
                               f"expected {p.challenge_count}")  # fmt: skip

    def __reduce__(self) -> tuple:
        """Pickled with every sector's paths in one :class:`PathBatch`, when they are batches.

        A full WindowPoSt partition's 2,349 sectors each hold views into the request's path
        columns; pickled one by one, that is ~50,000 small arrays, and the trip from the
        payload opener's process to the engine costs ~1.4 s of unpickling and pickling on the
        request's path. As one batch it is a few large arrays.
        """
        sectors = self.sectors
        if not sectors or not all(isinstance(s.inclusion_proofs, PathBatch) for s in sectors):
            return (FallbackPoStCircuit, (self.params, sectors))
        comms = tuple((s.comm_r, s.comm_c, s.comm_r_last) for s in sectors)
        paths = PathBatch.concat([s.inclusion_proofs for s in sectors])
        return (_unpickle_batched, (self.params, comms, paths))

    @property
    def circuit_id(self) -> str:
        return self.params.circuit_id

    def block_count(self) -> int:
        """One block per sector (:mod:`cuzk.r1cs.blocks`); the header is ONE alone."""
        return self.params.sector_count

    def view(self, blocks: Sequence[int]) -> FallbackPoStCircuit:
        """The sectors ``blocks`` alone, in that order."""
        params = dataclasses.replace(self.params, sector_count=len(blocks))
        if self.sectors is None:
            return FallbackPoStCircuit(params)
        return FallbackPoStCircuit(params, tuple(self.sectors[i] for i in blocks))

    def synthesize(self, cs: ConstraintSystem) -> None:
        count = self.params.sector_count if self.sectors is None else len(self.sectors)
        sectors = self.sectors
        if sectors is not None and witness_mode(cs):
            from cuzk.circuits.filecoin.post_witness import sectors_witness

            bulk = sectors_witness(self.params, sectors, cs.options, cs.cache)
            if bulk is not None:  # every sector's values at once, as the gadgets would give
                inputs, aux = bulk
                cs.inputs.extend(inputs)
                cs.extend_deferred(aux)
                return
        with cs.namespace("outer namespace"):
            # Sectors differ only in their variables (shape mode replays most of them).
            repeat(cs, count, "sector_{}".format,
                   lambda i: synthesize_sector(cs, self.params, None if sectors is None
                                               else sectors[i]))  # fmt: skip


def _unpickle_batched(
    params: PoStParams, comms: tuple[tuple[int, int, int], ...], paths: PathBatch
) -> FallbackPoStCircuit:
    """The circuit :meth:`FallbackPoStCircuit.__reduce__` sent: sector ``i`` takes the
    ``challenge_count`` paths from ``i · challenge_count`` on, as views of the one batch."""
    k = params.challenge_count
    sectors = tuple(
        SectorProof(comm_r, comm_c, comm_r_last, paths[i * k : (i + 1) * k])
        for i, (comm_r, comm_c, comm_r_last) in enumerate(comms)
    )
    return FallbackPoStCircuit(params, sectors)


def pad_sectors(sectors: Sequence[SectorProof], params: PoStParams) -> tuple[SectorProof, ...]:
    """Repeat the last sector until the partition is full (upstream's padding rule).

    Raises:
        BadInput: no sectors, or more than one partition holds.
    """
    if not sectors:
        raise BadInput("a PoSt partition needs at least one sector")
    if len(sectors) > params.sector_count:
        raise BadInput(f"{len(sectors)} sectors exceed a partition's {params.sector_count}")
    return tuple(sectors) + (sectors[-1],) * (params.sector_count - len(sectors))


# -- counts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CircuitCounts:
    """What a ``.params`` header fixes, plus the constraint count (without input rows)."""

    num_constraints: int  # constraints before the prover's input_i · 0 = 0 rows
    num_inputs: int  # public inputs without ONE
    num_aux: int  # private variables
    a_aux_density: int  # aux variables with a non-zero A column
    b_input_density: int  # inputs (ONE included) with a non-zero B column
    b_aux_density: int  # aux variables with a non-zero B column
    method: str  # "shape" (a real synthesized shape) or "structural" (one sector × count)

    def as_dict(self) -> dict[str, int | str]:
        return dict(self.__dict__)


def counts_of(
    circuit: Circuit, circuit_id: str, method: str = "shape"
) -> tuple[R1CSShape, CircuitCounts]:
    """Synthesize ``circuit`` in shape mode (every matrix in memory: small circuits only) and
    read its counts; every Filecoin family's ``shape_counts`` goes through here."""
    cs = ShapeCS()
    circuit.synthesize(cs)
    num_constraints = len(cs.names)
    shape = cs.finish(circuit_id)
    return shape, CircuitCounts(
        num_constraints=num_constraints,
        num_inputs=shape.num_inputs - 1,
        num_aux=shape.num_aux,
        a_aux_density=int(shape.a_aux_density.sum()),
        b_input_density=int(shape.b_input_density.sum()),
        b_aux_density=int(shape.b_aux_density.sum()),
        method=method,
    )


def _shape_and_counts(params: PoStParams, method: str) -> tuple[R1CSShape, CircuitCounts]:
    return counts_of(FallbackPoStCircuit(params), params.circuit_id, method)


def shape_counts(params: PoStParams) -> CircuitCounts:
    """Counts from a real shape-mode synthesis of the whole (blank) circuit."""
    return _shape_and_counts(params, "shape")[1]


def structural_counts(params: PoStParams) -> CircuitCounts:
    """Counts of the whole circuit from one synthesized sector.

    Each sector allocates its own aux variables and inputs and enforces its own constraints,
    sharing only ONE, so every count scales with ``sector_count`` — except ONE's B column,
    which is one input however many sectors use it.
    """
    one = PoStParams(params.kind, params.sector_size, params.tree, 1,
                     params.challenge_count, params.api_version)  # fmt: skip
    shape, c = _shape_and_counts(one, "structural")
    n = params.sector_count
    b_inputs = shape.b_input_density
    one_in_b = int(b_inputs[0])
    return CircuitCounts(
        num_constraints=c.num_constraints * n,
        num_inputs=c.num_inputs * n,
        num_aux=c.num_aux * n,
        a_aux_density=c.a_aux_density * n,
        b_input_density=one_in_b + int(b_inputs[1:].sum()) * n,
        b_aux_density=c.b_aux_density * n,
        method="structural",
    )


def sector_constraint_count(tree: TreeShape, challenge_count: int) -> int:
    """Closed form of one sector's constraints from gadget costs (FILECOIN.md): inputize 1,
    Poseidon-2 311, equality 1, and per challenge a private-root PoR: per level log2(arity)
    index bits + insertion + Poseidon of that arity, then the packing and root equality."""
    insert_cost = {2: 2, 4: 8, 8: 22}
    per_por = sum(a.bit_length() - 1 + insert_cost[a] + constraint_count(a) for a in tree.arities)
    return 1 + constraint_count(2) + 1 + challenge_count * (per_por + 2)


PARAMS_VERSION = 28  # parameter file generation (``v28-…``)


def param_file_stem(params: PoStParams) -> str:
    """Official parameter file name without ``.params``/``.vk``: the cache prefix with TreeR's
    arities and the SHA-256 of :attr:`PoStParams.identifier` (storage-proofs-core
    ``cache_identifier``)."""
    import hashlib

    t = params.tree
    digest = hashlib.sha256(params.identifier.encode()).hexdigest()
    return (
        f"v{PARAMS_VERSION}-proof-of-spacetime-fallback-merkletree-poseidon_hasher-"
        f"{t.base_arity}-{t.sub_arity}-{t.top_arity}-{digest}"
    )
