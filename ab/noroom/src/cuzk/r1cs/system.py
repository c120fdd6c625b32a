"""The circuit builder API and its three modes.

A circuit is written once against :class:`ConstraintSystem` and run in one of three modes:

* :class:`WitnessCS` computes values only. ``enforce`` does nothing and linear combinations passed
  as functions are never built, so proving-time synthesis costs one list append per variable.
* :class:`ShapeCS` records A, B and C once per circuit type (the pre-compiled constraint system,
  :class:`~cuzk.r1cs.shape.R1CSShape`); values are never asked for.
* :class:`CheckCS` evaluates every constraint as it is enforced and remembers the first one that
  fails, with its full namespaced name.

Gadgets ask a system its :class:`Mode` (:func:`witness_mode`, :func:`shape_mode`), never its
class: the mode says which fast paths it takes, and so stays true of systems written elsewhere.

Conventions follow bellperson: input 0 is ONE, allocated before the circuit runs, and after
synthesis the shape gets one ``input_i · 0 = 0`` row per input (added by :meth:`ShapeCS.finish`).
"""

from __future__ import annotations

import gc
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar, Protocol, TypeGuard, runtime_checkable

import numpy as np

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.r1cs.deferred import DeferredAux, Program, RunGroup, group_runs, merge_groups
from cuzk.r1cs.lc import LcSpec, LinearCombination, Variable, resolve
from cuzk.r1cs.memo import PROCESS_CACHE, SynthesisCache
from cuzk.r1cs.names import NameBuilder, PrefixedNames
from cuzk.r1cs.rows import MatrixBuilder, Rows
from cuzk.r1cs.shape import R1CSShape


class NameFn(Protocol):
    """A function producing a name, so hot loops needn't format strings no mode will read. A
    protocol rather than a ``Callable``, so that ``lambda i=i: ...`` (a loop value bound as a
    default) fits."""

    def __call__(self) -> str: ...


class ValueFn(Protocol):
    """A function computing a value (not called in shape mode); a protocol as :class:`NameFn`."""

    def __call__(self) -> int: ...


NameSpec = str | NameFn
"""A name, or a function producing it."""

ValueSpec = int | ValueFn | None
"""A value, a function computing it, or None (shape mode)."""


class Circuit(Protocol):
    """Anything that can describe itself to a constraint system."""

    def synthesize(self, cs: ConstraintSystem) -> None: ...


@runtime_checkable
class BulkWitness(Protocol):
    """A circuit that can also produce its witness without a constraint system.

    Witness mode runs every gadget in Python, one variable at a time; a circuit whose values
    follow from a few bulk computations (hashes in numpy, a field chain) can hand the prover
    the vectors directly. It must give exactly what witness mode gives — tests compare the two.
    """

    def synthesize(self, cs: ConstraintSystem) -> None: ...

    def assignment(self) -> tuple[list[int], np.ndarray]:
        """(inputs with ONE first, canonical ints; aux as an (n, 4) Montgomery Fr vector)."""
        ...


@dataclass(frozen=True)
class SynthesisOptions:
    """Which native paths the gadgets may take in one constraint system.

    Some gadgets can append exactly what their per-constraint Python would, computed natively:
    SHA-256 compressions replayed from recorded tapes (witness mode,
    :mod:`cuzk.gadgets.sha256.tape`) and templates (shape mode,
    :mod:`cuzk.gadgets.sha256.template`), Poseidon hashes from a numba kernel (witness mode,
    :mod:`cuzk.gadgets.poseidon.witness`). The choice travels with the system, so each
    synthesis states it and none depends on a module-level switch flipped elsewhere.

    Turning a path off runs the Python gadget: the reference the native paths are tested
    against, and the baseline of measurements. ``verify_first_use`` compares each recording
    (a SHA-256 pattern, a Poseidon arity) with the Python gadget on its first use in the
    process and never uses one that disagrees; tests that check the native path on its own turn
    it off. Recordings are kept in the system's :class:`~cuzk.r1cs.memo.SynthesisCache`,
    including those accepted unverified.
    """

    sha256_tapes: bool = True
    poseidon_kernel: bool = True
    verify_first_use: bool = True
    #: Shape mode: repeated blocks replayed by offset after three (:mod:`cuzk.r1cs.repeat`).
    replay_blocks: bool = True
    #: Witness mode: leave the values of replayed bit programs (SHA-256 compressions) to the
    #: backend, recording only where they go and their inputs (:mod:`cuzk.r1cs.deferred`).
    defer_bit_programs: bool = False
    #: Witness mode: likewise for Poseidon hashes made by the kernel, once their (arity,
    #: strength) passed the first-use check in this process (:mod:`cuzk.gadgets.poseidon.witness`).
    defer_poseidon: bool = False


