"""SHA-256 compressions in shape mode from recorded rows, appended in bulk.

Shape synthesis of the SHA-256 based Filecoin circuits is nearly all per-constraint Python inside
the compression gadget (~0.3 s and 25,840 rows for one compression of allocated bits). But the
rows one compression appends — their linear combinations, names and new variables — depend only
on the *pattern* of its 768 input slots (512 block bits, then the 8 state words' bits LSB
first): which are constant (and which constant), which are allocated or negated bits, and which
slots hold the same variable. Only the variables' keys, the new variables' first index and the
name prefix change from one compression to the next.

So the first compression of a pattern runs the gadget on a private :class:`ShapeCS` whose inputs
are placeholder variables, and keeps its rows as a template: every column key becomes a *code*
into a per-call table (0 is ONE, ``1 + slot`` the variable of an input slot, ``1 + 768 + j``
the template's j-th new variable); every name is a suffix after either the gadget's namespace
``ns`` or the bare path (MultiEq's flush rows are named outside ``ns``). Later compressions with
the pattern map the codes through the table (numpy), append the three matrices' rows, names and
variables at once (:meth:`ShapeCS.append_rows`) and build the output words.

Linear combinations merge terms by key, so two slots holding one variable would merge in the
gadget where distinct placeholders would not: the pattern records which slots share a variable
(each slot's first slot of the same variable) and the template is recorded with them shared too.

The template is the gadget's own output, not a second copy of its logic; what could still be
wrong is the claim that the pattern determines everything. So (with the system's
``options.verify_first_use`` on, the default) a pattern's first compression in the caller's
system runs the gadget there and compares every appended row, coefficient, name, the new
variable count and the output words with the template's replay; a pattern that disagrees is
never replayed (and logged). Templates are used only where the system's
:class:`~cuzk.r1cs.SynthesisOptions` has ``sha256_tapes`` on (the default), as witness-mode
tapes are.

Inputs the template cannot stand for run the gadget: an allocated bit or a not-fully-constant
state word carrying a value (shape mode normally has none; the gadget would propagate it into the
output words), a constant state word whose value disagrees with its bits, a slot holding ONE or a
variable this system has not allocated.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from cuzk.gadgets._names import Name
from cuzk.gadgets.boolean import FALSE, TRUE, AllocatedBit, Boolean
from cuzk.gadgets.sha256.slots import N_SLOTS, fill, input_groups
from cuzk.gadgets.uint32 import UInt32
from cuzk.r1cs import ConstraintSystem, PrefixedNames, ShapeCS, Variable

log = logging.getLogger(__name__)

#: Templates remembered at most (one is a few MB: ~140,000 terms, 26,000 names; Filecoin circuits
#: use a handful of patterns); patterns beyond it run the gadget.
MAX_TEMPLATES = 32

_NEW = 1 + N_SLOTS  # code of the first new variable
_ONE_KEY = -1
_NS = "\x00ns"  # the recording's namespace: no real name contains a NUL

Gadget = Callable[[ConstraintSystem, Sequence[Boolean], Sequence[UInt32], Name], list[UInt32]]


@dataclass
class Template:
    """One pattern's rows, names, new-variable count and outputs."""

    ends: tuple[np.ndarray, ...]  # per matrix: row ends relative to the first term
    codes: tuple[np.ndarray, ...]  # per matrix: column codes (int32)
    coeffs: tuple[list[int], ...]  # per matrix: coefficients (canonical ints)
    suffixes: list[str]  # per row: its name after the prefix
    which: np.ndarray  # uint8 per row: 1 if named under the bare path (MultiEq's), 0 if path/ns
    n_aux: int  # new variables per compression
    out: list[tuple[int, int, bool]]  # per output bit: (code, constant value, negated), code 0
    out_values: list[int | None]  # per output word: its value (None unless folded to a constant)


