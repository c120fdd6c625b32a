"""Insertion and selection: every position, upstream's pinned counts (storage-proofs-core
src/gadgets/insertion.rs tests: select size − 1; insert 2/8/22 for sizes 2/4/8, else
size · (size − 1))."""

from __future__ import annotations

import random

import pytest

from cuzk.errors import BadInput
from cuzk.field.constants import R
from cuzk.gadgets.boolean import AllocatedBit, Boolean
from cuzk.gadgets.insertion import insert, pick, select
from cuzk.gadgets.num import AllocatedNum
from cuzk.r1cs import CheckCS
from tests.gadgets.helpers import plus_one, synthesize_all, tampered

INSERT_CONSTRAINTS = {2: 2, 4: 8, 8: 22, 16: 16 * 15}


def _setup(cs, values, nums, index, nbits):
    elems = [
        AllocatedNum.alloc(cs, v if values else None, f"element {i}") for i, v in enumerate(nums)
    ]
    bits = [
        Boolean(
            AllocatedBit.alloc(cs, bool((index >> i) & 1) if values else None, f"index bit {i}")
        )
        for i in range(nbits)
    ]
    return elems, bits


@pytest.mark.parametrize("size", [2, 4, 8, 16])
def test_insert_every_position(size, seed):
    rnd = random.Random(seed + size)
    nbits = size.bit_length() - 1
    positions = range(size) if size <= 8 else rnd.sample(range(size), 3)
    for index in positions:
        nums = [rnd.randrange(R) for _ in range(size)]  # element first, then the others

        def build(cs, values, nums=nums, index=index):
            elems, bits = _setup(cs, values, nums, index, nbits)
            return insert(cs, elems[0], bits, elems[1:], "insert")

        run = synthesize_all(build)
        expect = nums[1 : index + 1] + [nums[0]] + nums[index + 1 :]
        assert [x.value for x in run.result] == expect, (size, index)
        # Witness mode (the table replayed without gadgets for sizes 2, 4, 8): same variables.
        keys = [(x.variable.key, x.value) for x in run.result]
        assert [(x.variable.key, x.value) for x in run.witness_result] == keys, (size, index)
        assert run.num_constraints - nbits == INSERT_CONSTRAINTS[size]
        # Corrupt the first output: the pick that produced it fails.
        first_out = size + nbits + (2 if size == 8 else 0)
        _, name = tampered(build, first_out, plus_one)
        assert name.startswith("insert/") and name.endswith("/pick"), name


@pytest.mark.parametrize("size", [2, 4, 8, 16])
def test_select_every_position(size, seed):
    rnd = random.Random(seed)
    nbits = size.bit_length() - 1
    nums = [rnd.randrange(R) for _ in range(size)]
    for index in range(size):

        def build(cs, values, index=index):
            elems, bits = _setup(cs, values, nums, index, nbits)
            return select(cs, elems, bits, "select")

        run = synthesize_all(build)
        assert run.result.value == nums[index]
        assert run.num_constraints - nbits == size - 1


def test_pick_negative_and_arity_checks():
    def build(cs, values):
        a = AllocatedNum.alloc(cs, 5 if values else None)
        b = AllocatedNum.alloc(cs, 7 if values else None)
        c = Boolean(AllocatedBit.alloc(cs, True if values else None))
        return pick(cs, c, a, b, "p")

    run = synthesize_all(build)
    assert run.result.value == 5
    assert tampered(build, 3, lambda v: 7) == (1, "p/pick")
    cs = CheckCS()
    e = AllocatedNum.alloc(cs, 1)
    with pytest.raises(BadInput):
        insert(cs, e, [], [e, e])
    bit = Boolean(AllocatedBit.alloc(cs, True))
    with pytest.raises(BadInput):  # upstream requires plain allocated bits for arity 8
        insert(cs, e, [bit.not_(), bit, bit], [e] * 7)
