"""The FallbackPoSt circuit's parameters per sector size (storage-proofs-post
``fallback::PublicParams``): what the circuit (:mod:`.post`), a sector's part of it
(:mod:`.post_sector`) and its bulk witness (:mod:`.post_witness`) all read.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuzk.errors import BadInput
from cuzk.gadgets.merkle import TreeShape

NODE_SIZE = 32  # bytes per tree leaf

WINNING_POST_CHALLENGE_COUNT = 66  # challenges of the one winning sector
WINDOW_POST_CHALLENGE_COUNT = 10  # challenges per WindowPoSt sector

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30

# sector size -> (TreeR base-sub-top arities, WindowPoSt sectors per partition), filecoin-proofs
# constants.rs (WINDOW_POST_SECTOR_COUNT) and its tree types (8-0-0, 8-8-0, 8-8-2).
SECTOR_SHAPES: dict[int, tuple[tuple[int, int, int], int]] = {
    2 * KIB: ((8, 0, 0), 2),
    8 * MIB: ((8, 0, 0), 2),
    512 * MIB: ((8, 0, 0), 2),
    32 * GIB: ((8, 8, 0), 2349),
    64 * GIB: ((8, 8, 2), 2300),
}
SIZE_NAMES = {2 * KIB: "2k", 8 * MIB: "8m", 512 * MIB: "512m", 32 * GIB: "32g", 64 * GIB: "64g"}

# ApiVersion semver strings that change challenge derivation (storage-proofs-post utils.rs).
API_V1_0, API_V1_1, API_V1_2 = "1.0.0", "1.1.0", "1.2.0"


@dataclass(frozen=True)
class PoStParams:
    """One FallbackPoSt partition circuit's parameters (upstream ``fallback::PublicParams``)."""

    kind: str  # "winning" or "window"
    sector_size: int  # bytes
    tree: TreeShape  # TreeR shape over sector_size / 32 leaves
    sector_count: int  # sectors per partition circuit
    challenge_count: int  # challenges per sector
    api_version: str = API_V1_0  # semver; only challenge derivation depends on it

    @property
    def circuit_id(self) -> str:
        size = SIZE_NAMES.get(self.sector_size, f"{self.sector_size}b")
        return f"{'winning' if self.kind == 'winning' else 'wpost'}-{size}"

    @property
    def leaves(self) -> int:
        return self.sector_size // NODE_SIZE

    @property
    def identifier(self) -> str:
        """Upstream's ``ParameterSetMetadata::identifier`` (hashed into parameter file names)."""
        return (
            f"FallbackPoSt::PublicParams{{sector_size: {self.sector_size}, "
            f"challenge_count: {self.challenge_count}, sector_count: {self.sector_count}}}"
        )


def tree_shape(sector_size: int) -> TreeShape:
    """TreeR's shape for a supported sector size."""
    if sector_size not in SECTOR_SHAPES:
        raise BadInput(f"unsupported sector size {sector_size}")
    (base, sub, top), _ = SECTOR_SHAPES[sector_size]
    return TreeShape(sector_size // NODE_SIZE, base, sub, top)


def winning_params(sector_size: int) -> PoStParams:
    """WinningPoSt: 66 one-challenge "sectors" (all the same sector); api version 1.0.0, the
    only one WinningPoSt proofs are registered with."""
    return PoStParams("winning", sector_size, tree_shape(sector_size),
                      WINNING_POST_CHALLENGE_COUNT, 1, API_V1_0)  # fmt: skip


def window_params(sector_size: int, api_version: str = API_V1_2) -> PoStParams:
    """WindowPoSt partition: ``WINDOW_POST_SECTOR_COUNT`` sectors × 10 challenges (current
    proofs are the V1_2 registered types, api version 1.2.0)."""
    tree = tree_shape(sector_size)
    return PoStParams("window", sector_size, tree, SECTOR_SHAPES[sector_size][1],
                      WINDOW_POST_CHALLENGE_COUNT, api_version)  # fmt: skip
