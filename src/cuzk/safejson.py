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
from typing import Any

from cuzk.errors import BadInput, BadPayload

MAX_DETAIL = 200  # characters of the decoder's own message kept in ours
#: The recursion limit JSON is parsed under. The C decoder recurses once per nesting level and
#: stops at the interpreter's limit; a library that raises that limit process-wide (py_ecc sets
#: 100,000 on import) would let a deeply nested document overflow the C stack — a crash, not a
#: RecursionError. Parsing never runs under a higher limit than this.
PARSE_RECURSION_LIMIT = 5000


def loads(data: str | bytes | bytearray, what: str, *, invalid: str = "not valid JSON") -> Any:
    """``json.loads(data)``, or BadPayload ``"<what>: <invalid> (<why>)"``."""
    doc, why = parse(data)
    if why is not None:
        raise BadPayload(f"{what}: {invalid} ({why})")
    return doc


def parse(data: str | bytes | bytearray) -> tuple[Any, str | None]:
    """(document, None), or (None, why it is not JSON)."""
    limit = sys.getrecursionlimit()
    capped = limit > PARSE_RECURSION_LIMIT
    try:
        if capped:
            sys.setrecursionlimit(PARSE_RECURSION_LIMIT)
        return json.loads(data), None
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
