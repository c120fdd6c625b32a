"""Room for larger MSM passes (CPU): the buffer rule, the fallback to the key's own passes when
the larger ones find no memory, and the prover granting a consumed domain vector to the A and
H MSMs only. The GPU side (results with and without room) is tests/backend/test_cuda_msm.py."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import pytest

from cuzk.backend.cuda.msm import GpuMsm
from cuzk.backend.cuda.msm_bases import (
    ROOM_FIXED_BYTES,
    ROOM_PER_BUFFER_BYTE,
    ROOMY_STREAM_BYTES,
    roomy_stream_bytes,
)
from cuzk.circuits.synthetic import SyntheticCircuit
from cuzk.errors import DeviceFault, ResourceExhausted
from cuzk.field.constants import FR_BYTES
from cuzk.groth16 import prove
from cuzk.groth16.setup import generate_parameters
from cuzk.poly import Domain
from cuzk.r1cs import synthesize_shape

GiB = 1 << 30


def test_buffers_grow_with_room_within_their_bounds():
    key = 590 << 20  # a 16 GiB cap's plan for porep-32g
    h_bytes = 12_884_901_888
    assert roomy_stream_bytes(key, h_bytes, 0) == key
    assert roomy_stream_bytes(key, h_bytes, ROOM_FIXED_BYTES) == key  # the wider window only
    grown = roomy_stream_bytes(key, h_bytes, 4 * GiB)  # a freed 2^27 domain vector
    assert grown == key + int((4 * GiB - ROOM_FIXED_BYTES) / ROOM_PER_BUFFER_BYTE)
    assert 1.1 * GiB < grown < 1.5 * GiB
    assert roomy_stream_bytes(key, h_bytes, 64 * GiB) == ROOMY_STREAM_BYTES
    assert roomy_stream_bytes(key, 900 << 20, 64 * GiB) == 900 << 20  # the whole vector at most
    assert roomy_stream_bytes(2 * GiB, h_bytes, 64 * GiB) == 2 * GiB  # never smaller than given


class Drains:
    def __init__(self, log):
        self.log = log

    def synchronize(self):
        self.log.append("drain")


def msm_without_device(log):
    """A GpuMsm with no device behind it: only its streams' draining is seen."""
    msm = GpuMsm.__new__(GpuMsm)
    msm._stream = msm._copy_stream = Drains(log)
    msm.gpu = SimpleNamespace(guard=lambda what: contextlib.nullcontext(), device=0)
    return msm


def test_larger_passes_that_find_no_memory_are_redone_in_the_keys_own():
    calls = []
    msm = msm_without_device(calls)

    def run(room):
        calls.append(room)
        if room:
            raise ResourceExhausted("no room after all")
        return "sum"

    assert msm._with_room(run, 3 * GiB) == "sum"
    assert calls == [3 * GiB, "drain", "drain", 0]  # the first run's uploads done first
    calls.clear()
    assert msm._with_room(run, 0) == "sum"
    assert calls == [0]

    def broken(room):
        raise DeviceFault("illegal address")

    with pytest.raises(DeviceFault):  # only memory is worth a second try
        msm._with_room(broken, 3 * GiB)

    def always_short(room):
        raise ResourceExhausted("none at all")

    with pytest.raises(ResourceExhausted):
        msm._with_room(always_short, 3 * GiB)


class RoomLog:
    """A backend that notes the room each MSM is given and leaves the work to ``inner``."""

    def __init__(self, inner):
        self._inner = inner
        self.rooms: list[tuple[str, int]] = []

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def msm(self, bases, scalars, *, room=0):
        self.rooms.append((bases.key, room))
        return self._inner.msm(bases, scalars, room=room)

    def split_msm(self, bases, scalars, rows=None, *, room=0):
        self.rooms.append((bases.key, room))
        return self._inner.split_msm(bases, scalars, rows, room=room)


def test_the_prover_gives_the_a_and_h_msms_a_consumed_domain_vector(tmp_path, pool, cpu_backend):
    n = 300
    shape = synthesize_shape(SyntheticCircuit(n), f"synthetic:{n}")
    params = generate_parameters(shape, tmp_path, "syn", seed=3, pool=pool)
    backend = RoomLog(cpu_backend)
    prove(SyntheticCircuit(n, seed=7), shape, params, backend)  # (verifies before returning)
    rooms = dict(backend.rooms)
    domain_vector = FR_BYTES * Domain.for_size(shape.num_constraints).m
    assert rooms == {
        params.l.key: 0,
        params.b_g1.key: 0,
        params.b_g2.key: 0,
        params.a.key: domain_vector,
        params.h.key: domain_vector,
    }


def test_the_retry_runs_without_the_first_runs_arrays():
    """A failed larger run's locals (its device arrays, in the traceback's frames) are gone
    before the retry asks for memory again."""
    import gc
    import weakref

    class Buffers:  # stands in for the first run's device arrays
        pass

    seen = {}

    def run(room):
        if room:
            buffers = Buffers()
            seen["first"] = weakref.ref(buffers)
            raise ResourceExhausted("the larger buffers did not fit")
        gc.collect()  # (only cycles would need it; none should hold the frames)
        seen["alive at retry"] = seen["first"]() is not None
        return "sum"

    assert msm_without_device([])._with_room(run, GiB) == "sum"
    assert seen["alive at retry"] is False
