"""A ``.zkey``'s MSM bases, translated once into a zcash-uncompressed file a backend can load.

Backends take point vectors as :class:`~cuzk.backend.base.PointSet` (a file, an offset, a
count) and keep them resident, so the five point sections of a key are rewritten, block by
block, into one file of zcash-uncompressed points; each section becomes one PointSet. The
translation is a byte transform (~0.1 µs per coordinate); curve membership is checked by the
backend when it decodes the points, and :func:`section_error` turns its complaint into one
that names the key's section.

The A and B vectors are written in bellperson's layout, so one prover serves both key formats
(:mod:`cuzk.groth16.prover`): A keeps every input wire (as the point at infinity where the
wire has no A entry) and the aux wires that have one; B₁ and B₂ keep the wires with a B entry.
A wire's point is the identity when it has no entry, so dropping it changes no sum.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from cuzk.backend.base import Group, PointSet
from cuzk.errors import BadInput
from cuzk.interop.points import G1_LEM_SIZE, G2_LEM_SIZE, lem_to_zcash
from cuzk.interop.zkey import ZKEY_SECTIONS, Zkey

_BLOCK = 1 << 16  # points translated per pass: bounds the transient copies
_GROUPS: dict[str, Group] = {"a": "g1", "b1": "g1", "b2": "g2", "c": "g1", "h": "g1"}
# zcash-uncompressed point at infinity: the infinity flag, then zeros.
_INFINITY = {
    g: np.frombuffer(bytes([0x40]) + bytes(size - 1), dtype=np.uint8)
    for g, size in (("g1", 96), ("g2", 192))
}


@dataclass(frozen=True)
class ZkeyBases:
    """The five point vectors of a key, as PointSets in one translated file."""

    path: str  # the translated file
    a: PointSet  # [A_j(τ)]₁ per input wire, then per aux wire with an A entry
    b1: PointSet  # [B_j(τ)]₁ per wire with a B entry
    b2: PointSet  # [B_j(τ)]₂ per wire with a B entry
    c: PointSet  # [(β·A_j + α·B_j + C_j)(τ)/δ]₁ per private wire
    h: PointSet  # odd Lagrange basis of the 2m-domain, over δ
    owns_directory: bool  # remove the file's directory on close (a temporary one)
    persistent: bool = False  # a cached translation (:mod:`.bases_cache`): never removed

    def sets(self) -> dict[str, PointSet]:
        return {"a": self.a, "b1": self.b1, "b2": self.b2, "c": self.c, "h": self.h}

    def remove(self) -> None:
        """Delete the translated file (and its temporary directory)."""
        p = Path(self.path)
        if self.persistent:
            return
        if self.owns_directory:
            shutil.rmtree(p.parent, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)


def translate_bases(zkey: Zkey, out: str | os.PathLike[str] | None = None) -> ZkeyBases:
    """Write ``zkey``'s point sections as zcash-uncompressed points.

    Args:
        zkey: a key from :func:`~cuzk.interop.zkey.read_zkey`.
        out: the file to write; None writes into a fresh temporary directory that
            :meth:`ZkeyBases.remove` deletes.
    Raises:
        BadInput: a coordinate is not reduced (≥ p), naming the key's section and point;
            the key file changed since it was read.
    """
    owns = out is None
    path = Path(tempfile.mkdtemp(prefix="cuzk-zkey-")) / "bases.bin" if out is None else Path(out)
    sets: dict[str, PointSet] = {}
    try:
        with open(zkey.path, "rb") as src, open(path, "wb") as dst:
            sets = bases_layout(zkey, path)
            for name, group in _GROUPS.items():
                sec = zkey.vectors[name]
                size = G1_LEM_SIZE if group == "g1" else G2_LEM_SIZE
                _translate(src, dst, sec.offset, sec.size // size, size, group, zkey, sec.id,
                           _selection(zkey, name))  # fmt: skip
    except BaseException:
        if owns:
            shutil.rmtree(path.parent, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        raise
    return ZkeyBases(
        str(path), sets["a"], sets["b1"], sets["b2"], sets["c"], sets["h"], owns_directory=owns
    )


def bases_layout(zkey: Zkey, path: str | os.PathLike[str]) -> dict[str, PointSet]:
    """Where each vector lies in the translated file :func:`translate_bases` writes."""
    sets, offset = {}, 0
    for name, group in _GROUPS.items():
        size = G1_LEM_SIZE if group == "g1" else G2_LEM_SIZE
        count = zkey.vectors[name].size // size
        keep = _selection(zkey, name)
        if keep is not None:
            count = int(np.count_nonzero(keep[0]))
        out_size = 96 if group == "g1" else 192
        sets[name] = PointSet(group, str(path), offset, count)
        offset += count * out_size
    return sets


def _selection(zkey: Zkey, name: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(keep, blank) per point of section ``name`` for the bellperson layout: which points
    are written, and which of those are written as the point at infinity; None: all, as is."""
    if name not in ("a", "b1", "b2"):
        return None
    n_in = zkey.n_public + 1
    dense = (zkey.a if name == "a" else zkey.b).column_mask()
    if name != "a":
        return dense, np.zeros(len(dense), dtype=bool)
    keep = dense.copy()
    keep[:n_in] = True  # bellperson's A query has every input
    blank = np.zeros(len(dense), dtype=bool)
    blank[:n_in] = ~dense[:n_in]
    return keep, blank


def _translate(
    src: BinaryIO,
    dst: BinaryIO,
    offset: int,
    count: int,
    size: int,
    group: str,
    zkey: Zkey,
    sid: int,
    selection: tuple[np.ndarray, np.ndarray] | None = None,
) -> None:
    """Copy ``count`` points from ``src`` at ``offset`` to ``dst``, translated block by block
    (only the kept ones, blanked ones as infinity, with a ``selection``)."""
    src.seek(offset)
    for first in range(0, count, _BLOCK):
        n = min(_BLOCK, count - first)
        raw = src.read(n * size)
        if len(raw) != n * size:
            raise BadInput(f"{zkey.path}: changed or truncated while reading section {sid}")
        rows = np.frombuffer(raw, dtype=np.uint8).reshape(n, size)
        what = f"{zkey.path}: section {sid} ({ZKEY_SECTIONS[sid]}): point"
        out = lem_to_zcash(rows, group, what, first)
        if selection is not None:
            keep, blank = (m[first : first + n] for m in selection)
            out = out.copy() if not out.flags.writeable else out
            out[blank] = _INFINITY[group]
            out = out[keep]
        dst.write(out.tobytes())


def section_error(zkey: Zkey, bases: ZkeyBases, key: str, e: BaseException) -> BadInput:
    """A backend's failure to load vector ``key`` (a PointSet.key), as a zkey error: the
    translated file means nothing to the user, the key's section does."""
    reason = str(e).partition("failed to load: ")[2] or str(e)
    for name, ps in bases.sets().items():
        if ps.key == key:
            sid = zkey.vectors[name].id
            return BadInput(f"{zkey.path}: section {sid} ({ZKEY_SECTIONS[sid]}): {reason}")
    return BadInput(f"{zkey.path}: {reason}")
