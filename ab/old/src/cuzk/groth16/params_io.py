"""bellperson's ``.vk`` and ``.params`` files, byte for byte.

``.vk``: α₁ β₁ β₂ γ₂ δ₁ δ₂ (uncompressed), u32-BE len(ic), ic points — 868 + 96·len(ic) bytes.
``.params``: the same verifying key, then five vectors h, l, a, b_g1 (G1) and b_g2 (G2), each a
u32-BE count followed by uncompressed points; no header of its own. Official Filecoin files and
ours share this layout.

A 32 GiB PoRep file is ~47 GB, so opening one reads only the verifying key and the five counts
(a handful of ``pread`` calls: milliseconds and O(1) memory whatever the size) and checks that
they describe the file exactly; the vectors become :class:`PointSet` locations that backends
stream themselves (:func:`iter_vector_chunks`). Point checks (on curve, in the subgroup) are
sampled by default and complete on request; the reader that skips them says so in its name.
Writing streams too (:class:`ParamsWriter`): setup hands over points chunk by chunk.
"""

from __future__ import annotations

import os
import queue
import secrets
import shutil
import stat
import struct
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from cuzk.backend.base import Group, PointSet
from cuzk.curve import g1_identity
from cuzk.curve.encoding import (
    g1_array_from_uncompressed,
    g1_from_bytes,
    g1_to_bytes,
    g2_from_bytes,
    g2_to_bytes,
    points_from_uncompressed,
)
from cuzk.curve.points import BytesLike
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
_POINT_SIZE = {"g1": G1_SIZE, "g2": G2_SIZE}
#: Points per vector (first and last included) that the default reader decodes with full
#: curve and subgroup checks: ~80 points, a few milliseconds, and a file of zeros or of the
#: wrong curve is caught at open rather than as invalid proofs.
SAMPLE_POINTS = 16
#: Points per chunk of :func:`iter_vector_chunks` by default (6 MB of G1, 12 MB of G2).
CHUNK_POINTS = 1 << 16

PointCheck = Literal["sample", "all"]


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


@dataclass(frozen=True)
class _Layout:
    """Where everything in a key file lies, from its counts alone."""

    path: str
    size: int
    num_ic: int
    vectors: dict[str, PointSet]  # empty for a .vk

    @property
    def vk_end(self) -> int:
        return VK_FIXED_SIZE + self.num_ic * G1_SIZE

    def header(self) -> ParamsHeader:
        kind = "params" if self.vectors else "vk"
        counts = {name: ps.count for name, ps in self.vectors.items()}
        return ParamsHeader(kind, self.size, self.num_ic, counts)


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
    data = vk_to_bytes(vk)
    with _AtomicFile(Path(path), len(data)) as f:
        f.write(data)
        f.commit()


def params_file_size(num_ic: int, counts: Sequence[int]) -> int:
    """Bytes of a ``.params`` file with ``num_ic`` ic points and vectors of ``counts``."""
    sizes = (_POINT_SIZE[group] for _, group in VECTOR_NAMES)
    return (
        VK_FIXED_SIZE
        + num_ic * G1_SIZE
        + sum(4 + n * s for n, s in zip(counts, sizes, strict=True))
    )


