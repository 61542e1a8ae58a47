"""A session log read back as a timeline: turns, steps, and every model call inside a step.

The log holds everything the seed's walk did (the one rule), so the view needs nothing else: each
call's request is rebuilt from the log alone (`rebuild_requests`, then `serialize` with the default
DeepSeek configuration), its chunks keep their logged arrival times, tool-call arguments stay the
fragments the wire delivered, and retries and failures are the logged `llm/retry` events and
error finishes. Given a mock-server journal, each rebuilt request is compared with the body the
server really received, so a request that reached the model without being logged shows as a diff.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.llm import HarnessError
from harness.loop import rebuild_requests
from harness.providers.deepseek import serialize
from harness.session import LoadedLog, SessionEvent, thaw_json

__all__ = ["CallView", "ChunkPoint", "SessionView", "StepItem", "StepView", "TurnView", "build_session_view", "json_diff"]


@dataclass(frozen=True, slots=True)
class ChunkPoint:
    """One logged stream chunk and when it arrived."""

    t_ms: int
    """Milliseconds since the call's request was sent (the last logged event before its first chunk)."""
    chunk: Mapping[str, Any]
    """The chunk as logged (DSH camelCase JSON)."""


@dataclass(slots=True)
class CallView:
    """One model call (one attempt: a retried step holds several)."""

    number: int
    """1-based position among all calls of the session (the n-th request sent)."""
    request: dict[str, Any] | None
    """The request body rebuilt from the log, or None when it could not be rebuilt."""
    rebuild_error: str | None = None
    sent: dict[str, Any] | None = None
    """The body the server received (from a journal), when one was given."""
    diff: list[str] = field(default_factory=list)
    """Unified diff rebuilt → sent; empty when they agree or no journal was given."""
    chunks: list[ChunkPoint] = field(default_factory=list)

    @property
    def finish(self) -> Mapping[str, Any] | None:
        """The call's `finish` chunk, or None when the stream was cut before one."""
        last = self.chunks[-1].chunk if self.chunks else None
        return last if last is not None and last.get("type") == "finish" else None

    @property
    def usage(self) -> Mapping[str, Any] | None:
        for point in reversed(self.chunks):
            if point.chunk.get("type") == "usage":
                usage: Mapping[str, Any] = point.chunk["usage"]
                return usage
        return None

    def fragments(self) -> dict[int, list[str]]:
        """Tool-call argument fragments by block index, exactly as they arrived."""
        out: dict[int, list[str]] = {}
        for point in self.chunks:
            if point.chunk.get("type") == "tool-call-delta":
                out.setdefault(int(point.chunk["index"]), []).append(str(point.chunk.get("argumentsDelta", "")))
        return out


@dataclass(frozen=True, slots=True)
class StepItem:
    """One thing that happened in a step, in log order: `user`, `call`, `retry`, `tool-call`,
    `tool-result` or `event` (any other logged event, shown by type)."""

    kind: str
    seq: int
    data: Any


@dataclass(slots=True)
class StepView:
    turn: int
    step: int
    items: list[StepItem] = field(default_factory=list)


@dataclass(slots=True)
class TurnView:
    turn: int
    steps: list[StepView] = field(default_factory=list)
    end: Mapping[str, Any] | None = None
    """The `turn/end` reason, or None for a turn the log does not close."""
    outside: list[StepItem] = field(default_factory=list)
    """Events of the turn logged outside any step."""


@dataclass(slots=True)
class SessionView:
    id: str
    cwd: str | None
    turns: list[TurnView]
    calls: list[CallView]
    repaired: int
    """Closers added in memory by crash repair (the file itself is not touched)."""
    journal_extra: int = 0
    """Journal requests beyond the calls the log records."""


_SHOWN_ELSEWHERE = frozenset({"assistant/message", "request/header", "llm/retry-started", "agent/inbox/spliced"})
"""Events the view does not list: the message is the call's stream, the header is in each rebuilt
request, and inbox splices repeat the user message that follows them."""