#: Every native path on, first uses verified: what production synthesis runs.
DEFAULT_OPTIONS = SynthesisOptions()
#: Every gadget through its per-constraint Python: the reference path.
PYTHON_GADGETS = SynthesisOptions(sha256_tapes=False, poseidon_kernel=False, replay_blocks=False)


#: The namespace of a system that keeps no names: reusable, and no generator per call.
NO_NAMESPACE: AbstractContextManager[None] = nullcontext()


class Mode(Enum):
    """Which fast paths a constraint system takes besides ``alloc`` and ``enforce``."""

    #: Values only (:class:`WitnessCS`): gadgets may push values straight
    #: (:meth:`WitnessCS.push`), defer them, and leave out constraints and names.
    WITNESS = "witness"
    #: Rows only (:class:`ShapeCS`): gadgets may append recorded rows whole
    #: (:meth:`ShapeCS.append_rows`) and replay repeated blocks.
    SHAPE = "shape"
    #: Every variable and constraint through ``alloc`` and ``enforce`` (checking, counting).
    GENERAL = "general"


class ConstraintSystem(ABC):
    """The builder every circuit and gadget writes against."""

    #: The fast paths this class takes. A subclass that does not state its own is
    #: :attr:`Mode.GENERAL`: it may change what ``alloc`` or ``enforce`` do, which the fast
    #: paths bypass (a counting ShapeCS must see every row).
    mode: ClassVar[Mode] = Mode.GENERAL
    #: False in shape mode: gadgets may skip computing values nobody reads.
    needs_values: ClassVar[bool] = True
    #: False in witness mode: gadgets may skip building linear combinations nobody reads.
    needs_constraints: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "mode" not in cls.__dict__:
            cls.mode = Mode.GENERAL

    def __init__(
        self, options: SynthesisOptions = DEFAULT_OPTIONS, cache: SynthesisCache = PROCESS_CACHE
    ) -> None:
        self._path: list[str] = []
        self.options = options
        #: What the native paths learned: they record into it and replay from it.
        self.cache = cache

    @abstractmethod
    def alloc(self, name: NameSpec, value: ValueSpec) -> Variable:
        """A new private (auxiliary) variable."""

    @abstractmethod
    def alloc_input(self, name: NameSpec, value: ValueSpec) -> Variable:
        """A new public input (its value becomes part of the statement)."""

    @abstractmethod
    def enforce(self, name: NameSpec, a: LcSpec, b: LcSpec, c: LcSpec) -> None:
        """Require ⟨a, z⟩ · ⟨b, z⟩ = ⟨c, z⟩."""

    def namespace(self, name: NameSpec) -> AbstractContextManager[None]:
        """Prefix the names of everything allocated or enforced inside with ``name/``
        (systems that keep no names return :data:`NO_NAMESPACE`)."""
        return self._named(name)

    @contextmanager
    def _named(self, name: NameSpec) -> Iterator[None]:
        self._path.append(name if isinstance(name, str) else name())
        try:
            yield
        finally:
            self._path.pop()

    def _full_name(self, name: NameSpec) -> str:
        leaf = name if isinstance(name, str) else name()
        return "/".join([*self._path, leaf]) if self._path else leaf


def _value(name: NameSpec, value: ValueSpec) -> int:
    if value is None:
        leaf = name if isinstance(name, str) else name()
        raise BadInput(f"variable {leaf!r} has no value (witness mode needs every value)")
    v = value() if callable(value) else value
    return v % R


# Bound once: an Enum member lookup costs more than the rest of a bit gadget's witness path.
_WITNESS = Mode.WITNESS
_SHAPE = Mode.SHAPE


def witness_mode(cs: ConstraintSystem) -> TypeGuard[WitnessCS]:
    """Whether ``cs`` takes :attr:`Mode.WITNESS`'s fast paths."""
    return cs.mode is _WITNESS


def shape_mode(cs: ConstraintSystem) -> TypeGuard[ShapeCS]:
    """Whether ``cs`` takes :attr:`Mode.SHAPE`'s fast paths."""
    return cs.mode is _SHAPE


