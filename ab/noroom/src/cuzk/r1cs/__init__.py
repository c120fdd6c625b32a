"""Rank-1 constraint systems: the builder API, its three modes and the pre-compiled shape."""

from cuzk.r1cs.lc import ONE, LcSpec, LinearCombination, Variable
from cuzk.r1cs.memo import PROCESS_CACHE, SynthesisCache
from cuzk.r1cs.names import ConstraintNames, PrefixedNames
from cuzk.r1cs.repeat import repeat
from cuzk.r1cs.shape import CsrMatrix, R1CSShape
from cuzk.r1cs.system import (
    DEFAULT_OPTIONS,
    PYTHON_GADGETS,
    BulkWitness,
    CheckCS,
    Circuit,
    ConstraintSystem,
    Mode,
    ShapeCS,
    SynthesisOptions,
    WitnessCS,
    check_circuit,
    shape_mode,
    synthesize_shape,
    synthesize_witness,
    witness_mode,
)

__all__ = [
    "DEFAULT_OPTIONS",
    "ONE",
    "PROCESS_CACHE",
    "PYTHON_GADGETS",
    "BulkWitness",
    "CheckCS",
    "Circuit",
    "ConstraintNames",
    "ConstraintSystem",
    "CsrMatrix",
    "LcSpec",
    "LinearCombination",
    "Mode",
    "PrefixedNames",
    "R1CSShape",
    "ShapeCS",
    "SynthesisCache",
    "SynthesisOptions",
    "Variable",
    "WitnessCS",
    "check_circuit",
    "repeat",
    "shape_mode",
    "synthesize_shape",
    "synthesize_witness",
    "witness_mode",
]
