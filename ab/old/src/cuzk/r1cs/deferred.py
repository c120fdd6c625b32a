"""An aux vector whose bulk is still to be computed: host values plus program runs.

In a 32 GiB PoRep partition ~95 % of the 130M witness values are the inner bits of SHA-256
compressions. Making them on the host as Python ints (then converting to field elements) is
most of the proof's CPU time, and the vector (4 GB) then crosses PCIe. With
``SynthesisOptions.defer_bit_programs`` the witness system records, for each compression it
would have replayed, only *where* the values go and the instance's 768 input bits; the host
keeps computing everything else (and the compressions' outputs, which later gadgets read). The
result is a :class:`DeferredAux`: the host values in order, and the runs that fill the gaps.
A backend turns it into the full vector where the kernels read it — the CUDA backend on the
device (the values never exist on the host), the CPU backend with :func:`expand` (the same
numba executor the tapes use).

A run's *program* is anything with a ``key``, an ``n_aux``, a CPU model ``expand`` and the
device kernel that makes its runs with the tables that kernel reads (the :class:`Program`
protocol): a SHA-256 compression's :class:`~cuzk.r1cs.bitprog.BitProgram` (inputs: bits), or a
Poseidon hash (:mod:`cuzk.gadgets.poseidon.program`; inputs: the preimage as field elements).
A backend runs a program by its kernel's name and never needs to know its class. Each group
stores its instances' inputs as one array.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from cuzk.errors import InternalError
from cuzk.field import fr


class Program(Protocol):
    """A recorded computation whose runs a backend makes: equal ``key``, equal program (runs
    group by it; a device remembers per key whether it was checked). Kept picklable and small:
    groups travel from the synthesis processes."""

    @property
    def key(self) -> bytes: ...

    @property
    def n_aux(self) -> int:
        """Values one run makes."""
        ...

    def expand(self, inputs: np.ndarray, starts: np.ndarray, out: fr.FrVec) -> None:
        """Instance i's values (from ``inputs[i]``) as Montgomery elements at
        ``out[starts[i]:starts[i] + n_aux]``: the CPU model every device kernel is checked
        against."""
        ...

    @property
    def kernel(self) -> str:
        """The name of the device kernel that makes the runs (a backend without it makes them
        with :meth:`expand`)."""
        ...

    def tables(self) -> tuple[np.ndarray | np.generic, ...]:
        """What :attr:`kernel` reads besides the runs, in its argument order: arrays (a device
        uploads them once per key) and scalars."""
        ...


@dataclass(frozen=True, eq=False)
class RunGroup:
    """The runs of one program: instance i's values go to aux ``starts[i]`` onwards."""

    program: Program
    starts: np.ndarray  # (m,) int64, global aux indices
    inputs: np.ndarray  # (m, …) instance inputs, the program's layout (bits, field elements)

    @property
    def values(self) -> int:
        return len(self.starts) * self.program.n_aux


