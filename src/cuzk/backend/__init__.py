"""Compute backends behind one interface (:class:`~cuzk.backend.base.Backend`)."""

from __future__ import annotations

from cuzk.backend.base import Backend, MsmPlan, PointSet
from cuzk.errors import BadInput

BACKENDS = ("cpu",)


def get_backend(name: str = "cpu", *, workers: int | None = None) -> Backend:
    """The backend called ``name``, chosen explicitly (never by environment variables)."""
    if name == "cpu":
        from cuzk.backend.cpu import CpuBackend

        return CpuBackend(workers)
    raise BadInput(f"unknown backend {name!r}; available: {', '.join(BACKENDS)}")


__all__ = ["BACKENDS", "Backend", "MsmPlan", "PointSet", "get_backend"]
