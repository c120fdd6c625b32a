"""Field arithmetic for BLS12-381: constants and bulk Fr vectors (:mod:`cuzk.field.fr`).

``from cuzk.field import fr`` is the usual entry point; kernels live in private modules and
compile lazily (and once per machine, through numba's disk cache) on first use.
"""

from cuzk.field import constants, fr
from cuzk.field.constants import (
    FP_BYTES,
    FR_BYTES,
    FR_GENERATOR,
    FR_ROOT_OF_UNITY,
    FR_TWO_ADICITY,
    MONT_R,
    P,
    R,
)
from cuzk.field.fr import FrVec

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
