"""Pairing products, the verifier's only use of GT."""

from __future__ import annotations

from collections.abc import Sequence

from py_arkworks_bls12381 import GT

from cuzk.curve.points import G1Point, G2Point
from cuzk.errors import BadInput


def pairing_check(pairs: Sequence[tuple[G1Point, G2Point]]) -> bool:
    """True iff Π e(P_i, Q_i) = 1 in GT; one shared final exponentiation for all pairs.

    An empty product is 1, so no pairs means True.
    """
    if not pairs:
        return True
    g1s = [p for p, _ in pairs]
    g2s = [q for _, q in pairs]
    try:
        return bool(GT.pairing_check(g1s, g2s))
    except (TypeError, ValueError) as e:
        raise BadInput(f"pairing_check expects (G1, G2) pairs: {e}") from None
