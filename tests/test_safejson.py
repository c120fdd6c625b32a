"""Reading untrusted JSON: every failure is BadPayload naming what was read."""

from __future__ import annotations

import pytest

from cuzk import safejson
from cuzk.errors import BadInput, BadPayload


@pytest.mark.parametrize(
    "data,why",
    [
        (b"[" * 100_000, "nested too deeply"),
        (b'{"a":' * 50_000 + b"1" + b"}" * 50_000, "nested too deeply"),
        (b"[" + b"7" * 4301 + b"]", "a number of more than 4,300 digits"),
        (b'{"x": 1', "Expecting"),
        (b'"\xff\xfe"', "not UTF-8"),
        (b"", "Expecting value"),
    ],
)
def test_every_failure_is_bad_payload(data, why):
    with pytest.raises(BadPayload, match="^request: not valid JSON") as info:
        safejson.loads(data, "request")
    assert why in str(info.value) and len(str(info.value)) < 300


def test_valid_json_and_numbers_within_the_limit(rng):
    n = int(rng.integers(1, 1 << 62))
    assert safejson.loads(f'{{"n": {n}, "s": ["{n}"]}}', "x") == {"n": n, "s": [str(n)]}
    assert safejson.loads(b"[" + b"7" * 4300 + b"]", "x") == [int("7" * 4300)]
    assert safejson.parse(b"{")[0] is None


@pytest.mark.parametrize("text", ["²", "١٢٣", "12a", "", "-1", " 1", "9" * 101])
def test_decimal_refuses_what_int_would_misread_or_choke_on(text):
    with pytest.raises(BadInput, match="^input 3: "):
        safejson.decimal(text, "input 3")


def test_decimal_reads_ascii_digits(rng):
    n = int(rng.integers(0, 1 << 62))
    assert safejson.decimal(str(n), "x") == n
    assert safejson.decimal("0" * 100, "x") == 0


def test_deep_nesting_is_refused_even_under_a_raised_recursion_limit():
    """A library that raises the interpreter's recursion limit (py_ecc sets 100,000) must not
    turn a deeply nested document into a C-stack overflow: it is still a clean refusal."""
    import sys

    from cuzk import safejson

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(100_000)
    try:
        doc, why = safejson.parse(b"[" * 100_000 + b"]" * 100_000)
        assert doc is None and why == "nested too deeply"
        assert sys.getrecursionlimit() == 100_000  # restored
    finally:
        sys.setrecursionlimit(old)