def _pattern(
    cs: ShapeCS, block: Sequence[Boolean], state: Sequence[UInt32]
) -> tuple[bytes, list[int], list[AllocatedBit | None]] | None:
    """(pattern key, per-slot variable keys, per-slot bits) of the 768 input slots, or None
    when the template cannot stand for these inputs (see the module docstring)."""
    codes = bytearray(N_SLOTS)
    no_values = bytearray(N_SLOTS)  # (a shape has none)
    bits: list[AllocatedBit | None] = [None] * N_SLOTS
    i = 0
    for word, group, weights in input_groups(block, state):
        wv, n_bits, n_valued = fill(group, weights, codes, no_values, bits, i)
        if n_valued or (word is not None and word.value != (None if n_bits else wv)):
            return None
        i += len(group)
    keys = [0 if ab is None else ab.variable.key for ab in bits]
    first: dict[int, int] = {}
    aliased = False
    for j, ab in enumerate(bits):
        if ab is not None and first.setdefault(keys[j], j) != j:
            aliased = True
    if _ONE_KEY in first or (first and max(first) >= cs.num_aux):
        return None
    pattern = bytes(codes)
    if aliased:
        rep = np.array([first[keys[j]] if codes[j] >= 2 else j for j in range(N_SLOTS)], np.int16)
        pattern += b"alias" + rep.tobytes()
    return pattern, keys, bits


def _placeholders(pattern: bytes) -> tuple[list[Boolean], list[UInt32], dict[int, int]]:
    """Recording inputs for ``pattern``: one placeholder variable per distinct input variable
    (aux 0, 1, … in slot order), and the map placeholder key → code."""
    rep = (
        np.frombuffer(pattern[N_SLOTS + 5 :], np.int16).tolist()
        if len(pattern) > N_SLOTS
        else list(range(N_SLOTS))
    )
    var_of: dict[int, AllocatedBit] = {}
    code_of: dict[int, int] = {}
    slots: list[Boolean] = []
    for i in range(N_SLOTS):
        c = pattern[i]
        if c < 2:
            slots.append(TRUE if c else FALSE)
            continue
        ab = var_of.get(rep[i])
        if ab is None:
            ab = var_of[rep[i]] = AllocatedBit(Variable(len(var_of)), None)
            code_of[ab.variable.key] = 1 + rep[i]
        slots.append(Boolean(ab, c == 3))
    state = []
    for j in range(8):
        word = slots[512 + 32 * j : 544 + 32 * j]
        value = None
        if all(b.bit is None for b in word):
            value = sum(int(b.constant) << k for k, b in enumerate(word))
        state.append(UInt32(word, value))
    return slots[:512], state, code_of


def record(pattern: bytes, gadget: Gadget) -> Template:
    """Run the gadget once on placeholders for ``pattern`` and keep what it appended."""
    block, state, code_of = _placeholders(pattern)
    cs = ShapeCS()
    cs.num_aux = len(code_of)
    first_new = cs.num_aux
    out = gadget(cs, block, state, _NS)
    n_aux = cs.num_aux - first_new

    def code(key: int) -> int:
        if key >= first_new:
            return _NEW + key - first_new
        if key == _ONE_KEY:
            return 0
        return code_of[key]  # a KeyError: the gadget used a variable it was not given

    ends, codes, coeffs = [], [], []
    for e, k, c in cs.rows_from(0):
        ends.append(np.array(e, dtype=np.int64))
        codes.append(np.array([code(key) for key in k], dtype=np.int32))
        coeffs.append(c)
    head = _NS + "/"
    names = list(cs.names)
    suffixes = [n[len(head) :] if n.startswith(head) else n for n in names]
    which = np.array([not n.startswith(head) for n in names], dtype=np.uint8)
    out_bits = [
        (0, int(b.constant), False) if b.bit is None else (code(b.bit.variable.key), 0, b.negated)
        for w in out
        for b in w.bits
    ]
    return Template(
        ends=tuple(ends),
        codes=tuple(codes),
        coeffs=tuple(coeffs),
        suffixes=suffixes,
        which=which,
        n_aux=n_aux,
        out=out_bits,
        out_values=[w.value for w in out],
    )


