"""The exception hierarchy every layer raises from.

Callers (the CLI, later the daemon) map these four kinds to exit codes and gRPC status codes,
so a new failure should subclass one of them rather than raise a bare ``Exception``.
"""

from __future__ import annotations


class CuzkError(Exception):
    """Base of every error cuzk raises on purpose."""


class BadInput(CuzkError, ValueError):
    """The caller gave something unusable: a malformed file, point, proof or witness."""


class UnsatisfiedConstraint(BadInput):
    """A witness does not satisfy its circuit; ``name`` is the first failing constraint."""

    def __init__(self, index: int, name: str) -> None:
        super().__init__(f"constraint {index} ({name}) is not satisfied")
        self.index = index
        self.name = name


class ResourceExhausted(CuzkError):
    """A request can never fit the memory budget or a pool is closed."""


class DeviceFault(CuzkError):
    """A compute device (GPU or worker process) failed while running a kernel."""


class InternalError(CuzkError):
    """A cuzk invariant broke: a bug, never the caller's fault."""
