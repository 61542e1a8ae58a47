"""How a replay is compared with its log: what is read off the events, and the report's verdict and diff."""

from __future__ import annotations

import dataclasses
from typing import Any

from dshkit.harness.llm import (
    AssistantMessage,
    Finish,
    FinishReason,
    TextBlock,
    ToolCallBlock,
    UserMessage,
)
from dshkit.harness.llm.chunks import TextDelta
from dshkit.harness.llm.errors import ErrorCode
from dshkit.harness.llm.messages import ModelSource, ToolResultMessage
from dshkit.harness.replay.compare import ReplayReport, call_failures, logged_contents, turn_outcome
from dshkit.harness.session import Session
from dshkit.harness.session.events import SessionEvent

SRC = ModelSource(provider="deepseek", model="deepseek-chat")


def logged_turn() -> list[SessionEvent]:
    """A turn whose first call failed and was retried, a tool ran, then the user cancelled."""
    s = Session(clock=lambda: 0)
    s.append("turn/start", {"turn": 1})
    s.append_user_message(UserMessage.text("go"))
    s.append("step/start", {"turn": 1, "step": 1})
    s.append_chunk(1, 1, Finish.error("busy", ErrorCode.SERVER, status=503))
    s.append_chunk(1, 1, TextDelta(index=0, text="ok"))
    s.append_chunk(1, 1, Finish(reason=FinishReason(kind="tool-calls")))
    call = ToolCallBlock(id="c1", name="bash", arguments="{}")
    s.append_assistant_message(1, 1, AssistantMessage(content=(TextBlock(text="ok"), call), source=SRC), source_event_seqs=[])
    s.append_tool_result(1, 1, ToolResultMessage.create("c1", "done"))
    s.append("step/end", {"turn": 1, "step": 1})
    s.append("step/start", {"turn": 1, "step": 2})
    s.append_chunk(1, 2, Finish.error("rate", ErrorCode.RATE_LIMIT, status=429))
    s.append_assistant_message(1, 2, AssistantMessage(content=(TextBlock(text="par"),), source=SRC),
                               source_event_seqs=[], interrupted=True)
    s.append("step/end", {"turn": 1, "step": 2})
    s.append("turn/end", {"turn": 1, "reason": {"kind": "aborted", "error": {"code": "ABORTED", "message": "user"}}})
    return list(s.events)


def test_the_log_is_read_as_contents_failed_calls_and_outcomes() -> None:
    events = logged_turn()
    assert logged_contents(events, "assistant/message") == [
        [{"type": "text", "text": "ok"}, {"type": "tool-call", "id": "c1", "name": "bash", "arguments": "{}"}]
    ]  # the interrupted prefix is not compared
    assert logged_contents(events, "tool/result") == [
        [{"type": "tool-result", "toolCallId": "c1", "content": [{"type": "text", "text": "done"}], "isError": False}]
    ]
    assert call_failures(events) == ["SERVER", "RATE_LIMIT"]
    # an event kept as a defect of an imported log takes no part
    defective = [dataclasses.replace(e, defect="bad") if e.type in ("tool/result", "assistant/chunk") else e for e in events]
    assert logged_contents(defective, "tool/result") == [] and call_failures(defective) == []
    assert turn_outcome(events[-1].data["reason"]) == {"kind": "aborted"}  # an abort's cause is not its outcome
    assert turn_outcome({"kind": "error", "error": {"code": "SERVER", "message": "words"}}) == {"kind": "error", "code": "SERVER"}
    assert turn_outcome("completed") == {"kind": "unknown"}


def report(**changes: Any) -> ReplayReport:
    same: dict[str, Any] = {
        "logged_messages": [[{"type": "text", "text": "hi"}]], "replayed_messages": [[{"type": "text", "text": "hi"}]],
        "logged_results": [], "replayed_results": [], "turn_ends": ["completed"],
        "logged_outcomes": [{"kind": "completed"}], "replayed_outcomes": [{"kind": "completed"}],
        "logged_failures": ["SERVER"], "replayed_failures": ["SERVER"], "calls": 2,
    }
    return ReplayReport(**{**same, **changes})


def test_the_report_is_equal_only_when_every_list_is_and_its_diff_says_where() -> None:
    assert report().equal and report().diff() == []
    text = report(replayed_messages=[[{"type": "text", "text": "ho"}]])
    assert not text.equal and not text.messages_equal and text.outcomes_equal
    diff = text.diff()
    assert diff[:3] == ["assistant message 1 differs:", "--- logged assistant message 1", "+++ replayed assistant message 1"]
    assert [line for line in diff if line[:1] in "+-" and line[:3] not in ("---", "+++")] == ['-    "text": "hi"', '+    "text": "ho"']
    retried_less = report(replayed_failures=[])
    assert not retried_less.equal and not retried_less.outcomes_equal and retried_less.messages_equal
    assert retried_less.diff() == ["the log holds 1 failed call(s), the replay made 0"]
    assert report(replayed_outcomes=[{"kind": "aborted"}]).diff()[0] == "turn outcome 1 differs:"
