"""The page of a cassette or a mock-server journal: each exchange as it crossed the wire.

Per exchange: the request (as what it adds to the last request of its session, see
`RequestDeltas`), the status and how the exchange ended, the SSE events over time, and the
streamed text with reasoning, answer and each tool call's argument fragments in boxes of their
own. An exchange failed when the status is an HTTP error or the server broke the stream off
(a journal's `reset`, `stalled`, `closed`, `server_error`, `rejected`); the header counts both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .html import count, esc, page, usage_line, utc_time
from .plot import Arrival, arrival_plot
from .request_delta import RequestDeltas
from .shown import Shown
from .wire import WireDelta, WireExchange

__all__ = ["BROKEN_OUTCOMES", "exchange_failed", "wire_page"]

BROKEN_OUTCOMES = frozenset({"reset", "stalled", "closed", "server_error", "rejected"})
"""Journal outcomes of an exchange the server did not finish: each counts as a failure. (A
`client_closed` exchange was ended by the client, on purpose or not, and is shown as such.)"""

_LABEL = {"reasoning": "reasoning", "content": "answer"}


def exchange_failed(x: WireExchange) -> bool:
    return (x.status is not None and x.status >= 400) or x.outcome in BROKEN_OUTCOMES


def _meta(meta: Mapping[str, Any]) -> str:
    """A cassette's header fields in words: dates as dates, flags as what they mean."""
    parts: list[str] = []
    for key, value in meta.items():
        if key == "type":
            continue
        if key == "scrubbed" and isinstance(value, bool):
            parts.append("secrets scrubbed" if value else "secrets NOT scrubbed")
        elif key == "version":
            parts.append(f"format version {esc(value)}")
        elif key.endswith("_at") and isinstance(value, (int, float)) and not isinstance(value, bool):
            parts.append(f"{esc(key.removesuffix('_at').replace('_', ' '))} {esc(utc_time(value))}")
        elif isinstance(value, bool):
            parts.append(f"{esc(key)}: {'yes' if value else 'no'}")
        else:
            parts.append(f"{esc(key)}: {esc(value)}")
    return " · ".join(parts)


def _size(d: WireDelta) -> int:
    return len(d.text.encode("utf-8", "replace")) if d.kind in ("content", "reasoning", "tool-call") else 0


def _stream(x: WireExchange, shown: Shown) -> str:
    """The streamed deltas, one box per run of one kind (and per tool call). The answer and
    reasoning texts are noted in `shown`: the next request of the session carries them again."""
    out: list[str] = []
    open_key: tuple[str, int | None] | None = None
    texts: dict[str, list[str]] = {}
    anchors: set[str] = set()
    for d in x.deltas:
        if d.kind == "error":
            if open_key is not None:
                out.append("</div>")
                open_key = None
            out.append(f"<div class=\"failure\">✗ {esc(d.text)}</div>")
            continue
        if d.kind not in ("content", "reasoning", "tool-call"):
            continue
        key = (d.kind, d.index if d.kind == "tool-call" else None)
        if key != open_key:
            if open_key is not None:
                out.append("</div>")
            cls = {"content": "text"}.get(d.kind, d.kind)
            label = f"⚙ {esc(d.name)}" if d.kind == "tool-call" and d.name else (
                "⚙ tool call" if d.kind == "tool-call" else _LABEL[d.kind])
            anchor = f"x{x.number}-{cls}" if d.kind != "tool-call" else f"x{x.number}-call{d.index}"
            id_attr = "" if anchor in anchors else f" id=\"{anchor}\""
            anchors.add(anchor)
            out.append(f"<div class=\"block {cls}\"{id_attr}><span class=\"label\">{label}</span>")
            open_key = key
        if d.kind != "tool-call":
            texts.setdefault(d.kind, []).append(d.text)
        if d.kind == "tool-call":
            out.append(f"<span class=\"fragment\" data-index=\"{d.index}\" title=\"at {d.t_ms:.1f} ms\">{esc(d.text)}</span>")
        else:
            out.append(f"<span class=\"{'text' if d.kind == 'content' else 'reasoning'}\">{esc(d.text)}</span>")
    if open_key is not None:
        out.append("</div>")
    for kind, pieces in texts.items():
        shown.note("".join(pieces), f"x{x.number}-{'text' if kind == 'content' else kind}", f"{_LABEL[kind]} of #{x.number}")
    return "<div class=\"stream\">" + "".join(out) + "</div>"


def _exchange(x: WireExchange, shown: Shown, requests: RequestDeltas, first_s: float | None) -> str:
    failed = exchange_failed(x)
    points = [Arrival(d.t_ms, d.kind, _size(d)) for d in x.deltas]
    ended = ""
    if x.outcome is not None:
        ended = f" · <span class=\"outcome{' bad' if x.outcome in BROKEN_OUTCOMES else ''}\">{esc(x.outcome)}</span>"
    when = f" · at +{x.started_s - first_s:.2f} s" if x.started_s is not None and first_s is not None else ""
    note = f"<p class=\"note\">{esc(x.note)}{when}</p>" if x.note or when else ""
    body = requests.render(x.body, anchor=f"x{x.number}-req", label=f"request #{x.number}", thread=x.session or "")
    return (
        f"<article class=\"exchange call{' failed' if failed else ''}\" id=\"x{x.number}\" data-exchange=\"{x.number}\" "
        f"data-status=\"{esc(x.status)}\" data-outcome=\"{esc(x.outcome or '')}\">"
        f"<h4>#{x.number} {esc(x.method)} {esc(x.path)} → <span class=\"status\">{esc(x.status)}</span>{ended}</h4>"
        f"{note}<details class=\"request\"><summary>Request body</summary>{body}</details>"
        f"{arrival_plot(points, label='SSE events by arrival')}{_stream(x, shown)}{usage_line(x.usage)}</article>"
    )


def wire_page(kind: str, source: str, exchanges: Sequence[WireExchange], meta: Mapping[str, Any] | None = None) -> str:
    head = [f"<header><h1>{esc(kind.capitalize())} {esc(source)}</h1>"]
    if meta:
        head.append(f"<p class=\"meta\">{_meta(meta)}</p>")
    errors = sum(1 for x in exchanges if x.status is not None and x.status >= 400)
    broken = sum(1 for x in exchanges if x.outcome in BROKEN_OUTCOMES and not (x.status is not None and x.status >= 400))
    failed = errors + broken
    detail = ", ".join(part for part in (count(errors, "HTTP error") if errors else "",
                                         f"{broken} broken off by the server" if broken else "") if part)
    head.append(f"<p class=\"summary\"><span data-count=\"exchanges\">{count(len(exchanges), 'exchange')}</span>"
                f"<span data-count=\"failures\" class=\"{'bad' if failed else ''}\">{count(failed, 'failed exchange')}"
                f"{f' ({detail})' if detail else ''}</span></p></header><main>")
    shown = Shown()
    requests = RequestDeltas(shown)
    starts = [x.started_s for x in exchanges if x.started_s is not None]
    first = min(starts) if starts else None
    return page(f"dshkit view · {kind} {source}",
                head + [_exchange(x, shown, requests, first) for x in exchanges] + ["</main>"])
