"""The pieces every page is made of: the page shell with its inline style, escaping, words
(plurals, dates), JSON shown as text with links in it, and unified diffs.

Pages are one self-contained file: no script, no font, no stylesheet or image is fetched, so a
view opens from disk, from a CI artifact or an e-mail attachment without a server or network.
Everything taken from a log is escaped here, once: a log is data, never markup. The layout holds
from a phone's 420 px to a desktop's 1400 px: long lines wrap, the one wide thing (the
conformance matrix) scrolls inside its own box, and plots take the width they are given.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any

__all__ = ["Markup", "count", "diff_block", "esc", "json_block", "json_html", "page", "usage_line", "utc_time"]

_STYLE = """
:root { color-scheme: light; --muted: #666; --line: #ddd; }
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1100px; padding: 1rem 1.5rem 4rem; color: #222; }
body.wide { max-width: none; }
h1 { font-size: 1.4rem; margin: .2rem 0; overflow-wrap: anywhere; } h2 { font-size: 1.15rem; border-bottom: 2px solid var(--line); }
h3 { font-size: 1rem; margin: 1rem 0 .3rem; } h4 { font-size: .95rem; margin: .2rem 0; }
.meta, .note { color: var(--muted); overflow-wrap: anywhere; }
pre { background: #f6f6f6; padding: .5rem; margin: .3rem 0; overflow-x: auto; white-space: pre-wrap; overflow-wrap: anywhere; }
a.ref { font-family: system-ui, sans-serif; font-size: .9em; }
.summary span { display: inline-block; margin-right: 1.2rem; }
.summary .bad, .bad { color: #b0281f; font-weight: 600; } .ok { color: #17623a; }
.turn { margin-top: 1.5rem; } .step { margin-left: .6rem; border-left: 3px solid var(--line); padding-left: .6rem; }
.call, .auxiliary { border: 1px solid var(--line); border-radius: 6px; padding: .5rem .8rem; margin: .5rem 0; }
.auxiliary { border-style: dashed; }
.call.failed { border-color: #d0342c; }
.user::before { content: "› "; } .user { font-weight: 600; white-space: pre-wrap; overflow-wrap: anywhere; }
.stream { margin: .4rem 0; }
.block { border-left: 4px solid; padding: .15rem .5rem; margin: .35rem 0; white-space: pre-wrap; overflow-wrap: anywhere; }
.block .label { display: block; font: 600 .75rem system-ui, sans-serif; text-transform: uppercase; letter-spacing: .04em; white-space: normal; }
.block.reasoning { border-color: #7a6ff0; background: #f4f3fe; color: #4b4399; font-style: italic; }
.block.reasoning .label { color: #5b52c4; font-style: normal; }
.block.text { border-color: #2e9e5b; background: #f1faf4; color: #14532f; }
.block.text .label { color: #1e7a45; }
.block.tool-call { border-color: #e08a1e; background: #fffaf2; }
.block.tool-call .label { color: #a35f0a; text-transform: none; letter-spacing: 0; }
.fragment { border: 1px solid #e08a1e; background: #fff4e5; border-radius: 3px; padding: 0 2px; margin: 0 1px;
  font-family: ui-monospace, monospace; white-space: pre-wrap; overflow-wrap: anywhere; }
.tool-call, .tool-result { font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
.tool-result.error, .failure, .retry { color: #b0281f; }
.usage { color: #1f5f96; overflow-wrap: anywhere; }
.request-body .same { margin: .3rem 0; color: var(--muted); }
.request-body ol.messages { margin: .2rem 0; padding-left: 2.2rem; }
.request-body dl { margin: .2rem 0; } .request-body dt { font-weight: 600; margin-top: .3rem; } .request-body dd { margin-left: 1rem; }
pre.diff span { display: block; min-height: 1.45em; }
pre.diff .add { background: #e6ffed; } pre.diff .del { background: #ffeef0; } pre.diff .hunk { color: #6a5fc1; }
figure.plot { margin: .4rem 0; max-width: 640px; }
.plot-frame { position: relative; }
svg.plot .pt { fill: none; stroke-width: 7px; stroke-linecap: round; vector-effect: non-scaling-stroke; }
svg.plot { display: block; width: 100%; height: 120px; background: #fbfbfb; border: 1px solid var(--line); box-sizing: border-box; overflow: visible; }
.axis { display: flex; justify-content: space-between; gap: .5rem; font-size: .75rem; color: var(--muted); }
.legend span { margin-right: .8rem; white-space: nowrap; } .legend i { display: inline-block; width: .7rem; height: .7rem; border-radius: 50%; margin-right: .2rem; }
figcaption { font-size: .85rem; }
.matrix-box { overflow-x: auto; max-width: 100%; border: 1px solid var(--line); }
table.matrix { border-collapse: collapse; width: 100%; }
.matrix td, .matrix th { border: 1px solid var(--line); padding: 2px 6px; vertical-align: top; text-align: left; }
.matrix thead th { font-weight: 600; min-width: 6rem; max-width: 14rem; overflow-wrap: anywhere; }
.matrix thead th small { display: block; font-weight: 400; color: var(--muted); }
.matrix tbody th { font-weight: 400; min-width: 12rem; } .matrix tbody th code { font-weight: 600; }
.matrix tbody th .title { color: var(--muted); font-size: .85rem; }
.matrix th.tally { font-weight: 400; font-size: .8rem; color: #444; background: #eef1f5; }
.matrix tr.area th { background: #eef1f5; font-weight: 600; padding-top: .4rem; }
.matrix td.pass { background: #e6ffed; } .matrix td.fail { background: #ffeef0; }
.matrix td.na { color: var(--muted); background: #f7f7f7; } .matrix td.missing { color: var(--muted); }
.matrix td .reason { display: block; font-size: .8rem; max-width: 18rem; overflow-wrap: anywhere; }
details.failure-diff { border: 1px solid var(--line); border-radius: 4px; margin: .25rem 0; padding: .15rem .5rem; }
details.failure-diff summary { cursor: pointer; overflow-wrap: anywhere; }
details.failure-diff .reason { color: var(--muted); }
.failure-body { scroll-margin-top: 3rem; }
"""


class Markup:
    """Markup to put in place of a value inside `json_html` output (a link standing for it)."""

    __slots__ = ("html",)

    def __init__(self, html: str) -> None:
        self.html = html


def esc(value: Any) -> str:
    """Text for HTML: escaped, quotes included (it may end up in an attribute)."""
    return escape(str(value), quote=True)


def count(n: int, singular: str, plural: str | None = None) -> str:
    """`1 turn`, `2 turns`, `0 retries` (give `plural` when adding `s` is wrong)."""
    return f"{n} {singular if n == 1 else plural or singular + 's'}"


def usage_line(usage: Mapping[str, Any] | None) -> str:
    """A call's token usage on one line (nested details left out), or nothing."""
    if not usage:
        return ""
    parts = " · ".join(f"{esc(k)} {esc(v)}" for k, v in usage.items() if not isinstance(v, Mapping))
    return f"<div class=\"usage\">usage: {parts}</div>"


def utc_time(epoch: float) -> str:
    """An epoch time (seconds, or milliseconds when it is too large to be seconds) as a UTC
    date a reader can read: `2026-12-01 20:33:07 UTC`. Anything else comes back as given."""
    if not isinstance(epoch, (int, float)) or isinstance(epoch, bool) or not math.isfinite(epoch):
        return str(epoch)
    seconds = epoch / 1000 if abs(epoch) >= 1e11 else epoch  # 1e11 s is the year 5138
    try:
        return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return str(epoch)


def page(title: str, body: Iterable[str], *, wide: bool = False) -> str:
    """A whole document: inline style, no script, nothing fetched. `wide` lets the page use the
    whole window (the conformance matrix) instead of a reading column."""
    body_tag = "<body class=\"wide\">" if wide else "<body>"
    return "".join((
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        f"<title>{esc(title)}</title><style>{_STYLE}</style></head>\n{body_tag}\n",
        *body,
        "\n</body></html>\n",
    ))


def json_block(value: Any, cls: str = "json", *, string: Callable[[str], str | None] | None = None) -> str:
    """A JSON value pretty-printed in a `<pre>`; see `json_html` for `string`."""
    return f"<pre class=\"{cls}\">{json_html(value, string=string)}</pre>"


def json_html(value: Any, *, string: Callable[[str], str | None] | None = None) -> str:
    """`json.dumps(value, indent=2, ensure_ascii=False)`, escaped for HTML. `string` may replace
    a string value by markup of its own (a link to where the same text is already shown): it
    returns the markup, or None to keep the text. Keys are never replaced; a `Markup` value is
    written as it is."""
    out: list[str] = []
    _emit(value, 0, out, string)
    return "".join(out)


def _emit(value: Any, depth: int, out: list[str], string: Callable[[str], str | None] | None) -> None:
    # Mirrors the layout of json.dumps(indent=2) item for item (tests/view/test_html.py checks
    # it). Text inside <pre> needs only <, > and & escaped: quotes stay quotes.
    if isinstance(value, str):
        markup = string(value) if string is not None else None
        out.append(markup if markup is not None else escape(_string(value), quote=False))
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = "\n" + "  " * (depth + 1)
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            out.append(("," if i else "") + inner + escape(_string(_key(key)), quote=False) + ": ")
            _emit(item, depth + 1, out, string)
        out.append("\n" + "  " * depth + "}")
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        inner = "\n" + "  " * (depth + 1)
        out.append("[")
        for i, item in enumerate(value):
            out.append(("," if i else "") + inner)
            _emit(item, depth + 1, out, string)
        out.append("\n" + "  " * depth + "]")
    elif isinstance(value, Markup):
        out.append(value.html)
    elif value is None:
        out.append("null")
    elif value is True or value is False:
        out.append("true" if value else "false")
    elif type(value) is int:
        out.append(str(value))
    else:
        out.append(escape(json.dumps(value), quote=False))


_string: Callable[[str], str] = json.encoder.encode_basestring
"""A string as `json.dumps(s, ensure_ascii=False)` writes it (the same C encoder)."""


def _key(key: Any) -> str:
    """A dict key as `json.dumps` writes it (JSON keys are strings; numbers and constants are
    turned into theirs)."""
    if isinstance(key, str):
        return key
    return str(next(iter(json.loads(json.dumps({key: 0})))))


def diff_block(lines: Sequence[str]) -> str:
    """A unified diff, one block line each: added (`.add`), removed (`.del`), hunk headers
    (`.hunk`) and context (`.ctx`). No newline between the lines: each is a block of its own,
    and a newline inside `<pre>` would add an empty line after every one of them."""
    out = []
    for line in lines:
        if line.startswith(("+++", "---")):
            cls = "file"
        elif line.startswith("+"):
            cls = "add"
        elif line.startswith("-"):
            cls = "del"
        elif line.startswith("@@"):
            cls = "hunk"
        else:
            cls = "ctx"
        out.append(f"<span class=\"{cls}\">{esc(line)}</span>")
    return "<pre class=\"diff\">" + "".join(out) + "</pre>"
