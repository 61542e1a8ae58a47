"""`rebuild_from_session` (the view's fast path: requests rebuilt from what parsing the log
already decoded) against `rebuild_requests` (the reference: the log replayed event by event),
over generated sessions and real logs; and the page is the same either way."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from dshkit.harness.llm import (
    AssistantMessage,
    Finish,
    FinishReason,
    HarnessError,
    TextBlock,
    ToolCallBlock,
    ToolSchema,
    UserMessage,
)
from dshkit.harness.llm.chunks import ReasoningDelta, TextDelta
from dshkit.harness.llm.codec import message_to_json
from dshkit.harness.llm.messages import ModelSource, ToolResultMessage
from dshkit.harness.loop import rebuild_requests
from dshkit.harness.loop.header import RequestHeader
from dshkit.harness.session import Session, SessionHeader, parse_session_log
from dshkit.harness.session.jsonl import dump_session
from dshkit.view import render_paths
from dshkit.view.sessions import _trusted, rebuild_from_session

from ..conftest import DSH_UPSTREAM
from .conftest import Walk

TEXT = st.text(max_size=8)
TOOLS = (ToolSchema(name="read", description="Read a file.", parameters={"type": "object"}),)
SOURCE = ModelSource(provider="deepseek", model="deepseek-v4-flash")


@st.composite
def sessions(draw: Callable[[Any], Any]) -> Session:
    """A log as the loop writes one, and as hosts alter it: headers that change, user messages,
    model calls (streamed chunks, a finish, the assembled message), calls cut without a finish,
    tool results, retries, title requests and compactions that replace part of the surface."""
    session = Session(SessionHeader.new(id="rebuild-test"))
    turn, step = 1, 1
    for _ in range(draw(st.integers(1, 14))):
        op = draw(st.sampled_from(["header", "user", "call", "call", "cut", "tool", "retry", "title", "compact", "step"]))
        if op == "header":
            header = RequestHeader(provider="deepseek", model="deepseek-v4-flash",
                                   reasoning_effort=draw(st.sampled_from([None, "off", "high"])),
                                   system=draw(TEXT), tools=draw(st.sampled_from([(), TOOLS])))
            session.append("request/header", {"header": header.to_json(), "reason": "change"})
        elif op == "user":
            session.append_user_message(UserMessage.text(draw(TEXT)))
        elif op in ("call", "cut"):
            if session.last_of("request/header") is None:
                session.append("request/header", {"header": RequestHeader(provider="deepseek", model="m").to_json(),
                                                  "reason": "change"})
            seqs = [session.append_chunk(turn, step, ReasoningDelta(index=0, text="r")).seq,
                    session.append_chunk(turn, step, TextDelta(index=1, text=draw(TEXT) or "t")).seq]
            if op == "call":
                seqs.append(session.append_chunk(turn, step, Finish(reason=FinishReason(kind="stop"))).seq)
                blocks: tuple[Any, ...] = (TextBlock(text="t"),)
                if draw(st.booleans()):
                    blocks += (ToolCallBlock(id=f"call_{step}", name="read", arguments="{}"),)
                session.append_assistant_message(turn, step, AssistantMessage(content=blocks, source=SOURCE),
                                                 source_event_seqs=seqs)
        elif op == "tool":
            session.append_tool_result(turn, step, ToolResultMessage.create(f"call_{step}", draw(TEXT)))
        elif op == "retry":
            session.append("llm/retry", {"turn": turn, "step": step, "retry": 1, "delayMs": 1,
                                         "retryId": "r", "failure": {"message": "busy", "code": "RATE_LIMIT"}})
        elif op == "title":
            session.append("session/title-llm-request", {
                "route": {"provider": "deepseek", "model": "deepseek-v4-flash"}, "system": "Title it.",
                "messages": [message_to_json(UserMessage.text(draw(TEXT)))], "maxTokens": 32})
        elif op == "compact" and session.surface_nodes:
            nodes = session.surface_nodes
            start = draw(st.integers(0, len(nodes) - 1))
            end = draw(st.integers(start, len(nodes) - 1))
            shadowed = nodes[start:end + 1]
            session.append_user_message(UserMessage.text("summary"),
                                        surface_op={"op": "replace", "start": shadowed[0], "end": shadowed[-1]},
                                        source_event_seqs=list(shadowed))
        elif op == "step":
            step += 1
    return session


def _outcome(rebuild: Callable[[], Any]) -> Any:
    try:
        return rebuild()
    except Exception as exc:
        return (type(exc).__name__, str(exc))


@given(sessions())
def test_the_fast_rebuild_equals_the_replay(session: Session) -> None:
    loaded = parse_session_log(dump_session(session).encode())  # as the view gets it: parsed from bytes
    parsed = loaded.session
    assert _trusted(parsed)
    fast = _outcome(lambda: rebuild_from_session(parsed, session_id=parsed.id))
    plain = _outcome(lambda: rebuild_requests(list(parsed.events), session_id=parsed.id))
    assert fast == plain


def test_the_fast_rebuild_of_a_real_walk_equals_the_replay(walk: Walk) -> None:
    parsed = parse_session_log(walk.log.read_bytes()).session
    fast = rebuild_from_session(parsed, session_id=parsed.id)
    assert fast and fast == rebuild_requests(list(parsed.events), session_id=parsed.id)


def test_the_page_is_the_same_on_either_path(walk: Walk) -> None:
    assert render_paths([walk.log]) == render_paths([walk.log], plain=True)


def test_dsh_logs_rebuild_the_same_on_either_path(dsh_sessions: Path) -> None:
    compared = 0
    upstream = sorted(DSH_UPSTREAM.rglob("session.jsonl")) if DSH_UPSTREAM.is_dir() else []
    for log in [*sorted(dsh_sessions.glob("*.jsonl")), *upstream]:
        try:
            parsed = parse_session_log(log.read_bytes(), source=str(log)).session
        except HarnessError:
            continue  # a log that does not parse has no page to rebuild (the view says why)
        if not _trusted(parsed):
            continue  # a log with defects is rebuilt by the replay alone
        fast = _outcome(lambda p=parsed: rebuild_from_session(p, session_id=p.id))  # type: ignore[misc]
        plain = _outcome(lambda p=parsed: rebuild_requests(list(p.events), session_id=p.id))  # type: ignore[misc]
        assert fast == plain, log.name
        compared += 1
    assert compared
