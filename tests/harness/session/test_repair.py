"""Crash repair: the closers computed for a turn a crashed process left open, and only for that.

How `load_session` writes them back to the file is `test_jsonl.py`'s subject.
"""

from __future__ import annotations

import dataclasses

from dshkit.harness.llm import AssistantMessage, ToolCallBlock, UserMessage
from dshkit.harness.llm.messages import ModelSource, ToolResultMessage
from dshkit.harness.session import Session
from dshkit.harness.session.repair import (
    TOOL_NOT_STARTED_TEXT,
    TOOL_OUTCOME_UNKNOWN_TEXT,
    interrupted_turn_closers,
)

SRC = ModelSource(provider="deepseek", model="deepseek-chat")


def calls(*ids: str) -> AssistantMessage:
    return AssistantMessage(content=tuple(ToolCallBlock(id=i, name="bash", arguments="{}") for i in ids), source=SRC)


def test_only_an_open_turn_is_closed() -> None:
    s = Session(clock=lambda: 0)
    assert interrupted_turn_closers(s.events) == []
    s.append("turn/start", {"turn": 1})
    s.append_user_message(UserMessage.text("hi"))
    s.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    assert interrupted_turn_closers(s.events) == []
    s.append("turn/start", {"turn": 2})
    [closer] = interrupted_turn_closers(s.events)
    assert (closer.type, closer.data) == ("turn/end", {"turn": 2, "reason": {"kind": "interrupted"}})


def test_each_unanswered_call_of_the_open_step_gets_a_result_saying_whether_it_started() -> None:
    s = Session(clock=lambda: 0)
    s.append("turn/start", {"turn": 1})
    s.append("step/start", {"turn": 1, "step": 1})
    s.append_assistant_message(1, 1, calls("old"), source_event_seqs=[])
    s.append("step/end", {"turn": 1, "step": 1})  # its unanswered call is the finished step's business
    s.append("step/start", {"turn": 1, "step": 2})
    s.append_assistant_message(1, 2, calls("a", "b", "c"), source_event_seqs=[])
    call_a = s.append_tool_call(1, 2, "a", "bash", "{}")
    call_b = s.append_tool_call(1, 2, "b", "bash", "{}")
    # b's result in the web app's flat form answers it just as well
    s.append("tool/result", {"turn": 1, "step": 2, "callId": "b", "content": [{"type": "text", "text": "ok"}], "isError": False},
             surface_op="append", source_event_seqs=[call_b.seq])
    closers = interrupted_turn_closers(s.events)
    assert [(c.type, c.data.get("step")) for c in closers] == [("tool/result", 2), ("tool/result", 2), ("step/end", 2), ("turn/end", None)]
    started, not_started = closers[0], closers[1]
    assert started.source_event_seqs == (call_a.seq,) and not_started.source_event_seqs is None
    assert started.data["error"]["code"] == "TOOL_OUTCOME_UNKNOWN" and not_started.data["error"]["code"] == "TOOL_NOT_STARTED"
    assert started.data["message"]["id"] == f"interrupted-tool-result-a-{len(s)}"
    assert not_started.data["message"]["id"] == f"interrupted-tool-result-c-{len(s) + 1}"
    # the closers are events the session takes as they are, and they close the turn
    for c in closers:
        s.append(c.type, c.data, surface_op=c.surface_op, source_event_seqs=c.source_event_seqs)
    assert s.open_turn is None and interrupted_turn_closers(s.events) == []
    a, c = s.derive_messages()[-2:]
    assert isinstance(a, ToolResultMessage) and isinstance(c, ToolResultMessage)
    assert [(m.source.call_id, m.block.is_error, m.block.content[0].text) for m in (a, c)] == [  # type: ignore[union-attr]
        ("a", True, TOOL_OUTCOME_UNKNOWN_TEXT), ("c", True, TOOL_NOT_STARTED_TEXT)
    ]


def test_an_event_kept_as_a_defect_takes_no_part() -> None:
    s = Session(clock=lambda: 0)
    s.append("turn/start", {"turn": 1})
    broken_end = dataclasses.replace(s.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}}), defect="bad")
    assert [c.type for c in interrupted_turn_closers([*s.events[:-1], broken_end])] == ["turn/end"]