class ParamsWriter:
    """Stream a ``.params`` file: the verifying key, then h, l, a, b_g1, b_g2 in that order,
    each given in as many chunks as the caller likes.

    ``counts`` (points per vector) are fixed up front, so the whole file is allocated at once
    (a full disk is refused before any work) and every chunk is checked against them. Chunks
    are written by a background thread, so computing the next chunk overlaps writing this one;
    :meth:`write` takes ownership of the buffer (do not modify it afterwards) and blocks only
    when two chunks are already waiting. The file appears under its name only on
    :meth:`commit`; leaving the ``with`` block without it removes the partial file.
    """

    def __init__(
        self, path: str | os.PathLike[str], vk: VerifyingKey, counts: Sequence[int]
    ) -> None:
        if len(counts) != len(VECTOR_NAMES) or any(n < 0 for n in counts):
            raise ValueError(f"a .params file has five vector counts, got {list(counts)}")
        self.counts = tuple(int(n) for n in counts)
        self.size = params_file_size(len(vk.ic), self.counts)
        head = vk_to_bytes(vk)  # before the file exists: a bad key leaves nothing behind
        self._file = _AtomicFile(Path(path), self.size)
        self._vector = 0  # index into VECTOR_NAMES of the vector being written
        self._left = -1  # points still owed to it; -1: its count is not written yet
        self._file.write(head)
        self._advance()

    @property
    def path(self) -> Path:
        return self._file.path

    def write(self, points: BytesLike) -> None:
        """Append uncompressed points (any buffer: bytes, an (n, 96|192) uint8 array, …) to
        the current vector, moving on to the next one when it is full; a chunk may not span
        two vectors."""
        if self._vector == len(VECTOR_NAMES):
            raise ValueError("every vector of the .params file is already written")
        name, group = VECTOR_NAMES[self._vector]
        view = _as_bytes(points).data
        size = _POINT_SIZE[group]
        if len(view) % size:
            raise ValueError(f"vector {name}: a chunk of {len(view)} bytes is not whole points")
        n = len(view) // size
        if n > self._left:
            raise ValueError(f"vector {name}: {n} points given, {self._left} still expected")
        self._file.write(view)
        self._left -= n
        self._advance()

    def _advance(self) -> None:
        """Write the counts of the vectors that start here (several if some are empty)."""
        while self._left == 0 or self._left == -1:
            if self._left == 0:
                self._vector += 1
            if self._vector == len(VECTOR_NAMES):
                return
            self._left = self.counts[self._vector]
            self._file.write(struct.pack(">I", self._left))

    def commit(self) -> Path:
        """Check that every vector is complete, flush, and move the file into place."""
        if self._vector != len(VECTOR_NAMES):
            name = VECTOR_NAMES[self._vector][0]
            raise ValueError(f"vector {name} is missing {self._left} points")
        self._file.commit()
        return self.path

    def abort(self) -> None:
        self._file.abort()

    def __enter__(self) -> ParamsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.abort()  # a no-op after commit


def _as_bytes(points: BytesLike) -> np.ndarray:
    """A flat uint8 view of any buffer of points (no copy when already contiguous)."""
    arr = points if isinstance(points, np.ndarray) else np.frombuffer(points, dtype=np.uint8)
    return np.ascontiguousarray(arr).reshape(-1).view(np.uint8)


