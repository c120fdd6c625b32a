"""Compute backends behind one interface (:class:`~cuzk.backend.base.Backend`)."""

from __future__ import annotations

from cuzk.backend.base import Backend, MsmPlan, PointSet
from cuzk.errors import BadInput

BACKENDS = ("cpu", "cuda")


def get_backend(
    name: str = "cpu",
    *,
    workers: int | None = None,
    device: int = 0,
    memory_total: int | None = None,
    memory_limit: int | None = None,
) -> Backend:
    """The backend called ``name``, chosen explicitly (never by environment variables).

    ``workers`` sizes the CPU MSM process pool; ``device`` is the CUDA device index;
    ``memory_total`` makes a CPU backend report a device of that size (residency benchmarks);
    ``memory_limit`` caps what the backend uses of its device (a CPU virtual device then reports
    that size, without one).
    """
    if name == "cpu":
        from cuzk.backend.cpu import CpuBackend

        sizes = [s for s in (memory_total, memory_limit) if s is not None]
        return CpuBackend(workers, min(sizes) if sizes else None)
    if memory_total is not None:
        raise BadInput("only the cpu backend takes a memory size; a GPU reports its own")
    if name == "cuda":
        from cuzk.backend.cuda.backend import CudaBackend

        return CudaBackend(device, memory_limit)
    raise BadInput(f"unknown backend {name!r}; available: {', '.join(BACKENDS)}")


__all__ = ["BACKENDS", "Backend", "MsmPlan", "PointSet", "get_backend"]
