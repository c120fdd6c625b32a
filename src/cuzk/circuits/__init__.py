"""Circuits cuzk can prove, found by id in the catalogue (:mod:`cuzk.circuits.catalogue`)."""

from cuzk.circuits.catalogue import (
    KINDS,
    CircuitKind,
    canonical_id,
    circuit_ids,
    find_kind,
    get_circuit,
    key_file_stem,
    kind_of,
    official_circuits,
    open_statement,
)
from cuzk.circuits.statement import Statement

__all__ = [
    "KINDS",
    "CircuitKind",
    "Statement",
    "canonical_id",
    "circuit_ids",
    "find_kind",
    "get_circuit",
    "key_file_stem",
    "kind_of",
    "official_circuits",
    "open_statement",
]
