"""Registered seal proofs (filecoin-proofs-api ``RegisteredSealProof``) and the sealing
parameters each implies for the sector sizes sealed here.

A registered proof fixes the sector size, the api version and the 32-byte porep_id: its
registry number as u64 little-endian in bytes 0..8, a nonce (0 for every published proof) in
8..16, zeros after. The version changes the graph: from 1.1.0 the DRG's immediate predecessor
is parent 0 (1.0.0: the last) and expander parents are computed in u64 (1.0.0 truncated to u32
first, which matters only past 2^29 nodes). 1.2.0 adds features (synthetic and non-interactive
PoRep) whose challenges differ; they are not sealed here.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuzk.circuits.filecoin.post_params import tree_shape
from cuzk.errors import BadInput
from cuzk.gadgets.merkle import TreeShape

KIB, MIB = 1 << 10, 1 << 20

API_V1_0, API_V1_1 = "1.0.0", "1.1.0"

NODE_SIZE = 32  # bytes per node
BASE_DEGREE = 6  # DRG parents
EXP_DEGREE = 8  # expander parents
TOTAL_PARENTS = 37  # parents hashed per label (cycled)

# sector size -> (name fragment, registry id for V1, registry id for V1_1); filecoin-proofs-api
# registry.rs REGISTERED_PROOF_IDS.
_SIZES: dict[int, tuple[str, int, int]] = {
    2 * KIB: ("2KiB", 0, 5),
    8 * MIB: ("8MiB", 1, 6),
    512 * MIB: ("512MiB", 2, 7),
}

# filecoin-proofs constants.rs: LAYERS and the interactive minimum challenges, one partition.
LAYERS = 2
CHALLENGES = 2
PARTITIONS = 1


@dataclass(frozen=True)
class SealProof:
    """One registered seal proof and what sealing needs from it."""

    name: str  # RegisteredSealProof variant, e.g. "StackedDrg2KiBV1_1"
    sector_size: int  # bytes
    registry_id: int  # REGISTERED_PROOF_IDS value
    api_version: str  # semver

    @property
    def nodes(self) -> int:
        return self.sector_size // NODE_SIZE

    @property
    def porep_id(self) -> bytes:
        """Upstream ``RegisteredSealProof::porep_id`` (nonce 0)."""
        return self.registry_id.to_bytes(8, "little") + bytes(24)

    @property
    def vanilla_key(self) -> str:
        """The ``VanillaSealProof`` variant C1 JSON uses (one per size, whatever the version)."""
        return f"StackedDrg{_SIZES[self.sector_size][0]}V1"

    @property
    def layers(self) -> int:
        return LAYERS

    @property
    def challenges(self) -> int:
        """Challenges per partition."""
        return CHALLENGES

    @property
    def partitions(self) -> int:
        return PARTITIONS

    @property
    def tree(self) -> TreeShape:
        """TreeR's shape, which TreeC shares (8-0-0 for every size sealed here)."""
        return tree_shape(self.sector_size)


def seal_proof(sector_size: int, api: str = API_V1_1) -> SealProof:
    """The registered proof for a sector size and api version ("1.0.0" → V1, "1.1.0" → V1_1).

    Raises:
        BadInput: a size or version not sealed here.
    """
    if sector_size not in _SIZES:
        sizes = ", ".join(v[0] for v in _SIZES.values())
        raise BadInput(f"sealing supports sector sizes {sizes}; got {sector_size} bytes")
    frag, v1, v11 = _SIZES[sector_size]
    if api == API_V1_0:
        return SealProof(f"StackedDrg{frag}V1", sector_size, v1, API_V1_0)
    if api == API_V1_1:
        return SealProof(f"StackedDrg{frag}V1_1", sector_size, v11, API_V1_1)
    raise BadInput(f"api version {api!r} is not sealed here (use {API_V1_0} or {API_V1_1})")


def by_name(name: str) -> SealProof:
    """A registered proof by its variant name ("StackedDrg8MiBV1_1", …).

    Raises:
        BadInput: unknown or unsupported name.
    """
    for size, (frag, _, _) in _SIZES.items():
        for api, suffix in ((API_V1_0, "V1"), (API_V1_1, "V1_1")):
            if name == f"StackedDrg{frag}{suffix}":
                return seal_proof(size, api)
    raise BadInput(f"registered seal proof {name!r} is not sealed here")
