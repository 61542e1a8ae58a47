"""The page of a session log: its turns and steps, each model call with its rebuilt request, the
chunks as they arrived, tool calls and results, retries and failures.

Everything is printed once. A call's stream shows each block apart (reasoning, answer, each
tool call with its argument fragments); a tool result, a user text and an answer are printed
where they happened, and the requests that carry them again link back there (`Shown`,
`RequestDeltas`), so the page grows with the log, not with its square.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .html import count, diff_block, esc, page, usage_line, utc_time
from .plot import Arrival, arrival_plot
from .request_delta import RequestDeltas
from .sessions import CallView, SessionView, StepItem, TurnView
from .shown import Shown

__all__ = ["session_page"]

_CHUNK_KIND = {"reasoning-delta": "reasoning", "text-delta": "text", "tool-call-delta": "tool-call"}
_BLOCK_LABEL = {"reasoning": "reasoning", "text": "answer"}
_FAILED = ("error", "aborted", "cut (no finish)")
"""Finish kinds of a call that did not complete: it is drawn in red and counted as failed."""


def _text_of(blocks: Any) -> str:
    return "".join(b.get("text", "") for b in blocks or () if isinstance(b, Mapping) and b.get("type") == "text")


def _size(chunk: Mapping[str, Any]) -> int:
    text = chunk.get("text") if chunk.get("type") != "tool-call-delta" else chunk.get("argumentsDelta")
    return len(text.encode("utf-8", "replace")) if isinstance(text, str) else 0


def _finish_kind(call: CallView) -> str:
    finish = call.finish
    return str((finish.get("reason") or {}).get("kind", "cut")) if finish else "cut (no finish)"


class _Page:
    """One session page being written: what is shown already, and the requests so far."""

    def __init__(self, view: SessionView) -> None:
        self.view = view
        self.shown = Shown()
        self.requests = RequestDeltas(self.shown)
        self.step = 0

    # --- a call's stream ---------------------------------------------------------------------

    def stream(self, call: CallView) -> str:
        """What the model streamed, one box per block: reasoning, answer, each tool call (its
        argument fragments kept apart, as the wire delivered them)."""
        blocks: dict[Any, list[str]] = {}
        kinds: dict[Any, str] = {}
        texts: dict[Any, list[str]] = {}
        names: dict[Any, str] = {}
        for point in call.chunks:
            chunk = point.chunk
            type_ = chunk.get("type")
            index = chunk.get("index")
            if type_ == "block-start":
                kinds.setdefault(index, str(chunk.get("blockType")))
                blocks.setdefault(index, [])
                continue
            kind = _CHUNK_KIND.get(str(type_))
            if kind is None:
                continue
            kinds.setdefault(index, kind)
            parts = blocks.setdefault(index, [])
            if kind == "tool-call":
                if chunk.get("name") and index not in names:  # DeepSeek repeats the name; show it once
                    names[index] = str(chunk["name"])
                piece = str(chunk.get("argumentsDelta", ""))
                parts.append(f"<span class=\"fragment\" data-index=\"{esc(index)}\" "
                             f"title=\"fragment at {point.t_ms} ms\">{esc(piece)}</span>")
            else:
                piece = str(chunk.get("text", ""))
                parts.append(f"<span class=\"{kind}\">{esc(piece)}</span>")
            texts.setdefault(index, []).append(piece)
        out: list[str] = []
        first_of: dict[str, str] = {}
        joined: dict[str, list[str]] = {}
        for index, parts in blocks.items():
            kind = kinds.get(index, "other")
            anchor = f"call-{call.number}-b{index}"
            if kind == "tool-call":
                name = names.get(index, "")
                label = f"⚙ {esc(name)}" if name else "⚙ tool call"
                self.shown.note("".join(texts.get(index, ())), anchor, f"arguments of {name or 'a tool call'} in call {call.number}")
            else:
                label = esc(_BLOCK_LABEL.get(kind, kind))
                first_of.setdefault(kind, anchor)
                joined.setdefault(kind, []).extend(texts.get(index, ()))
            cls = kind if kind in ("reasoning", "text", "tool-call") else "other"
            out.append(f"<div class=\"block {cls}\" id=\"{esc(anchor)}\" data-block=\"{esc(index)}\">"
                       f"<span class=\"label\">{label}</span>{''.join(parts)}</div>")
        for kind, anchor in first_of.items():
            # The next request carries this call's text again (`content`, `reasoning_content`).
            self.shown.note("".join(joined[kind]), anchor, f"{_BLOCK_LABEL.get(kind, kind)} of call {call.number}")
        return "<div class=\"stream\">" + "".join(out) + "</div>"

    # --- requests ----------------------------------------------------------------------------

    def request(self, call: CallView, *, anchor: str, label: str, thread: str) -> str:
        """The rebuilt request (as what it adds to the one before), or why it could not be
        rebuilt, and its diff to what the server received."""
        parts: list[str] = []
        if call.request is not None:
            verdict = ""
            if call.sent is not None:
                verdict = (" · <span class=\"bad verdict\">differs from what was sent</span>" if call.diff
                           else " · <span class=\"ok verdict\">identical to what was sent</span>")
            body = self.requests.render(call.request, anchor=anchor, label=label, thread=thread)
            parts.append(f"<details class=\"request\"><summary>Request, rebuilt from the log{verdict}</summary>"
                         f"{body}</details>")
        else:
            parts.append(f"<p class=\"note\">request not rebuilt: {esc(call.rebuild_error or 'no request/header before it')}</p>")
        if call.diff:
            parts.append("<div class=\"request-diff\"><h4>Rebuilt (−) vs sent (+)</h4>" + diff_block(call.diff) + "</div>")
        return "".join(parts)

    def call(self, call: CallView) -> str:
        kind = _finish_kind(call)
        failed = kind in _FAILED
        span = call.chunks[-1].t_ms if call.chunks else 0
        parts = [
            f"<article class=\"call{' failed' if failed else ''}\" id=\"call-{call.number}\" "
            f"data-call=\"{call.number}\" data-finish=\"{esc(kind)}\">"
            f"<h4>Model call {call.number} · finish <span class=\"finish\">{esc(kind)}</span> · "
            f"{count(len(call.chunks), 'chunk')} · {span} ms</h4>",
            self.request(call, anchor=f"req-{call.number}", label=f"call {call.number}'s request", thread="calls"),
            arrival_plot([Arrival(float(p.t_ms), _CHUNK_KIND.get(str(p.chunk.get("type")), str(p.chunk.get("type"))),
                                  _size(p.chunk)) for p in call.chunks]),
            self.stream(call),
            usage_line(call.usage),
        ]
        reason = (call.finish or {}).get("reason") or {}
        if kind in ("error", "aborted"):
            error = reason.get("failure") or reason.get("error") or {}
            status = f" {esc(error.get('status'))}" if error.get("status") is not None else ""
            parts.append(f"<div class=\"failure\">✗ {esc(error.get('code', kind))}{status}: {esc(error.get('message', ''))}</div>")
        elif call.finish is None:
            parts.append("<div class=\"failure\">✗ the stream ended without a finish chunk (cancelled or crashed)</div>")
        parts.append("</article>")
        return "".join(parts)

    def title_request(self, call: CallView) -> str:
        """DSH's session-title request: thinking off, no tools, sent beside step 1; its answer is
        logged as `session/title`, not as a call."""
        return (f"<article class=\"auxiliary\" id=\"aux-{call.number}\" data-auxiliary=\"{call.number}\" "
                f"data-purpose=\"{esc(call.purpose)}\"><h4>Session-title request · beside the step's model call; "
                f"its answer is the next <code>session/title</code></h4>"
                f"{self.request(call, anchor=f'aux-req-{call.number}', label=f'title request {call.number}', thread='title')}"
                "</article>")

    # --- the other items of a step -----------------------------------------------------------

    def item(self, item: StepItem) -> str:
        data = item.data
        anchor = f"e{item.seq}"
        if item.kind == "call":
            return self.call(data)
        if item.kind == "title-request":
            return self.title_request(data)
        if item.kind == "user":
            text = _text_of(data.get("content"))
            if (data.get("source") or {}).get("kind") == "plugin":
                body = self.shown.text_or_link(text, anchor, f"runtime context (seq {item.seq})")
                return (f"<details class=\"context\" id=\"{anchor}\"><summary>runtime context "
                        f"({count(len(text), 'character')})</summary><pre>{body}</pre></details>")
            body = self.shown.text_or_link(text, anchor, f"user text (seq {item.seq})")
            return f"<p class=\"user\" id=\"{anchor}\" data-seq=\"{item.seq}\">{body}</p>"
        if item.kind == "retry":
            failure = data.get("failure", {})
            status = f" {esc(failure.get('status'))}" if failure.get("status") is not None else ""
            return (f"<p class=\"retry\" data-retry=\"{esc(data.get('retry'))}\">↻ retry {esc(data.get('retry'))} in "
                    f"{data.get('delayMs', 0) / 1000:.1f} s after {esc(failure.get('code', ''))}{status}: "
                    f"{esc(failure.get('message', ''))}</p>")
        if item.kind == "tool-call":
            arguments = self.shown.text_or_link(str(data.get("arguments")), anchor, f"arguments of {data.get('name')}")
            return (f"<p class=\"tool-call\" id=\"{anchor}\" data-call-id=\"{esc(data.get('callId'))}\">"
                    f"⚙ {esc(data.get('name'))} <code>{arguments}</code></p>")
        if item.kind == "tool-result":
            content = (data.get("message") or {}).get("content") or [{}]
            block = content[0] if content else {}
            error = bool(block.get("isError"))
            text = _text_of(block.get("content"))
            name = data.get("toolName", "")
            body = self.shown.text_or_link(text, anchor, f"result of {name} (step {self.step})")
            return (f"<details class=\"tool-result{' error' if error else ''}\" id=\"{anchor}\" "
                    f"data-call-id=\"{esc(block.get('toolCallId', ''))}\">"
                    f"<summary>{'✗' if error else '↳'} result of {esc(name)} "
                    f"({count(len(text.splitlines()), 'line')})</summary><pre>{body}</pre></details>")
        return f"<p class=\"event note\">· {esc(data.get('type'))}</p>"

    def turn(self, turn: TurnView) -> Iterator[str]:
        end = turn.end or {}
        kind = end.get("kind", "not closed")
        extra = ""
        if kind == "error":
            error = end.get("error") or {}
            extra = f" ({esc(error.get('code', ''))}: {esc(error.get('message', ''))})"
        title = (f"Turn {turn.turn} · <span class=\"turn-end\">{esc(kind)}</span>{extra}" if turn.turn
                 else "Before the first turn")
        yield f"<section class=\"turn\" data-turn=\"{turn.turn}\"><h2>{title}</h2>"
        yield from (self.item(item) for item in turn.outside)
        for step in turn.steps:
            self.step = step.step
            yield f"<section class=\"step\" data-step=\"{step.step}\"><h3>Step {step.step}</h3>"
            yield from (self.item(item) for item in step.items)
            yield "</section>"
        yield "</section>"

    def header(self, source: str, journal: str | None) -> list[str]:
        view = self.view
        steps = [s for t in view.turns for s in t.steps]
        tool_calls = sum(1 for s in steps for i in s.items if i.kind == "tool-call")
        retries = sum(1 for s in steps for i in s.items if i.kind == "retry")
        failures = sum(1 for c in view.calls if _finish_kind(c) in _FAILED)
        differing = sum(1 for c in [*view.calls, *view.auxiliary] if c.diff)
        meta = [esc(source)]
        if view.created_at is not None:
            meta.append(f"started {esc(utc_time(view.created_at))}")
        if view.cwd:
            meta.append(f"cwd {esc(view.cwd)}")
        if journal:
            meta.append(f"compared with journal {esc(journal)}")
        head = [
            f"<header><h1>Session {esc(view.id)}</h1><p class=\"meta\">{' · '.join(meta)}</p><p class=\"summary\">",
            f"<span data-count=\"turns\">{count(len(view.turns), 'turn')}</span>",
            f"<span data-count=\"calls\">{count(len(view.calls), 'model call')}</span>",
        ]
        if view.auxiliary:
            head.append(f"<span data-count=\"auxiliary\">{count(len(view.auxiliary), 'auxiliary request')}</span>")
        head += [
            f"<span data-count=\"tool-calls\">{count(tool_calls, 'tool call')}</span>",
            f"<span data-count=\"retries\">{count(retries, 'retry', 'retries')}</span>",
            f"<span data-count=\"failures\" class=\"{'bad' if failures else ''}\">{count(failures, 'failed call')}</span>",
        ]
        if journal:
            verb = "differs" if differing == 1 else "differ"
            head.append(f"<span data-count=\"differing\" class=\"{'bad' if differing else 'ok'}\">"
                        f"{count(differing, 'request')} {verb} from what was sent</span>")
        head.append("</p>")
        if view.repaired:
            head.append(f"<p class=\"note\">the log ends mid-turn: {count(view.repaired, 'closing event')} "
                        "added in memory for this view</p>")
        if view.journal_extra:
            head.append(f"<p class=\"bad\">the journal holds {count(view.journal_extra, 'request')} of this session "
                        "that no rebuilt request matches</p>")
        head.append("</header><main>")
        return head


def session_page(view: SessionView, *, source: str, journal: str | None = None) -> str:
    writer = _Page(view)
    body = writer.header(source, journal)
    for turn in view.turns:
        body.extend(writer.turn(turn))
    body.append("</main>")
    return page(f"dshkit view · session {view.id}", body)
