"""A session log read back as a timeline: turns, steps, and every model call inside a step.

The log holds everything the seed's walk did (the one rule), so the view needs nothing else: each
call's request is rebuilt from the log alone (`rebuild_requests`, then `serialize` with the default
DeepSeek configuration), its chunks keep their logged arrival times, tool-call arguments stay the
fragments the wire delivered, and retries and failures are the logged `llm/retry` events and
error finishes. DSH's auxiliary session-title request (`session/title-llm-request`, sent beside
step 1, its answer not logged as chunks) is rebuilt and shown at its place too.

Given a mock-server journal, each rebuilt request is compared with the body the server really
received, so a request that reached the model without being logged shows as a diff. Requests
are paired by identity, never by position (the title request runs beside step 1, so it reaches
the server before or after it): first every rebuilt body with a journaled body of the log's
session that equals it, then with an equal body of another session (a request sent without the
session header), and only what is left by likeness, the most alike pairs first.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dshkit.harness.llm import GenerateOptions, HarnessError, Message
from dshkit.harness.loop import rebuild_requests
from dshkit.harness.loop.header import CALL_ENDERS, RequestHeader, title_request
from dshkit.harness.providers.openai_chat.serialize import serialize
from dshkit.harness.session import Session
from dshkit.harness.session.events import (
    CORE_EVENT_TYPES,
    PLUGIN_EVENT_TYPES,
    SURFACE_EVENT_TYPES,
    SessionEvent,
)
from dshkit.harness.session.jsonl import LoadedLog
from dshkit.harness.session.surface import Surface

from .bodies import request_bodies

__all__ = [
    "CallView",
    "ChunkPoint",
    "SentRequest",
    "SessionView",
    "StepItem",
    "StepView",
    "TurnView",
    "build_session_view",
    "json_diff",
    "pair_requests",
]


@dataclass(frozen=True, slots=True)
class ChunkPoint:
    """One logged stream chunk and when it arrived."""

    t_ms: int
    """Milliseconds since the call's request was sent (the last logged event before its first chunk)."""
    chunk: Mapping[str, Any]
    """The chunk as logged (DSH camelCase JSON)."""


@dataclass(frozen=True, slots=True)
class SentRequest:
    """A request body the server received (a journal entry) and the session it named."""

    body: Mapping[str, Any]
    session: str | None = None


@dataclass(slots=True)
class CallView:
    """One model call (one attempt: a retried step holds several), or an auxiliary request."""

    number: int
    """1-based position among the session's calls (or among its auxiliary requests)."""
    request: dict[str, Any] | None
    """The request body rebuilt from the log, or None when it could not be rebuilt."""
    rebuild_error: str | None = None
    sent: dict[str, Any] | None = None
    """The body the server received (from a journal), when one was given."""
    diff: list[str] = field(default_factory=list)
    """Unified diff rebuilt → sent; empty when they agree or no journal was given."""
    chunks: list[ChunkPoint] = field(default_factory=list)
    purpose: str | None = None
    """`session-title` for DSH's title request (no chunks: its answer is not logged as a call)."""

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
    """One thing that happened in a step, in log order: `user`, `call`, `title-request`, `retry`,
    `tool-call`, `tool-result` or `event` (any other logged event, shown by type)."""

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
    """Journal requests of the session that no rebuilt request was paired with."""
    auxiliary: list[CallView] = field(default_factory=list)
    """Requests beside the model calls (DSH's session-title request), in log order."""
    created_at: int | None = None
    """When the session started (epoch milliseconds, from its header)."""


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


_KNOWN_TYPES = CORE_EVENT_TYPES | PLUGIN_EVENT_TYPES


def _trusted(session: Session) -> bool:
    """Whether every event of the parsed `session` is one a fresh strict session would accept
    as it is: no defect kept from a lenient import, no unknown type that is not ignorable. Only
    then may the requests be rebuilt from the parsed session instead of by replaying the log."""
    return all(e.defect is None and (e.ignorable or e.type in _KNOWN_TYPES) for e in session.events)


