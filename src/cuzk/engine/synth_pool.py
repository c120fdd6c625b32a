"""Witnesses built in worker processes, for circuits whose witness code is Python.

The synthetic benchmark circuit builds its witness in bulk (numpy and a GIL-free numba loop),
so threads suffice for it (see :mod:`cuzk.engine.workers`). Filecoin's circuits do not: their
witness comes from gadget code that runs SHA-256 and Poseidon one variable at a time in Python
(a 2 KiB PoRep partition is ~15 s of one core, a 32 GiB one ~10 minutes), and in threads that
code holds the GIL the device workers need for staging and MSM bookkeeping. In processes, the
partitions of a PoRep job are synthesized side by side on as many cores as the pool has.

Each task carries the circuit itself, pickled: the engine parsed and checked the request
once, and a partition's circuit (or a view of it) holds only its own vanilla data — kilobytes
to a few megabytes — so no worker parses a payload again (a 32 GiB C1 takes ≈ 8 s to check,
which fourteen workers each paid once per job before). A worker builds the witness, converts it
to the Montgomery vector (or, deferred, its host values) and hands it back through shared
memory — a 2 KiB PoRep witness is 86 MB, a 32 GiB one 4 GB, too much to pickle through a pipe.

A partition whose circuit is a header and k independent blocks (:mod:`cuzk.r1cs.blocks`: one
per PoRep challenge) is itself spread over the pool: one task per block view, reassembled
straight from the workers' shared memory into the partition's vector (one copy), so a 32 GiB
partition takes the time of its slowest challenge, not of all 18 in a row.

Partitions synthesizing at once share the pool, and its tasks run in rank order (the
scheduler's: priority, job age, partition), not in the order their threads happened to submit
them: the pool is handed only a few tasks more than it has processes, the rest wait here
sorted. First come first served, an urgent partition's views queued behind every view of
every partition already synthesizing (on 2 cores, behind four porep-32g partitions: 9.6–9.9 s
for its witness, against 2.6–3.0 s ranked), and partitions started together could interleave
and all finish late.

Each worker process makes its own :class:`~cuzk.r1cs.memo.SynthesisCache` when it starts and
passes it to every synthesis it runs: what it learns (SHA-256 tapes, Poseidon first-use checks,
the last SnapDeals header, which the next view of the same partition replays) is owned by the
process that runs the syntheses, not by a module default.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing
from multiprocessing import resource_tracker, shared_memory

import numpy as np

from cuzk.engine.ranked import Rank, RankedSubmitter
from cuzk.errors import InternalError
from cuzk.r1cs import Circuit, SynthesisCache, SynthesisOptions
from cuzk.r1cs.blocks import BlockCircuit, assemble, groups
from cuzk.r1cs.deferred import DeferredAux, RunGroup

#: A block circuit is cut into at most this many views per pool process (one view per block
#: where there are fewer: a PoRep partition's 18 challenges; groups of sectors for WindowPoSt's
#: 2,349), so the pool stays busy to the end without a task per tiny block.
TASKS_PER_PROCESS = 4


class SynthesisPool:
    """``processes`` spawned workers (spawn, not fork: numba's threads are already running),
    fed in rank order (:class:`RankedSubmitter`)."""

    def __init__(self, processes: int) -> None:
        if processes < 1:
            raise ValueError("a synthesis pool needs at least one process")
        self.processes = processes
        self._pool = cf.ProcessPoolExecutor(
            processes, mp_context=multiprocessing.get_context("spawn"), initializer=_init_worker
        )
        # one task queued behind each busy process, as the executor itself keeps
        self._tasks = RankedSubmitter(self._pool, processes + 1, name="cuzk-synth-feed")

    def synthesize(
        self, circuit: Circuit, options: SynthesisOptions, rank: Rank = ()
    ) -> tuple[list[int], np.ndarray | DeferredAux]:
        """``circuit``'s witness: (inputs with ONE first, canonical ints; aux as a Montgomery
        (n, 4) vector, or deferred as ``options`` say: see :mod:`cuzk.r1cs.deferred`). Raises
        what the worker raised (BadInput for a witness the circuit cannot give); InternalError
        if the worker process died."""
        inputs, name, rows, runs = _result(self._tasks.submit(rank, _remote, circuit, options))
        return inputs, _with_runs(_take(name, rows), runs)

    def synthesize_blocks(
        self, circuit: BlockCircuit, options: SynthesisOptions, rank: Rank = ()
    ) -> tuple[list[int], np.ndarray | DeferredAux]:
        """The same witness for a block circuit, one task per view."""
        blocks = circuit.block_count()
        views = [(), *groups(blocks, TASKS_PER_PROCESS * self.processes)]
        futures = [self._tasks.submit(rank, _remote, circuit.view(v), options) for v in views]
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
        segments: list[shared_memory.SharedMemory] = []
        try:
            for _, name, _, _ in results:
                segments.append(shared_memory.SharedMemory(name=name))
            pieces = [
                (inputs, _with_runs(np.ndarray((rows, 4), dtype=np.uint64, buffer=shm.buf), runs))
                for (inputs, _, rows, runs), shm in zip(results, segments, strict=True)
            ]
            witness = assemble(pieces[0], pieces[1:])
            del pieces  # the views into the segments, before they close
            return witness
        finally:
            # Every segment goes, whatever failed: the opened ones (unlinked first, so a view
            # an exception's traceback still holds cannot keep the name alive), then those
            # that were never opened.
            for shm in segments:
                shm.unlink()
                with contextlib.suppress(BufferError):
                    shm.close()
            for _, name, _, _ in results[len(segments) :]:
                with contextlib.suppress(OSError):  # the one that would not open, if any
                    _free(name)

    def close(self) -> None:
        self._tasks.close()
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
    """Remove a worker's segment that was never opened here (gone already: nothing to do)."""
    try:
        shm = shared_memory.SharedMemory(name=name)
    except FileNotFoundError:
        return
    shm.unlink()
    shm.close()