class _AtomicFile:
    """A file written in order through a background thread, under a temporary name in the
    target's directory until :meth:`commit`."""

    def __init__(self, path: Path, size: int) -> None:
        self.path = path
        self.size = size
        self._tmp = path.with_name(f"{path.name}.{os.getpid()}-{secrets.token_hex(4)}.partial")
        try:  # (mkstemp would make it private: keys are shared with other users)
            fd = os.open(self._tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except OSError as e:
            raise BadInput(f"cannot write {path}: {e.strerror or e}") from e
        self._f = os.fdopen(fd, "wb", buffering=0)
        self._written = 0
        self._error: BaseException | None = None
        self._queue: queue.Queue[memoryview | bytes | None] = queue.Queue(maxsize=2)
        self._thread: threading.Thread | None = None
        self._done = False
        self._reserve(fd)

    def _reserve(self, fd: int) -> None:
        """Allocate the whole file now: a disk without room fails here, not after an hour."""
        if self.size < 1 << 26 or not hasattr(os, "posix_fallocate"):
            return
        try:
            os.posix_fallocate(fd, 0, self.size)
        except OSError as e:
            if e.errno in (28, 122):  # ENOSPC, EDQUOT
                free = shutil.disk_usage(self.path.parent).free
                self.abort()
                raise BadInput(
                    f"cannot write {self.path}: it needs {self.size:,} bytes, "
                    f"{free:,} are free on its file system"
                ) from e
            # Unsupported on this file system: write without reserving.

    def write(self, data: memoryview | bytes) -> None:
        if self._error is not None:
            raise self._failure()
        if self._thread is None:
            self._thread = threading.Thread(target=self._drain, name="params-writer", daemon=True)
            self._thread.start()
        while True:
            try:
                self._queue.put(data, timeout=0.5)
                return
            except queue.Full:
                if self._error is not None:
                    raise self._failure() from None

    def _drain(self) -> None:
        while (data := self._queue.get()) is not None:
            if self._error is not None:
                continue  # keep consuming so the producer never blocks on a dead writer
            try:
                view = memoryview(data).cast("B")
                while view:  # a raw write may be partial
                    n = self._f.write(view)
                    self._written += n
                    view = view[n:]
            except BaseException as e:  # handed to the producer thread
                self._error = e

    def _failure(self) -> BaseException:
        e = self._error
        assert e is not None
        if isinstance(e, OSError):
            return BadInput(f"cannot write {self.path}: {e.strerror or e}")
        return e

    def _stop(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None

    def commit(self) -> None:
        self._stop()
        if self._error is not None:
            self.abort()
            raise self._failure()
        try:
            if self._written != self.size:
                raise ValueError(f"{self.path}: wrote {self._written} bytes of {self.size}")
            os.fsync(self._f.fileno())  # the rename must not outlive the data in a crash
            self._f.close()
            os.replace(self._tmp, self.path)
        except OSError as e:
            self.abort()
            raise BadInput(f"cannot write {self.path}: {e.strerror or e}") from e
        self._done = True

    def abort(self) -> None:
        if self._done:
            return
        self._done = True
        self._stop()
        self._f.close()
        self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> _AtomicFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.abort()


# -- opening ---------------------------------------------------------------------------------


def _stat_file(path: str) -> int:
    """The size of ``path``, refusing what is not a regular file with a clear reason."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise BadInput(f"cannot read {path}: {e.strerror or e}") from e
    if stat.S_ISDIR(st.st_mode):
        raise BadInput(f"{path} is a directory, not a .params or .vk file")
    if not stat.S_ISREG(st.st_mode):
        raise BadInput(f"{path} is not a regular file")
    return st.st_size


def _pread(fd: int, offset: int, n: int) -> bytes:
    data = os.pread(fd, n, offset)
    while len(data) < n:  # short reads are legal; a file shrinking under us ends in b""
        more = os.pread(fd, n - len(data), offset + len(data))
        if not more:
            break
        data += more
    return data


def _scan(path: str, fd: int, size: int) -> _Layout:
    """Read the verifying key's length and the five counts, checking that they describe the
    file exactly: a truncated file, a count pointing past the end and trailing bytes are
    refused here, naming the section."""
    head = _pread(fd, 0, VK_FIXED_SIZE)
    if head.startswith(b"zkey"):
        raise BadInput(f"{path} is a snarkjs .zkey, not a bellperson .params or .vk file")
    if len(head) < VK_FIXED_SIZE:
        raise BadInput(
            f"{path}: truncated verifying key: {size} bytes, a verifying key alone needs at "
            f"least {VK_FIXED_SIZE + G1_SIZE}"
        )
    if head[0] & 0xE0:
        raise BadInput(
            f"{path} is not a .params or .vk file: alpha_g1 does not start with an "
            f"uncompressed point (first byte 0x{head[0]:02x})"
        )
    (num_ic,) = struct.unpack_from(">I", head, VK_FIXED_SIZE - 4)
    if num_ic == 0:
        raise BadInput(f"{path}: verifying key has no ic points (ONE needs one)")
    pos = VK_FIXED_SIZE + num_ic * G1_SIZE
    if pos > size:
        raise BadInput(
            f"{path}: truncated in the verifying key's ic: {num_ic} points need "
            f"{pos:,} bytes, the file has {size:,} (or this is not a parameter file)"
        )
    vectors: dict[str, PointSet] = {}
    if pos == size:
        return _Layout(path, size, num_ic, vectors)
    for name, group in VECTOR_NAMES:
        raw = _pread(fd, pos, 4)
        if len(raw) < 4:
            extra = (
                f" (or {size - VK_FIXED_SIZE - num_ic * G1_SIZE} bytes of trailing garbage "
                "after a .vk file's verifying key)"
                if name == "h"
                else ""
            )
            raise BadInput(
                f"{path}: truncated before the length of vector {name} (at {pos:,}){extra}"
            )
        (count,) = struct.unpack(">I", raw)
        pos += 4
        end = pos + count * _POINT_SIZE[group]
        if end > size:
            raise BadInput(
                f"{path}: truncated in vector {name}: its length field says {count:,} points, "
                f"which end at byte {end:,}; the file has {size:,}"
            )
        vectors[name] = PointSet(group, path, pos, count)
        pos = end
    if pos != size:
        raise BadInput(
            f"{path}: {size - pos:,} unexpected bytes after the last vector (b_g2 ends at "
            f"{pos:,}): trailing garbage, or not a parameter file"
        )
    _check_counts(path, num_ic, {n: ps.count for n, ps in vectors.items()})
    return _Layout(path, size, num_ic, vectors)


def _check_counts(path: str, num_ic: int, counts: dict[str, int]) -> None:
    """What every bellperson key satisfies, whatever its circuit (the circuit's own counts are
    checked by :func:`cuzk.groth16.prover.check_compatible`)."""
    h, l_, a, b1, b2 = (counts[name] for name, _ in VECTOR_NAMES)
    problems = []
    if h == 0 or (h + 1) & h:
        problems.append(f"h has {h:,} points; expected 2^k − 1")
    elif h + 1 < num_ic:
        problems.append(f"h's domain of {h + 1:,} is smaller than the {num_ic} input rows")
    if not num_ic <= a <= num_ic + l_:
        problems.append(f"a has {a:,} points; expected {num_ic} to {num_ic + l_:,} (inputs, aux)")
    if b1 > num_ic + l_:
        problems.append(f"b_g1 has {b1:,} points, more than the {num_ic + l_:,} variables")
    if b1 != b2:
        problems.append(f"b_g1 has {b1:,} points but b_g2 {b2:,}")
    if problems:
        raise BadInput(f"{path}: inconsistent vector counts: " + "; ".join(problems))


def _open_layout(path: str | os.PathLike[str]) -> tuple[_Layout, int]:
    """The layout of a key file and an open descriptor on it (the caller closes it)."""
    p = str(path)
    size = _stat_file(p)
    try:
        fd = os.open(p, os.O_RDONLY)
    except OSError as e:
        raise BadInput(f"cannot read {p}: {e.strerror or e}") from e
    try:
        return _scan(p, fd, size), fd
    except BaseException:
        os.close(fd)
        raise


def read_header(path: str | os.PathLike[str]) -> ParamsHeader:
    """Counts of a ``.params`` or ``.vk`` file, without decoding any point (``cuzk info``);
    the same structural checks as opening it."""
    layout, fd = _open_layout(path)
    os.close(fd)
    return layout.header()


# -- the verifying key -----------------------------------------------------------------------


def _decode_vk(buf: bytes, where: str, *, ic_check: PointCheck | None) -> VerifyingKey:
    """The verifying key in ``buf`` (exactly its bytes). The six fixed points are always fully
    checked (six points: no reason not to); ic points are decoded in bulk, checked on the
    curve, and in the subgroup for ``ic_check`` "all" or at sampled positions ("sample")."""
    pos = 0

    def fixed(label: str, group: Group) -> object:
        nonlocal pos
        decode = g1_from_bytes if group == "g1" else g2_from_bytes
        pos += _POINT_SIZE[group]
        try:
            return decode(buf[pos - _POINT_SIZE[group] : pos], compressed=False, checked=True)
        except BadInput as e:
            raise BadInput(f"{where}: verifying key {label}: {e}") from e

    alpha_g1, beta_g1 = fixed("alpha_g1", "g1"), fixed("beta_g1", "g1")
    beta_g2, gamma_g2 = fixed("beta_g2", "g2"), fixed("gamma_g2", "g2")
    delta_g1, delta_g2 = fixed("delta_g1", "g1"), fixed("delta_g2", "g2")
    pos += 4
    ic_bytes = buf[pos:]
    try:
        ic = g1_array_from_uncompressed(ic_bytes, checked=ic_check == "all")
    except BadInput as e:
        raise BadInput(f"{where}: verifying key ic: {e}") from e
    if ic_check == "sample":
        _check_sample(ic_bytes, "g1", len(ic), f"{where}: verifying key ic")
    if delta_g1 == g1_identity():
        raise BadInput(f"{where}: delta is the identity (a degenerate setup)")
    # why the ignore below: decode returns G1 | G2; each point was decoded as the group it is named
    return VerifyingKey(alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2, tuple(ic))  # type: ignore[arg-type]


def read_vk(path: str | os.PathLike[str]) -> VerifyingKey:
    """Read a ``.vk`` file, every point checked on the curve and in its subgroup."""
    layout, fd = _open_layout(path)
    try:
        if layout.vectors:
            raise BadInput(f"{path} is a .params file; its verifying key is the .vk file beside it")
        return _decode_vk(_pread(fd, 0, layout.vk_end), str(path), ic_check="all")
    finally:
        os.close(fd)


# -- proving keys ----------------------------------------------------------------------------


def read_params(path: str | os.PathLike[str], *, points: PointCheck = "sample") -> Parameters:
    """Open a ``.params`` file: the verifying key is decoded, the vectors are only located.

    Costs milliseconds and O(1) memory whatever the file's size. Counts, lengths and the
    file size are checked exactly; points are checked on the curve and in the subgroup at
    :data:`SAMPLE_POINTS` positions per vector (``points="sample"``, the same positions
    every time) or everywhere (``points="all"``: minutes for a 32 GiB key, ~55 µs per G1 point).
    """
    return _read_params(path, points)


def read_params_unchecked(path: str | os.PathLike[str]) -> Parameters:
    """:func:`read_params` without point checks beyond the verifying key's fixed points: for a
    file this process has just written, or one verified before (as bellperson reads
    parameters)."""
    return _read_params(path, None)


def _read_params(path: str | os.PathLike[str], points: PointCheck | None) -> Parameters:
    if points not in ("sample", "all", None):
        raise ValueError(f"points must be 'sample' or 'all', got {points!r}")
    path = str(Path(path).resolve())  # one name per file for the backends' residency keys
    layout, fd = _open_layout(path)
    try:
        if not layout.vectors:
            raise BadInput(f"{path} is a verifying key (.vk), not a proving key (.params)")
        vk = _decode_vk(_pread(fd, 0, layout.vk_end), path, ic_check=points)
    finally:
        os.close(fd)
    v = layout.vectors
    if points is not None:
        for name, ps in v.items():
            where = f"{path}: vector {name}"
            if points == "all":
                for start, rows in iter_vector_chunks(ps):
                    _decode_rows(rows, ps.group, where, start)
            else:
                _check_sample(vector_rows(ps), ps.group, ps.count, where)
    return Parameters(vk, path, v["h"], v["l"], v["a"], v["b_g1"], v["b_g2"])


def sample_indices(count: int, k: int = SAMPLE_POINTS) -> np.ndarray:
    """The positions the sampled check decodes in a vector of ``count`` points: the first,
    the last and evenly spaced ones between (deterministic, so a file is judged the same way
    on every open)."""
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    return np.unique(np.linspace(0, count - 1, min(k, count)).astype(np.int64))


def _check_sample(buf: BytesLike, group: Group, count: int, where: str) -> None:
    rows = np.frombuffer(buf, dtype=np.uint8) if not isinstance(buf, np.ndarray) else buf
    rows = rows.reshape(count, _POINT_SIZE[group])
    for i in sample_indices(count):
        _decode_rows(rows[i : i + 1], group, where, int(i), note=" (sampled check)")


def _decode_rows(rows: np.ndarray, group: Group, where: str, start: int, note: str = "") -> None:
    try:
        points_from_uncompressed(group, rows, checked=True, first_index=start)
    except BadInput as e:
        raise BadInput(f"{where}: {e}{note}") from e


# -- the vectors, for backends ---------------------------------------------------------------


def vector_rows(ps: PointSet) -> np.ndarray:
    """A read-only (count, 96|192) uint8 view of a vector's raw points, mapped from its file:
    nothing is read until the rows are touched. Pages touched stay mapped while the array
    lives, so stream big vectors with :func:`iter_vector_chunks` instead."""
    return _map(ps, 0, ps.count)


def iter_vector_chunks(
    ps: PointSet, chunk_points: int = CHUNK_POINTS
) -> Iterator[tuple[int, np.ndarray]]:
    """(first index, read-only (n, 96|192) uint8 rows) for consecutive chunks of a vector.

    Each chunk is its own short-lived mapping of the file, so memory stays at one chunk
    whatever the vector's size: copy the rows out (into pinned host memory, then the device)
    before asking for the next chunk, and keep no reference to them."""
    if chunk_points < 1:
        raise ValueError(f"chunk_points must be positive, got {chunk_points}")
    for start in range(0, ps.count, chunk_points):
        n = min(chunk_points, ps.count - start)
        rows = _map(ps, start, n)
        yield start, rows
        del rows


def _map(ps: PointSet, start: int, n: int) -> np.ndarray:
    size = ps.point_size
    if n == 0:
        return np.zeros((0, size), dtype=np.uint8)
    try:
        return np.memmap(
            ps.path, dtype=np.uint8, mode="r", offset=ps.offset + start * size, shape=(n, size)
        )
    except (OSError, ValueError) as e:  # ValueError: the file is shorter than it was
        raise BadInput(
            f"cannot map {ps.group} points [{start}, {start + n}) at offset {ps.offset} of "
            f"{ps.path}: {e}"
        ) from e
