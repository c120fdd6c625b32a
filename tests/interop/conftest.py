"""Fixtures for the snarkjs/circom interop tests: the committed key, witness and proofs, the
npm toolchain (installed on demand; skipped only where node/npm are missing) and a bit-level
editor for the binary container, used to build corrupted files."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from tests.interop import toolchain

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="session")
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def fixture_copy(tmp_path: Path) -> Path:
    """A writable copy of the fixtures directory."""
    dst = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, dst)
    return dst


@pytest.fixture(scope="session")
def npm_bin() -> Path:
    """The pinned snarkjs/circom2 install; skips the test when node or npm is absent."""
    reason = toolchain.unavailable_reason()
    if reason:
        pytest.skip(reason)
    return toolchain.ensure_installed()


@pytest.fixture(scope="session")
def prepared_fixture():
    """The fixture key translated once for the whole session."""
    from cuzk.interop import prepare, read_zkey

    key = prepare(read_zkey(FIXTURES / "fixture.zkey"))
    yield key
    key.close()


# -- container editing ---------------------------------------------------------------------


def split_container(data: bytes) -> tuple[bytes, int, list[tuple[int, bytes]]]:
    """(magic, version, [(id, body)…]) in stored order."""
    magic, version, count = struct.unpack_from("<4sII", data, 0)
    pos, sections = 12, []
    for _ in range(count):
        sid, size = struct.unpack_from("<IQ", data, pos)
        pos += 12
        sections.append((sid, data[pos : pos + size]))
        pos += size
    return magic, version, sections


def join_container(magic: bytes, version: int, sections: list[tuple[int, bytes]]) -> bytes:
    out = bytearray(struct.pack("<4sII", magic, version, len(sections)))
    for sid, body in sections:
        out += struct.pack("<IQ", sid, len(body)) + body
    return bytes(out)


def edit_section(path: Path, sid: int, edit) -> Path:
    """Rewrite section ``sid`` of ``path`` in place with ``edit(bytearray) -> bytes``."""
    magic, version, sections = split_container(path.read_bytes())
    sections = [(s, bytes(edit(bytearray(b))) if s == sid else b) for s, b in sections]
    path.write_bytes(join_container(magic, version, sections))
    return path
