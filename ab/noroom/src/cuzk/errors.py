"""The exception hierarchy every layer raises from.

Callers (the CLI, later the daemon) map these four kinds to exit codes and gRPC status codes,
so a new failure should subclass one of them rather than raise a bare ``Exception``.
"""

from __future__ import annotations

import json
from pathlib import PurePath


class CuzkError(Exception):
    """Base of every error cuzk raises on purpose."""


class BadInput(CuzkError, ValueError):
    """The caller gave something unusable: a malformed file, point, proof or witness."""


class BadPayload(BadInput):
    """Bytes a caller sent (a vanilla proof, a witness, an inputs file) do not parse at all:
    not JSON, nested too deeply, a number too long. A server names the field that held them."""


class UnsatisfiedConstraint(BadInput):
    """A witness does not satisfy its circuit; ``name`` is the first failing constraint."""

    def __init__(self, index: int, name: str) -> None:
        super().__init__(f"constraint {index} ({name}) is not satisfied")
        self.index = index
        self.name = name


class ResourceExhausted(CuzkError):
    """A request can never fit the memory budget or a pool is closed."""


class DeviceFault(CuzkError):
    """A compute device (GPU or worker process) failed while running a kernel."""


class InternalError(CuzkError):
    """A cuzk invariant broke: a bug, never the caller's fault."""


def shown(value: object, limit: int = 80) -> str:
    """A value as an error message shows it: strings and paths in double quotes, anything cut
    to ``limit`` characters, so that a message never echoes a megabyte (a hostile job id, a
    config value) back to whoever sent it."""
    if isinstance(value, str | PurePath):
        text = json.dumps(str(value), ensure_ascii=False)
    else:
        try:
            text = repr(value)
        except ValueError:  # an int too long to print in decimal
            text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def without_frames(error: BaseException) -> BaseException:
    """``error`` (returned) with its traceback dropped, and its causes': an error kept after
    it is handled — a failed job's, a failed load's — must not keep the frames it passed
    through alive, with every array their locals held (a partition failed under a memory cap
    held its 16 GiB of device vectors until its job was forgotten, and the next job's
    partitions were refused for lack of them). Log it with its traceback first."""
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        e.__traceback__ = None
        e = e.__cause__ or e.__context__
    return error
