"""bellperson's ``.vk`` and ``.params`` files, byte for byte.

``.vk``: α₁ β₁ β₂ γ₂ δ₁ δ₂ (uncompressed), u32-BE len(ic), ic points — 868 + 96·len(ic) bytes.
``.params``: the same verifying key, then five vectors h, l, a, b_g1 (G1) and b_g2 (G2), each a
u32-BE count followed by uncompressed points; no header of its own.

The reader memory-maps the file and only walks the five counts, so opening a 47 GB PoRep file
costs microseconds; points are loaded later, in bulk, by whichever backend uses them.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cuzk.backend.base import Group, PointSet
from cuzk.curve import G1, G2, g1_identity
from cuzk.curve.encoding import (
    g1_array_from_uncompressed,
    g1_from_bytes,
    g1_to_bytes,
    g2_array_from_uncompressed,
    g2_from_bytes,
    g2_to_bytes,
)
from cuzk.errors import BadInput
from cuzk.groth16.keys import Parameters, VerifyingKey

G1_SIZE, G2_SIZE = 96, 192
VK_FIXED_SIZE = 3 * G1_SIZE + 3 * G2_SIZE + 4  # α₁ β₁ δ₁, β₂ γ₂ δ₂, len(ic)
VECTOR_NAMES: tuple[tuple[str, Group], ...] = (
    ("h", "g1"),
    ("l", "g1"),
    ("a", "g1"),
    ("b_g1", "g1"),
    ("b_g2", "g2"),
)


@dataclass(frozen=True)
class ParamsHeader:
    """What ``cuzk info`` shows: every count in a file and the file's size."""

    kind: str  # "params" or "vk"
    size: int  # file size in bytes
    num_ic: int  # public inputs including ONE
    counts: dict[str, int]  # vector name → number of points (empty for a .vk)

    @property
    def domain_size(self) -> int | None:
        return self.counts["h"] + 1 if self.counts else None


# -- writing ---------------------------------------------------------------------------------


def vk_to_bytes(vk: VerifyingKey) -> bytes:
    parts = [
        g1_to_bytes(vk.alpha_g1, compressed=False),
        g1_to_bytes(vk.beta_g1, compressed=False),
        g2_to_bytes(vk.beta_g2, compressed=False),
        g2_to_bytes(vk.gamma_g2, compressed=False),
        g1_to_bytes(vk.delta_g1, compressed=False),
        g2_to_bytes(vk.delta_g2, compressed=False),
        struct.pack(">I", len(vk.ic)),
    ]
    parts.extend(g1_to_bytes(p, compressed=False) for p in vk.ic)
    return b"".join(parts)


def write_vk(path: str | os.PathLike[str], vk: VerifyingKey) -> None:
    _write_atomically(Path(path), [vk_to_bytes(vk)])


def write_params(
    path: str | os.PathLike[str], vk: VerifyingKey, vectors: Sequence[tuple[int, bytes]]
) -> None:
    """Write a ``.params`` file; ``vectors`` are (count, uncompressed points) for h, l, a, b_g1,
    b_g2 in that order."""
    if len(vectors) != len(VECTOR_NAMES):
        raise ValueError("a .params file has exactly five vectors")
    chunks = [vk_to_bytes(vk)]
    for (name, group), (count, data) in zip(VECTOR_NAMES, vectors, strict=True):
        size = G1_SIZE if group == "g1" else G2_SIZE
        if len(data) != count * size:
            raise ValueError(f"vector {name}: {len(data)} bytes for {count} points")
        chunks += [struct.pack(">I", count), data]
    _write_atomically(Path(path), chunks)


def _write_atomically(path: Path, chunks: Sequence[bytes]) -> None:
    tmp = path.with_name(path.name + ".partial")
    with open(tmp, "wb") as f:
        for chunk in chunks:
            f.write(chunk)
    os.replace(tmp, path)


# -- reading ---------------------------------------------------------------------------------


def _vk_from_buffer(
    buf: bytes | mmap.mmap, *, checked: bool, where: str
) -> tuple[VerifyingKey, int]:
    """Parse a verifying key at the start of ``buf``; returns it and its size in bytes."""
    if len(buf) < VK_FIXED_SIZE:
        raise BadInput(f"{where}: truncated verifying key ({len(buf)} of {VK_FIXED_SIZE} bytes)")
    pos = 0

    def take_g1(label: str) -> G1:
        nonlocal pos
        try:
            p = g1_from_bytes(bytes(buf[pos : pos + G1_SIZE]), compressed=False, checked=checked)
        except BadInput as e:
            raise BadInput(f"{where}: {label}: {e}") from e
        pos += G1_SIZE
        return p

    def take_g2(label: str) -> G2:
        nonlocal pos
        try:
            p = g2_from_bytes(bytes(buf[pos : pos + G2_SIZE]), compressed=False, checked=checked)
        except BadInput as e:
            raise BadInput(f"{where}: {label}: {e}") from e
        pos += G2_SIZE
        return p

    alpha_g1, beta_g1 = take_g1("alpha_g1"), take_g1("beta_g1")
    beta_g2, gamma_g2 = take_g2("beta_g2"), take_g2("gamma_g2")
    delta_g1, delta_g2 = take_g1("delta_g1"), take_g2("delta_g2")
    (num_ic,) = struct.unpack_from(">I", buf, pos)
    pos += 4
    if num_ic == 0:
        raise BadInput(f"{where}: verifying key has no ic points (ONE needs one)")
    if len(buf) < pos + num_ic * G1_SIZE:
        raise BadInput(
            f"{where}: truncated: {num_ic} ic points need {pos + num_ic * G1_SIZE} bytes, "
            f"{len(buf)} present"
        )
    ic = tuple(take_g1(f"ic[{i}]") for i in range(num_ic))
    if delta_g1 == g1_identity():
        raise BadInput(f"{where}: delta is the identity (a degenerate setup)")
    vk = VerifyingKey(alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2, ic)
    return vk, pos


