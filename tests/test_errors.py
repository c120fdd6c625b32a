"""cuzk.errors.without_frames: a kept error must not keep its frames' arrays alive."""

from __future__ import annotations

import gc
import weakref

import numpy as np

from cuzk.errors import ResourceExhausted, without_frames


def _fails_holding(ref_out: list) -> None:
    big = np.random.default_rng().integers(0, 2**63, size=(1 << 16, 4), dtype=np.uint64)
    ref_out.append(weakref.ref(big.base if big.base is not None else big))
    try:
        raise MemoryError("device refused")  # as CuPy's out-of-memory error is
    except MemoryError as e:
        raise ResourceExhausted(f"out of memory ({e})") from e


def test_kept_error_frees_what_its_frames_held():
    refs: list = []
    try:
        _fails_holding(refs)
    except ResourceExhausted as e:
        kept: BaseException = e
    gc.collect()
    assert refs[0]() is not None  # the traceback holds the frame, and the frame the array
    assert without_frames(kept) is kept
    gc.collect()
    assert refs[0]() is None
    assert kept.__traceback__ is None and kept.__cause__ is not None
    assert kept.__cause__.__traceback__ is None
    assert "device refused" in str(kept)


def test_a_cycle_of_causes_ends():
    a, b = ValueError("a"), ValueError("b")
    a.__context__, b.__context__ = b, a
    assert without_frames(a) is a
