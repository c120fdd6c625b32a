"""Reading untrusted JSON: every failure is BadPayload naming what was read."""

from __future__ import annotations

import json

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


# -- bytes32: arrays of 32 bytes decoded in bulk ----------------------------------------------


def _unpack(doc):
    """The document with every bytes value back as the list of ints it was read from."""
    if isinstance(doc, bytes):
        return list(doc)
    if isinstance(doc, list):
        return [_unpack(x) for x in doc]
    if isinstance(doc, dict):
        return {k: _unpack(v) for k, v in doc.items()}
    return doc


def _random_doc(rng, depth=0):
    pick = int(rng.integers(0, 10 if depth < 3 else 6))
    if pick <= 2:  # the values the fast path packs: 32 bytes, sometimes all 0 or all 255
        fill = int(rng.integers(0, 3))
        return [[0] * 32, [255] * 32, [int(b) for b in rng.integers(0, 256, 32)]][fill]
    if pick == 3:  # near misses that stay lists: 31 or 33 bytes, a 256, a bool
        v = [int(b) for b in rng.integers(0, 256, 32 + int(rng.integers(-1, 2)))]
        if len(v) == 32:
            v[int(rng.integers(0, 32))] = [256, True, False, None][int(rng.integers(0, 4))]
        return v
    if pick == 4:  # strings that look like arrays, with escapes
        return ["[1,2,3]", 'a"[' + ",".join(["7"] * 32) + "]", "\\", "é[0]"][
            int(rng.integers(0, 4))
        ]
    if pick == 5:
        return [int(rng.integers(-1000, 1000)), True, False, None][int(rng.integers(0, 4))]
    if pick <= 7:
        return [_random_doc(rng, depth + 1) for _ in range(int(rng.integers(0, 4)))]
    return {f"k{i}": _random_doc(rng, depth + 1) for i in range(int(rng.integers(0, 4)))}


def _is_bytes32(v) -> bool:
    return (isinstance(v, list) and len(v) == 32
            and all(type(b) is int and 0 <= b < 256 for b in v))  # fmt: skip


def _packed_as_expected(doc, plain) -> bool:
    """Every array of 32 bytes of ``plain`` came back as bytes, nothing else did."""
    if isinstance(doc, bytes):
        return _is_bytes32(plain) and list(doc) == plain
    if isinstance(doc, list):
        if _is_bytes32(plain) or not isinstance(plain, list) or len(doc) != len(plain):
            return False
        return all(_packed_as_expected(a, b) for a, b in zip(doc, plain, strict=True))
    if isinstance(doc, dict):
        return doc.keys() == plain.keys() and all(_packed_as_expected(doc[k], plain[k])
                                                  for k in doc)  # fmt: skip
    return doc == plain and type(doc) is type(plain)


@pytest.mark.parametrize("separators", [(",", ":"), (", ", ": ")])
def test_bytes32_packs_exactly_the_arrays_of_32_bytes(rng, separators):
    for _ in range(200):
        doc = {"v": _random_doc(rng), "w": [_random_doc(rng) for _ in range(3)]}
        text = json.dumps(doc, separators=separators, ensure_ascii=bool(rng.integers(0, 2)))
        fast = safejson.loads(text.encode(), "x", bytes32=True)
        assert _packed_as_expected(fast, json.loads(text))
        assert safejson.loads(text, "x", bytes32=True) == fast  # str in, same document


def test_bytes32_leaves_documents_with_floats_and_other_layouts_as_json_reads_them(rng):
    value = [int(b) for b in rng.integers(0, 256, 32)]
    for text in (
        json.dumps({"a": value, "f": 1.5}),
        json.dumps({"a": value, "f": 2e3}),
        json.dumps({"a": value}, indent=1),
    ):
        assert safejson.loads(text, "x", bytes32=True) == json.loads(text)
    for spaced in (
        "[ " + " ,  ".join(map(str, value)) + "\t]",
        "[" + "\t, ".join(map(str, value)) + "]",
    ):
        assert safejson.loads(spaced, "x", bytes32=True) == bytes(value)  # spaces, tabs: packed
    assert safejson.loads('{"e": "1e5", "d": "."}', "x", bytes32=True) == {"e": "1e5", "d": "."}


