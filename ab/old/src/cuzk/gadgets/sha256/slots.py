"""A compression's 768 input slots, which both native replays key on.

What one compression appends depends only on its inputs' *pattern*: per slot (512 block bits in
the caller's order, then each state word's 32 bits, least significant first) a code — 0 FALSE,
1 TRUE, 2 a bit, 3 a negated bit. The witness tapes (:mod:`.tape`) read the slots' values too,
the shape templates (:mod:`.template`) the slots' variables; both fill the slots with
:func:`fill`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from cuzk.gadgets.boolean import AllocatedBit, Boolean
from cuzk.gadgets.uint32 import UInt32

N_SLOTS = 512 + 256

#: Per bit of a state word, its weight in the word's value.
BIT_WEIGHTS = tuple(1 << k for k in range(32))
#: Block bits add to no word.
NO_WEIGHTS = (0,) * 512


def input_groups(
    block: Sequence[Boolean], state: Sequence[UInt32]
) -> Iterator[tuple[UInt32 | None, Sequence[Boolean], tuple[int, ...]]]:
    """The slots in order, as (word, bits, weights) groups: the block (no word, zero weights),
    then each state word with 2^k weights, so :func:`fill` sums a state word's value from its
    bits without building a 512-bit one for the block."""
    yield None, block, NO_WEIGHTS
    for word in state:
        yield word, word.bits, BIT_WEIGHTS


def fill(
    group: Sequence[Boolean],
    weights: tuple[int, ...],
    codes: bytearray,
    vals: bytearray,
    bits: list[AllocatedBit | None] | None,
    i: int,
) -> tuple[int, int, int]:
    """Fill slots i… with ``group``'s codes, its bits' values (where they have one) and, given
    ``bits``, the bits themselves.

    Returns:
        (the sum of ``weights`` over the true slots, the group's bits, those with a value): a
        witness needs every value, a shape none.
    """
    wv = n_bits = n_valued = 0
    for k, b in enumerate(group):
        ab = b.bit
        if ab is None:
            if b.constant:
                codes[i] = 1
                wv |= weights[k]
        else:
            n_bits += 1
            codes[i] = 3 if b.negated else 2
            if bits is not None:
                bits[i] = ab
            v = ab.value
            if v is not None:
                n_valued += 1
                vals[i] = 1 if v else 0
                if v != b.negated:
                    wv |= weights[k]
        i += 1
    return wv, n_bits, n_valued
