"""Deferred witnesses made on one CUDA device.

The host sends what it computed (≈ 5 % of a SHA-256-heavy witness) and, per recorded program,
the runs' positions and inputs; the device writes z. Each program names the kernel that makes
its runs and hands over the tables it reads (:class:`~cuzk.r1cs.deferred.Program`), uploaded
once per program. Two kernels run here: SHA-256 bit programs (``witness.cu``, 768 input bits
per compression) and Poseidon hashes (``poseidon_witness.cu``, the preimage's field elements).
The first run of each program on a device is compared with its CPU model (``program.expand``);
a program that disagrees — or whose kernel or size the device lacks — is never run on that
device: its values are made on the host and placed like the host's own.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from cuzk.errors import InternalError
from cuzk.field import fr
from cuzk.r1cs.deferred import DeferredAux, Program, RunGroup

log = logging.getLogger(__name__)

SRC = "witness.cu"
POSEIDON_SRC = "poseidon_witness.cu"
THREADS = 128
#: Instances per launch: bounds the node scratch (≈ 27 KB per SHA-256 instance) to ≈ 220 MB.
MAX_INSTANCES = 8192
#: Poseidon hashes per launch (no scratch: ≤ 512 B of preimage each).
MAX_HASHES = 1 << 16
#: Widest Poseidon state the device kernel holds (POSEIDON_MAX_T in poseidon.cuh).
POSEIDON_MAX_T = 17
#: Index arrays (MSM scalar gathers) kept on the device, most recent first.
KEEP_ROWS = 4


class GpuWitness:
    """Assembles z on the device and gathers rows of device vectors."""

    def __init__(self, gpu: Any) -> None:
        self.gpu = gpu
        self._lock = threading.Lock()
        self._programs: dict[bytes, tuple[Any, ...]] = {}
        self._checked: set[bytes] = set()
        self._refused: set[bytes] = set()
        self._rows: OrderedDict[int, tuple[weakref.ref, Any]] = OrderedDict()
        self._pinned: OrderedDict[int, tuple[weakref.ref, Any]] = OrderedDict()

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
        if p.key in self._refused or not _has_kernel(group):
            self._place_from_host(z, group)
            return
        _LAUNCH[p.kernel](self, z, group, self._tables(p))
        if p.key not in self._checked:
            self._check(z, group)

    def _run_bits(self, z: Any, group: RunGroup, tables: tuple[Any, ...]) -> None:
        """``witness_bitprog``: the tables, then each launch's inputs (bits) and starts."""
        n_in = group.inputs.shape[1]
        m = len(group.starts)
        for lo in range(0, m, MAX_INSTANCES):
            hi = min(m, lo + MAX_INSTANCES)
            k = hi - lo
            scratch = self.gpu.empty((1 + n_in + group.program.n_aux) * k, np.uint8, width=0)
            self.gpu.launch(
                SRC,
                "witness_bitprog",
                -(-k // THREADS),
                THREADS,
                (z, *tables,
                 self.gpu.upload(np.ascontiguousarray(group.inputs[lo:hi])),
                 self.gpu.upload(np.ascontiguousarray(group.starts[lo:hi])), np.int64(k),
                 scratch),
            )  # fmt: skip

    def _run_poseidon(self, z: Any, group: RunGroup, tables: tuple[Any, ...]) -> None:
        """``poseidon_witness``: each launch's preimages and starts, then the tables."""
        arity = group.inputs.shape[1]
        m = len(group.starts)
        for lo in range(0, m, MAX_HASHES):
            hi = min(m, lo + MAX_HASHES)
            k = hi - lo
            pre = np.ascontiguousarray(group.inputs[lo:hi], np.uint64).reshape(k * arity, 4)
            self.gpu.launch(
                POSEIDON_SRC,
                "poseidon_witness",
                -(-k // THREADS),
                THREADS,
                (z, self.gpu.upload(pre),
                 self.gpu.upload(np.ascontiguousarray(group.starts[lo:hi], np.int64)),
                 np.int64(k), *tables),
            )  # fmt: skip

    def _check(self, z: Any, group: RunGroup) -> None:
        """The first instance's device values against the program's CPU model."""
        p = group.program
        start = int(group.starts[0])
        got = self.gpu.download(z[start : start + p.n_aux])
        want = np.zeros((p.n_aux, 4), dtype=np.uint64)
        p.expand(group.inputs[:1], np.zeros(1, np.int64), want)
        with self._lock:
            if np.array_equal(got, want):
                self._checked.add(p.key)
                return
            self._refused.add(p.key)
        log.warning("device program %r disagrees with its CPU model; made on the host", p.key)
        self._place_from_host(z, group)

    def _place_from_host(self, z: Any, group: RunGroup) -> None:
        p = group.program
        m = len(group.starts)
        vals = np.empty((m * p.n_aux, 4), dtype=np.uint64)
        offsets = np.arange(m, dtype=np.int64) * p.n_aux
        p.expand(group.inputs, offsets, vals)
        self._place(z, self.gpu.upload(vals), group.starts.astype(np.int64), offsets)

    def _tables(self, p: Program) -> tuple[Any, ...]:
        """A program's tables with its arrays on the device (uploaded on first use, kept per
        key)."""
        with self._lock:
            hit = self._programs.get(p.key)
        if hit is None:
            up = self.gpu.upload
            hit = tuple(
                up(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a for a in p.tables()
            )
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
        d_rows = self.device_rows(rows, int(v.shape[0]))
        with self.gpu.context(), self.gpu.guard("gathering rows"):
            return self.gpu.cp.take(v, d_rows, axis=0)

    def device_rows(self, rows: np.ndarray, length: int) -> Any:
        """``rows`` (sorted, made once per shape) on the device, uploaded on first use and
        kept while it lives (the few most recent); checked against a vector of ``length``."""
        return self._kept(self._rows, rows, length, self.gpu.upload)

    def pinned_rows(self, rows: np.ndarray, length: int) -> np.ndarray:
        """``rows`` copied once into page-locked host memory (kept like :meth:`device_rows`):
        what a capped MSM uploads a pass's slice of as the pass runs, so no shape keeps its
        row indices on the device (porep-32g: 0.65 GiB). The host budget counts them inside a
        streamed shape's page-locked copy (whose count includes the derived arrays), not
        beside resident matrices."""
        return self._kept(self._pinned, rows, length, self.gpu.pinned_copy)

    def _kept(
        self,
        cache: OrderedDict[int, tuple[weakref.ref, Any]],
        rows: np.ndarray,
        length: int,
        make: Callable[[np.ndarray], Any],
    ) -> Any:
        if len(rows) and int(rows[-1]) >= length:
            raise InternalError(f"row {int(rows[-1])} of a {length}-row vector")
        key = id(rows)
        with self._lock:
            hit = cache.get(key)
            kept = hit[1] if hit is not None and hit[0]() is rows else None
        if kept is None:
            kept = make(np.ascontiguousarray(rows))
            with self._lock:
                cache[key] = (weakref.ref(rows), kept)
                cache.move_to_end(key)
                while len(cache) > KEEP_ROWS:
                    cache.popitem(last=False)
        return kept


#: Each kernel's launcher, by the name a program gives (:attr:`Program.kernel`).
_LAUNCH: dict[str, Callable[[GpuWitness, Any, RunGroup, tuple[Any, ...]], None]] = {
    "witness_bitprog": GpuWitness._run_bits,
    "poseidon_witness": GpuWitness._run_poseidon,
}


def _has_kernel(group: RunGroup) -> bool:
    """Whether this device has a kernel for the group's runs (else they are made on the host):
    a Poseidon state (preimage and tag) wider than the kernel holds is not."""
    kernel = group.program.kernel
    if kernel == "poseidon_witness":
        return group.inputs.shape[1] + 1 <= POSEIDON_MAX_T
    return kernel in _LAUNCH
