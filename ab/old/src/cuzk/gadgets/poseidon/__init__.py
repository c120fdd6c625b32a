"""Neptune-compatible Poseidon over BLS12-381 Fr: parameters (:mod:`.constants`), native and
bulk hashing (:mod:`.native`, numba kernel in :mod:`._kernels`) and the legacy circuit
(:mod:`.circuit`)."""

from cuzk.gadgets.poseidon.circuit import poseidon_hash
from cuzk.gadgets.poseidon.constants import (
    PoseidonConstants,
    Strength,
    constant_length_tag,
    constraint_count,
    custom_tag,
    merkle_tree_tag,
    poseidon_constants,
)
from cuzk.gadgets.poseidon.native import hash_many, hash_one, hash_reference

__all__ = [
    "PoseidonConstants",
    "Strength",
    "constant_length_tag",
    "constraint_count",
    "custom_tag",
    "hash_many",
    "hash_one",
    "hash_reference",
    "merkle_tree_tag",
    "poseidon_constants",
    "poseidon_hash",
]