def rebuild_from_session(session: Session, *, session_id: str) -> list[GenerateOptions]:
    """What `rebuild_requests` returns for `session.events`, computed from the parsed session
    instead of by replaying every event into a fresh one: the history before each call is the
    session's own decoded messages (`message_at`) on the surface as it stood then, so no event is
    validated or decoded a second time. Valid only for a `_trusted` session (a differential test
    holds it to `rebuild_requests`)."""
    events = session.events
    surface = Surface()
    derived: list[Message] = []
    requests: list[GenerateOptions] = []
    header: Any = None
    built: RequestHeader | None = None
    in_call = False
    for event in events:
        type_, data = event.type, event.data
        if type_ == "request/header":
            header, built = data["header"], None
        elif type_ == "session/title-llm-request":
            requests.append(title_request(data, session_id=session_id, where=f"session/title-llm-request seq {event.seq}"))
        if type_ == "assistant/chunk":
            if not in_call:
                if header is None:
                    raise HarnessError("an assistant/chunk precedes any request/header", "REBUILD_FAILED")
                if built is None:
                    built = RequestHeader.from_json(header)  # once per logged header, not per call
                requests.append(built.request(derived, session_id=session_id))
                in_call = True
            if data["chunk"].get("type") == "finish":
                in_call = False
        elif type_ in CALL_ENDERS:
            in_call = False
        if type_ in SURFACE_EVENT_TYPES:
            plan = surface.plan(event, events)
            if plan is not None:
                surface.apply(plan)
                if plan.start_pos is None:
                    message = session.message_at(event.seq)
                    if message is not None:
                        derived.append(message)
                else:  # a replace (compaction): the history is the surface's messages again
                    derived = [m for m in map(session.message_at, surface.nodes) if m is not None]
    return requests


def _rebuilt_bodies(session: Session, session_id: str, *, plain: bool = False) -> tuple[list[dict[str, Any]], str | None]:
    """The body of every model call (title requests left out: `_title_body` rebuilds each of
    those on its own, since it needs no request/header). `plain` rebuilds by replaying the log
    (`rebuild_requests`), the reference path; otherwise a trusted session is rebuilt from what
    parsing it already decoded (`rebuild_from_session`)."""
    try:
        if not plain and _trusted(session):
            rebuilt = rebuild_from_session(session, session_id=session_id)
        else:
            # The events as the mappings `rebuild_requests` also takes, their data left frozen:
            # given `SessionEvent`s it would copy every event's data to read a few fields.
            rows = [{"type": e.type, "seq": e.seq, "time": e.time, "data": e.data, "surfaceOp": e.surface_op,
                     "sourceEventSeqs": e.source_event_seqs, "ignorable": e.ignorable} for e in session.events]
            rebuilt = rebuild_requests(rows, session_id=session_id)
        requests = [options for options in rebuilt if options.purpose != "session-title"]
        return request_bodies(requests), None
    except (HarnessError, ValueError, KeyError, TypeError) as exc:
        # A log from another harness (DSH logs name their tools instead of carrying schemas) can
        # lack what a rebuild needs; the timeline is still shown, each call saying why.
        return [], f"{type(exc).__name__}: {exc}"


def _title_body(event: SessionEvent, data: Any, session_id: str) -> tuple[dict[str, Any] | None, str | None]:
    try:
        options = title_request(data, session_id=session_id, where=f"session/title-llm-request seq {event.seq}")
        return serialize(options), None
    except (HarnessError, ValueError) as exc:
        return None, str(exc)


def _canonical_lines(body: Mapping[str, Any]) -> list[str]:
    return json.dumps(body, indent=1, sort_keys=True, ensure_ascii=False).splitlines()


def _fingerprint(body: Mapping[str, Any]) -> tuple[str, int, str, str]:
    """A cheap key equal bodies share: the model, how many messages, and the last one's role
    and text (strings only: numbers that compare equal may be written differently)."""
    messages = body.get("messages")
    last = messages[-1] if isinstance(messages, list) and messages else None
    if not isinstance(last, Mapping):
        last = {}

    def text(value: Any) -> str:
        return value if isinstance(value, str) else ""

    return (text(body.get("model")), len(messages) if isinstance(messages, list) else -1,
            text(last.get("role")), text(last.get("content")))


