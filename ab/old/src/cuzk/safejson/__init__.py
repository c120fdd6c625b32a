"""JSON from untrusted bytes: every way reading it can fail is a :class:`~cuzk.errors.BadPayload`.

``json.loads`` fails in more ways than ``JSONDecodeError``: ``RecursionError`` for deep nesting,
``UnicodeDecodeError`` for bytes that are not UTF-8, and a plain ``ValueError`` for a number of
more than 4,300 digits (Python's limit on int conversion). A request, an inputs file or a
payload can hold any of them; each must be a clear refusal naming what was read, never a
traceback or an internal error.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from cuzk.errors import BadInput, BadPayload

MAX_DETAIL = 200  # characters of the decoder's own message kept in ours
#: The recursion limit JSON is parsed under. The C decoder recurses once per nesting level and
#: stops at the interpreter's limit; a library that raises that limit process-wide (py_ecc sets
#: 100,000 on import) would let a deeply nested document overflow the C stack — a crash, not a
#: RecursionError. Parsing never runs under a higher limit than this.
PARSE_RECURSION_LIMIT = 5000


def loads(
    data: str | bytes | bytearray,
    what: str,
    *,
    invalid: str = "not valid JSON",
    bytes32: bool = False,
) -> Any:
    """``json.loads(data)``, or BadPayload ``"<what>: <invalid> (<why>)"``.

    ``bytes32``: every array of exactly 32 integers 0…255 comes back as ``bytes`` (see
    :func:`parse`), for readers whose documents are mostly such arrays (Filecoin's 32-byte
    values)."""
    doc, why = parse(data, bytes32=bytes32)
    if why is not None:
        raise BadPayload(f"{what}: {invalid} ({why})")
    return doc


def parse(data: str | bytes | bytearray, *, bytes32: bool = False) -> tuple[Any, str | None]:
    """(document, None), or (None, why it is not JSON).

    ``bytes32``: every array of exactly 32 integers 0…255 written ``[1,2,…]`` or ``[1, 2, …]``
    is returned as the 32 ``bytes`` it spells. Such arrays are found and decoded in bulk
    (:func:`_pack_bytes32`) before the decoder runs, which would otherwise build one list and
    32 list slots per value — most of the time a 30 MB request takes to read. The document
    read is otherwise exactly ``json.loads``'s, and so is every refusal; arrays written any
    other way (newlines inside, a bool, a float, a number of 256 or more) stay lists for the
    reader to check one by one.
    """
    limit = sys.getrecursionlimit()
    capped = limit > PARSE_RECURSION_LIMIT
    try:
        if capped:
            sys.setrecursionlimit(PARSE_RECURSION_LIMIT)
        packed = _pack_bytes32(data) if bytes32 else None
        if packed is None:
            return json.loads(data), None
        text, take = packed
        return json.loads(text, parse_float=take), None
    except RecursionError:
        why = "nested too deeply"
    except UnicodeDecodeError as e:
        why = f"not UTF-8: {e.reason} at byte {e.start}"
    except json.JSONDecodeError as e:
        why = str(e)
    except ValueError:  # int() refuses a number this long (Python's guard against slow parsing)
        why = f"a number of more than {sys.get_int_max_str_digits():,} digits"
    finally:
        if capped:
            sys.setrecursionlimit(limit)
    return None, why if len(why) <= MAX_DETAIL else why[: MAX_DETAIL - 1] + "…"


def decimal(text: str, what: str, max_digits: int = 100) -> int:
    """A non-negative decimal integer written in ASCII digits (``str.isdigit`` also takes
    "²" and other digits ``int`` refuses), at most ``max_digits`` long; else BadInput."""
    if not (text.isascii() and text.isdigit()):
        raise BadInput(f"{what}: expected a decimal number, got {text[:40]!r}")
    if len(text) > max_digits:
        raise BadInput(f"{what}: a number of {len(text):,} digits (at most {max_digits})")
    return int(text)


# -- arrays of 32 bytes, decoded in bulk ------------------------------------------------------

_TOKEN_DIGITS = 8  # a packed array becomes the float literal "0.<8-digit index>" (10 bytes)
_MIN_ARRAY = 2 + 32 + 31  # the shortest 32-number array: "[0,0,…,0]"


def _pack_bytes32(data: str | bytes | bytearray) -> tuple[bytes, Callable[[str], bytes]] | None:
    """The document with each array of 32 integers 0…255 replaced by the float literal
    ``0.<index>`` padded with spaces to the array's length, and the ``parse_float`` hook
    that turns such a literal back into those 32 bytes; None where the fast path does not
    apply (then the caller parses ``data`` as it is).

    Why the result reads exactly as ``data`` does: it applies only to UTF-8 text with no
    float literal outside strings (so every float the decoder meets is a token). Only arrays
    outside strings whose inside is 32 numbers without leading zeros, commas and spaces or
    tabs are replaced, each by a number and spaces of the same length: positions, lines and
    so every error message stay as they were, and an array written any other way stays as
    written.
    """
    raw = data.encode() if isinstance(data, str) else bytes(data)
    if len(raw) < _MIN_ARRAY or json.detect_encoding(raw) != "utf-8":
        return None
    from cuzk.safejson._kernel import k_pack_bytes32

    out = bytearray(raw)
    values = np.empty((len(raw) // _MIN_ARRAY, 32), dtype=np.uint8)
    n = k_pack_bytes32(np.frombuffer(raw, dtype=np.uint8), np.frombuffer(out, dtype=np.uint8),
                       values, _TOKEN_DIGITS)  # fmt: skip
    if n <= 0:
        return None
    blob = values[:n].tobytes()

    def take(literal: str) -> bytes:
        k = int(literal[2:]) * 32
        return blob[k : k + 32]

    return bytes(out), take
