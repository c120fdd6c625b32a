"""Reading the files a user names on the command line."""

from __future__ import annotations

from pathlib import Path

from cuzk.errors import BadInput


def read_input(path: Path) -> bytes:
    """A user's input file, or BadInput naming it (never a traceback)."""
    try:
        return path.read_bytes()
    except OSError as e:
        raise BadInput(f"cannot read {path}: {e.strerror}") from e