class WitnessCS(ConstraintSystem):
    """Values only: the proving-time mode.

    ``aux`` holds the values computed here as Python ints, in order. Two kinds of values live
    elsewhere: runs only recorded for the backend (:meth:`defer`, with
    ``options.defer_bit_programs`` or ``options.defer_poseidon``) and runs a native gadget made
    already in Montgomery form (:meth:`extend_mont`: no round trip through Python ints, which
    cost more than the Poseidon kernel itself). Aux variable k is ``aux[k - gap]`` where
    ``gap`` counts the values of either kind before it; :attr:`num_aux` is the next index and
    :meth:`aux_vector` the result either way.
    """

    mode = Mode.WITNESS
    needs_constraints = False

    def __init__(
        self, options: SynthesisOptions = DEFAULT_OPTIONS, cache: SynthesisCache = PROCESS_CACHE
    ) -> None:
        super().__init__(options, cache)
        self.inputs: list[int] = [1]
        self.aux: list[int] = []
        self.gap = 0
        self._runs: list[tuple[Program, int, bytes | np.ndarray]] = []
        self._chunks: list[tuple[int, fr.FrVec]] = []  # (len(aux) when added, values)
        self._mont = 0  # values in _chunks
        self._groups: list[RunGroup] = []  # runs appended already grouped (extend_deferred)

    @property
    def num_aux(self) -> int:
        return len(self.aux) + self.gap

    def alloc(self, name: NameSpec, value: ValueSpec) -> Variable:
        self.aux.append(_value(name, value))
        return Variable(len(self.aux) - 1 + self.gap)

    def push(self, value: int) -> Variable:
        """:meth:`alloc` of a canonical value (0 ≤ value < R) with no name: a gadget's hot path
        (a bit costs one append)."""
        aux = self.aux
        aux.append(value)
        return Variable(len(aux) - 1 + self.gap)

    def push_all(self, values: Iterable[int]) -> int:
        """:meth:`push` of each canonical value in turn, in one extend; returns the first
        one's variable key."""
        start = len(self.aux) + self.gap
        self.aux.extend(values)
        return start

    def defer(self, program: Program, inputs: bytes | np.ndarray) -> int:
        """Reserve ``program.n_aux`` variables whose values the program makes from ``inputs``
        later (an array in the program's layout, or bits as bytes); returns the first one's
        index."""
        start = self.num_aux
        self.gap += program.n_aux
        self._runs.append((program, start, inputs))
        return start

    def extend_mont(self, values: fr.FrVec) -> None:
        """Append ``values`` (an (m, 4) Montgomery vector the caller no longer changes) as the
        next m aux variables."""
        self._chunks.append((len(self.aux), values))
        self.gap += len(values)
        self._mont += len(values)

    def extend_deferred(self, block: DeferredAux) -> None:
        """Append ``block`` (values made in bulk by a circuit that knows its own layout, runs
        numbered from 0) as the next ``len(block)`` aux variables."""
        base = self.num_aux
        if len(block.host):
            self.extend_mont(block.host)
        self.gap += len(block) - len(block.host)
        self._groups.extend(RunGroup(g.program, g.starts + base, g.inputs) for g in block.groups)

    @property
    def host_len(self) -> int:
        """How many values :meth:`aux_vector` holds on the host (all but the deferred)."""
        return len(self.aux) + self._mont

    def prefix(self) -> WitnessPrefix:
        """Everything synthesized so far, for :meth:`replay_prefix` into another fresh system
        (a block circuit's header, which every view of a partition repeats)."""
        if self._groups:
            raise ValueError("a prefix cannot hold runs appended in bulk")
        return WitnessPrefix(
            tuple(self.inputs), self._host(None), tuple(self._runs), self.num_aux, self.options
        )

    def replay_prefix(self, prefix: WitnessPrefix) -> None:
        """Append ``prefix`` to this fresh system: the values and runs synthesizing its part
        again would append, at the same indices."""
        if self.num_aux or len(self.inputs) != 1 or prefix.options != self.options:
            raise ValueError("a prefix replays into a fresh system with the same options only")
        self.inputs[:] = prefix.inputs
        self.extend_mont(prefix.host)
        self._runs.extend(prefix.runs)
        self.gap += prefix.num_aux - len(prefix.host)
        assert self.num_aux == prefix.num_aux

    def aux_ints(self) -> list[int]:
        """Every aux value as a canonical int, in order (tests and small circuits: it converts
        back what :meth:`extend_mont` kept as field elements).

        Raises:
            ValueError: some values are deferred (they do not exist on the host).
        """
        if self._runs or self._groups:
            raise ValueError("deferred values have no ints on the host (use aux_vector)")
        return fr.to_ints(self._host(None)) if self._chunks else list(self.aux)

    def aux_vector(self, out: fr.FrVec | None = None) -> fr.FrVec | DeferredAux:
        """The aux values as a Montgomery vector, or with the deferred runs still to make.
        ``out``: an (:attr:`host_len`, 4) uint64 array to hold the host values (a worker's
        shared memory), so they are written once."""
        host = self._host(out)
        if not (self._runs or self._groups):
            return host
        made = group_runs(self.num_aux, host, self._runs)
        return made if not self._groups else merge_groups(made, self._groups)

    def _host(self, out: fr.FrVec | None) -> fr.FrVec:
        if out is not None and out.shape != (self.host_len, 4):
            raise ValueError(f"out must be ({self.host_len}, 4), got {out.shape}")
        if not self._chunks and out is None:
            return fr.from_ints(self.aux)
        out = np.empty((self.host_len, 4), dtype=np.uint64) if out is None else out
        ints = fr.from_ints(self.aux) if self.aux else out[:0]
        at = done = 0  # next row of out; ints placed so far
        for pos, chunk in self._chunks:
            out[at : at + pos - done] = ints[done:pos]
            at += pos - done
            out[at : at + len(chunk)] = chunk
            at += len(chunk)
            done = pos
        out[at:] = ints[done:]
        return out

    def alloc_input(self, name: NameSpec, value: ValueSpec) -> Variable:
        self.inputs.append(_value(name, value))
        return Variable(~(len(self.inputs) - 1))

    def enforce(self, name: NameSpec, a: LcSpec, b: LcSpec, c: LcSpec) -> None:
        pass

    def namespace(self, name: NameSpec) -> AbstractContextManager[None]:
        return NO_NAMESPACE


