"""The iden3 binary container shared by circom's ``.r1cs``/``.wtns`` and snarkjs's ``.zkey``.

Layout: 4-byte magic (``r1cs``, ``wtns``, ``zkey``), u32 version, u32 section count, then the
sections, each a u32 id, a u64 byte size and the body. All integers are little-endian. Sections
are found by id, not by position: writers are free to store them in any order (snarkjs writes a
``.zkey``'s point sections out of id order), so the reader indexes them all first.

This module owns that framing and nothing else: every error it raises names the file and, once
a section is involved, the section's id and meaning, so a user with a truncated download sees
which part is missing instead of a numpy shape error three layers up.
"""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass

import numpy as np

from cuzk.errors import BadInput

_PREAMBLE = struct.Struct("<4sII")  # magic, version, number of sections
_SECTION_HEADER = struct.Struct("<IQ")  # id, size


@dataclass(frozen=True)
class Section:
    """Where one section's body lies in its file."""

    id: int  # section id as stored
    offset: int  # byte offset of the body (after the 12-byte section header)
    size: int  # body size in bytes


class BinFile:
    """A memory-mapped container whose section table has been read and checked.

    The mapping stays open until :meth:`close` (or the end of a ``with`` block); bodies are
    returned as zero-copy ``memoryview`` slices of it, so callers copy what they keep.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        magic: str,
        max_version: int,
        names: dict[int, str],
        data: bytes | None = None,
    ) -> None:
        """Open ``path`` (or index ``data``, then ``path`` only names it) and index its sections.

        Args:
            path: the file, or the name to use in messages when ``data`` is given.
            magic: the expected 4-character type (``"zkey"`` etc.).
            max_version: the newest format version this reader understands.
            names: section id → meaning, used in error messages.
            data: the container's bytes, when they are not in a file.
        Raises:
            BadInput: unreadable file, wrong magic, unsupported version, or a section table
                that runs past the end of the file.
        """
        self.path = str(path)
        self.names = names
        self._mm: mmap.mmap | None = None
        if data is not None:  # bytes handed over a wire (an engine payload), not a file
            self.size = len(data)
            self.buf = memoryview(data)
            self.magic = magic
            self.version, self.sections = self._index(magic, max_version)
            return
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size:
                    self._mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as e:
            raise BadInput(f"{self.path}: cannot read ({e.strerror})") from e
        self.size = size
        self.buf = memoryview(self._mm) if self._mm is not None else memoryview(b"")
        self.magic = magic
        self.version, self.sections = self._index(magic, max_version)

    # -- framing ---------------------------------------------------------------------------------

    def _index(self, magic: str, max_version: int) -> tuple[int, dict[int, list[Section]]]:
        if self.size < _PREAMBLE.size:
            raise BadInput(f"{self.path}: {self.size} bytes is too short for a .{magic} file")
        found, version, count = _PREAMBLE.unpack_from(self.buf, 0)
        if found != magic.encode():
            raise BadInput(
                f"{self.path}: not a .{magic} file (magic {found!r}, expected {magic.encode()!r})"
            )
        if not 1 <= version <= max_version:
            raise BadInput(
                f"{self.path}: .{magic} format version {version} is not supported "
                f"(this reader knows versions up to {max_version})"
            )
        sections: dict[int, list[Section]] = {}
        pos = _PREAMBLE.size
        for k in range(count):
            if pos + _SECTION_HEADER.size > self.size:
                raise BadInput(
                    f"{self.path}: truncated: the header of section #{k} (of {count}) lies "
                    f"past the end of the file ({self.size} bytes)"
                )
            sid, size = _SECTION_HEADER.unpack_from(self.buf, pos)
            pos += _SECTION_HEADER.size
            if pos + size > self.size:
                raise BadInput(
                    f"{self.path}: section {self._label(sid)} is truncated: it declares "
                    f"{size} bytes but only {self.size - pos} remain in the file"
                )
            sections.setdefault(sid, []).append(Section(sid, pos, size))
            pos += size
        return version, sections

    def _label(self, sid: int) -> str:
        name = self.names.get(sid)
        return f"{sid} ({name})" if name else str(sid)

    def error(self, sid: int, reason: str) -> BadInput:
        """A BadInput naming this file and section ``sid``; raise it at the call site."""
        return BadInput(f"{self.path}: section {self._label(sid)}: {reason}")

    # -- access ----------------------------------------------------------------------------------

    def has(self, sid: int) -> bool:
        return sid in self.sections

    def section(self, sid: int) -> Section:
        """The unique section ``sid``; BadInput if it is missing or duplicated."""
        found = self.sections.get(sid)
        if not found:
            raise self.error(sid, "missing")
        if len(found) > 1:
            raise self.error(sid, f"appears {len(found)} times; expected once")
        return found[0]

    def body(self, sid: int, size: int | None = None) -> memoryview:
        """The body of section ``sid``, checked to be exactly ``size`` bytes when given."""
        sec = self.section(sid)
        if size is not None and sec.size != size:
            raise self.error(sid, f"is {sec.size} bytes; expected {size}")
        return self.buf[sec.offset : sec.offset + sec.size]

    def array(self, sid: int, dtype: np.dtype | type, count: int, offset: int = 0) -> np.ndarray:
        """``count`` items of ``dtype`` starting ``offset`` bytes into section ``sid``
        (a read-only view of the mapping)."""
        sec = self.section(sid)
        nbytes = count * np.dtype(dtype).itemsize
        if offset + nbytes > sec.size:
            raise self.error(
                sid, f"is {sec.size} bytes; {count} items from byte {offset} need {nbytes}"
            )
        return np.frombuffer(self.buf, dtype=dtype, count=count, offset=sec.offset + offset)

    # -- lifetime ----------------------------------------------------------------------------

    def close(self) -> None:
        """Release the mapping. Views returned earlier must no longer be used."""
        try:
            self.buf.release()
        except BufferError:  # a numpy view still exports it: the GC releases it later
            pass
        if self._mm is not None:
            try:
                self._mm.close()
            except BufferError:  # a numpy view still exports the buffer: the GC closes it
                pass
            self._mm = None

    def __enter__(self) -> BinFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Cursor:
    """Sequential little-endian reads inside one section, with bounds checks that name it."""

    def __init__(self, f: BinFile, sid: int) -> None:
        self.f = f
        self.sid = sid
        self.data = f.body(sid)
        self.pos = 0

    def take(self, n: int, what: str) -> memoryview:
        if self.pos + n > len(self.data):
            raise self.f.error(
                self.sid,
                f"truncated while reading {what}: needs {n} bytes at offset {self.pos}, "
                f"the section has {len(self.data)}",
            )
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def u32(self, what: str) -> int:
        return int.from_bytes(self.take(4, what), "little")

    def u64(self, what: str) -> int:
        return int.from_bytes(self.take(8, what), "little")

    def bigint(self, n: int, what: str) -> int:
        return int.from_bytes(self.take(n, what), "little")

    def expect_end(self) -> None:
        """Refuse trailing bytes: a section longer than its content means a misread layout."""
        if self.pos != len(self.data):
            raise self.f.error(
                self.sid, f"has {len(self.data) - self.pos} unexpected trailing bytes"
            )
