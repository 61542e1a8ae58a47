"""Request bodies shown as what each adds to the one before it, linking to what is already shown.

An agent's request k holds request k-1's messages plus what step k-1 added (the answer, tool
results, the next user text), so printing every body whole makes a page grow with steps². A
`RequestDeltas` remembers the last body of each thread (a session's model calls, its title
requests, a journal's sessions) and prints the next one as JSON with what did not change
replaced by links: fields equal to the last body's link to where their value was printed, and
the messages the last body already held are one line linking to it; only new messages are
printed. Long strings inside them that the page already shows (a tool result, an answer) link
there too, through the page's `Shown`. A body that is not a chat request (no `messages` list)
is printed whole, its long strings still linked.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .html import Markup, count, esc, json_html
from .shown import MIN_LINKED, Shown

__all__ = ["RequestDeltas"]


@dataclass(slots=True)
class _Last:
    anchor: str
    label: str
    body: Mapping[str, Any]
    messages: list[Any]
    fields: dict[str, tuple[str, str] | None]
    """Each field's anchor and label: where its current value is printed; None for a value
    short enough to print again rather than link."""


def _common_prefix(before: list[Any], now: list[Any]) -> int:
    n = len(before)
    if n <= len(now) and before == now[:n]:  # the usual case: the history only grew
        return n
    i = 0
    while i < min(n, len(now)) and before[i] == now[i]:
        i += 1
    return i


def _short(value: Any) -> bool:
    """A value that costs about what a link to it costs (the model's name, `stream: true`)."""
    if isinstance(value, (dict, list)):
        return len(value) <= 2 and len(json.dumps(value, ensure_ascii=False, default=str)) < MIN_LINKED
    return not isinstance(value, str) or len(value) < MIN_LINKED


def _link(anchor: str, text: str) -> str:
    return f"<a class=\"ref\" href=\"#{esc(anchor)}\">⤴ {esc(text)}</a>"


class RequestDeltas:
    """Prints each request of a page as its change from the last request of its thread."""

    __slots__ = ("_last", "_shown")

    def __init__(self, shown: Shown) -> None:
        self._shown = shown
        self._last: dict[str, _Last] = {}

    def _strings(self, anchor: str, label: str) -> Any:
        shown = self._shown

        def string(text: str) -> str | None:
            linked = shown.link(text)
            if linked is None:
                shown.note(text, anchor, label)
            return linked

        return string

    def render(self, body: Any, *, anchor: str, label: str, thread: str = "") -> str:
        """The body as a `<pre>` whose element has id `anchor`; `label` names it in the links
        later requests make to it (`call 3's request`)."""
        string = self._strings(anchor, label)
        messages = body.get("messages") if isinstance(body, Mapping) else None
        if not isinstance(body, Mapping) or not isinstance(messages, list):
            return (f"<div class=\"request-body\" id=\"{esc(anchor)}\">"
                    f"<pre class=\"json\">{json_html(body, string=string)}</pre></div>")
        last = self._last.get(thread)
        shown: dict[str, Any] = {}
        fields: dict[str, tuple[str, str] | None] = {}
        for key, value in body.items():
            if key == "messages":
                continue
            unchanged = last is not None and key in last.body and (last.body[key] is value or last.body[key] == value)
            place = last.fields[key] if unchanged and last is not None else None
            if place is not None:
                fields[key] = place
                shown[key] = Markup(_link(place[0], f"as in {place[1]}"))
            else:
                # Printed here: linked from later requests unless it is as short as the link.
                fields[key] = None if (unchanged or _short(value)) else (anchor, label)
                shown[key] = value
        kept = _common_prefix(last.messages, messages) if last is not None else 0
        new = messages[kept:]
        if kept and last is not None:
            span = "message 1" if kept == 1 else f"messages 1–{kept}"
            shown["messages"] = [Markup(_link(last.anchor, f"{span} as in {last.label}")), *new]
        else:
            shown["messages"] = messages
        ordered = {key: shown[key] for key in body}  # the body's own key order
        notes: list[str] = []
        if last is not None:
            dropped = [key for key in last.body if key not in body]
            if dropped:
                notes.append("no longer sent: " + ", ".join(f"<code>{esc(k)}</code>" for k in dropped))
            if kept < len(last.messages):
                notes.append(f"from message {kept + 1} on, the history differs from {esc(last.label)} "
                             "(compacted or rewritten)")
            elif kept:
                notes.append(f"{count(len(new), 'new message')} after {esc(last.label)}" if new
                             else f"no new message since {esc(last.label)}")
        self._last[thread] = _Last(anchor=anchor, label=label, body=body, messages=messages, fields=fields)
        note = f"<p class=\"same\">{'; '.join(notes)}</p>" if notes else ""
        return (f"<div class=\"request-body\" id=\"{esc(anchor)}\">{note}"
                f"<pre class=\"json\">{json_html(ordered, string=string)}</pre></div>")