@dataclass(frozen=True, eq=False)
class WitnessPrefix:
    """The start of a witness (:meth:`WitnessCS.prefix`): inputs, host values, deferred runs."""

    inputs: tuple[int, ...]  # ONE first
    host: fr.FrVec  # Montgomery, every value not deferred
    runs: tuple[tuple[Program, int, bytes | np.ndarray], ...]
    num_aux: int
    options: SynthesisOptions


class CheckCS(ConstraintSystem):
    """Evaluates each constraint on the spot; names the first unsatisfied one."""

    def __init__(
        self, options: SynthesisOptions = DEFAULT_OPTIONS, cache: SynthesisCache = PROCESS_CACHE
    ) -> None:
        super().__init__(options, cache)
        self.inputs: list[int] = [1]
        self.aux: list[int] = []
        self.num_constraints = 0
        self.first_failure: tuple[int, str] | None = None

    def alloc(self, name: NameSpec, value: ValueSpec) -> Variable:
        self.aux.append(_value(name, value))
        return Variable(len(self.aux) - 1)

    def alloc_input(self, name: NameSpec, value: ValueSpec) -> Variable:
        self.inputs.append(_value(name, value))
        return Variable(~(len(self.inputs) - 1))

    def _eval(self, lc: LinearCombination) -> int:
        inputs, aux = self.inputs, self.aux
        return sum(c * (inputs[~k] if k < 0 else aux[k]) for k, c in lc.terms.items()) % R

    def enforce(self, name: NameSpec, a: LcSpec, b: LcSpec, c: LcSpec) -> None:
        index = self.num_constraints
        self.num_constraints += 1
        if self.first_failure is not None:
            return
        av, bv, cv = self._eval(resolve(a)), self._eval(resolve(b)), self._eval(resolve(c))
        if av * bv % R != cv:
            self.first_failure = (index, self._full_name(name))

    def is_satisfied(self) -> bool:
        return self.first_failure is None