def pair_requests(
    rebuilt: Sequence[Mapping[str, Any] | None], sent: Sequence[SentRequest], session_id: str
) -> tuple[list[int | None], list[int]]:
    """Which sent request each rebuilt one was (an index into `sent`, or None), and the sent
    requests of the session left unpaired. By identity, never by position: equal bodies of the
    session first, then equal bodies of any session, then the most alike of the session's own.
    When no sent request names `session_id`, every sent request counts as the session's."""
    own = [i for i, x in enumerate(sent) if x.session == session_id] or list(range(len(sent)))
    mine = set(own)
    others = [i for i in range(len(sent)) if i not in mine]
    pairs: list[int | None] = [None] * len(rebuilt)
    free = set(range(len(sent)))
    for pool in (own, others):
        # Equal bodies have equal fingerprints: only those are compared whole.
        candidates: dict[Any, list[int]] = {}
        for i in pool:
            candidates.setdefault(_fingerprint(sent[i].body), []).append(i)
        for k, body in enumerate(rebuilt):
            if pairs[k] is None and body is not None:
                group = candidates.get(_fingerprint(body), [])
                found = next((i for i in group if i in free and sent[i].body == body), None)
                if found is not None:
                    pairs[k] = found
                    free.discard(found)
                    group.remove(found)
    left = [k for k, body in enumerate(rebuilt) if pairs[k] is None and body is not None]
    if left and any(i in free for i in own):
        lines = {k: _canonical_lines(rebuilt[k] or {}) for k in left}
        sent_lines = {i: _canonical_lines(sent[i].body) for i in own if i in free}
        scored = sorted(
            ((-difflib.SequenceMatcher(None, lines[k], sent_lines[i], autojunk=False).ratio(), k, i)
             for k in left for i in sent_lines),
        )
        for _, k, i in scored:
            if pairs[k] is None and i in free:
                pairs[k] = i
                free.discard(i)
    return pairs, [i for i in own if i in free]


