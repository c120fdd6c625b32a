"""Filecoin's official parameter files: which circuits have them, checked as paramfetch does.

``parameters.json`` beside this module is Filecoin's public list of its official ``.params`` and
``.vk`` files, copied unchanged from filecoin-project/rust-fil-proofs (commit
87348a749d80447d00c595af834a8ed73c09e4d9, ``parameters.json``). For each file name it gives the
IPFS cid it is published under, its sector size, and ``digest``: the first 16 bytes, as hex,
of the file's BLAKE2b-512 — what paramfetch compares after a download. (BLAKE2b with a 16-byte
output is a different function: the output length is part of its parameter block.)

A circuit is *ready* when its ``.params`` is found where the daemon would load it
(:mod:`cuzk.groth16.locate`), the ``.vk`` beside it exists, and both digests match. Official
files are tens of GB; hashing streams them in fixed-size chunks (O(1) memory) and reports
progress, since a 32 GiB PoRep key (~47 GB) takes minutes to read.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from cuzk import safejson
from cuzk.errors import BadInput, shown
from cuzk.groth16.locate import find_key, search_dirs

MANIFEST_NAME = "parameters.json"
DIGEST_BYTES = 16  # paramfetch keeps the first 16 bytes of BLAKE2b-512
HASH_CHUNK = 8 << 20  # bytes read per step while hashing
_DIGEST = re.compile(r"[0-9a-f]{32}")

#: (file name, bytes hashed so far, file size): called after every chunk.
Progress = Callable[[str, int, int], None]
FileState = Literal["ok", "missing", "corrupt", "unlisted"]
CircuitState = Literal["ready", "missing", "corrupt", "unlisted"]


@dataclass(frozen=True)
class OfficialFile:
    """One entry of ``parameters.json``."""

    name: str  # file name, e.g. "v28-…-8-8-0-….params"
    cid: str  # where it is published on IPFS
    digest: str  # 32 lowercase hex characters: BLAKE2b-512's first 16 bytes
    sector_size: int  # bytes


def parse_manifest(raw: bytes, where: str) -> dict[str, OfficialFile]:
    """The entries of a ``parameters.json`` document (BadInput naming the first bad one)."""
    doc = safejson.loads(raw, where)
    if not isinstance(doc, dict) or not doc:
        raise BadInput(f"{where}: expected a JSON object of file name → {{cid, digest, …}}")
    out = {}
    for name, entry in doc.items():
        what = f"{where}: {shown(name)}"
        if not isinstance(entry, dict):
            raise BadInput(f"{what}: expected an object")
        digest, cid, size = entry.get("digest"), entry.get("cid"), entry.get("sector_size")
        if not isinstance(digest, str) or not _DIGEST.fullmatch(digest.lower()):
            raise BadInput(f"{what}: digest must be 32 hex characters, got {shown(digest)}")
        if not isinstance(cid, str):
            raise BadInput(f"{what}: cid must be a string")
        if type(size) is not int or size <= 0:
            raise BadInput(f"{what}: sector_size must be a positive integer")
        out[name] = OfficialFile(name, cid, digest.lower(), size)
    return out


def read_manifest(path: Path | None = None) -> dict[str, OfficialFile]:
    """``path``'s entries, or the embedded ``parameters.json``'s when ``path`` is None."""
    if path is None:
        raw = resources.files(__package__).joinpath(MANIFEST_NAME).read_bytes()
        return parse_manifest(raw, f"embedded {MANIFEST_NAME}")
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise BadInput(f"cannot read manifest {path}: {e.strerror or e}") from e
    return parse_manifest(raw, str(path))


def file_digest(path: Path, progress: Progress | None = None, chunk: int = HASH_CHUNK) -> str:
    """paramfetch's digest of a file: BLAKE2b-512 over its bytes, first 16 bytes as hex,
    read ``chunk`` bytes at a time into one reused buffer."""
    h = hashlib.blake2b()  # 64-byte output, truncated below
    buf = bytearray(chunk)
    view = memoryview(buf)
    try:
        with open(path, "rb", buffering=0) as f:
            total = Path(f.name).stat().st_size
            done = 0
            while n := f.readinto(buf):
                h.update(view[:n])
                done += n
                if progress is not None:
                    progress(path.name, done, total)
    except OSError as e:
        raise BadInput(f"cannot read {path}: {e.strerror or e}") from e
    return h.digest()[:DIGEST_BYTES].hex()


@dataclass(frozen=True)
class FileStatus:
    """One official file of a circuit: where it was found and whether its digest matches."""

    name: str  # official file name
    path: Path | None  # where it was found; None when nowhere
    state: FileState
    detail: str  # "" when ok; missing: its IPFS cid; corrupt: both digests


@dataclass(frozen=True)
class CircuitStatus:
    circuit_id: str
    params: FileStatus
    vk: FileStatus
    searched: tuple[Path, ...]  # the directories looked in, in order

    @property
    def state(self) -> CircuitState:
        """``corrupt`` if a file is; else ``unlisted`` (the manifest lacks a name), ``missing``
        (a file was not found) or ``ready``."""
        states = {self.params.state, self.vk.state}
        for worst in ("corrupt", "unlisted", "missing"):
            if worst in states:
                return worst
        return "ready"

    def as_dict(self) -> dict[str, object]:
        files = {
            ext: {"name": f.name, "path": None if f.path is None else str(f.path),
                  "state": f.state, "detail": f.detail}
            for ext, f in (("params", self.params), ("vk", self.vk))
        }  # fmt: skip
        return {"circuit": self.circuit_id, "state": self.state, **files,
                "searched": [str(d) for d in self.searched]}  # fmt: skip


def _check_file(
    name: str,
    path: Path | None,
    manifest: Mapping[str, OfficialFile],
    digest_of: Callable[[Path], str],
) -> FileStatus:
    entry = manifest.get(name)
    if entry is None:
        return FileStatus(name, path, "unlisted", "not in the manifest")
    if path is None:
        return FileStatus(name, None, "missing", f"IPFS cid {entry.cid}")
    got = digest_of(path)
    if got != entry.digest:
        return FileStatus(name, path, "corrupt", f"digest {got}, the manifest says {entry.digest}")
    return FileStatus(name, path, "ok", "")


def check_circuits(
    keys: Iterable[tuple[str, str]],
    directory: Path | None = None,
    manifest: Mapping[str, OfficialFile] | None = None,
    progress: Progress | None = None,
) -> list[CircuitStatus]:
    """Each circuit's official files as the daemon would find them (``directory`` first, then
    Filecoin's directories), digests checked against ``manifest`` (default: the embedded one).
    ``keys``: (circuit id, key file stem) pairs — which circuits have official keys is the
    catalogue's to say (:func:`cuzk.circuits.official_circuits`). Each file is hashed once
    however many circuits name it.

    Raises:
        BadInput: an unreadable file.
    """
    manifest = read_manifest() if manifest is None else manifest
    digests: dict[Path, str] = {}

    def digest_of(path: Path) -> str:
        if path not in digests:
            digests[path] = file_digest(path, progress)
        return digests[path]

    out = []
    for cid, stem in keys:
        params = find_key(directory, stem)
        # the daemon reads the .vk beside its .params; with no .params, show any .vk found
        vk = params.with_suffix(".vk") if params is not None else find_key(directory, stem, ".vk")
        vk = vk if vk is not None and vk.is_file() else None
        out.append(CircuitStatus(
            cid,
            _check_file(f"{stem}.params", params, manifest, digest_of),
            _check_file(f"{stem}.vk", vk, manifest, digest_of),
            tuple(search_dirs(directory, stem)),
        ))  # fmt: skip
    return out
