"""A ``.zkey``'s MSM bases, translated once into a zcash-uncompressed file a backend can load.

Backends take point vectors as :class:`~cuzk.backend.base.PointSet` (a file, an offset, a
count) and keep them resident, so the five point sections of a key are rewritten, block by
block, into one file of zcash-uncompressed points; each section becomes one PointSet. The
translation is a byte transform (~0.1 µs per coordinate); curve membership is checked by the
backend when it decodes the points, and :func:`section_error` turns its complaint into one
that names the key's section.
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


@dataclass(frozen=True)
class ZkeyBases:
    """The five point vectors of a key, as PointSets in one translated file."""

    path: str  # the translated file
    a: PointSet  # [A_j(τ)]₁ per wire
    b1: PointSet  # [B_j(τ)]₁ per wire
    b2: PointSet  # [B_j(τ)]₂ per wire
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
            offset = 0
            for name, group in _GROUPS.items():
                sec = zkey.vectors[name]
                size = G1_LEM_SIZE if group == "g1" else G2_LEM_SIZE
                count = sec.size // size
                _translate(src, dst, sec.offset, count, size, group, zkey, sec.id)
                sets[name] = PointSet(group, str(path), offset, count)
                offset += count * size
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
        sets[name] = PointSet(group, str(path), offset, count)
        offset += count * size
    return sets


def _translate(
    src: BinaryIO,
    dst: BinaryIO,
    offset: int,
    count: int,
    size: int,
    group: str,
    zkey: Zkey,
    sid: int,
) -> None:
    """Copy ``count`` points from ``src`` at ``offset`` to ``dst``, translated block by block."""
    src.seek(offset)
    for first in range(0, count, _BLOCK):
        n = min(_BLOCK, count - first)
        raw = src.read(n * size)
        if len(raw) != n * size:
            raise BadInput(f"{zkey.path}: changed or truncated while reading section {sid}")
        rows = np.frombuffer(raw, dtype=np.uint8).reshape(n, size)
        what = f"{zkey.path}: section {sid} ({ZKEY_SECTIONS[sid]}): point"
        dst.write(lem_to_zcash(rows, group, what, first).tobytes())


def section_error(zkey: Zkey, bases: ZkeyBases, key: str, e: BaseException) -> BadInput:
    """A backend's failure to load vector ``key`` (a PointSet.key), as a zkey error: the
    translated file means nothing to the user, the key's section does."""
    reason = str(e).partition("failed to load: ")[2] or str(e)
    for name, ps in bases.sets().items():
        if ps.key == key:
            sid = zkey.vectors[name].id
            return BadInput(f"{zkey.path}: section {sid} ({ZKEY_SECTIONS[sid]}): {reason}")
    return BadInput(f"{zkey.path}: {reason}")
