"""Circuits cuzk can prove, found by id through :func:`get_circuit`."""

from cuzk.circuits.registry import circuit_ids, get_circuit, key_file_stem, open_statement
from cuzk.circuits.statement import Statement

__all__ = ["Statement", "circuit_ids", "get_circuit", "key_file_stem", "open_statement"]