class _Timeline:
    """Walks a log once, placing each event in its turn and step; one method per kind of event."""

    def __init__(self, bodies: list[dict[str, Any]], error: str | None, session_id: str) -> None:
        self.bodies, self.error, self.session_id = bodies, error, session_id
        self.turns: list[TurnView] = []
        self.calls: list[CallView] = []
        self.auxiliary: list[CallView] = []
        self.turn: TurnView | None = None
        self.step: StepView | None = None
        self.call: CallView | None = None
        self.call_t0 = 0
        self.last_time = 0
        self.tool_names: dict[str, str] = {}
        self._handlers = {
            "turn/start": self._turn_start, "turn/end": self._turn_end,
            "step/start": self._step_start, "step/end": self._step_end,
            "assistant/chunk": self._assistant_chunk, "user/message": self._user_message,
            "llm/retry": self._llm_retry, "tool/call": self._tool_call, "tool/result": self._tool_result,
            "session/title-llm-request": self._title_request,
        }

    def feed(self, event: SessionEvent) -> None:
        data = event.data  # frozen JSON (dict and list subclasses): the view only reads it
        time = event.time if isinstance(event.time, int) else self.last_time
        if event.type != "assistant/chunk":
            self.call = None  # any other event between chunks ends the call (a cut stream)
        handler = self._handlers.get(event.type)
        if handler is not None:
            handler(event, data, time)
        elif event.type not in _SHOWN_ELSEWHERE:
            self._place(StepItem("event", event.seq, {"type": event.type, "data": data}))
        self.last_time = time

    def _open_turn(self, number: int) -> TurnView:
        self.turn = TurnView(turn=number)
        self.turns.append(self.turn)
        return self.turn

    def _place(self, item: StepItem) -> None:
        if self.step is not None:
            self.step.items.append(item)
        else:
            (self.turn or self._open_turn(0)).outside.append(item)

    def _turn_start(self, event: SessionEvent, data: Any, time: int) -> None:
        self._open_turn(int(data.get("turn", len(self.turns) + 1)))
        self.step = None

    def _turn_end(self, event: SessionEvent, data: Any, time: int) -> None:
        turn = self.turn or self._open_turn(int(data.get("turn", 0)))
        turn.end = data.get("reason")
        self.step = None

    def _step_start(self, event: SessionEvent, data: Any, time: int) -> None:
        turn = self.turn or self._open_turn(int(data.get("turn", 0)))
        self.step = StepView(turn=int(data.get("turn", turn.turn)), step=int(data.get("step", len(turn.steps) + 1)))
        turn.steps.append(self.step)

    def _step_end(self, event: SessionEvent, data: Any, time: int) -> None:
        self.step = None

    def _assistant_chunk(self, event: SessionEvent, data: Any, time: int) -> None:
        if self.call is None or self.call.finish is not None:
            self.call = self._new_call()
            self.call_t0 = self.last_time
            self._place(StepItem("call", event.seq, self.call))
        self.call.chunks.append(ChunkPoint(t_ms=max(0, time - self.call_t0), chunk=data["chunk"]))

    def _new_call(self) -> CallView:
        index = len(self.calls)
        call = CallView(number=index + 1, request=self.bodies[index] if index < len(self.bodies) else None,
                        rebuild_error=self.error)
        self.calls.append(call)
        return call

    def _title_request(self, event: SessionEvent, data: Any, time: int) -> None:
        body, error = _title_body(event, data, self.session_id)
        call = CallView(number=len(self.auxiliary) + 1, request=body, rebuild_error=error, purpose="session-title")
        self.auxiliary.append(call)
        self._place(StepItem("title-request", event.seq, call))

    def _user_message(self, event: SessionEvent, data: Any, time: int) -> None:
        self._place(StepItem("user", event.seq, data))

    def _llm_retry(self, event: SessionEvent, data: Any, time: int) -> None:
        self._place(StepItem("retry", event.seq, data))

    def _tool_call(self, event: SessionEvent, data: Any, time: int) -> None:
        self.tool_names[str(data.get("callId"))] = str(data.get("name"))
        self._place(StepItem("tool-call", event.seq, data))

    def _tool_result(self, event: SessionEvent, data: Any, time: int) -> None:
        content = (data.get("message") or {}).get("content") or [{}]
        call_id = str(content[0].get("toolCallId")) if content else ""
        self._place(StepItem("tool-result", event.seq, {**data, "toolName": self.tool_names.get(call_id, call_id)}))


def build_session_view(
    loaded: LoadedLog, sent: Sequence[SentRequest | Mapping[str, Any]] | None = None, *, plain: bool = False
) -> SessionView:
    """The timeline of a parsed log; `sent` are the chat requests of a journal (a bare body
    names no session), paired with the rebuilt requests by `pair_requests`. `plain` rebuilds the
    requests by the reference path, replaying the log event by event (`rebuild_requests`): the
    same view, more slowly."""
    session = loaded.session
    events = list(session.events)
    timeline = _Timeline(*_rebuilt_bodies(session, session.id, plain=plain), session.id)
    for event in events:
        timeline.feed(event)
    extra = 0
    if sent is not None:
        received = [x if isinstance(x, SentRequest) else SentRequest(body=x) for x in sent]
        views = timeline.calls + timeline.auxiliary
        pairs, unpaired = pair_requests([v.request for v in views], received, session.id)
        for view, index in zip(views, pairs, strict=True):
            if index is not None:
                view.sent = dict(received[index].body)
                view.diff = json_diff(view.request, view.sent)
        extra = len(unpaired)
    return SessionView(
        id=session.id, cwd=session.header.cwd, turns=timeline.turns, calls=timeline.calls,
        repaired=len(loaded.closers), journal_extra=extra, auxiliary=timeline.auxiliary,
        created_at=session.header.created_at,
    )