def test_bytes32_refuses_what_json_refuses_with_the_same_reason(rng):
    """Random edits of valid documents: refused with json's own message, or read to the same
    document."""
    alphabet = list('[]{}",: 0123456789.e-\\\ntfn') + ["-[", "0[", "][", "[[", '"[']
    for _ in range(1500):
        doc = [_random_doc(rng) for _ in range(3)]
        text = json.dumps(doc, separators=[(",", ":"), (", ", ": ")][int(rng.integers(0, 2))])
        for _ in range(int(rng.integers(1, 3))):
            at = int(rng.integers(0, len(text) + 1))
            ch = alphabet[int(rng.integers(0, len(alphabet)))]
            cut = int(rng.integers(0, 2))
            text = text[:at] + ch + text[at + cut :]
        plain, why = safejson.parse(text.encode())
        fast, fast_why = safejson.parse(text.encode(), bytes32=True)
        assert fast_why == why
        if why is None:
            assert _unpack(fast) == plain


@pytest.mark.parametrize("before", ["-", "7", "0", "-0", "1e"])
def test_bytes32_never_glues_a_token_onto_a_number(before):
    text = ("[" + before + "[" + ",".join(["1"] * 32) + "]]").encode()
    assert safejson.parse(text, bytes32=True)[1] == safejson.parse(text)[1] is not None


# -- split_array: one array's elements found without decoding the document -----------------


def _wrapped(rng, items):
    """A random document holding ``items`` at ["outer"][<its only key>], among random
    siblings (strings with brackets and escapes, nested arrays and objects)."""
    inner_key = ["X", 'q"[]', "é{"][int(rng.integers(0, 3))]
    doc = {f"s{i}": _random_doc(rng) for i in range(int(rng.integers(0, 4)))}
    doc["outer"] = {inner_key: items}
    doc.update({f"t{i}": _random_doc(rng) for i in range(int(rng.integers(0, 3)))})
    return doc, inner_key


@pytest.mark.parametrize("separators", [(",", ":"), (", ", ": "), None])
def test_split_array_reads_what_the_whole_reads(rng, separators):
    for _ in range(30):
        items = [_random_doc(rng) for _ in range(int(rng.integers(0, 6)))]
        doc, inner_key = _wrapped(rng, items)
        text = json.dumps(doc, separators=separators, indent=None if separators else 2)
        data = text.encode()
        split = safejson.split_array(data, ("outer", None))
        assert split is not None
        head = json.loads(split.head)
        assert head["outer"] == {inner_key: []}
        assert {k: v for k, v in head.items() if k != "outer"} == {
            k: v for k, v in doc.items() if k != "outer"
        }
        assert [json.loads(data[r.start : r.stop]) for r in split.items] == items


@pytest.mark.parametrize(
    "data",
    [
        b'{"outer": {"X": [1]}, "outer": {"X": [2]}}',  # the key twice: json keeps the last
        b'{"outer": {"X": [1], "Y": [2]}}',  # not the object's only key
        b'{"outer": {"X": {"a": 1}}}',  # not an array
        b'{"outer": [1]}',  # not an object
        b'{"other": {"X": [1]}}',  # absent
        b'{"outer": {"X": [1,,2]}}',  # an empty element
        b'{"outer": {"X": [1, 2]}',  # unbalanced
        b'{"outer": {"X": [1, "2]}}',  # an open string
        b'[{"outer": {"X": [1]}}]',  # not an object at the top
        b'{"outer": {"X": [1]}} x',  # something after the document
        '{"outer": {"X": [1]}}'.encode("utf-16"),  # not UTF-8
    ],
)
def test_split_array_declines_what_needs_a_decoder_to_be_sure(data):
    assert safejson.split_array(data, ("outer", None)) is None


def test_split_array_of_a_document_that_is_an_array(rng):
    for _ in range(20):
        items = [_random_doc(rng) for _ in range(int(rng.integers(1, 6)))]
        data = json.dumps(items, indent=int(rng.integers(0, 3)) or None).encode()
        split = safejson.split_array(data, ())
        assert split is not None and split.head == b"[]"
        assert [json.loads(data[r.start : r.stop]) for r in split.items] == items
    assert safejson.split_array(b'{"outer": [1]}', ()) is None  # not an array at the top
    assert safejson.split_array(b"[1, [2]", ()) is None  # unbalanced


def test_split_array_keys_are_read_as_json_reads_them():
    split = safejson.split_array(b'{"\\u006futer": {"X": [ 1 , [2] ]}}', ("outer", None))
    assert split is not None and len(split.items) == 2
    assert safejson.split_array(b'{"outer": {"X": []}}', ("outer", None)).items == ()