class ShapeCS(ConstraintSystem):
    """Records A, B, C row by row; :meth:`finish` turns them into an :class:`R1CSShape`.

    Rows go straight into the compact layout (:mod:`cuzk.r1cs.rows`) and names into
    (prefix, leaf) ids (:mod:`cuzk.r1cs.names`), so memory stays ~50 bytes per constraint at
    any size. ``names`` reads as a sequence of strings."""

    mode = Mode.SHAPE
    needs_values = False

    def __init__(
        self, options: SynthesisOptions = DEFAULT_OPTIONS, cache: SynthesisCache = PROCESS_CACHE
    ) -> None:
        super().__init__(options, cache)
        self.num_inputs = 1
        self.num_aux = 0
        self._rows = MatrixBuilder()
        self.names = NameBuilder()
        self._prefix: int | None = None  # prefix id of the current namespace path, once used

    @property
    def num_constraints(self) -> int:
        return self._rows.num_rows

    def alloc(self, name: NameSpec, value: ValueSpec) -> Variable:
        self.num_aux += 1
        return Variable(self.num_aux - 1)

    def alloc_input(self, name: NameSpec, value: ValueSpec) -> Variable:
        self.num_inputs += 1
        return Variable(~(self.num_inputs - 1))

    @contextmanager
    def namespace(self, name: NameSpec) -> Iterator[None]:
        self._prefix = None
        try:
            with super().namespace(name):
                yield
        finally:
            self._prefix = None

    def _prefix_id(self) -> int:
        pid = self._prefix
        if pid is None:
            path = self._path
            pid = self._prefix = self.names.prefix_id("/".join(path) + "/" if path else "")
        return pid

    def enforce(self, name: NameSpec, a: LcSpec, b: LcSpec, c: LcSpec) -> None:
        self._rows.add(resolve(a).terms, resolve(b).terms, resolve(c).terms)
        self.names.add(self._prefix_id(), name if isinstance(name, str) else name())

    def rows_from(self, row: int) -> tuple[Rows, Rows, Rows]:
        """The rows from ``row`` on, per matrix as (row ends relative to the first of them,
        keys, coefficients): what a gadget appended, for recording and checking replays."""
        return self._rows.rows_from(row)

    def append_rows(
        self,
        rows: tuple[tuple[np.ndarray, np.ndarray | list[int], list[int]], ...],
        names: PrefixedNames,
        num_aux: int,
    ) -> None:
        """Append whole rows at once (what ``enforce`` would have appended one at a time, in
        :meth:`rows_from`'s layout, keys as an array or list) and ``num_aux`` new variables:
        replayed gadgets (:mod:`cuzk.gadgets.sha256.template`) skip the per-constraint
        Python."""
        self._rows.extend(rows)
        self.names.extend(names)
        self.num_aux += num_aux

    def finish(self, circuit_id: str = "") -> R1CSShape:
        """Append bellperson's ``input_i · 0 = 0`` rows and freeze the matrices."""
        for i in range(self.num_inputs):
            self.enforce(f"input {i} constraint", Variable(~i), 0, 0)
        a, b, c = self._rows.finish(self.num_inputs, self.num_aux)
        return R1CSShape(
            circuit_id, self.num_inputs, self.num_aux, a, b, c, names=self.names.finish()
        )


def synthesize_shape(
    circuit: Circuit,
    circuit_id: str = "",
    options: SynthesisOptions = DEFAULT_OPTIONS,
    cache: SynthesisCache = PROCESS_CACHE,
) -> R1CSShape:
    """Run ``circuit`` in shape mode and return its pre-compiled constraint system."""
    cs = ShapeCS(options, cache)
    circuit.synthesize(cs)
    return cs.finish(circuit_id)


_gc_lock = threading.Lock()
_gc_users = 0  # witness syntheses running in this process
_gc_was_enabled = False
_gc_ended = 0  # syntheses ended since the collector was last on or last ran
#: Syntheses that may end under one unbroken pause (overlapping threads that keep the count
#: above zero) before the one ending runs a full collection anyway: a busy engine's pause
#: would otherwise never end, and cyclic garbage would grow for the life of the daemon.
GC_EVERY_SYNTHESES = 16


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a witness is synthesized.

    Witness mode creates and drops millions of small, acyclic objects (bits, words, numbers);
    each batch of them triggers a collection, and the older collections walk every object the
    process holds (the request's proofs, earlier bits), which took about half of a PoRep
    partition's host CPU. Reference counting still frees those objects at once; only cyclic
    garbage waits until the last synthesis in the process ends (counted across threads, so
    concurrent syntheses do not turn it back on under each other), or, while they overlap
    without a break, until :data:`GC_EVERY_SYNTHESES` of them have ended.
    """
    global _gc_users, _gc_was_enabled, _gc_ended
    with _gc_lock:
        if _gc_users == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_users += 1
    try:
        yield
    finally:
        collect = False
        with _gc_lock:
            _gc_users -= 1
            if _gc_users == 0:
                _gc_ended = 0
                if _gc_was_enabled:
                    gc.enable()
            else:
                _gc_ended += 1
                if _gc_ended >= GC_EVERY_SYNTHESES:
                    _gc_ended = 0
                    collect = _gc_was_enabled  # a caller that had it off keeps it off
        if collect:
            gc.collect()


def synthesize_witness(
    circuit: Circuit,
    options: SynthesisOptions = DEFAULT_OPTIONS,
    cache: SynthesisCache = PROCESS_CACHE,
) -> WitnessCS:
    """Run ``circuit`` in witness mode; the result holds ``inputs`` (ONE first) and ``aux``."""
    cs = WitnessCS(options, cache)
    with gc_paused():
        circuit.synthesize(cs)
    return cs


def check_circuit(circuit: Circuit) -> CheckCS:
    """Run ``circuit`` evaluating every constraint; see ``first_failure``."""
    cs = CheckCS()
    circuit.synthesize(cs)
    return cs
