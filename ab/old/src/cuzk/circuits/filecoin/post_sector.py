"""One sector of the FallbackPoSt circuit: its vanilla data and its gadgets (upstream
``Sector::synthesize``), shared by the circuit (:mod:`.post`) and its bulk witness
(:mod:`.post_witness`), which learns its template from these gadgets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cuzk.circuits.filecoin.post_params import PoStParams
from cuzk.errors import BadInput
from cuzk.gadgets.merkle import MerklePath, TreeShape
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.por import PathLevel, por
from cuzk.gadgets.poseidon import poseidon_hash
from cuzk.r1cs import ONE, ConstraintSystem


@dataclass(frozen=True)
class SectorProof:
    """A sector's vanilla proof as the circuit takes it (upstream ``SectorProof`` plus the
    sector's public comm_r): TreeR inclusion proofs of the challenged leaves."""

    comm_r: int  # Poseidon2(comm_c, comm_r_last): the sector's public commitment
    comm_c: int  # TreeC root
    comm_r_last: int  # TreeR root
    # One per challenge, in challenge order (a PathBatch slice when read in bulk).
    inclusion_proofs: Sequence[MerklePath]


def _blank_path(tree: TreeShape) -> list[PathLevel]:
    return [PathLevel([None] * (a - 1), None) for a in tree.arities]


def _path_levels(mp: MerklePath, tree: TreeShape) -> list[PathLevel]:
    if len(mp.siblings) != len(tree.arities):
        raise BadInput(f"inclusion proof has {len(mp.siblings)} levels, TreeR has "
                       f"{len(tree.arities)}")  # fmt: skip
    return [PathLevel(s, p) for s, p in zip(mp.siblings, mp.positions, strict=True)]


def synthesize_sector(cs: ConstraintSystem, params: PoStParams, sector: SectorProof | None) -> None:
    """Upstream ``Sector::synthesize`` (``sector`` None in shape mode)."""
    tree = params.tree
    comm_r_last = AllocatedNum.alloc(
        cs, None if sector is None else sector.comm_r_last, "comm_r_last"
    )
    comm_c = AllocatedNum.alloc(cs, None if sector is None else sector.comm_c, "comm_c")
    comm_r = AllocatedNum.alloc(cs, None if sector is None else sector.comm_r, "comm_r")
    comm_r.inputize(cs, "comm_r_input")
    h = poseidon_hash(cs, [comm_c, comm_r_last], ns="H_comm_c_comm_r_last")
    cs.enforce("enforce_comm_c_comm_r_last_hash_comm_r", comm_r.variable, ONE, h.variable)
    for j in range(params.challenge_count):
        if sector is None:
            leaf, path = None, _blank_path(tree)
        else:
            mp = sector.inclusion_proofs[j]
            leaf, path = mp.leaf, _path_levels(mp, tree)
        por(cs, leaf, path, tree, comm_r_last, private=True,
            ns=lambda j=j: f"challenge_inclusion_{j}")  # fmt: skip
