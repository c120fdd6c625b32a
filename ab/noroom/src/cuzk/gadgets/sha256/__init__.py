"""SHA-256: bellperson's gadget (:mod:`.circuit`, constants in :mod:`.constants`), Filecoin's
node hash (:mod:`.node`), the compression in numba (:mod:`.native`), and the gadget's native
replays keyed on a compression's input slots (:mod:`.slots`): witness tapes (:mod:`.tape`),
shape templates (:mod:`.template`) and messages handed over in bulk (:mod:`.message`)."""

from cuzk.gadgets.sha256.circuit import compress_native, compression, iv, pad, sha256
from cuzk.gadgets.sha256.constants import IV, ROUND_CONSTANTS
from cuzk.gadgets.sha256.node import node_hash, sha256_hash2, sha256_node, trim_to_fr32

__all__ = [
    "IV",
    "ROUND_CONSTANTS",
    "compress_native",
    "compression",
    "iv",
    "node_hash",
    "pad",
    "sha256",
    "sha256_hash2",
    "sha256_node",
    "trim_to_fr32",
]
