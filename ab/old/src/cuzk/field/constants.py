"""The BLS12-381 field constants every other layer agrees on.

Plain Python ints, so they can be used in exact big-integer arithmetic (tests, setup, key
generation) as well as split into limbs for the numba kernels in :mod:`cuzk.field._arith`.
"""

from __future__ import annotations

#: Scalar-field (Fr) modulus r, the order of the G1/G2 subgroups.
R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001

#: Base-field (Fp) modulus of BLS12-381.
P = int(
    "1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F624"
    "1EABFFFEB153FFFFB9FEFFFFFFFFAAAB",
    16,
)

#: Canonical encoded sizes in bytes.
FR_BYTES = 32
FP_BYTES = 48

#: r − 1 = 2^32 · t with t odd, so radix-2 domains go up to 2^32 points.
FR_TWO_ADICITY = 32

#: Multiplicative generator of Fr^*; also the coset shift g of the H quotient.
FR_GENERATOR = 7

#: A primitive 2^32-th root of unity: 7^((r − 1) / 2^32).
FR_ROOT_OF_UNITY = pow(FR_GENERATOR, (R - 1) >> FR_TWO_ADICITY, R)

#: The Montgomery radix 2^256 reduced mod r (the Montgomery form of 1).
MONT_R = 2**256 % R
