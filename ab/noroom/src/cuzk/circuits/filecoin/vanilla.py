"""PoSt challenges, public inputs and vanilla proofs from native sectors.

Challenge derivation follows storage-proofs-post ``fallback``: a challenged leaf is the first 8
bytes (little-endian) of ``SHA-256(randomness ‖ sector_id as u64 LE ‖ challenge_index as u64
LE)`` modulo the sector's leaf count, where randomness is the 32-byte little-endian encoding of a
field element and ``challenge_index`` is ``sector_index · challenge_count + n`` before api
version 1.2.0 and plain ``n`` from then on.

A *random sector* here is what PoSt sees of a sealed sector: TreeR (Poseidon, the size's
base-sub-top shape) over random replica nodes, a comm_c (the root of a TreeC built the same way
over random column hashes) and comm_r = Poseidon2(comm_c, comm_r_last).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from cuzk.circuits.filecoin.post import FallbackPoStCircuit, SectorProof
from cuzk.circuits.filecoin.post_params import API_V1_2, PoStParams
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.gadgets.merkle import MerklePath, TreeShape, build_tree, prove
from cuzk.gadgets.poseidon.native import hash_one
from cuzk.r1cs import ConstraintSystem


def fr_bytes(x: int) -> bytes:
    """A field element's 32-byte little-endian encoding (upstream ``Domain::as_ref``)."""
    if not 0 <= x < R:
        raise BadInput(f"{x} is not a canonical field element")
    return x.to_bytes(32, "little")


def challenge_index(params: PoStParams, sector_index: int, n: int) -> int:
    """Upstream ``get_challenge_index``."""
    if params.api_version == API_V1_2:
        return n
    return sector_index * params.challenge_count + n


def leaf_challenge(params: PoStParams, randomness: int, sector_id: int, index: int) -> int:
    """Upstream ``generate_leaf_challenge``: the challenged TreeR leaf."""
    h = hashlib.sha256(
        fr_bytes(randomness) + sector_id.to_bytes(8, "little") + index.to_bytes(8, "little")
    ).digest()
    return int.from_bytes(h[:8], "little") % params.leaves


@dataclass(frozen=True)
class PublicSector:
    """A sector as the verifier knows it."""

    sector_id: int  # u64
    comm_r: int  # field element


def partition_sectors(
    params: PoStParams, sectors: Sequence[PublicSector], partition: int = 0
) -> list[PublicSector]:
    """The sectors a partition covers (``chunks(sector_count).nth(partition)``)."""
    chunk = list(sectors[partition * params.sector_count : (partition + 1) * params.sector_count])
    if not chunk:
        raise BadInput(f"no sectors for partition {partition}")
    return chunk


def sector_challenges(
    params: PoStParams, randomness: int, sector_id: int, sector_index: int
) -> list[int]:
    """The leaves challenged in one sector at partition position ``sector_index`` overall."""
    return [
        leaf_challenge(params, randomness, sector_id, challenge_index(params, sector_index, n))
        for n in range(params.challenge_count)
    ]


def public_inputs(
    params: PoStParams, randomness: int, sectors: Sequence[PublicSector], partition: int = 0
) -> list[int]:
    """Upstream ``FallbackPoStCompound::generate_public_inputs`` (without ONE): per sector
    comm_r and its challenged leaf indices; a short partition repeats its last sector's inputs.
    For WinningPoSt pass the one sector repeated 66 times, as filecoin-proofs does."""
    chunk = partition_sectors(params, sectors, partition)
    out: list[int] = []
    for i, s in enumerate(chunk):
        out.append(s.comm_r)
        out += sector_challenges(params, randomness, s.sector_id,
                                 partition * params.sector_count + i)  # fmt: skip
    per = len(out) // len(chunk)
    out += out[-per:] * (params.sector_count - len(chunk))
    return out


# -- native sectors -------------------------------------------------------------------------


@dataclass(frozen=True)
class RandomSector:
    """A sector's trees, built from random data (see the module docstring)."""

    sector_id: int
    levels: list[np.ndarray]  # TreeR levels, leaves first (FrVecs)
    comm_c: int
    comm_r_last: int
    comm_r: int

    @property
    def public(self) -> PublicSector:
        return PublicSector(self.sector_id, self.comm_r)

    def open(self, tree: TreeShape, leaf: int) -> MerklePath:
        """TreeR inclusion proof of ``leaf`` (virtual sectors answer the same call)."""
        return prove(self.levels, tree, leaf)


def random_sector(params: PoStParams, sector_id: int, rng: np.random.Generator) -> RandomSector:
    """TreeR over random replica nodes and a comm_c from a random TreeC of the same shape."""
    tree = params.tree
    levels = build_tree(fr.random(tree.leaves, rng), tree)
    # TreeC's leaves are column hashes; PoSt only sees its root, so random leaves suffice.
    comm_c = fr.to_int(build_tree(fr.random(tree.leaves, rng), tree)[-1][0])
    comm_r_last = fr.to_int(levels[-1][0])
    return RandomSector(sector_id, levels, comm_c, comm_r_last, hash_one([comm_c, comm_r_last]))


