"""circom's ``.wtns`` witness files.

Sections: 1 header (u32 n8, the prime in n8 bytes, u32 number of values), 2 the values, each
n8 bytes little-endian and canonical (not Montgomery). Values are in wire order: wire 0 is the
constant ONE, then outputs, public inputs, private inputs and internal signals.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import FR_BYTES, R
from cuzk.interop.binfile import BinFile, Cursor
from cuzk.interop.curves import describe_prime

WTNS_SECTIONS = {1: "header", 2: "witness values"}


@dataclass(frozen=True)
class Witness:
    """A full circom assignment."""

    path: str  # where it was read from (for messages)
    values: fr.FrVec  # every wire's value in Montgomery form, wire 0 = ONE

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def public(self, num_public: int) -> list[int]:
        """Wires 1…num_public as canonical ints: the statement snarkjs writes to public.json."""
        return fr.to_ints(self.values[1 : 1 + num_public])


def read_wtns(path: str | os.PathLike[str], data: bytes | None = None) -> Witness:
    """Read and validate a ``.wtns`` file.

    Raises:
        BadInput: naming the file and section: wrong magic/version, a prime other than
            BLS12-381's r, a values section whose size disagrees with the header, a value
            ≥ r, or wire 0 ≠ 1.

    With ``data`` the witness is parsed from those bytes (an engine request's payload) and
    ``path`` only names it in messages.
    """
    with BinFile(path, "wtns", 2, WTNS_SECTIONS, data) as f:
        cur = Cursor(f, 1)
        n8 = cur.u32("the field size n8")
        prime = cur.bigint(n8, "the prime")
        count = cur.u32("the number of values")
        cur.expect_end()
        if prime != R or n8 != FR_BYTES:
            raise f.error(
                1,
                f"the witness is over {describe_prime(prime)}; cuzk proves over BLS12-381 "
                "(compile with `circom --prime bls12381`)",
            )
        if count == 0:
            raise f.error(1, "declares no values (wire 0 must hold ONE)")
        raw = f.body(2, count * FR_BYTES)
        try:
            values = fr.from_bytes_le(np.frombuffer(raw, dtype=np.uint8).copy())
        except BadInput as e:
            raise f.error(2, f"value {str(e).removeprefix('scalar ')}") from e
        if fr.to_int(values[0]) != 1:
            raise f.error(2, f"wire 0 is {fr.to_int(values[0])}; circom's wire 0 is always 1")
        return Witness(str(path), values)
