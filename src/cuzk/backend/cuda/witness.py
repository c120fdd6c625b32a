"""Deferred witnesses made on one CUDA device (``witness.cu``).

The host sends what it computed (≈ 5 % of a SHA-256-heavy witness) and, per recorded bit
program, the runs' positions and input bits (768 bits per SHA-256 compression); the device
writes z. The first run of each program on a device is compared with the CPU executor
(:func:`cuzk.r1cs.bitprog.execute`); a program that disagrees is never run on that device
again — its values are made on the host and placed like the host's own.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections import OrderedDict
from typing import Any

import numpy as np

from cuzk.errors import InternalError
from cuzk.field import fr
from cuzk.r1cs.bitprog import BitProgram, expand_runs
from cuzk.r1cs.deferred import DeferredAux, RunGroup

log = logging.getLogger(__name__)

SRC = "witness.cu"
THREADS = 128
#: Instances per launch: bounds the node scratch (≈ 27 KB per SHA-256 instance) to ≈ 220 MB.
MAX_INSTANCES = 8192
#: Index arrays (MSM scalar gathers) kept on the device, most recent first.
KEEP_ROWS = 4
_ONE = fr.ones(1)[0]


class GpuWitness:
    """Assembles z on the device and gathers rows of device vectors."""

    def __init__(self, gpu: Any) -> None:
        self.gpu = gpu
        self._lock = threading.Lock()
        self._programs: dict[bytes, tuple[Any, Any]] = {}
        self._checked: set[bytes] = set()
        self._refused: set[bytes] = set()
        self._rows: OrderedDict[int, tuple[weakref.ref, Any]] = OrderedDict()

    # -- z from a deferred aux ------------------------------------------------------------------
    def assemble(self, inputs: fr.FrVec, aux: DeferredAux) -> Any:
        gpu = self.gpu
        n_in = len(inputs)
        z = gpu.empty(n_in + aux.n)
        gpu.upload(np.ascontiguousarray(inputs), out=z[:n_in])
        zaux = z[n_in:]
        dst, src, _ = aux.segments()
        self._place(zaux, gpu.upload(np.ascontiguousarray(aux.host)), dst, src)
        for group in aux.groups:
            self._run(zaux, group)
        return z

    def _place(self, z: Any, vals: Any, dst: np.ndarray, src: np.ndarray) -> None:
        count = int(vals.shape[0])
        if count == 0:
            return
        up = self.gpu.upload
        grid = max(1, min(-(-count // 256), self.gpu.sm_count * 16))
        args = (z, vals, np.int64(count), up(dst), up(src), np.int64(len(dst)))
        self.gpu.launch(SRC, "witness_place", grid, 256, args)

    def _run(self, z: Any, group: RunGroup) -> None:
        p = group.program
        if p.key in self._refused:
            self._place_from_host(z, group)
            return
        ops, words = self._program(p)
        m = len(group.starts)
        for lo in range(0, m, MAX_INSTANCES):
            hi = min(m, lo + MAX_INSTANCES)
            k = hi - lo
            scratch = self.gpu.empty((1 + p.n_in + p.n_aux) * k, dtype=np.uint8, width=0)
            self.gpu.launch(
                SRC,
                "witness_bitprog",
                -(-k // THREADS),
                THREADS,
                (z, ops, np.int32(len(p.ops)), words, np.int32(p.n_in),
                 self.gpu.upload(np.ascontiguousarray(group.inputs[lo:hi])),
                 self.gpu.upload(np.ascontiguousarray(group.starts[lo:hi])), np.int64(k),
                 scratch),
            )  # fmt: skip
        if p.key not in self._checked:
            self._check(z, group)

    def _check(self, z: Any, group: RunGroup) -> None:
        """The first instance's device values against the CPU executor's."""
        p = group.program
        start = int(group.starts[0])
        got = self.gpu.download(z[start : start + p.n_aux])
        want = np.zeros((p.n_aux, 4), dtype=np.uint64)
        expand_runs(p.ops, p.words, p.n_aux, group.inputs[:1], np.zeros(1, np.int64), _ONE, want)
        with self._lock:
            if np.array_equal(got, want):
                self._checked.add(p.key)
                return
            self._refused.add(p.key)
        log.warning("device bit program disagrees with the CPU executor; made on the host")
        self._place_from_host(z, group)

    def _place_from_host(self, z: Any, group: RunGroup) -> None:
        p = group.program
        m = len(group.starts)
        vals = np.empty((m * p.n_aux, 4), dtype=np.uint64)
        offsets = np.arange(m, dtype=np.int64) * p.n_aux
        expand_runs(p.ops, p.words, p.n_aux, group.inputs, offsets, _ONE, vals)
        self._place(z, self.gpu.upload(vals), group.starts.astype(np.int64), offsets)

    def _program(self, p: BitProgram) -> tuple[Any, Any]:
        with self._lock:
            hit = self._programs.get(p.key)
        if hit is None:
            words = p.words if len(p.words) else np.zeros(1, np.int32)
            hit = (self.gpu.upload(np.ascontiguousarray(p.ops, np.int32)),
                   self.gpu.upload(np.ascontiguousarray(words, np.int32)))  # fmt: skip
            with self._lock:
                if len(self._programs) >= 256:
                    self._programs.clear()
                self._programs[p.key] = hit
        return hit

    def refuse(self, key: bytes) -> None:
        """Never run program ``key`` on this device (tests: the host fallback)."""
        with self._lock:
            self._refused.add(key)

    # -- gathers --------------------------------------------------------------------------------
    def take(self, v: Any, rows: np.ndarray) -> Any:
        """v[rows] on the device; ``rows`` (made once per shape) is uploaded once."""
        key = id(rows)
        with self._lock:
            hit = self._rows.get(key)
            d_rows = hit[1] if hit is not None and hit[0]() is rows else None
        if d_rows is None:
            d_rows = self.gpu.upload(np.ascontiguousarray(rows))
            with self._lock:
                self._rows[key] = (weakref.ref(rows), d_rows)
                self._rows.move_to_end(key)
                while len(self._rows) > KEEP_ROWS:
                    self._rows.popitem(last=False)
        if len(rows) and int(rows[-1]) >= v.shape[0]:
            raise InternalError(f"row {int(rows[-1])} of a {v.shape[0]}-row vector")
        with self.gpu.context(), self.gpu.guard("gathering rows"):
            return self.gpu.cp.take(v, d_rows, axis=0)