@dataclass(frozen=True, eq=False)
class DeferredAux:
    """``n`` aux values: ``host`` (Montgomery, in order) fills every position no run covers."""

    n: int
    host: fr.FrVec
    groups: tuple[RunGroup, ...]

    def __len__(self) -> int:
        return self.n

    @property
    def deferred(self) -> int:
        """Values the runs make (``n − len(host)``)."""
        return sum(g.values for g in self.groups)

    def segments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(dst, src, length) int64 arrays: host[src:src+length] goes to aux[dst:dst+length]."""
        starts = np.concatenate([g.starts for g in self.groups]) if self.groups else np.zeros(0)
        lengths = (
            np.concatenate([np.full(len(g.starts), g.program.n_aux, np.int64) for g in self.groups])
            if self.groups
            else np.zeros(0, np.int64)
        )
        order = np.argsort(starts, kind="stable")
        starts = starts[order].astype(np.int64)
        lengths = lengths[order]
        ends = starts + lengths
        gap_dst = np.concatenate([[0], ends])
        gap_len = np.concatenate([starts, [self.n]]) - gap_dst
        if np.any(gap_len < 0):
            raise InternalError("deferred runs overlap")
        src = np.concatenate([[0], np.cumsum(gap_len)[:-1]]).astype(np.int64)
        if src[-1] + gap_len[-1] != len(self.host):
            raise InternalError(
                f"deferred aux of {self.n} values: {len(self.host)} host values, "
                f"{int(lengths.sum())} deferred"
            )
        keep = gap_len > 0
        return gap_dst[keep].astype(np.int64), src[keep], gap_len[keep].astype(np.int64)

    def expand(self, out: fr.FrVec | None = None) -> fr.FrVec:
        """The whole aux vector on the host (the CPU model of the device expansion)."""
        out = np.empty((self.n, 4), dtype=np.uint64) if out is None else out
        for dst, src, length in zip(*self.segments(), strict=True):
            out[dst : dst + length] = self.host[src : src + length]
        for g in self.groups:
            g.program.expand(g.inputs, g.starts, out)
        return out

    def _split(self, offset: int) -> tuple[int, list[RunGroup], list[RunGroup]]:
        """(host values before ``offset``, runs before it, runs from it on); no run may
        straddle ``offset``."""
        before, after = [], []
        deferred_before = 0
        for g in self.groups:
            first = g.starts < offset
            if np.any(first & (g.starts + g.program.n_aux > offset)):
                raise InternalError(f"a deferred run straddles aux {offset}")
            before.append(RunGroup(g.program, g.starts[first], g.inputs[first]))
            after.append(RunGroup(g.program, g.starts[~first], g.inputs[~first]))
            deferred_before += int(first.sum()) * g.program.n_aux
        return offset - deferred_before, before, after

    def head(self, offset: int) -> DeferredAux:
        """Positions before ``offset`` (a block view's header)."""
        hosts, before, _ = self._split(offset)
        groups = tuple(g for g in before if len(g.starts))
        return DeferredAux(offset, self.host[:hosts], groups)

    def tail(self, offset: int) -> DeferredAux:
        """Positions ``offset`` onwards (a block view without its header), renumbered from 0."""
        hosts, _, after = self._split(offset)
        groups = tuple(
            RunGroup(g.program, g.starts - offset, g.inputs) for g in after if len(g.starts)
        )
        return DeferredAux(self.n - offset, self.host[hosts:], groups)


def _join(vectors: Sequence[fr.FrVec]) -> fr.FrVec:
    """One vector of the host values, each copied once by numba threads without the GIL (a
    WindowPoSt partition's 2,349 sector views are 4 GB; ``np.concatenate`` copies them on one
    core while holding the GIL the device workers need)."""
    out = np.empty((sum(len(v) for v in vectors), 4), dtype=np.uint64)
    at = 0
    for v in vectors:
        if len(v):
            fr.take_into(v, None, out, at)
        at += len(v)
    return out


def concat(parts: Sequence[fr.FrVec | DeferredAux]) -> fr.FrVec | DeferredAux:
    """Aux vectors one after the other (plain vectors when none has runs)."""
    plain = [p for p in parts if not isinstance(p, DeferredAux)]
    if len(plain) == len(parts):
        return _join(plain)
    hosts: list[fr.FrVec] = []
    shifted: list[RunGroup] = []
    at = 0
    for p in parts:
        if isinstance(p, DeferredAux):
            hosts.append(p.host)
            shifted += [RunGroup(g.program, g.starts + at, g.inputs) for g in p.groups]
        else:
            hosts.append(p)
        at += len(p)
    return DeferredAux(at, _join(hosts), _by_program(shifted))


def merge_groups(aux: DeferredAux, more: Sequence[RunGroup]) -> DeferredAux:
    """``aux`` with the runs of ``more`` (numbered in ``aux``'s positions) added."""
    return DeferredAux(aux.n, aux.host, _by_program([*aux.groups, *more]))


def _by_program(groups: Sequence[RunGroup]) -> tuple[RunGroup, ...]:
    """One group per program (runs of equal key joined, in the order given)."""
    runs: dict[bytes, tuple[Program, list[RunGroup]]] = {}
    for g in groups:
        runs.setdefault(g.program.key, (g.program, []))[1].append(g)
    return tuple(_joined(prog, gs) for prog, gs in runs.values())


def _joined(program: Program, groups: Sequence[RunGroup]) -> RunGroup:
    if len(groups) == 1:
        return groups[0]
    starts = np.concatenate([g.starts for g in groups])
    return RunGroup(program, starts, np.concatenate([g.inputs for g in groups]))


def group_runs(
    n: int, host: fr.FrVec, runs: Sequence[tuple[Program, int, bytes | np.ndarray]]
) -> DeferredAux:
    """A DeferredAux from runs in the order they were recorded: (program, start, inputs),
    inputs as an array in the program's layout or as bytes (bits, one per byte)."""
    by_key: dict[bytes, tuple[Program, list[int], list]] = {}
    for program, start, inputs in runs:
        entry = by_key.setdefault(program.key, (program, [], []))
        entry[1].append(start)
        entry[2].append(np.frombuffer(inputs, np.uint8) if isinstance(inputs, bytes) else inputs)
    groups = tuple(
        RunGroup(p, np.array(starts, dtype=np.int64), np.stack(inputs))
        for p, starts, inputs in by_key.values()
    )
    return DeferredAux(n, host, groups)
