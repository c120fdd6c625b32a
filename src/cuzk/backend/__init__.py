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
) -> Backend:
    """The backend called ``name``, chosen explicitly (never by environment variables).

    ``workers`` sizes the CPU MSM process pool; ``device`` is the CUDA device index;
    ``memory_total`` makes a CPU backend report a device of that size (residency benchmarks).
    """
    if name == "cpu":
        from cuzk.backend.cpu import CpuBackend

        return CpuBackend(workers, memory_total)
    if memory_total is not None:
        raise BadInput("only the cpu backend takes a memory size; a GPU reports its own")
    if name == "cuda":
        from cuzk.backend.cuda.backend import CudaBackend

        return CudaBackend(device)
    raise BadInput(f"unknown backend {name!r}; available: {', '.join(BACKENDS)}")


__all__ = ["BACKENDS", "Backend", "MsmPlan", "PointSet", "get_backend"]
