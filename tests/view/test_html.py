"""The page pieces without a browser: JSON as text with links in it, diffs, words and times."""

from __future__ import annotations

import html
import json
import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from dshkit.view.html import Markup, count, diff_block, json_html, utc_time

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=25,
)


def _text(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


@given(JSON)
def test_json_html_is_json_dumps_escaped(value: Any) -> None:
    # The plain path is json.dumps(indent=2): the page's JSON must read exactly like it.
    out = json_html(value)
    assert "<" not in out.replace("&lt;", "")
    assert html.unescape(out) == json.dumps(value, indent=2, ensure_ascii=False)


def _strings(value: Any) -> list[str]:
    """The string values in `value` (not its keys)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


@given(JSON, st.text(min_size=1, max_size=6))
def test_a_replaced_string_becomes_markup_and_keys_never_do(value: Any, needle: str) -> None:
    doc = {needle: [value, needle]}
    out = json_html(doc, string=lambda s: "<a>here</a>" if s == needle else None)
    assert out.count("<a>here</a>") == _strings(doc).count(needle)
    key = html.escape(json.dumps(needle, ensure_ascii=False), quote=False)
    assert out.split("\n")[1] == f"  {key}: ["  # the key stays text


def test_markup_values_are_written_as_they_are() -> None:
    out = json_html({"messages": [Markup("<a href=\"#r1\">earlier</a>"), {"role": "user"}]})
    assert "<a href=\"#r1\">earlier</a>," in out and '"role": "user"' in out


def test_a_diff_is_one_block_per_line_with_no_newline_between() -> None:
    lines = ["--- a", "+++ b", "@@ -1,2 +1,2 @@", " same", "-old <x>", "+new & more", ""]
    out = diff_block(lines)
    assert "\n" not in out  # a newline inside <pre> would render as an empty line after each block
    assert re.findall(r'class="(\w+)"', out) == ["diff", "file", "file", "hunk", "ctx", "del", "add", "ctx"]
    assert "-old &lt;x&gt;" in out and "+new &amp; more" in out


def test_words() -> None:
    assert [count(n, "turn") for n in (0, 1, 2)] == ["0 turns", "1 turn", "2 turns"]
    assert count(1, "retry", "retries") == "1 retry" and count(3, "retry", "retries") == "3 retries"
    # seconds and milliseconds since the epoch are the same date; nonsense comes back as given
    assert utc_time(1_000_000_000) == utc_time(1_000_000_000_000) == "2001-09-09 01:46:40 UTC"
    assert utc_time(True) == "True" and utc_time(float("inf")) == "inf" and utc_time(1e300) == "1e+300"








