"""Witnesses built in worker processes, for circuits whose witness code is Python.

The synthetic benchmark circuit builds its witness in bulk (numpy and a GIL-free numba loop),
so threads suffice for it (see :mod:`cuzk.engine.workers`). Filecoin's circuits do not: their
witness comes from gadget code that runs SHA-256 and Poseidon one variable at a time in Python
(a 2 KiB PoRep partition is ~15 s of one core, a 32 GiB one ~10 minutes), and in threads that
code holds the GIL the device workers need for staging and MSM bookkeeping. In processes, the
partitions of a PoRep job are synthesized side by side on as many cores as the pool has.

Each task carries the request (circuit id, seeds, payload) and a partition index; a worker
opens the statement (keeping the last few, keyed by payload digest, so the partitions of one
job parse their payload once per worker), builds the partition's witness, converts it to the
Montgomery vector and hands it back through shared memory — a 2 KiB PoRep witness is 86 MB,
a 32 GiB one 4 GB, too much to pickle through a pipe.

A partition whose circuit is a header and k independent blocks (:mod:`cuzk.r1cs.blocks`: one
per PoRep challenge) is itself spread over the pool: one task per block view, reassembled
straight from the workers' shared memory into the partition's vector (one copy), so a 32 GiB
partition takes the time of its slowest challenge, not of all 18 in a row.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
from collections import OrderedDict
from collections.abc import Sequence
from multiprocessing import resource_tracker, shared_memory

import numpy as np

from cuzk.circuits.statement import Statement
from cuzk.errors import InternalError
from cuzk.r1cs.blocks import BlockCircuit, assemble, groups
from cuzk.r1cs.deferred import DeferredAux, RunGroup

_STATEMENTS: OrderedDict[str, Statement] = OrderedDict()  # worker side: digest → Statement
_KEEP_STATEMENTS = 4
#: A block circuit is cut into at most this many views per pool process (one view per block
#: where there are fewer: a PoRep partition's 18 challenges; groups of sectors for WindowPoSt's
#: 2,349), so the pool stays busy to the end without a task per tiny block.
TASKS_PER_PROCESS = 4


class SynthesisPool:
    """``processes`` spawned workers (spawn, not fork: numba's threads are already running)."""

    def __init__(self, processes: int) -> None:
        if processes < 1:
            raise ValueError("a synthesis pool needs at least one process")
        self.processes = processes
        self._pool = cf.ProcessPoolExecutor(
            processes, mp_context=multiprocessing.get_context("spawn"), initializer=_init_worker
        )

    def synthesize(
        self,
        circuit_id: str,
        seeds: Sequence[int],
        payload: bytes,
        index: int,
        defer: bool,
        *,
        defer_poseidon: bool = False,
    ) -> tuple[list[int], np.ndarray | DeferredAux]:
        """Partition ``index``'s witness: (inputs with ONE first, canonical ints; aux as a
        Montgomery (n, 4) vector, or deferred with ``defer`` (bit programs) and/or
        ``defer_poseidon``: see :mod:`cuzk.r1cs.deferred`). Raises what the worker raised
        (BadInput for a witness the payload cannot give); InternalError if the worker process
        died."""
        future = self._pool.submit(
            _remote, circuit_id, tuple(seeds), payload, index, defer, None, defer_poseidon
        )
        inputs, name, rows, runs = _result(future)
        return inputs, _with_runs(_take(name, rows), runs)

    def synthesize_blocks(
        self,
        circuit_id: str,
        seeds: Sequence[int],
        payload: bytes,
        index: int,
        defer: bool,
        blocks: int,
        *,
        defer_poseidon: bool = False,
    ) -> tuple[list[int], np.ndarray | DeferredAux]:
        """The same witness for a block circuit of ``blocks`` blocks, one task per view."""
        views: list[tuple[int, ...]] = [(), *groups(blocks, TASKS_PER_PROCESS * self.processes)]
        args = (circuit_id, tuple(seeds), payload, index, defer)
        futures = [self._pool.submit(_remote, *args, v, defer_poseidon) for v in views]
        results = []
        try:
            for f in futures:
                results.append(_result(f))
        except BaseException:
            for f in futures:
                f.cancel()
            for f in futures:  # free every segment a finished task left behind
                if not f.cancelled() and f.exception() is None:
                    _free(f.result()[1])
            raise
        segments = [shared_memory.SharedMemory(name=name) for _, name, _, _ in results]
        try:
            pieces = [
                (inputs, _with_runs(np.ndarray((rows, 4), dtype=np.uint64, buffer=shm.buf), runs))
                for (inputs, _, rows, runs), shm in zip(results, segments, strict=True)
            ]
            witness = assemble(pieces[0], pieces[1:])
            del pieces  # the views into the segments, before they close
            return witness
        finally:
            for shm in segments:
                shm.close()
                shm.unlink()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


Runs = tuple[int, tuple[RunGroup, ...]] | None  # a deferred aux's length and runs


def _with_runs(host: np.ndarray, runs: Runs) -> np.ndarray | DeferredAux:
    return host if runs is None else DeferredAux(runs[0], host, runs[1])


def _result(future: cf.Future) -> tuple[list[int], str, int, Runs]:
    try:
        return future.result()
    except cf.process.BrokenProcessPool as e:
        raise InternalError(f"a synthesis worker process died: {e}") from e


def _free(name: str) -> None:
    shm = shared_memory.SharedMemory(name=name)
    shm.close()
    shm.unlink()


def _take(name: str, rows: int) -> np.ndarray:
    """Copy the worker's shared block into this process and free it."""
    shm = shared_memory.SharedMemory(name=name)
    try:
        aux = np.ndarray((rows, 4), dtype=np.uint64, buffer=shm.buf).copy()
    finally:
        shm.close()
        shm.unlink()
    return aux


def _init_worker() -> None:
    import numba

    numba.set_num_threads(1)  # the pool is the parallelism; keep each worker on one core


def _remote(
    circuit_id: str,
    seeds: tuple[int, ...],
    payload: bytes,
    index: int,
    defer: bool,
    blocks: tuple[int, ...] | None = None,
    defer_poseidon: bool = False,
) -> tuple[list[int], str, int, Runs]:
    """Partition ``index``'s witness (with ``blocks``: of its view on those blocks), its aux
    vector (a deferred one's host values) left in a shared-memory segment for the parent."""
    from cuzk.circuits import open_statement
    from cuzk.circuits.statement import payload_digest
    from cuzk.r1cs import BulkWitness, SynthesisOptions, synthesize_witness

    digest = payload_digest(circuit_id, seeds, payload)
    statement = _STATEMENTS.pop(digest, None) or open_statement(circuit_id, seeds, payload)
    _STATEMENTS[digest] = statement
    while len(_STATEMENTS) > _KEEP_STATEMENTS:
        _STATEMENTS.popitem(last=False)
    circuit = statement.circuit(index)
    if blocks is not None:
        if not isinstance(circuit, BlockCircuit):
            raise InternalError(f"{circuit_id} is not a block circuit; it has no views")
        circuit = circuit.view(blocks)
    runs: Runs = None
    if isinstance(circuit, BulkWitness):
        inputs, aux = circuit.assignment()
    else:
        options = SynthesisOptions(defer_bit_programs=defer, defer_poseidon=defer_poseidon)
        cs = synthesize_witness(circuit, options)
        inputs, made = cs.inputs, cs.aux_vector()
        if isinstance(made, DeferredAux):
            aux, runs = made.host, (made.n, made.groups)
        else:
            aux = made
    shm = shared_memory.SharedMemory(create=True, size=max(1, aux.nbytes))
    try:
        np.ndarray(aux.shape, dtype=np.uint64, buffer=shm.buf)[:] = aux
        # The parent unlinks it; stop this process's tracker from "cleaning up" after us.
        resource_tracker.unregister(shm._name, "shared_memory")  # type: ignore[attr-defined]
        return list(inputs), shm.name, len(aux), runs
    except BaseException:
        shm.unlink()
        raise
    finally:
        shm.close()
