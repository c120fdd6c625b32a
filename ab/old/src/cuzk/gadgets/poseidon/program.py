"""A Poseidon hash as a deferred run (:mod:`cuzk.r1cs.deferred`).

The values the legacy circuit appends for one hash (per S-box its input, x², x⁴, output, then
the digest: :func:`~cuzk.gadgets.poseidon.constants.constraint_count` of them) are a function
of the preimage alone, for a given arity, strength and domain tag. With
``SynthesisOptions.defer_poseidon`` the witness records only the preimage (Montgomery, an
(arity, 4) uint64 array per hash) and where the values go; a backend makes them: the CPU
backend with :meth:`PoseidonProgram.expand` (the numba kernel writing straight into z), the
CUDA backend with ``backend/cuda/poseidon_witness.cu``, checked against ``expand``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import ClassVar

import numpy as np

from cuzk.errors import InternalError
from cuzk.field import fr
from cuzk.gadgets.poseidon.constants import Strength, constraint_count
from cuzk.gadgets.poseidon.native import kernel_args


@dataclass(frozen=True, eq=False)
class PoseidonProgram:
    """One (arity, strength, tag): a :class:`~cuzk.r1cs.deferred.Program` whose runs' inputs
    are preimages, (m, arity, 4) uint64 Montgomery."""

    key: bytes
    arity: int
    strength: Strength
    tag: int
    n_aux: int

    #: The device kernel (``backend/cuda/poseidon_witness.cu``).
    kernel: ClassVar[str] = "poseidon_witness"

    def expand(self, inputs: np.ndarray, starts: np.ndarray, out: fr.FrVec) -> None:
        """Hash i's values at ``out[starts[i]:starts[i] + n_aux]`` (all numba threads)."""
        from cuzk.gadgets.poseidon import _kernels

        m = len(starts)
        if inputs.shape != (m, self.arity, 4) or inputs.dtype != np.uint64:
            raise InternalError(
                f"Poseidon arity {self.arity} runs need ({m}, {self.arity}, 4) uint64 inputs, "
                f"got {inputs.shape} {inputs.dtype}"
            )
        pre = np.ascontiguousarray(inputs).reshape(m * self.arity, 4)
        starts = np.ascontiguousarray(starts, np.int64)
        args = kernel_args(self.arity, self.strength, self.tag)
        _kernels.k_poseidon(pre, starts, out, True, *args)

    def tables(self) -> tuple[np.ndarray | np.generic, ...]:
        """(state width, tag, crc, pre_sparse, w_hat, v_rest, mds, half full rounds, partial
        rounds): the kernel's arguments after the runs'."""
        _, tag_t, crc, pre_sparse, w_hat, v_rest, mds, half, partial = kernel_args(
            self.arity, self.strength, self.tag
        )
        return (
            np.int32(self.arity + 1),
            np.array([tag_t], np.uint64),
            crc,
            pre_sparse,
            w_hat,
            v_rest,
            mds,
            np.int32(half),
            np.int32(partial),
        )


@cache
def poseidon_program(arity: int, strength: Strength, tag: int) -> PoseidonProgram:
    """The program of one (arity, strength, tag), made once per process."""
    key = b"poseidon:%d:%s:%d" % (arity, strength.value.encode(), tag)
    return PoseidonProgram(key, arity, strength, tag, constraint_count(arity, strength))
