"""Field arithmetic for BLS12-381: constants and bulk Fr vectors (:mod:`cuzk.field.fr`).

``from cuzk.field import fr`` is the usual entry point; kernels live in private modules and
compile lazily (and once per machine, through numba's disk cache) on first use.
"""

import os

# numba's OpenMP threading layer is the one that is safe to call from several Python threads at
# once (the pipelined engine does). GNU OpenMP's default wait policy busy-spins its idle workers,
# and on small VMs every parallel launch then costs ~8 ms instead of ~5 µs (measured on the
# 2-vCPU dev box), which dominates any kernel on short vectors. Passive waiting costs nothing
# measurable on long ones. setdefault: an operator's explicit choice wins. It only takes effect
# if libgomp has not been loaded yet, i.e. before the first parallel kernel runs.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from cuzk.field import constants, fr  # noqa: E402
from cuzk.field.constants import (  # noqa: E402
    FP_BYTES,
    FR_BYTES,
    FR_GENERATOR,
    FR_ROOT_OF_UNITY,
    FR_TWO_ADICITY,
    MONT_R,
    P,
    R,
)
from cuzk.field.fr import FrVec  # noqa: E402

__all__ = [
    "FP_BYTES",
    "FR_BYTES",
    "FR_GENERATOR",
    "FR_ROOT_OF_UNITY",
    "FR_TWO_ADICITY",
    "MONT_R",
    "P",
    "R",
    "FrVec",
    "constants",
    "fr",
]