class OpenableSector(Protocol):
    """What a PoSt vanilla proof is made from: a sector's commitments and TreeR openings
    (a :class:`RandomSector`, or a virtual sector of :mod:`.seal.virtual`)."""

    @property
    def sector_id(self) -> int: ...
    @property
    def comm_c(self) -> int: ...
    @property
    def comm_r_last(self) -> int: ...
    @property
    def comm_r(self) -> int: ...
    def open(self, tree: TreeShape, leaf: int) -> MerklePath: ...


def sector_proof(
    params: PoStParams, sector: OpenableSector, challenges: Sequence[int]
) -> SectorProof:
    """Upstream ``vanilla_proof``: inclusion proofs of the challenged leaves."""
    proofs = tuple(sector.open(params.tree, c) for c in challenges)
    return SectorProof(sector.comm_r, sector.comm_c, sector.comm_r_last, proofs)


def winning_vanilla(
    params: PoStParams, sector: RandomSector, randomness: int
) -> tuple[tuple[SectorProof, ...], list[PublicSector]]:
    """WinningPoSt's partition: the sector's 66 challenges (indices 0 … 65 of sector 0), each
    unrolled into a one-challenge "sector" as filecoin-proofs' ``single_partition_vanilla_proofs``
    does, and the 66 public sectors the verifier uses."""
    if params.kind != "winning":
        raise BadInput("winning_vanilla needs WinningPoSt parameters")
    n = params.sector_count
    challenges = [leaf_challenge(params, randomness, sector.sector_id, i) for i in range(n)]
    one = sector_proof(params, sector, challenges)
    unrolled = tuple(
        SectorProof(one.comm_r, one.comm_c, one.comm_r_last, (p,)) for p in one.inclusion_proofs
    )
    return unrolled, [sector.public] * n


def window_vanilla(
    params: PoStParams, sectors: Sequence[RandomSector], randomness: int, partition: int = 0
) -> tuple[tuple[SectorProof, ...], list[PublicSector]]:
    """One WindowPoSt partition's sector proofs (padded by repeating the last) and the public
    sectors of all partitions."""
    if params.kind != "window":
        raise BadInput("window_vanilla needs WindowPoSt parameters")
    chunk = sectors[partition * params.sector_count : (partition + 1) * params.sector_count]
    if not chunk:
        raise BadInput(f"no sectors for partition {partition}")
    proofs = [
        sector_proof(params, s, sector_challenges(params, randomness, s.sector_id,
                                                  partition * params.sector_count + i))
        for i, s in enumerate(chunk)
    ]  # fmt: skip
    proofs += [proofs[-1]] * (params.sector_count - len(proofs))
    return tuple(proofs), [s.public for s in sectors]


MAX_RANDOM_LEAVES = 1 << 18  # 8 MiB sectors: their trees build in about a second


def random_vanilla(
    params: PoStParams, seed: int
) -> tuple[tuple[SectorProof, ...], list[PublicSector], int]:
    """A full partition's vanilla proofs from random sectors chosen by ``seed``: (proofs, public
    sectors, randomness). WindowPoSt gets ``sector_count`` distinct sectors; WinningPoSt one.

    Raises:
        BadInput: sectors too big to build here (over 8 MiB).
    """
    if params.leaves > MAX_RANDOM_LEAVES:
        raise BadInput(f"{params.circuit_id}: random sectors are built only up to 8 MiB; "
                       "give vanilla proofs instead")  # fmt: skip
    rng = np.random.default_rng(seed)
    randomness = fr.to_int(fr.random(1, rng)[0])
    if params.kind == "winning":
        sector = random_sector(params, int(rng.integers(1 << 62)), rng)
        proofs, public = winning_vanilla(params, sector, randomness)
    else:
        sectors = [random_sector(params, int(rng.integers(1 << 62)), rng)
                   for _ in range(params.sector_count)]  # fmt: skip
        proofs, public = window_vanilla(params, sectors, randomness)
    return proofs, public, randomness


@dataclass(frozen=True)
class SeededPoStCircuit:
    """A registry circuit: blank in shape mode; in witness/check mode it proves random sectors
    chosen by ``seed`` (built on first use), so ``get_circuit(id, seed)`` works end to end
    for the sizes whose trees build quickly."""

    params: PoStParams
    seed: int = 0

    @property
    def circuit_id(self) -> str:
        return self.params.circuit_id

    def with_witness(self) -> tuple[FallbackPoStCircuit, list[int]]:
        """The circuit holding this seed's vanilla proofs, and its public inputs (no ONE)."""
        proofs, public, randomness = random_vanilla(self.params, self.seed)
        return FallbackPoStCircuit(self.params, proofs), public_inputs(
            self.params, randomness, public
        )

    def synthesize(self, cs: ConstraintSystem) -> None:
        if not cs.needs_values:
            FallbackPoStCircuit(self.params).synthesize(cs)
            return
        self.with_witness()[0].synthesize(cs)