def _replay(
    t: Template, keys: list[int], base: int, path: list[str], ns: Name
) -> tuple[tuple[tuple[np.ndarray, np.ndarray, list[int]], ...], PrefixedNames]:
    """The template's rows with codes mapped to this call's keys, and its names."""
    table = np.empty(_NEW + t.n_aux, dtype=np.int64)
    table[0] = _ONE_KEY
    table[1:_NEW] = keys
    table[_NEW:] = np.arange(base, base + t.n_aux, dtype=np.int64)
    rows = tuple(
        (ends, table[codes], coeffs)
        for ends, codes, coeffs in zip(t.ends, t.codes, t.coeffs, strict=True)
    )
    bare = "/".join(path) + "/" if path else ""
    under = bare if ns is None else "/".join([*path, ns if isinstance(ns, str) else ns()]) + "/"
    return rows, PrefixedNames((under, bare), t.which, t.suffixes)


def _outputs(t: Template, base: int, bits: list[AllocatedBit | None]) -> list[UInt32]:
    """The eight output words over this call's variables, as the gadget returns them."""
    made: dict[int, AllocatedBit] = {}
    out: list[Boolean] = []
    for code, const, neg in t.out:
        if code == 0:
            out.append(TRUE if const else FALSE)
            continue
        if code < _NEW:
            ab = bits[code - 1]
        else:
            ab = made.get(code)
            if ab is None:
                ab = made[code] = AllocatedBit(Variable(base + code - _NEW), None)
        out.append(Boolean(ab, neg))
    return [UInt32(out[32 * j : 32 * j + 32], v) for j, v in enumerate(t.out_values)]


def _bit_id(b: Boolean) -> tuple:
    if b.bit is None:
        return (b.constant,)
    return (b.bit.variable.key, b.bit.value, b.negated)


def same_words(xs: Sequence[UInt32], ys: Sequence[UInt32]) -> bool:
    """Whether two word lists are the same bits over the same variables, with the same values."""
    return len(xs) == len(ys) and all(
        x.value == y.value and [_bit_id(b) for b in x.bits] == [_bit_id(b) for b in y.bits]
        for x, y in zip(xs, ys, strict=True)
    )


class Templates(dict[bytes, Template | None]):
    """Each input pattern's template, in a :class:`~cuzk.r1cs.memo.SynthesisCache` (None: it
    disagreed with the gadget; never replayed)."""


def compress_shape(
    cs: ShapeCS,
    block: Sequence[Boolean],
    state: Sequence[UInt32],
    ns: Name,
    gadget: Gadget,
) -> list[UInt32]:
    """One compression in shape mode: the pattern's template appended in bulk when possible,
    else (tapes off in ``cs.options``, inputs it cannot stand for, a new pattern under
    verification) the gadget."""
    options = cs.options
    got = _pattern(cs, block, state) if options.sha256_tapes else None
    if got is None:
        return gadget(cs, block, state, ns)
    pattern, keys, bits = got
    templates = cs.cache.memo(Templates)
    t = templates.get(pattern, False)
    if t is None:
        return gadget(cs, block, state, ns)
    verify = t is False
    if verify:
        if len(templates) >= MAX_TEMPLATES:
            return gadget(cs, block, state, ns)
        try:
            t = record(pattern, gadget)
        except Exception:  # any surprise in recording: never replay the pattern
            log.exception("SHA-256 shape template could not be recorded; not replayed")
            templates[pattern] = None
            return gadget(cs, block, state, ns)
        if not options.verify_first_use:
            templates[pattern] = t
            verify = False
    assert isinstance(t, Template)
    base = cs.num_aux
    rows, names = _replay(t, keys, base, cs._path, ns)
    if not verify:
        cs.append_rows(rows, names, t.n_aux)
        return _outputs(t, base, bits)
    row0, inputs0 = cs.num_constraints, cs.num_inputs
    ref = gadget(cs, block, state, ns)
    got_rows = cs.rows_from(row0)
    ok = (
        cs.num_aux - base == t.n_aux
        and cs.num_inputs == inputs0
        and cs.names.tail(row0) == names.strings()
        and all(
            g_ends == ends.tolist() and g_keys == k.tolist() and g_coeffs == c
            for (g_ends, g_keys, g_coeffs), (ends, k, c) in zip(got_rows, rows, strict=True)
        )
        and same_words(ref, _outputs(t, base, bits))
    )
    templates[pattern] = t if ok else None
    if not ok:
        log.warning("SHA-256 shape template disagrees with the gadget for a pattern; not replayed")
    return ref
