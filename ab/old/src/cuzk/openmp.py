"""OpenMP's wait policy for numba's parallel kernels: a process-wide setting, so the process's
entry point chooses it (``cuzk``'s :func:`~cuzk.cli.main.main`, the benchmark scripts, the test
suite's ``conftest``), not whichever module happens to be imported first.

numba's OpenMP threading layer is the one that is safe to call from several Python threads at
once (the pipelined engine does). GNU OpenMP's default wait policy busy-spins its idle workers,
and on small VMs every parallel launch then costs ~8 ms instead of ~5 µs (measured on a 2-vCPU
machine), which dominates any kernel on short vectors. Passive waiting costs nothing measurable
on long ones. libgomp reads the policy once, when it loads (numba's first parallel launch), so
it must be set before that; processes spawned later (the MSM pool, synthesis workers) inherit it.
No numba import here: the command line sets it before it knows whether kernels will run.
"""

from __future__ import annotations

import logging
import os
import sys

log = logging.getLogger(__name__)

#: Idle OpenMP workers sleep instead of spinning (see the module docstring).
DEFAULT_WAIT_POLICY = "PASSIVE"


def configure_openmp(wait_policy: str = DEFAULT_WAIT_POLICY) -> str:
    """Set ``OMP_WAIT_POLICY`` for this process and those it starts, unless the environment
    already has one (an operator's explicit choice wins); returns the policy in force.

    Logs a warning when numba's threads already run, since the setting then comes too late."""
    policy = os.environ.setdefault("OMP_WAIT_POLICY", wait_policy)
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    if getattr(parallel, "_is_initialized", False):
        log.warning("OMP_WAIT_POLICY set after numba started its threads; it has no effect")
    return policy
