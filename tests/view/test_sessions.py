"""A session log read back as a timeline: each call's rebuilt request paired with what was sent
(by identity, never by position), its fragments, retries and usage.

`rebuild_from_session` (the view's fast path: requests rebuilt from what parsing the log
already decoded) against `rebuild_requests` (the reference: the log replayed event by event),
over generated sessions and real logs; and the page is the same either way."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import zstandard
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
from dshkit.harness.providers.deepseek import DeepSeekAdapter
from dshkit.harness.session import Session, SessionHeader, parse_session_log
from dshkit.harness.session.jsonl import dump_session
from dshkit.mock_server import MockServer, Script
from dshkit.view import render_paths
from dshkit.view.sessions import SentRequest, _trusted, build_session_view, rebuild_from_session

from ..conftest import DSH_UPSTREAM
from ..harness.loop.test_header import title_log_text
from .conftest import Walk, argument_fragments

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


def test_the_timeline_holds_each_call_its_fragments_retry_and_usage(walk: Walk) -> None:
    journal = [json.loads(line)["body"] for line in walk.journal.read_text().splitlines()]
    view = build_session_view(parse_session_log(walk.log.read_bytes()), journal)
    assert [t.turn for t in view.turns] == [1] and view.turns[0].end == {"kind": "completed"}
    (first, second, third) = view.calls
    # the failed attempt: an error finish with the 429, then the retry in the same step
    assert first.finish is not None and first.finish["reason"]["failure"]["code"] == "RATE_LIMIT"
    kinds = [item.kind for item in view.turns[0].steps[0].items]
    assert kinds == ["user", "call", "retry", "call", "tool-call", "tool-result"]
    # arguments stay the fragments the wire delivered, in order (block 1, after the reasoning);
    # the first delta is the call's identity (id and name) with empty arguments
    assert second.fragments() == {1: ["", *argument_fragments()]}
    assert second.usage is not None and third.usage is not None
    # every rebuilt request is exactly what the server received
    assert [c.request for c in view.calls] == journal and not any(c.diff for c in view.calls)


def test_a_request_that_differs_from_the_log_shows_as_a_diff(walk: Walk, tmp_path: Path) -> None:
    entries = [json.loads(line) for line in walk.journal.read_text().splitlines()]
    entries[-1]["body"]["messages"][1]["content"] = "something the log never held"  # the user's text
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("".join(json.dumps(e) + "\n" for e in entries))
    view = build_session_view(parse_session_log(walk.log.read_bytes()), [e["body"] for e in entries])
    assert [bool(c.diff) for c in view.calls] == [False, False, True]
    changed = [line for line in view.calls[2].diff if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))]
    assert changed == ['-      "content": "What is this project?"', '+      "content": "something the log never held"']
    html, kind = render_paths([walk.log], journal=tampered)
    assert kind == "session" and "1 request differs from what was sent" in html


def test_a_journal_of_several_sessions_is_matched_by_session_id(walk: Walk, tmp_path: Path) -> None:
    entries = [json.loads(line) for line in walk.journal.read_text().splitlines()]
    assert {e["session"] for e in entries} == {parse_session_log(walk.log.read_bytes()).session.id}
    other = [{**e, "session": "another-run", "body": {**e["body"], "model": "other"}} for e in entries]
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join(json.dumps(e) + "\n" for pair in zip(other, entries, strict=True) for e in pair))
    html, _ = render_paths([walk.log], journal=mixed)
    assert "0 requests differ from what was sent" in html


async def _send_as_dsh(requests: list[Any], order: list[int], journal: Path) -> None:
    """Send the rebuilt requests through the real adapter to a journaling mock server, in
    `order`: DSH sends the title request beside step 1, so it may arrive first or second."""
    steps = [{"reply": {"content": "answer"}} for _ in requests]
    async with MockServer(Script.of(*steps), journal=journal) as server:
        adapter = DeepSeekAdapter(server.base_url, "sk-view")
        try:
            for i in order:
                assert [c async for c in adapter.stream(requests[i])]
        finally:
            await adapter.aclose()


@pytest.mark.parametrize("order", [[1, 0], [0, 1]], ids=["title-second", "title-first"])
@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "zstd"])
async def test_the_title_request_is_shown_and_paired_by_identity(
    order: list[int], compressed: bool, tmp_path: Path
) -> None:
    text = title_log_text()
    log = tmp_path / ("session.jsonl.zstd" if compressed else "session.jsonl")
    log.write_bytes(zstandard.ZstdCompressor().compress(text.encode()) if compressed else text.encode())
    loaded = parse_session_log(log.read_bytes(), lenient=True)
    requests = rebuild_requests(list(loaded.session.events), session_id=loaded.session.id)
    assert [r.purpose for r in requests] == ["session-title", None]
    journal = tmp_path / "journal.jsonl"
    await _send_as_dsh(requests, order, journal)
    html, kind = render_paths([log], journal=journal)
    assert kind == "session" and "0 requests differ from what was sent" in html
    assert 'data-purpose="session-title"' in html and "1 auxiliary request<" in html and "no rebuilt request matches" not in html
    sent = [json.loads(line) for line in journal.read_text().splitlines()]
    view = build_session_view(loaded, [SentRequest(body=e["body"], session=e["session"]) for e in sent])
    (title,), (call,) = view.auxiliary, view.calls
    assert title.sent == title.request and title.request is not None and title.request["thinking"] == {"type": "disabled"}
    assert call.sent == call.request and call.request is not None and "tools" in call.request
    kinds = [item.kind for item in view.turns[0].steps[0].items]
    assert kinds.index("title-request") < kinds.index("call")  # at its place in the log


async def test_a_title_request_that_differs_shows_its_own_diff(tmp_path: Path) -> None:
    log = tmp_path / "session.jsonl"
    log.write_text(title_log_text())
    loaded = parse_session_log(log.read_bytes(), lenient=True)
    requests = rebuild_requests(list(loaded.session.events), session_id=loaded.session.id)
    journal = tmp_path / "journal.jsonl"
    await _send_as_dsh(requests, [1, 0], journal)
    entries = [json.loads(line) for line in journal.read_text().splitlines()]
    entries[1]["body"]["max_tokens"] = 64  # the title request, sent second, asked for more
    sent = [SentRequest(body=e["body"], session=e["session"]) for e in entries]
    view = build_session_view(loaded, sent)
    assert view.calls[0].diff == [] and view.journal_extra == 0
    changed = [line for line in view.auxiliary[0].diff if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))]
    assert changed == ['-  "max_tokens": 32', '+  "max_tokens": 64']
