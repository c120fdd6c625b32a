"""A deterministic benchmark circuit whose witness looks like Filecoin's.

Filecoin's circuits are dominated by SHA-256 bit gadgets (so most witness values are 0 or 1, and
most A/B columns hold booleans) with a minority of full-width field elements from Poseidon and
packing. ``synthetic:N`` imitates that mix with blocks of 35 constraints:

* allocate a random 32-bit word ``w`` and its 32 bits, each with bellperson's booleanity
  constraint ``(1 − b) · b = 0``, and pack them back: ``(Σ 2^i b_i) · 1 = w``;
* advance a running field element: ``t = (x + w)²`` and ``x' = t · y`` with a fresh random ``y``.

About 89% of the aux values are bits. The chain starts from public input 1 and its value at
thirds of the way is exposed as inputs 2–4, so inputs depend on the witness as commitments do.
The shape depends only on N; ``seed`` changes every value.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
from numba import njit

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field._arith import add, load, mul, square, store
from cuzk.field.constants import R
from cuzk.r1cs import ONE, ConstraintSystem, LinearCombination, Variable

WORD_BITS = 32
BLOCK_CONSTRAINTS = WORD_BITS + 3
NUM_PUBLIC = 4  # public inputs besides ONE
# Rows besides the blocks: the input-equality checks and bellperson's per-input rows.
FIXED_ROWS = (NUM_PUBLIC - 1) + (NUM_PUBLIC + 1)
MIN_CONSTRAINTS = FIXED_ROWS + 3 * BLOCK_CONSTRAINTS

_POWERS_OF_TWO = [1 << i for i in range(WORD_BITS)]


@dataclass(frozen=True)
class SyntheticCircuit:
    """``synthetic:N``: at most N constraints (input rows included), so the domain is ≤ N."""

    target: int
    seed: int = 0

    def __post_init__(self) -> None:
        if self.target < MIN_CONSTRAINTS:
            raise BadInput(f"synthetic circuits need at least {MIN_CONSTRAINTS} constraints")

    @property
    def circuit_id(self) -> str:
        return f"synthetic:{self.target}"

    @property
    def num_blocks(self) -> int:
        return (self.target - FIXED_ROWS) // BLOCK_CONSTRAINTS

    def synthesize(self, cs: ConstraintSystem) -> None:
        rng = random.Random(self.seed)
        values = cs.needs_values
        x_val = rng.getrandbits(255) % R if values else 0
        x = cs.alloc_input("x0", x_val)
        checkpoints = {self.num_blocks * k // (NUM_PUBLIC - 1) for k in range(1, NUM_PUBLIC)}
        for i in range(self.num_blocks):
            with cs.namespace(lambda i=i: f"block {i}"):
                x, x_val = self._block(cs, rng, x, x_val, values)
            if i + 1 in checkpoints:
                exposed = cs.alloc_input(lambda i=i: f"x after block {i}", x_val)
                cs.enforce(
                    lambda i=i: f"expose block {i}",
                    lambda lc, x=x: lc.add_term(x),
                    ONE,
                    lambda lc, e=exposed: lc.add_term(e),
                )

    def assignment(self) -> tuple[list[int], fr.FrVec]:
        """The witness :meth:`synthesize` makes — inputs (ONE first, canonical) and aux
        (Montgomery) — without running the constraint system, ~20× faster.

        Engines proving 2^22-constraint partitions spend seconds per partition in the
        per-bit Python of witness mode while the GPU needs well under one; here the random
        stream is drawn in bulk from the same Mersenne Twister state (Python's
        ``getrandbits(32)`` takes one 32-bit output, ``getrandbits(255)`` eight, the last
        shifted right by one) and the sequential field chain runs in a GIL-free numba loop.
        """
        rng = random.Random(self.seed)
        x = rng.getrandbits(255) % R
        inputs = [1, x]
        blocks = self.num_blocks
        mt = np.random.MT19937()
        state = rng.getstate()[1]  # 624 key words, then the position
        mt.state = {
            "bit_generator": "MT19937",
            "state": {"key": np.array(state[:624], dtype=np.uint32), "pos": state[624]},
        }
        raw = mt.random_raw(9 * blocks).reshape(blocks, 9)
        words = raw[:, 0]
        y_words = raw[:, 1:].copy()
        y_words[:, 7] >>= np.uint64(1)
        y_limbs = y_words[:, 0::2] | (y_words[:, 1::2] << np.uint64(32))
        # Montgomery forms (k_to_mont reduces the 255-bit y mod r on the way in).
        word_limbs = np.zeros((blocks, 4), dtype=np.uint64)
        word_limbs[:, 0] = words
        w_mont = fr.from_canonical_limbs(word_limbs)
        y_mont = fr.from_canonical_limbs(np.ascontiguousarray(y_limbs))
        t_mont, x_mont = fr.zeros(blocks), fr.zeros(blocks)
        _chain(fr.from_int(x).reshape(1, 4), w_mont, y_mont, t_mont, x_mont)
        checkpoints = sorted({blocks * k // (NUM_PUBLIC - 1) for k in range(1, NUM_PUBLIC)})
        inputs += [fr.to_int(x_mont[i - 1]) for i in checkpoints]
        dense = np.stack([w_mont, t_mont, y_mont, x_mont], axis=1)  # word, t, y, x' per block
        # Bits are 0 or Montgomery one; only the four full values per block needed converting.
        aux = np.zeros((blocks, BLOCK_CONSTRAINTS + 1, 4), dtype=np.uint64)
        bits = (words[:, None] >> np.arange(WORD_BITS, dtype=np.uint64)) & np.uint64(1)
        aux[:, :WORD_BITS, :] = bits[:, :, None] * fr.ones(1)[0]
        aux[:, WORD_BITS:, :] = dense
        return inputs, aux.reshape(-1, 4)

    @staticmethod
    def _block(
        cs: ConstraintSystem, rng: random.Random, x: Variable, x_val: int, values: bool
    ) -> tuple[Variable, int]:
        word = rng.getrandbits(WORD_BITS) if values else 0
        bits = []
        for j in range(WORD_BITS):
            b = cs.alloc("bit", (word >> j) & 1)
            cs.enforce("boolean", lambda lc, b=b: lc.add_term(ONE).add_term(b, R - 1), b, 0)
            bits.append(b)
        w = cs.alloc("word", word)

        def packed(lc: LinearCombination) -> LinearCombination:
            for b, p in zip(bits, _POWERS_OF_TWO, strict=True):
                lc.add_term(b, p)
            return lc

        cs.enforce("pack", packed, ONE, w)
        s_val = (x_val + word) % R
        t_val = s_val * s_val % R
        t = cs.alloc("t", t_val)
        x_plus_w = lambda lc: lc.add_term(x).add_term(w)  # noqa: E731
        cs.enforce("square", x_plus_w, x_plus_w, t)
        y_val = rng.getrandbits(255) % R if values else 0
        y = cs.alloc("y", y_val)
        nxt_val = t_val * y_val % R
        nxt = cs.alloc("x", nxt_val)
        cs.enforce("mul", t, y, nxt)
        return nxt, nxt_val


@njit(cache=True, nogil=True)
def _chain(x0, words, ys, t_out, x_out):  # numba kernel
    """The field chain t = (x + w)², x' = t·y in Montgomery form, GIL-free (the only
    sequential part of the witness)."""
    x = load(x0, 0)
    for i in range(words.shape[0]):
        t = square(add(x, load(words, i)))
        x = mul(t, load(ys, i))
        store(t_out, i, t)
        store(x_out, i, x)
