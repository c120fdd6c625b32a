"""Circuits cuzk can prove, found by id through :func:`get_circuit`."""

from cuzk.circuits.registry import circuit_ids, get_circuit, key_file_stem

__all__ = ["circuit_ids", "get_circuit", "key_file_stem"]
