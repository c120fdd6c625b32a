"""The one-pass scanner behind :func:`cuzk.safejson.parse`'s ``bytes32`` reading: numba, so
loaded only when a reader asks for it (plain JSON reading needs no compiled code)."""

from __future__ import annotations

import numpy as np
from numba import njit

_QUOTE, _BACKSLASH, _LEFT, _RIGHT, _COMMA = 34, 92, 91, 93, 44
_SPACE, _TAB, _DOT, _ZERO, _NINE, _MINUS = 32, 9, 46, 48, 57, 45


@njit(cache=True, nogil=True)
def _digit(c: int) -> bool:
    return _ZERO <= c <= _NINE


@njit(cache=True, nogil=True)
def _skip_blank(buf: np.ndarray, k: int) -> int:
    while k < len(buf) and (buf[k] == _SPACE or buf[k] == _TAB):
        k += 1
    return k


@njit(cache=True, nogil=True)
def _array_end(buf: np.ndarray, start: int, row: np.ndarray) -> int:
    """The index of the "]" closing the array at ``start`` when it is exactly 32 JSON numbers
    0…255 (no leading zeros, no sign, fraction or exponent) separated by commas, with spaces
    or tabs only around them; their values go to ``row``. -1 for any other array."""
    k = start + 1
    for m in range(32):
        k = _skip_blank(buf, k)
        if k >= len(buf) or not _digit(buf[k]):
            return -1
        value = int(buf[k] - _ZERO)
        k += 1
        if value == 0:
            if k < len(buf) and _digit(buf[k]):
                return -1  # a leading zero: not JSON
        else:
            while k < len(buf) and _digit(buf[k]):
                value = 10 * value + int(buf[k] - _ZERO)
                k += 1
                if value > 255:
                    return -1
        row[m] = value
        k = _skip_blank(buf, k)
        if k >= len(buf) or buf[k] != (_COMMA if m < 31 else _RIGHT):
            return -1
        if m < 31:
            k += 1
    return k


@njit(cache=True, nogil=True)
def k_pack_bytes32(buf: np.ndarray, out: np.ndarray, values: np.ndarray, digits: int) -> int:
    """Replace in ``out`` (a copy of ``buf``) each array outside strings that
    :func:`_array_end` accepts by the float literal ``0.<index, digits wide>`` and spaces;
    array ``index``'s values go to ``values[index]``. Returns how many were replaced, or -1
    when ``buf`` holds a float literal outside strings (a ``.``, or ``e``/``E`` after a
    digit) or more arrays than ``digits`` digits number (nothing is then to be trusted)."""
    n = 0
    limit = 10**digits
    in_string = False
    i = 0
    while i < len(buf):
        c = buf[i]
        if in_string:
            if c == _BACKSLASH:
                i += 2  # an escape: the next byte cannot close the string
                continue
            if c == _QUOTE:
                in_string = False
        elif c == _QUOTE:
            in_string = True
        elif c == _DOT or ((c | 0x20) == 101 and i > 0 and _digit(buf[i - 1])):
            return -1
        elif c == _LEFT:
            # After "-" or a digit the token would join a number json refuses as written.
            glued = i > 0 and (buf[i - 1] == _MINUS or _digit(buf[i - 1]))
            end = _array_end(buf, i, values[n]) if n < len(values) and not glued else -1
            if end >= 0:
                if n >= limit:
                    return -1
                for k in range(i, end + 1):
                    out[k] = _SPACE
                out[i] = _ZERO
                out[i + 1] = _DOT
                index = n
                for k in range(digits - 1, -1, -1):
                    out[i + 2 + k] = _ZERO + index % 10
                    index //= 10
                n += 1
                i = end
        i += 1
    return n


_LBRACE, _RBRACE, _COLON = 123, 125, 58


def _byte_class(*marks: int) -> np.ndarray:
    table = np.zeros(256, dtype=np.uint8)
    table[list(marks)] = 1
    return table


# The bytes k_skeleton stops at: within its depth every token; deeper only what changes the
# depth or opens a string, so the loop skips a leaf's digits and commas without a test each.
_NEAR = _byte_class(_QUOTE, _LBRACE, _RBRACE, _LEFT, _RIGHT, _COLON, _COMMA)
_DEEP = _byte_class(_QUOTE, _LBRACE, _RBRACE, _LEFT, _RIGHT)


@njit(cache=True, nogil=True)
def k_skeleton(buf: np.ndarray, max_depth: int, tokens: np.ndarray) -> int:
    """The structure of ``buf`` down to ``max_depth``: each ``{ [ } ] : ,`` outside strings and
    each string, at a nesting depth of at most ``max_depth`` (the depth of the container a
    token stands in; a bracket counts at the depth of its container), as rows ``(start, end,
    byte, depth)`` of ``tokens`` (a string's start and end are its quotes). Returns how many
    rows, -1 when ``tokens`` is too short, -2 when brackets or quotes do not balance. Nothing
    deeper is recorded, so a document's skeleton is small however large its leaves (and the
    scan of a 38.8 MB C1 takes 36 ms here, against 92 with a test per byte)."""
    n = 0
    depth = 0
    i = 0
    size = len(buf)
    while i < size:
        stops = _NEAR if depth <= max_depth else _DEEP
        while i < size and stops[buf[i]] == 0:
            i += 1
        if i >= size:
            break
        c = buf[i]
        start = i
        if c == _QUOTE:
            i += 1
            while i < size and buf[i] != _QUOTE:
                i += 2 if buf[i] == _BACKSLASH else 1
            if i >= size:
                return -2
        elif c == _RBRACE or c == _RIGHT:
            depth -= 1
            if depth < 0:
                return -2
        if depth <= max_depth:
            if n >= len(tokens):
                return -1
            tokens[n, 0], tokens[n, 1], tokens[n, 2], tokens[n, 3] = start, i, c, depth
            n += 1
        if c == _LBRACE or c == _LEFT:
            depth += 1
        i += 1
    return n if depth == 0 else -2
