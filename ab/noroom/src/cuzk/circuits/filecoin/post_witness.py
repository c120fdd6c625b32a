"""A PoSt partition's witness made in bulk from one template per tree shape.

Witness mode walks a sector's gadgets in Python: for a 32 GiB WindowPoSt sector (10 challenges
× 10 levels of insertion and Poseidon) that is ≈ 40 ms of a core, ≈ 100 core-s for a full
partition of 2,349 sectors, most of a full partition's host time. Yet with Poseidon deferred
(:mod:`cuzk.r1cs.deferred`), every value those gadgets append is one of the sector's own values
(comm_c, comm_r_last, comm_r, a leaf, a sibling, the digest a path reaches at a level) or a
constant (index bits, the insertion's selections), and which one depends only on that level's
position among its siblings; each Poseidon run's preimage likewise.

So the gadgets run once per position on a probe sector of random values, and each value they
append is looked up in the probe's table of values: per gap between two runs and per position,
the table column of every value. A partition's host values are then gathers from its own table
(numpy, all sectors at once) and its runs are grouped as the gadgets would have recorded them.
The first use in a synthesis cache is compared value for value with the gadgets (as the SHA-256
tapes and the Poseidon kernel are); a template that disagrees, or a probe whose values are not
all found, leaves the gadgets in charge.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from cuzk.circuits.filecoin.post_params import PoStParams
from cuzk.circuits.filecoin.post_sector import SectorProof, synthesize_sector
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.gadgets.merkle import MerklePath, PathBatch
from cuzk.gadgets.poseidon.native import hash_many
from cuzk.r1cs import SynthesisCache, SynthesisOptions, WitnessCS
from cuzk.r1cs.deferred import DeferredAux, Program, RunGroup, merge_groups

log = logging.getLogger(__name__)

_HEAD = 5  # table columns before the challenges: 0, 1, comm_r_last, comm_c, comm_r


@dataclass(frozen=True, eq=False)
class _Piece:
    """Host values between two runs (``program`` None) or one Poseidon run: per position of
    the level it depends on (one row where it depends on none), the table columns of its
    values or of its preimage."""

    level: int | None  # challenge · levels + level, or None
    src: np.ndarray  # (positions, length) int64
    program: Program | None = None
    start: int = 0  # a run's first aux index within the sector


@dataclass(frozen=True, eq=False)
class _Template:
    n_aux: int
    gaps: tuple[_Piece, ...]
    runs: tuple[_Piece, ...]


_Key = tuple[PoStParams, SynthesisOptions]  # one sector's parameters, the options


@dataclass
class Templates:
    """Each tree shape's template (None: none, or refused on its first use) and which passed
    their first use, in a :class:`~cuzk.r1cs.memo.SynthesisCache`."""

    learned: dict[_Key, _Template | None] = field(default_factory=dict)
    verified: set[_Key] = field(default_factory=set)


def sectors_witness(
    params: PoStParams,
    sectors: Sequence[SectorProof],
    options: SynthesisOptions,
    cache: SynthesisCache,
) -> tuple[list[int], DeferredAux] | None:
    """(the sectors' public inputs, their aux values) exactly as synthesizing each with
    :func:`synthesize_sector` in order would append them, or None where the gadgets must run
    (Poseidon not deferred, no template, a template refused on its first use). ``options``
    and ``cache``: the synthesis's own, which the probes synthesize with too."""
    if not (options.defer_poseidon and options.poseidon_kernel and sectors):
        return None
    memo = cache.memo(Templates)
    key = (dataclasses.replace(params, sector_count=1), options)
    if key not in memo.learned:
        memo.learned[key] = _learn(key[0], options, cache)
    template = memo.learned[key]
    batch = None if template is None else _paths(sectors, params)
    if template is None or batch is None:
        return None  # (paths of the wrong shape: the gadgets name the fault)
    if key not in memo.verified:
        if not _agrees(template, key[0], sectors[0], options, cache):
            log.warning("%s: the bulk PoSt witness disagrees with the gadgets; not used",
                        params.circuit_id)  # fmt: skip
            memo.learned[key] = None
            return None
        memo.verified.add(key)
    return _apply(template, params, sectors, batch)


# -- a sector's table of values ------------------------------------------------------------------


def _table(params: PoStParams, sectors: Sequence[SectorProof], batch: PathBatch) -> np.ndarray:
    """(sectors, columns, 4) Montgomery: 0, 1, comm_r_last, comm_c, comm_r, then per challenge
    its leaf and per level its siblings and the digest the path reaches there."""
    s, c = len(sectors), params.challenge_count
    widths = [a - 1 for a in params.tree.arities]
    per = 1 + sum(w + 1 for w in widths)
    table = np.zeros((s, _HEAD + c * per, 4), dtype=np.uint64)
    table[:, 1] = fr.from_int(1)
    comms = fr.from_ints([x for p in sectors for x in (p.comm_r_last, p.comm_c, p.comm_r)])
    table[:, 2:5] = comms.reshape(s, 3, 4)
    body = table[:, _HEAD:].reshape(s, c, per, 4)
    body[:, :, 0] = fr.from_canonical_limbs(batch.leaves).reshape(s, c, 4)
    at = 1
    for k, (w, digest) in enumerate(zip(widths, batch.level_digests(), strict=True)):
        sibs = fr.from_canonical_limbs(batch.siblings[k].reshape(-1, 4))
        body[:, :, at : at + w] = sibs.reshape(s, c, w, 4)
        body[:, :, at + w] = digest.reshape(s, c, 4)
        at += w + 1
    return table


def _paths(sectors: Sequence[SectorProof], params: PoStParams) -> PathBatch | None:
    """All the sectors' paths as one batch, or None unless each sector has one path per
    challenge, each with the tree's levels."""
    if any(len(p.inclusion_proofs) != params.challenge_count for p in sectors):
        return None
    try:
        batch = PathBatch.concat([p.inclusion_proofs for p in sectors])
    except BadInput:
        return None
    if [w.shape[1] + 1 for w in batch.siblings] != params.tree.arities:
        return None
    return batch


# -- learning, checking, applying ------------------------------------------------------------


def _probe(params: PoStParams, position: int, rng: np.random.Generator) -> SectorProof:
    """A sector of random values whose paths sit at ``position`` (mod each arity) everywhere."""
    arities = params.tree.arities

    def rand(n: int) -> list[int]:
        return fr.to_ints(fr.random(n, rng))

    comm_c, comm_r_last = rand(2)
    comm_r = fr.to_int(hash_many(fr.from_ints([comm_c, comm_r_last]), 2)[0])
    paths = tuple(
        MerklePath(
            rand(1)[0], [rand(a - 1) for a in arities], [position % a for a in arities], comm_r_last
        )
        for _ in range(params.challenge_count)
    )
    return SectorProof(comm_r, comm_c, comm_r_last, paths)


def _learn(
    params: PoStParams, options: SynthesisOptions, cache: SynthesisCache
) -> _Template | None:
    """The template of one sector of ``params``, or None where a probe's values do not all
    come from its table (something not deferred, a gadget that computes new values)."""
    rng = np.random.default_rng(0x9057)  # any values do; distinct ones are what matters
    runs_expected = 1 + params.challenge_count * len(params.tree.arities)
    probes: list[tuple[list[np.ndarray], list[tuple[Program, int, np.ndarray]]]] = []
    n_aux = None
    for position in [None, *range(max(params.tree.arities))]:
        sector = _probe(params, position or 0, rng)
        cs = WitnessCS(options, cache)
        synthesize_sector(cs, params, sector)
        if position is None:
            continue  # a warm-up: each arity's first hash in a cache is checked, not deferred
        runs = sorted(cs._runs, key=lambda r: r[1])  # our own system
        if len(runs) != runs_expected or n_aux not in (None, cs.num_aux):
            return None
        n_aux = cs.num_aux
        paths = _paths([sector], params)
        assert paths is not None
        if cs.inputs[1:] != [sector.comm_r, *paths.leaf_indices().tolist()]:
            return None
        index = _columns(_table(params, [sector], paths)[0])
        made = cs.aux_vector()
        if index is None or not isinstance(made, DeferredAux):
            return None
        gaps, at, end = [], 0, 0
        for program, start, _ in runs:
            gaps.append(made.host[at : at + start - end])
            at, end = at + start - end, start + program.n_aux
        gaps.append(made.host[at:])
        looked = [_lookup(index, g) for g in gaps]
        looked += [_lookup(index, np.asarray(r[2]).reshape(-1, 4)) for r in runs]
        cols = [c for c in looked if c is not None]
        if len(cols) != len(looked):
            return None
        at_runs = zip(runs, cols[len(gaps) :], strict=True)
        probes.append((cols[: len(gaps)], [(r[0], r[1], c) for r, c in at_runs]))
    assert n_aux is not None
    return _assemble(params, n_aux, probes)


def _columns(row: np.ndarray) -> dict[bytes, int] | None:
    """Value → column of one sector's table (None if two columns hold one value)."""
    index: dict[bytes, int] = {}
    for k in range(len(row)):
        index.setdefault(row[k].tobytes(), k)
    return index if len(index) == len(row) else None


def _lookup(index: dict[bytes, int], values: np.ndarray) -> np.ndarray | None:
    cols = [index.get(v.tobytes(), -1) for v in values]
    return None if -1 in cols else np.array(cols, dtype=np.int64)


def _assemble(params: PoStParams, n_aux: int, probes: list) -> _Template | None:
    """Pieces from the probes (probe p: every path at position p): a piece of level
    (challenge j, level k) takes its columns for position q from probe q; any other piece must
    read the same columns in every probe. Whatever this does not check, the first use does
    (:func:`_agrees`, on a sector with positions of its own)."""
    arities = params.tree.arities
    levels = len(arities)
    gaps_n, runs_n = len(probes[0][0]), len(probes[0][1])
    gaps, runs = [], []
    for i in range(gaps_n):
        level = i - 1 if 1 <= i <= params.challenge_count * levels else None
        cols = _per_position([p[0][i] for p in probes], level, arities, levels)
        if cols is None:
            return None
        gaps.append(_Piece(level, cols))
    for i in range(runs_n):
        level = i - 1 if i >= 1 else None
        program, start = probes[0][1][i][0], probes[0][1][i][1]
        if any(p[1][i][0].key != program.key or p[1][i][1] != start for p in probes):
            return None
        cols = _per_position([p[1][i][2] for p in probes], level, arities, levels)
        if cols is None:
            return None
        runs.append(_Piece(level, cols, program, start))
    return _Template(n_aux, tuple(gaps), tuple(runs))


def _per_position(
    cols: list[np.ndarray], level: int | None, arities: list[int], levels: int
) -> np.ndarray | None:
    if any(len(c) != len(cols[0]) for c in cols):
        return None
    if level is None:
        return cols[0][None, :] if all(np.array_equal(c, cols[0]) for c in cols) else None
    arity = arities[level % levels]
    return np.stack(cols[:arity])


def _apply(
    template: _Template, params: PoStParams, sectors: Sequence[SectorProof], batch: PathBatch
) -> tuple[list[int], DeferredAux]:
    """The sectors' inputs and values from their own table (``batch``: their paths, checked
    by :func:`_paths`)."""
    s, levels = len(sectors), len(params.tree.arities)
    table = _table(params, sectors, batch)
    positions = batch.positions.reshape(s, params.challenge_count * levels)
    rows = np.arange(s)[:, None]

    def gather(piece: _Piece) -> np.ndarray:
        cols = piece.src[0] if piece.level is None else piece.src[positions[:, piece.level]]
        return table[rows, np.broadcast_to(cols, (s, piece.src.shape[1]))]

    host = np.concatenate([gather(g) for g in template.gaps], axis=1).reshape(-1, 4)
    first = np.arange(s, dtype=np.int64) * template.n_aux
    groups = []
    for r in template.runs:
        assert r.program is not None  # every run piece has its program
        groups.append(RunGroup(r.program, first + r.start, gather(r)))
    aux = merge_groups(DeferredAux(s * template.n_aux, host, ()), groups)
    leaves = batch.leaf_indices().reshape(s, params.challenge_count).tolist()
    inputs = [x for p, ls in zip(sectors, leaves, strict=True) for x in (p.comm_r, *ls)]
    return inputs, aux


def _agrees(
    template: _Template,
    params: PoStParams,
    sector: SectorProof,
    options: SynthesisOptions,
    cache: SynthesisCache,
) -> bool:
    """Whether the template gives the gadgets' inputs and values for ``sector``."""
    batch = _paths([sector], params)
    if batch is None:
        return False
    made = _apply(template, params, [sector], batch)
    cs = WitnessCS(options, cache)
    synthesize_sector(cs, params, sector)
    want = cs.aux_vector()
    want_all = want.expand() if isinstance(want, DeferredAux) else want
    return cs.inputs[1:] == made[0] and np.array_equal(made[1].expand(), want_all)