def json_diff(expected: Any, actual: Any, *, a: str = "rebuilt from log", b: str = "sent") -> list[str]:
    """A unified diff of two JSON values, pretty-printed; empty when they are equal."""
    if expected == actual:
        return []
    left = json.dumps(expected, indent=2, ensure_ascii=False).splitlines()
    right = json.dumps(actual, indent=2, ensure_ascii=False).splitlines()
    return list(difflib.unified_diff(left, right, fromfile=a, tofile=b, lineterm="", n=3))


def _rebuilt_bodies(events: Sequence[SessionEvent], session_id: str) -> tuple[list[dict[str, Any]], str | None]:
    try:
        return [serialize(options) for options in rebuild_requests(events, session_id=session_id)], None
    except (HarnessError, ValueError, KeyError, TypeError) as exc:
        # A log from another harness (DSH logs name their tools instead of carrying schemas) can
        # lack what a rebuild needs; the timeline is still shown, each call saying why.
        return [], f"{type(exc).__name__}: {exc}"


def build_session_view(loaded: LoadedLog, sent: Sequence[Mapping[str, Any]] | None = None) -> SessionView:
    """The timeline of a parsed log; `sent` are the chat request bodies of a journal, in order."""
    session = loaded.session
    events = list(session.events)
    bodies, error = _rebuilt_bodies(events, session.id)
    turns: list[TurnView] = []
    calls: list[CallView] = []
    current_call: CallView | None = None
    call_t0 = 0
    last_time = 0
    turn: TurnView | None = None
    step: StepView | None = None
    tool_names: dict[str, str] = {}

    def place(item: StepItem) -> None:
        nonlocal turn
        if step is not None:
            step.items.append(item)
        else:
            if turn is None:
                turn = TurnView(turn=0)
                turns.append(turn)
            turn.outside.append(item)

    for event in events:
        data = thaw_json(event.data)
        time = event.time if isinstance(event.time, int) else last_time
        if event.type != "assistant/chunk":
            current_call = None  # any other event between chunks ends the call (a cut stream)
        if event.type == "turn/start":
            turn = TurnView(turn=int(data.get("turn", len(turns) + 1)))
            turns.append(turn)
            step = None
        elif event.type == "turn/end":
            if turn is None:
                turn = TurnView(turn=int(data.get("turn", 0)))
                turns.append(turn)
            turn.end = data.get("reason")
            step = None
        elif event.type == "step/start":
            if turn is None:
                turn = TurnView(turn=int(data.get("turn", 0)))
                turns.append(turn)
            step = StepView(turn=int(data.get("turn", turn.turn)), step=int(data.get("step", len(turn.steps) + 1)))
            turn.steps.append(step)
        elif event.type == "step/end":
            step = None
        elif event.type == "assistant/chunk":
            if current_call is None or current_call.finish is not None:
                index = len(calls)
                current_call = CallView(
                    number=index + 1,
                    request=bodies[index] if index < len(bodies) else None,
                    rebuild_error=error,
                )
                if sent is not None and index < len(sent):
                    current_call.sent = dict(sent[index])
                    if current_call.request is not None:
                        current_call.diff = json_diff(current_call.request, current_call.sent)
                calls.append(current_call)
                call_t0 = last_time
                place(StepItem("call", event.seq, current_call))
            current_call.chunks.append(ChunkPoint(t_ms=max(0, time - call_t0), chunk=data["chunk"]))
        elif event.type == "user/message":
            place(StepItem("user", event.seq, data))
        elif event.type == "llm/retry":
            place(StepItem("retry", event.seq, data))
        elif event.type == "tool/call":
            tool_names[str(data.get("callId"))] = str(data.get("name"))
            place(StepItem("tool-call", event.seq, data))
        elif event.type == "tool/result":
            content = (data.get("message") or {}).get("content") or [{}]
            call_id = str(content[0].get("toolCallId")) if content else ""
            place(StepItem("tool-result", event.seq, {**data, "toolName": tool_names.get(call_id, call_id)}))
        elif event.type not in _SHOWN_ELSEWHERE:
            place(StepItem("event", event.seq, {"type": event.type, "data": data}))
        last_time = time
    extra = max(0, len(sent) - len(calls)) if sent is not None else 0
    return SessionView(
        id=session.id, cwd=session.header.cwd, turns=turns, calls=calls,
        repaired=len(loaded.closers), journal_extra=extra,
    )