def read_vk(path: str | os.PathLike[str], *, checked: bool = True) -> VerifyingKey:
    """Read a ``.vk`` file (points subgroup-checked unless ``checked=False``)."""
    data = _read_bytes(path)
    vk, used = _vk_from_buffer(data, checked=checked, where=str(path))
    if used != len(data):
        raise BadInput(f"{path}: {len(data) - used} unexpected bytes after the verifying key")
    return vk


def _read_bytes(path: str | os.PathLike[str]) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise BadInput(f"cannot read {path}: {e.strerror}") from e


def _scan_vectors(buf: bytes | mmap.mmap, start: int, path: str) -> tuple[dict[str, PointSet], int]:
    """Walk the five count-prefixed vectors; returns their locations and the end offset."""
    pos = start
    sets: dict[str, PointSet] = {}
    for name, group in VECTOR_NAMES:
        if len(buf) < pos + 4:
            raise BadInput(f"{path}: truncated before the length of vector {name}")
        (count,) = struct.unpack_from(">I", buf, pos)
        pos += 4
        size = G1_SIZE if group == "g1" else G2_SIZE
        if len(buf) < pos + count * size:
            raise BadInput(
                f"{path}: truncated in vector {name}: {count} points need "
                f"{pos + count * size} bytes, the file has {len(buf)}"
            )
        sets[name] = PointSet(group, path, pos, count)
        pos += count * size
    return sets, pos


def read_params(path: str | os.PathLike[str], *, checked: bool = False) -> Parameters:
    """Open a ``.params`` file: the verifying key is parsed, vectors are only located.

    ``checked=False`` (the default, as bellperson reads parameters) trusts the points; with
    ``checked=True`` every point is decoded with curve and subgroup checks (slow: ~55 µs per
    G1 point) and the first bad one is named.
    """
    path = str(Path(path).resolve())
    try:
        with open(path, "rb") as f:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as e:
        raise BadInput(f"cannot map {path}: {e}") from e
    try:
        vk, pos = _vk_from_buffer(mm, checked=checked, where=path)
        sets, end = _scan_vectors(mm, pos, path)
        if end != len(mm):
            raise BadInput(f"{path}: {len(mm) - end} unexpected bytes after the last vector")
        if sets["h"].count == 0 or (sets["h"].count + 1) & sets["h"].count:
            raise BadInput(f"{path}: h has {sets['h'].count} points; expected 2^k − 1")
        if checked:
            for name, ps in sets.items():
                _check_points(mm, ps, name, path)
    finally:
        mm.close()
    return Parameters(vk, path, sets["h"], sets["l"], sets["a"], sets["b_g1"], sets["b_g2"])


def _check_points(buf: mmap.mmap, ps: PointSet, name: str, path: str) -> None:
    data = buf[ps.offset : ps.offset + ps.count * ps.point_size]
    loader = g1_array_from_uncompressed if ps.group == "g1" else g2_array_from_uncompressed
    try:
        loader(data, checked=True)
    except BadInput as e:
        raise BadInput(f"{path}: vector {name}: {e}") from e


def read_header(path: str | os.PathLike[str]) -> ParamsHeader:
    """Counts of a ``.params`` or ``.vk`` file, without decoding points (for ``cuzk info``)."""
    path = str(path)
    size = _file_size(path)
    with open(path, "rb") as f:
        head = f.read(VK_FIXED_SIZE)
        if len(head) < VK_FIXED_SIZE:
            raise BadInput(f"{path}: too short for a verifying key ({size} bytes)")
        (num_ic,) = struct.unpack_from(">I", head, VK_FIXED_SIZE - 4)
        vk_end = VK_FIXED_SIZE + num_ic * G1_SIZE
        if size == vk_end:
            return ParamsHeader("vk", size, num_ic, {})
        counts: dict[str, int] = {}
        pos = vk_end
        for name, group in VECTOR_NAMES:
            f.seek(pos)
            raw = f.read(4)
            if len(raw) < 4:
                raise BadInput(f"{path}: truncated before the length of vector {name}")
            (counts[name],) = struct.unpack(">I", raw)
            pos += 4 + counts[name] * (G1_SIZE if group == "g1" else G2_SIZE)
    if pos != size:
        raise BadInput(
            f"{path}: neither a .vk nor a .params file (counts imply {pos} bytes, file has {size})"
        )
    return ParamsHeader("params", size, num_ic, counts)


def _file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError as e:
        raise BadInput(f"cannot read {path}: {e.strerror}") from e
