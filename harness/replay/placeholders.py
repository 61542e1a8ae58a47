"""`{{fromRequest:REGEX}}` placeholders: recorded values that must come from the live request.

A recorded call can answer with something the live run mints anew (a goal id, a temp path):
upstream's replay driver writes such a value as `{{fromRequest:REGEX}}` (dsh-testing.md §2.7),
and the replay fills it from the request that asks for the call. Straight into the loop the
request is the harness's own messages; over the wire the mock server only sees the wire
`messages` array. Both are read the same way: every string leaf, joined by newlines.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .entries import ReplayError

__all__ = ["PLACEHOLDER", "fill_from_request", "has_placeholder", "request_strings"]

PLACEHOLDER = "{{fromRequest:"


def has_placeholder(value: Any) -> bool:
    """Whether any string leaf of `value` holds a placeholder."""
    if isinstance(value, str):
        return PLACEHOLDER in value
    if isinstance(value, Mapping):
        return any(has_placeholder(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(has_placeholder(v) for v in value)
    return False


def request_strings(messages: Any) -> str:
    """Every string leaf of the request's messages, in traversal order, joined by newlines."""
    out: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, Mapping):
            for x in v.values():
                walk(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x)

    walk(messages)
    return "\n".join(out)


def _fill_text(text: str, corpus: str) -> str:
    out: list[str] = []
    pos = 0
    while (start := text.find(PLACEHOLDER, pos)) >= 0:
        out.append(text[pos:start])
        body = start + len(PLACEHOLDER)
        close = text.find("}}", body)
        if close < 0:
            raise ReplayError(f"unterminated {PLACEHOLDER}…}} placeholder in {text[start:start + 80]!r}")
        end = close
        while end < len(text) and text[end] == "}":
            end += 1  # the last two braces of the run close it: `\d{4}}}` keeps `{4}`
        pattern = text[body : end - 2]
        try:
            matches = list(re.finditer(pattern, corpus))
        except re.error as exc:
            raise ReplayError(f"invalid regex in {PLACEHOLDER}{pattern}}}}}: {exc}") from None
        if not matches:
            raise ReplayError(
                f"{PLACEHOLDER}{pattern}}}}} matched nothing in the live request's messages; the "
                "request drifted from the recording, or the pattern needs fixing"
            )
        last = matches[-1]
        out.append(last.group(1) if last.re.groups else last.group(0))
        pos = end
    out.append(text[pos:])
    return "".join(out)


def fill_from_request(value: Any, corpus: str) -> Any:
    """Replace `{{fromRequest:REGEX}}` in every string leaf (§2.7): the last match of REGEX in
    `corpus` wins, its first group (or the whole match). Values without a placeholder are
    returned as they are."""
    if isinstance(value, str):
        return _fill_text(value, corpus) if PLACEHOLDER in value else value
    if isinstance(value, Mapping):
        return {k: fill_from_request(v, corpus) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [fill_from_request(v, corpus) for v in value]
    return value