def _take(name: str, rows: int) -> np.ndarray:
    """Copy the worker's shared block into this process and free it."""
    shm = shared_memory.SharedMemory(name=name)
    try:
        aux = np.ndarray((rows, 4), dtype=np.uint64, buffer=shm.buf).copy()
    finally:
        shm.close()
        shm.unlink()
    return aux


#: This worker process's synthesis cache, made by :func:`_init_worker` (None in the parent).
_cache: SynthesisCache | None = None


def _init_worker() -> None:
    global _cache
    import numba

    numba.set_num_threads(1)  # the pool is the parallelism; keep each worker on one core
    _cache = SynthesisCache()


def _remote(circuit: Circuit, options: SynthesisOptions) -> tuple[list[int], str, int, Runs]:
    """``circuit``'s witness, its aux vector (a deferred one's host values) left in a
    shared-memory segment for the parent."""
    from cuzk.r1cs import BulkWitness, synthesize_witness

    if _cache is None:
        raise InternalError("a synthesis task ran outside a pool worker (no synthesis cache)")
    runs: Runs = None
    if isinstance(circuit, BulkWitness):
        inputs, bulk = circuit.assignment()
        rows = len(bulk)
    else:
        cs = synthesize_witness(circuit, options, _cache)
        inputs, rows = cs.inputs, cs.host_len
    shm = shared_memory.SharedMemory(create=True, size=max(1, rows * 32))
    try:
        out = np.ndarray((rows, 4), dtype=np.uint64, buffer=shm.buf)
        if isinstance(circuit, BulkWitness):
            out[:] = bulk
        else:  # converted straight into the segment: the values are written once here
            made = cs.aux_vector(out)
            if isinstance(made, DeferredAux):
                runs = (made.n, made.groups)
            del made
        del out  # no view may outlive the segment's close
        # The parent unlinks it; stop this process's tracker from "cleaning up" after us.
        # why the ignore below: the tracker is keyed by SharedMemory's private registered name (with
        # its slash)
        resource_tracker.unregister(shm._name, "shared_memory")  # type: ignore[attr-defined]
        return list(inputs), shm.name, rows, runs
    except BaseException:
        shm.unlink()
        raise
    finally:
        shm.close()
