"""The loop one :class:`cuzk.curve.pool.MsmPool` worker process runs.

A worker owns the resident chunks of registered point vectors (arkworks points cannot be
pickled, so it reads them from the parameter file itself) and answers one request at a time
over its pipe. Wire format, parent → worker: a pickled ``(op, args, n_buffers)`` header, then
``n_buffers`` raw byte messages (scalars, indices) so large arrays travel without pickling.
Worker → parent: ``("ok", payload, cpu seconds)`` or ``("err", error class name, message)``.
Partial sums travel as arkworks xy bytes, which decode in ~1 µs without a square root.
"""

from __future__ import annotations

import mmap
import operator
import os
import time
from collections.abc import Callable
from functools import reduce
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from cuzk.curve.encoding import (
    g1_array_to_uncompressed,
    g2_array_to_uncompressed,
    points_from_uncompressed,
)
from cuzk.curve.fixed_base import FixedBaseTable, choose_window
from cuzk.curve.points import G1Point, G2Point, to_arkworks_scalars
from cuzk.errors import BadInput, CuzkError

POINT_SIZE = {"g1": 96, "g2": 192}
POINT_CLASS: dict[str, Any] = {"g1": G1Point, "g2": G2Point}
_LOAD_BLOCK = 1 << 16
_ENCODERS: dict[str, Callable[[list[Any]], bytes]] = {
    "g1": g1_array_to_uncompressed,
    "g2": g2_array_to_uncompressed,
}


class _Resident:
    """One registered vector's chunk: the source it came from and its points."""

    def __init__(self, group: str, source: tuple, points: list) -> None:
        self.group = group
        self.source = source
        self.points = points


class WorkerState:
    def __init__(self) -> None:
        self.vectors: dict[str, _Resident | BaseException] = {}
        # Setup multiplies the same generator for several vectors in a row: keep its table.
        self.table: tuple[str, bytes, FixedBaseTable] | None = None

    # -- ops -------------------------------------------------------------------------------
    def register(self, key: str, group: str, path: str, offset: int, lo: int, hi: int) -> None:
        source = (group, path, offset, lo, hi)
        old = self.vectors.get(key)
        if isinstance(old, _Resident) and old.source == source:
            return
        self.vectors.pop(key, None)
        try:
            points = load_chunk(group, path, offset, lo, hi)
        except BaseException as e:
            self.vectors[key] = e  # later MSMs on this key re-raise the load error
            raise
        self.vectors[key] = _Resident(group, source, points)

    def unregister(self, key: str) -> None:
        self.vectors.pop(key, None)

    def msm(self, key: str, first: int, scalars: bytes, indices: bytes | None) -> bytes:
        vec = self._vector(key)
        pts = _select(vec.points, indices)
        try:
            ks = to_arkworks_scalars(scalars)
        except BadInput as e:
            raise BadInput(f"{e} (offset {first} in this MSM's scalars)") from None
        if len(ks) != len(pts):
            raise BadInput(f"{len(ks)} scalars for {len(pts)} points")
        cls = POINT_CLASS[vec.group]
        total = cls.multiexp_unchecked(pts, ks) if pts else cls.identity()
        return total.to_xy_bytes_be()

    def sum(self, key: str, indices: bytes | None) -> bytes:
        vec = self._vector(key)
        pts = _select(vec.points, indices)
        total = reduce(operator.add, pts) if pts else POINT_CLASS[vec.group].identity()
        return total.to_xy_bytes_be()

    def fixed_base(self, group: str, base_xy: bytes, scalars: bytes) -> bytes:
        n = len(scalars) // 32
        window = choose_window(n, group)
        cached = self.table
        if cached and cached[:2] == (group, base_xy) and cached[2].window >= window:
            table = cached[2]
        else:
            base = POINT_CLASS[group].from_xy_bytes_unchecked_be(base_xy)
            table = FixedBaseTable(base, window)
            self.table = (group, base_xy, table)
        return _ENCODERS[group](table.multiply(scalars))

    def _vector(self, key: str) -> _Resident:
        vec = self.vectors.get(key)
        if vec is None:
            raise BadInput(f"no point vector registered as {key!r}")
        if isinstance(vec, BaseException):
            raise BadInput(f"point vector {key!r} failed to load: {vec}")
        return vec


def load_chunk(group: str, path: str, offset: int, lo: int, hi: int) -> list:
    """Points [lo, hi) of the vector at ``offset`` in ``path``, read through a shared mapping.

    Blocks are copied out of the mapping one at a time, which bounds the transient memory and
    leaves no numpy view pinning the mapping when it is closed.
    """
    size = POINT_SIZE[group]
    points: list = []
    if hi <= lo:
        return points
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            if offset + hi * size > len(mm):
                raise BadInput(f"{path} is too short for points [{lo}, {hi}) at offset {offset}")
            for a in range(lo, hi, _LOAD_BLOCK):
                b = min(hi, a + _LOAD_BLOCK)
                data = mm[offset + a * size : offset + b * size]
                points.extend(points_from_uncompressed(group, data, first_index=a))
    except (OSError, ValueError) as e:
        if isinstance(e, BadInput):
            raise
        raise BadInput(f"cannot read points from {path}: {e}") from e
    return points


def _select(points: list, indices: bytes | None) -> list:
    if indices is None:
        return points
    idx = np.frombuffer(indices, dtype=np.int64).tolist()
    return list(map(points.__getitem__, idx))


def main(conn: Connection) -> None:
    """Serve requests until the parent says stop or goes away."""
    state = WorkerState()
    while True:
        try:
            op, args, n_buffers = conn.recv()
            buffers = [conn.recv_bytes() for _ in range(n_buffers)]
        except (EOFError, OSError):
            return  # parent closed the pipe or died
        if op == "stop":
            return
        t0 = time.process_time()
        try:
            payload = _dispatch(state, op, args, buffers)
        except CuzkError as e:
            reply: tuple = ("err", type(e).__name__, str(e))
        except Exception as e:  # any failure must reach the waiting future
            reply = ("err", "InternalError", f"{type(e).__name__}: {e}")
        else:
            reply = ("ok", payload, time.process_time() - t0)
        try:
            conn.send(reply)
        except (EOFError, OSError):
            return


def _dispatch(state: WorkerState, op: str, args: tuple, buffers: list[bytes]) -> Any:
    if op == "register":
        return state.register(*args)
    if op == "unregister":
        return state.unregister(*args)
    if op == "msm":
        key, first, has_indices = args
        return state.msm(key, first, buffers[0], buffers[1] if has_indices else None)
    if op == "sum":
        key, has_indices = args
        return state.sum(key, buffers[0] if has_indices else None)
    if op == "fixed_base":
        group, base_xy = args
        return state.fixed_base(group, base_xy, buffers[0])
    if op == "ping":  # transfer/latency probe and a test hook: optionally sleep first
        (sleep_s,) = args
        if sleep_s:
            time.sleep(sleep_s)
        return (os.getpid(), sum(len(b) for b in buffers))
    raise BadInput(f"unknown pool operation {op!r}")
