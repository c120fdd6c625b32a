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
    open_share,
    open_statement,
    opens_in_shares,
)
from cuzk.circuits.statement import Share, Statement, join

__all__ = [
    "KINDS",
    "CircuitKind",
    "Share",
    "Statement",
    "canonical_id",
    "circuit_ids",
    "find_kind",
    "get_circuit",
    "key_file_stem",
    "kind_of",
    "official_circuits",
    "join",
    "open_share",
    "open_statement",
    "opens_in_shares",
]
