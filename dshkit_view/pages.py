"""The four pages: a session log's timeline, a cassette's or journal's exchanges, and the
scenario × adapter matrix of conformance reports. Each returns one complete HTML document."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .html import diff_block, esc, json_block, page, plot
from .sessions import CallView, SessionView, StepItem, TurnView
from .wire import WireExchange

__all__ = ["matrix_page", "session_page", "wire_page"]

_CHUNK_KIND = {"reasoning-delta": "reasoning", "text-delta": "text", "tool-call-delta": "tool-call"}


def _text_of(blocks: Any) -> str:
    return "".join(b.get("text", "") for b in blocks or () if isinstance(b, Mapping) and b.get("type") == "text")


def _usage(usage: Mapping[str, Any] | None) -> str:
    if not usage:
        return ""
    parts = " · ".join(f"{esc(k)} {esc(v)}" for k, v in usage.items() if not isinstance(v, Mapping))
    return f"<div class=\"usage\">usage: {parts}</div>"


def _stream(call: CallView) -> str:
    """What the model streamed, block by block; argument fragments stay separate spans."""
    out: list[str] = []
    named: set[Any] = set()
    for point in call.chunks:
        chunk = point.chunk
        kind = chunk.get("type")
        if kind in ("reasoning-delta", "text-delta"):
            cls = "reasoning" if kind == "reasoning-delta" else "text"
            out.append(f"<span class=\"{cls}\">{esc(chunk.get('text', ''))}</span>")
        elif kind == "block-start" and chunk.get("blockType") == "tool-call":
            out.append("<br>")
        elif kind == "tool-call-delta":
            name = chunk.get("name")
            if name and chunk.get("index") not in named:  # DeepSeek repeats the name; show it once
                named.add(chunk.get("index"))
                out.append(f"<b class=\"tool-name\">⚙ {esc(name)}</b> ")
            out.append(
                f"<span class=\"fragment\" data-index=\"{esc(chunk.get('index'))}\" "
                f"title=\"fragment at {point.t_ms} ms\">{esc(chunk.get('argumentsDelta', ''))}</span>"
            )
    return "<div class=\"stream\">" + "".join(out) + "</div>"


def _call(call: CallView) -> str:
    finish = call.finish
    reason = finish.get("reason", {}) if finish else {}
    kind = reason.get("kind", "cut") if finish else "cut (no finish)"
    failed = kind in ("error", "aborted", "cut (no finish)")
    span = call.chunks[-1].t_ms if call.chunks else 0
    head = (
        f"<article class=\"call{' failed' if failed else ''}\" data-call=\"{call.number}\" data-finish=\"{esc(kind)}\">"
        f"<h4>Model call {call.number} · finish <span class=\"finish\">{esc(kind)}</span> · "
        f"{len(call.chunks)} chunks · {span} ms</h4>"
    )
    return "".join([head, _request(call), _call_body(call)])


def _request(call: CallView) -> str:
    """The rebuilt request of a call (or why it could not be rebuilt) and its diff to what was sent."""
    parts: list[str] = []
    if call.request is not None:
        verdict = ""
        if call.sent is not None:
            verdict = (" · <span class=\"bad verdict\">differs from what was sent</span>" if call.diff
                       else " · <span class=\"ok verdict\">identical to what was sent</span>")
        parts.append(f"<details class=\"request\"><summary>Request, rebuilt from the log{verdict}</summary>"
                     f"{json_block(call.request)}</details>")
    else:
        parts.append(f"<p class=\"note\">request not rebuilt: {esc(call.rebuild_error or 'no request/header before it')}</p>")
    if call.diff:
        parts.append("<div class=\"request-diff\"><h4>Rebuilt (−) vs sent (+)</h4>" + diff_block(call.diff) + "</div>")
    return "".join(parts)


def _title_request(call: CallView) -> str:
    """DSH's session-title request: thinking off, no tools, sent beside step 1; its answer is
    logged as `session/title`, not as a call."""
    return (f"<article class=\"auxiliary\" data-auxiliary=\"{call.number}\" data-purpose=\"{esc(call.purpose)}\">"
            f"<h4>Session-title request · beside the step's model call; its answer is the next "
            f"<code>session/title</code></h4>{_request(call)}</article>")


def _call_body(call: CallView) -> str:
    finish = call.finish
    reason = finish.get("reason", {}) if finish else {}
    parts: list[str] = []
    parts.append(plot([(float(p.t_ms), _CHUNK_KIND.get(str(p.chunk.get("type")), str(p.chunk.get("type")))) for p in call.chunks]))
    parts.append(_stream(call))
    parts.append(_usage(call.usage))
    if finish and reason.get("kind") == "error":
        error = reason.get("failure") or reason.get("error") or {}
        parts.append(f"<div class=\"failure\">✗ {esc(error.get('code', ''))}"
                     f"{' ' + esc(error.get('status')) if error.get('status') is not None else ''}: "
                     f"{esc(error.get('message', ''))}</div>")
    elif not finish:
        parts.append("<div class=\"failure\">✗ the stream ended without a finish chunk (cancelled or crashed)</div>")
    parts.append("</article>")
    return "".join(parts)


def _item(item: StepItem) -> str:
    data = item.data
    if item.kind == "call":
        return _call(data)
    if item.kind == "title-request":
        return _title_request(data)
    if item.kind == "user":
        text = _text_of(data.get("content"))
        if (data.get("source") or {}).get("kind") == "plugin":
            return f"<details class=\"context\"><summary>runtime context ({len(text)} chars)</summary><pre>{esc(text)}</pre></details>"
        return f"<p class=\"user\" data-seq=\"{item.seq}\">{esc(text)}</p>"
    if item.kind == "retry":
        failure = data.get("failure", {})
        return (f"<p class=\"retry\" data-retry=\"{esc(data.get('retry'))}\">↻ retry {esc(data.get('retry'))} in "
                f"{data.get('delayMs', 0) / 1000:.1f} s after {esc(failure.get('code', ''))}"
                f"{' ' + esc(failure.get('status')) if failure.get('status') is not None else ''}: "
                f"{esc(failure.get('message', ''))}</p>")
    if item.kind == "tool-call":
        return (f"<p class=\"tool-call\" data-call-id=\"{esc(data.get('callId'))}\">⚙ {esc(data.get('name'))} "
                f"<code>{esc(data.get('arguments'))}</code></p>")
    if item.kind == "tool-result":
        content = (data.get("message") or {}).get("content") or [{}]
        block = content[0] if content else {}
        error = bool(block.get("isError"))
        text = _text_of(block.get("content"))
        return (f"<details class=\"tool-result{' error' if error else ''}\" data-call-id=\"{esc(block.get('toolCallId', ''))}\">"
                f"<summary>{'✗' if error else '↳'} result of {esc(data.get('toolName', ''))} "
                f"({len(text.splitlines())} lines)</summary><pre>{esc(text)}</pre></details>")
    return f"<p class=\"event note\">· {esc(data.get('type'))}</p>"


def _turn(turn: TurnView) -> Iterator[str]:
    end = turn.end or {}
    kind = end.get("kind", "not closed")
    extra = ""
    if kind == "error":
        extra = f" ({esc((end.get('error') or {}).get('code', ''))}: {esc((end.get('error') or {}).get('message', ''))})"
    title = (f"Turn {turn.turn} · <span class=\"turn-end\">{esc(kind)}</span>{extra}" if turn.turn
             else "Before the first turn")
    yield f"<section class=\"turn\" data-turn=\"{turn.turn}\"><h2>{title}</h2>"
    yield from (_item(item) for item in turn.outside)
    for step in turn.steps:
        yield f"<section class=\"step\" data-step=\"{step.step}\"><h3>Step {step.step}</h3>"
        yield from (_item(item) for item in step.items)
        yield "</section>"
    yield "</section>"


def session_page(view: SessionView, *, source: str, journal: str | None = None) -> str:
    tool_calls = sum(1 for t in view.turns for s in t.steps for i in s.items if i.kind == "tool-call")
    retries = sum(1 for t in view.turns for s in t.steps for i in s.items if i.kind == "retry")
    failures = sum(1 for c in view.calls if not c.finish or c.finish.get("reason", {}).get("kind") == "error")
    differing = sum(1 for c in [*view.calls, *view.auxiliary] if c.diff)
    head = [
        f"<header><h1>Session {esc(view.id)}</h1><p class=\"meta\">{esc(source)}"
        f"{' · cwd ' + esc(view.cwd) if view.cwd else ''}"
        f"{' · compared with journal ' + esc(journal) if journal else ''}</p>",
        "<p class=\"summary\">"
        f"<span data-count=\"turns\">{len(view.turns)} turns</span>"
        f"<span data-count=\"calls\">{len(view.calls)} model calls</span>"
        + (f"<span data-count=\"auxiliary\">{len(view.auxiliary)} auxiliary requests</span>" if view.auxiliary else "")
        +
        f"<span data-count=\"tool-calls\">{tool_calls} tool calls</span>"
        f"<span data-count=\"retries\">{retries} retries</span>"
        f"<span data-count=\"failures\">{failures} failed calls</span>",
    ]
    if journal:
        head.append(f"<span data-count=\"differing\" class=\"{'bad' if differing else 'ok'}\">"
                    f"{differing} requests differ from what was sent</span>")
    head.append("</p>")
    if view.repaired:
        head.append(f"<p class=\"note\">the log ends mid-turn: {view.repaired} closing event(s) added in memory for this view</p>")
    if view.journal_extra:
        head.append(f"<p class=\"bad\">the journal holds {view.journal_extra} request(s) of this session that no "
                    "rebuilt request matches</p>")
    head.append("</header><main>")
    body = head + [part for turn in view.turns for part in _turn(turn)] + ["</main>"]
    return page(f"dshkit view · session {view.id}", body)


def _exchange(x: WireExchange) -> str:
    failed = x.status is not None and int(x.status) >= 400
    points = [(d.t_ms, d.kind) for d in x.deltas]
    stream: list[str] = []
    for d in x.deltas:
        if d.kind == "tool-call":
            stream.append(f"<span class=\"fragment\" data-index=\"{d.index}\" title=\"at {d.t_ms:.1f} ms\">{esc(d.text)}</span>")
        elif d.kind in ("content", "reasoning"):
            stream.append(f"<span class=\"{'text' if d.kind == 'content' else 'reasoning'}\">{esc(d.text)}</span>")
        elif d.kind == "error":
            stream.append(f"<div class=\"failure\">✗ {esc(d.text)}</div>")
    return (
        f"<article class=\"exchange call{' failed' if failed else ''}\" data-exchange=\"{x.number}\" data-status=\"{esc(x.status)}\">"
        f"<h4>#{x.number} {esc(x.method)} {esc(x.path)} → <span class=\"status\">{esc(x.status)}</span>"
        f" <span class=\"note\">{esc(x.note)}</span></h4>"
        f"<details class=\"request\"><summary>Request body</summary>{json_block(x.body)}</details>"
        f"{plot(points, label='SSE events by arrival')}"
        f"<div class=\"stream\">{''.join(stream)}</div>{_usage(x.usage)}</article>"
    )


def wire_page(kind: str, source: str, exchanges: Sequence[WireExchange], meta: Mapping[str, Any] | None = None) -> str:
    head = [f"<header><h1>{esc(kind.capitalize())} {esc(source)}</h1>"]
    if meta:
        head.append("<p class=\"meta\">" + " · ".join(f"{esc(k)}: {esc(v)}" for k, v in meta.items()) + "</p>")
    failed = sum(1 for x in exchanges if x.status is not None and int(x.status) >= 400)
    head.append(f"<p class=\"summary\"><span data-count=\"exchanges\">{len(exchanges)} exchanges</span>"
                f"<span data-count=\"failures\">{failed} HTTP errors</span></p></header><main>")
    return page(f"dshkit view · {kind} {source}", head + [_exchange(x) for x in exchanges] + ["</main>"])


def matrix_page(reports: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """Rows are scenario ids (catalogue order of the first report), columns one per report."""
    columns = [str(doc.get("adapter") or doc.get("server") or name) for name, doc in reports]
    order: list[str] = []
    cells: dict[tuple[str, int], Mapping[str, Any]] = {}
    for col, (_, doc) in enumerate(reports):
        for scenario in doc.get("scenarios", ()):
            sid = str(scenario.get("id"))
            if sid not in order:
                order.append(sid)
            cells[(sid, col)] = scenario
    rows = ["<table class=\"matrix\"><thead><tr><th>scenario</th>"
            + "".join(f"<th>{esc(c)}</th>" for c in columns) + "</tr></thead><tbody>"]
    diffs: list[str] = []
    for sid in order:
        row = [f"<tr data-scenario=\"{esc(sid)}\"><th>{esc(sid)}</th>"]
        for col in range(len(columns)):
            cell = cells.get((sid, col))
            status = str(cell.get("status")) if cell else "—"
            cls = {"pass": "pass", "fail": "fail", "n/a": "na"}.get(status, "na")
            if cell and status == "fail":
                anchor = f"d-{col}-{sid}"
                row.append(f"<td class=\"{cls}\"><a href=\"#{esc(anchor)}\">fail</a></td>")
                diffs.append(f"<section class=\"failure-diff\" id=\"{esc(anchor)}\"><h3>{esc(sid)} · {esc(columns[col])}</h3>"
                             f"{diff_block(str(cell.get('diff', '')).splitlines())}</section>")
            else:
                row.append(f"<td class=\"{cls}\">{esc(status)}</td>")
        rows.append("".join(row) + "</tr>")
    rows.append("</tbody></table>")
    summary = " · ".join(
        f"{esc(c)}: " + ", ".join(f"{esc(k)} {esc(v)}" for k, v in (doc.get("summary") or {}).items())
        for c, (_, doc) in zip(columns, reports, strict=True)
    )
    body = [f"<header><h1>Conformance: {len(order)} scenarios × {len(columns)} adapters</h1>"
            f"<p class=\"summary\">{summary}</p></header><main>", *rows, "<h2>Failures</h2>",
            *(diffs or ["<p class=\"ok\">no failures</p>"]), "</main>"]
    return page("dshkit view · conformance", body)


