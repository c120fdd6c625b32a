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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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


# -- one array's elements, found without decoding the document ------------------------------

_SKELETON_ROWS = 1 << 14  # tokens kept above the array's elements; more: no split
_OPEN = {ord("{"): ord("}"), ord("["): ord("]")}  # an opening bracket → its closing one


@dataclass(frozen=True)
class Split:
    """A document cut at one array: ``head`` is the document with that array written ``[]``,
    ``items`` the byte ranges of the array's elements in the document. Decoding the head and
    each element reads the same values as decoding the whole, and every one of them decodes
    exactly when the whole does — except for nesting (each piece is shallower than in the
    whole) and where an error is reported (its position is the piece's)."""

    head: bytes
    items: tuple[range, ...]


def split_array(data: bytes, path: Sequence[str | None]) -> Split | None:
    """The array at ``path`` (object keys from the top; ``None``: the object's only key; an
    empty path: the document itself is the array) and its elements' byte ranges, found by one
    compiled scan of the document's upper levels, so a reader can decode only the elements it
    needs (a 32 GiB PoRep C1's partitions, 3.9 MB each). None wherever the answer would need
    decoding to be sure: not UTF-8, brackets or quotes out of balance, a key on the path absent
    or written twice at its level, a value on the path not an object (or, last, not an array),
    an empty element."""
    if json.detect_encoding(data) != "utf-8":
        return None
    from cuzk.safejson._kernel import k_skeleton

    tokens = np.empty((_SKELETON_ROWS, 4), dtype=np.int64)
    n = k_skeleton(np.frombuffer(data, dtype=np.uint8), len(path) + 1, tokens)
    if n <= 0:
        return None
    rows = tokens[:n].tolist()
    top = ord("{" if path else "[")
    if data[: rows[0][0]].strip() or rows[0][2] != top or _closing(rows, 0) != n - 1:
        return None
    if data[rows[-1][0] + 1 :].strip():
        return None
    at = 0
    for step, key in enumerate(path):
        value = _member(data, rows, at, key)
        if value is None or rows[value][2] != ord("[" if step == len(path) - 1 else "{"):
            return None
        at = value
    end = _closing(rows, at)
    if end is None:
        return None
    depth = rows[at][3] + 1
    cuts = [rows[at][0]] + [r[0] for r in rows[at + 1 : end] if r[3] == depth and r[2] == 44]
    cuts.append(rows[end][0])
    items = tuple(range(a + 1, b) for a, b in zip(cuts, cuts[1:], strict=False))
    if len(items) == 1 and not data[items[0].start : items[0].stop].strip():
        items = ()  # "[]"
    elif any(not data[r.start : r.stop].strip() for r in items):
        return None
    head = data[: rows[at][0]] + b"[]" + data[rows[end][0] + 1 :]
    return Split(head, items)


def _closing(rows: list[list[int]], at: int) -> int | None:
    """The row closing the container opened at row ``at`` (the next row at its depth)."""
    depth = rows[at][3]
    for k in range(at + 1, len(rows)):
        if rows[k][3] == depth:
            return k if rows[k][2] == _OPEN.get(rows[at][2]) else None
    return None


def _member(data: bytes, rows: list[list[int]], at: int, key: str | None) -> int | None:
    """The row where the value of ``key`` (None: the only key) of the object opened at row
    ``at`` starts, if it is a container; None if the key is absent or repeated."""
    end = _closing(rows, at)
    if end is None:
        return None
    depth = rows[at][3] + 1
    level = [k for k in range(at + 1, end) if rows[k][3] == depth]
    keys = [
        (k, level[i + 2] if i + 2 < len(level) else None)
        for i, k in enumerate(level[:-1])
        if rows[k][2] == ord('"') and rows[level[i + 1]][2] == ord(":")
    ]
    names = []
    for k, _ in keys:
        try:
            names.append(json.loads(data[rows[k][0] : rows[k][1] + 1]))
        except ValueError:
            return None
    wanted = [v for (_, v), name in zip(keys, names, strict=True) if key is None or name == key]
    if len(wanted) != 1 or (key is None and len(names) != 1):
        return None
    value = wanted[0]
    if value is None or rows[value][2] not in _OPEN:
        return None
    return value
