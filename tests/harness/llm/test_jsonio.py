"""`jsonio`: the one JSON parse and encode for files. The depth measure (a C-speed path behind
`nesting_depth`) is held to a plain character-by-character reference and to the depth of the
value itself, for any JSON text and any prefix of one (a torn line); `dumps` writes anything the
parser can return as strict JSON that encodes as UTF-8 and reads back the same."""

from __future__ import annotations

import json
import math
from itertools import accumulate
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dshkit.harness.llm import jsonio
from dshkit.harness.llm.jsonio import (
    JsonTooDeep,
    _depth_of,
    _line_past,
    _line_past_masked,
    _structure,
    _structure_plain,
)

_text = st.text(alphabet=st.sampled_from('ab"\\[]{}:,\u00e9\ud800\udfff \n'), max_size=12)
_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True), _text)
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(_text, inner, max_size=4)), max_leaves=30)


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


@settings(max_examples=400, deadline=None)
@given(_values, st.booleans(), st.data())
def test_the_fast_depth_path_equals_the_plain_one_for_texts_and_prefixes(value: Any, ascii_only: bool, data: st.DataObject) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    raw = text.encode("utf-8", "surrogatepass")
    assert _structure(raw) == _structure_plain(text)
    assert jsonio.nesting_depth(text) == jsonio.nesting_depth(raw) == _depth(value)
    cut = data.draw(st.integers(0, len(text)))
    assert _structure(text[:cut].encode("utf-8", "surrogatepass")) == _structure_plain(text[:cut])


@settings(max_examples=300, deadline=None)
@given(_values)
def test_dumps_writes_any_parsed_value_as_strict_utf8_json(value: Any) -> None:
    for compact in (True, False):
        line = jsonio.dumps(value, compact=compact)
        line.encode("utf-8")  # never a lone surrogate left raw

        def refuse(name: str) -> Any:
            raise AssertionError(f"bare {name}")

        back = json.loads(line, parse_constant=refuse)
        # what the parser reads from the value's own escaped form (a high and a low surrogate
        # side by side read back as the one character they encode)
        expected = json.loads(json.dumps(jsonio.finite(value), ensure_ascii=True))
        assert _nan_equal(back, expected)


def _nan_equal(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_nan_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_nan_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def test_dumps_keeps_plain_text_readable_and_escapes_only_lines_with_a_surrogate() -> None:
    assert jsonio.dumps({"a": "é"}) == '{"a":"é"}'
    assert jsonio.dumps({"a": "é\ud800"}) == '{"a":"\\u00e9\\ud800"}'
    assert jsonio.dumps([float("nan"), float("inf"), -float("inf")]) == '["NaN","Infinity","-Infinity"]'
    assert jsonio.dumps({"b": 1, "a": 2}, compact=False, indent=2, sort_keys=True) == '{\n  "a": 2,\n  "b": 1\n}'


@pytest.mark.parametrize("depth", [201, 5_000, 100_000])
@pytest.mark.parametrize("shape", ["array", "object"])
def test_loads_refuses_past_the_limit_before_parsing(depth: int, shape: str) -> None:
    text = "[" * depth + "]" * depth if shape == "array" else '{"a":' * depth + "1" + "}" * depth
    with pytest.raises(JsonTooDeep, match=f"nested {depth} levels deep, past the limit of 200") as info:
        jsonio.loads(text, where="f:3")
    assert str(info.value).startswith("f:3: ") and isinstance(info.value, ValueError)


def test_loads_reads_up_to_the_limit_and_brackets_in_strings_do_not_count() -> None:
    assert jsonio.loads("[" * 200 + "]" * 200) is not None
    assert jsonio.loads(json.dumps({"s": "[" * 10_000})) == {"s": "[" * 10_000}


def test_a_too_deep_document_names_its_line() -> None:
    text = '{\n  "a": 1,\n  "b": ' + "[" * 300 + "]" * 300 + "\n}"
    with pytest.raises(JsonTooDeep) as info:
        jsonio.loads(text)
    assert info.value.line == 3
    chunks = '{"choices": ["[{\\"a"]}\n' + '{"a":' * 100_000 + "1" + "}" * 100_000 + "\n"  # a JSONL capture
    with pytest.raises(JsonTooDeep) as info:
        jsonio.loads(chunks)
    assert info.value.line == 2


@settings(deadline=None)
@given(_values, st.sampled_from([None, 1, 2]), st.data())
def test_the_line_past_the_limit_is_found_the_fast_way_as_the_plain_one(value: Any, indent: int | None,
                                                                        data: st.DataObject) -> None:
    """Which line a too-deep text passes the limit on, for any JSON text laid out over lines
    (or on one) and any prefix of one, at every limit up to its depth."""
    text = json.dumps(value, indent=indent, ensure_ascii=data.draw(st.booleans()))
    text = text[:data.draw(st.integers(0, len(text)))] if data.draw(st.booleans()) else text
    for limit in range(_depth(value) + 1):
        assert _line_past(text, limit) == _line_past_masked(text, limit)
        assert _line_past(text.encode("utf-8", "surrogatepass"), limit) == _line_past_masked(text, limit)


_PIECES = [b"[", b"]", b"{", b"}", b"[" * 511, b"]" * 513, b"{" * 1024, b"}" * 1024, b"[]" * 300, b"{[]}" * 200]


@settings(deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=30))
def test_the_depth_of_a_long_bracket_sequence_is_its_deepest_running_count(pieces: list[bytes]) -> None:
    """Taken a run at a time (repeated runs worked out once), the deepest running count of any
    sequence of brackets, long or short, balanced or not, is the one a plain count finds."""
    brackets = b"".join(pieces)
    steps = [1 if b in b"[{" else -1 for b in brackets]
    assert _depth_of(brackets) == max([0, *accumulate(steps)])
