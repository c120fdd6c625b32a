"""Repeated blocks of a circuit, synthesized a few times and replayed by offset in shape mode.

A 32 GiB PoRep partition is 18 challenges of ~7.2M constraints each, a WindowPoSt partition
2,349 sectors of ~53,000: blocks with the same structure whose variables sit at regular
offsets. Running every block through Python makes shape synthesis of 130M constraints take
most of an hour on one core; running three and appending the rest from arrays takes minutes.

:func:`repeat` is the loop a circuit writes instead of ``for i in range(count): with
cs.namespace(name(i)): body(i)``. In every mode but shape mode it is exactly that loop. In shape
mode (:class:`~cuzk.r1cs.system.ShapeCS`, at least :data:`MIN_BLOCKS` blocks) blocks 0, 1 and 2
run, and the rest are appended from block 0 when the three agree that the structure is
*affine in the block index*:

* the same number of rows, entries per row, coefficients and new variables (aux and inputs);
* every entry's variable key moves by a fixed step per block (block 2's is block 0's plus twice
  the step from block 0 to 1): the block's own variables move by the block's size, shared ones
  (replica_id's bits, the roots) stay, per-block slices of earlier variables move by their
  stride; keys never change kind (input ↔ aux);
* every row's name is the block's namespace path plus the same remainder (checked between
  blocks 1 and 2: block 0 may split the same names differently, having run SHA-256 through
  the gadget where later blocks replay its template).

Block k is then block 1 with keys + (k − 1)·step and names under block k's namespace. Three
blocks pin the affine law; that later blocks follow it is the caller's promise, which is why
:func:`repeat` is only for loops whose body's structure does not depend on the index (no
index-dependent constants or branches) and whose only effect is on ``cs`` — the replayed
bodies never run. A disagreement is logged and every block runs, as with
``SynthesisOptions(replay_blocks=False)`` (the reference the replay is tested against).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from cuzk.r1cs.system import ConstraintSystem, ShapeCS, shape_mode

log = logging.getLogger(__name__)

#: Fewer blocks than this simply run (three run anyway to check the law).
MIN_BLOCKS = 4


@dataclass(frozen=True)
class _Mark:
    rows: int
    aux: int
    inputs: int
    entries: tuple[int, int, int]


@dataclass
class _Block:
    mats: list[tuple[np.ndarray, np.ndarray, np.ndarray]]  # per matrix: lens, keys, ids
    prefix_ids: np.ndarray
    leaf_ids: np.ndarray
    aux: int
    inputs: int


def repeat(
    cs: ConstraintSystem, count: int, name: Callable[[int], str], body: Callable[[int], None]
) -> None:
    """``body(i)`` under namespace ``name(i)`` for i < count (see the module docstring)."""
    if not shape_mode(cs) or not cs.options.replay_blocks or count < MIN_BLOCKS:
        for i in range(count):
            with cs.namespace(partial(name, i)):
                body(i)
        return
    _replay(cs, count, name, body)


def _mark(cs: ShapeCS) -> _Mark:
    return _Mark(cs.num_constraints, cs.num_aux, cs.num_inputs, cs._rows.entries())


def _run(cs: ShapeCS, name: Callable[[int], str], body: Callable[[int], None], i: int) -> None:
    with cs.namespace(partial(name, i)):
        body(i)


def _block(cs: ShapeCS, a: _Mark, b: _Mark) -> _Block:
    entries = tuple(zip(a.entries, b.entries, strict=True))
    pids, lids = cs.names.ids(a.rows, b.rows)
    return _Block(
        cs._rows.block((a.rows, b.rows), entries), pids, lids, b.aux - a.aux, b.inputs - a.inputs
    )


def _replay(
    cs: ShapeCS, count: int, name: Callable[[int], str], body: Callable[[int], None]
) -> None:
    marks = [_mark(cs)]
    for i in range(3):
        _run(cs, name, body, i)
        marks.append(_mark(cs))
    blocks = [_block(cs, marks[i], marks[i + 1]) for i in range(3)]
    path = "/".join(cs._path) + "/" if cs._path else ""
    prefixes = [path + name(i) + "/" for i in range(3)]
    try:
        steps, remainders, inverse = _affine_law(cs, blocks, prefixes)
    except _NotAffine as e:
        log.warning("repeated blocks under %r are not affine (%s): every block runs",
                    prefixes[0], e)  # fmt: skip
        for i in range(3, count):
            _run(cs, name, body, i)
        return
    b1 = blocks[1]
    keys = [k.astype(np.int64) for _, k, _ in b1.mats]
    for k in range(3, count):
        mats = []
        for (lens, _, ids), keys1, step in zip(b1.mats, keys, steps, strict=True):
            mats.append((lens, keys1 + (k - 1) * step, ids))
        cs._rows.extend_block(mats)
        head = path + name(k) + "/"
        pid_of = np.array([cs.names.prefix_id(head + r) for r in remainders], dtype=np.uint64)
        cs.names.extend_ids(pid_of[inverse], b1.leaf_ids)
        cs.num_aux += b1.aux
        cs.num_inputs += b1.inputs


class _NotAffine(Exception):
    """Why three blocks do not follow one law."""


def _affine_law(
    cs: ShapeCS, blocks: list[_Block], prefixes: list[str]
) -> tuple[list[np.ndarray], list[str], np.ndarray]:
    """(per-matrix key steps, name remainders of block 1's distinct prefixes, each row's
    index into them).

    Raises:
        _NotAffine: the three blocks do not follow one law.
    """
    b0, b1, b2 = blocks

    if any((b.aux, b.inputs) != (b0.aux, b0.inputs) for b in blocks):
        raise _NotAffine("different variable counts")
    steps = []
    for m in range(3):
        (l0, k0, i0), (l1, k1, i1), (l2, k2, i2) = (b.mats[m] for b in blocks)
        if not (np.array_equal(l0, l1) and np.array_equal(l0, l2)):
            raise _NotAffine("different rows")
        if not (np.array_equal(i0, i1) and np.array_equal(i0, i2)):
            raise _NotAffine("different coefficients")
        k0, k1, k2 = (k.astype(np.int64) for k in (k0, k1, k2))
        step = k1 - k0
        if not np.array_equal(k2, k1 + step):
            raise _NotAffine("variables not at regular offsets")
        aux = k0 >= 0
        if np.any(aux != (k2 >= 0)) or np.any(step[aux] < 0) or np.any(step[~aux] > 0):
            raise _NotAffine("a variable changes kind or moves backwards")
        steps.append(step)
    if not np.array_equal(b1.leaf_ids, b2.leaf_ids):
        raise _NotAffine("different names")
    table = cs.names.prefix_table()
    uniq, inverse = np.unique(b1.prefix_ids, return_inverse=True)
    remainders = []
    for u in uniq.tolist():
        p = table[u]
        if not p.startswith(prefixes[1]):
            raise _NotAffine(f"a row named outside the block's namespace ({p!r})")
        remainders.append(p[len(prefixes[1]) :])
    inverse = inverse.reshape(-1)
    pairs = np.unique((inverse.astype(np.uint64) << np.uint64(32)) | b2.prefix_ids)
    for pair in pairs.tolist():
        if table[pair & 0xFFFFFFFF] != prefixes[2] + remainders[pair >> 32]:
            raise _NotAffine("different names")
    return steps, remainders, inverse
