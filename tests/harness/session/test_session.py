"""`Session`: appending (seq, clock, type checks), derived history, observers and seeding."""

import pytest

from dshkit.harness.llm import AssistantMessage, TextBlock, ToolCallBlock, UserMessage
from dshkit.harness.llm.chunks import TextDelta
from dshkit.harness.llm.errors import SessionError
from dshkit.harness.llm.messages import ModelSource, ToolResultMessage
from dshkit.harness.session import Session, SessionHeader
from dshkit.harness.session.events import SessionEvent

SRC = ModelSource(provider="deepseek", model="deepseek-chat")


def clock() -> int:
    return 1000


def new() -> Session:
    return Session(SessionHeader.new(id="s1", created_at=0), clock=clock)


def user(text: str) -> UserMessage:
    return UserMessage.text(text)


def test_seq_contiguous_and_time_from_clock() -> None:
    s = new()
    a = s.append("turn/start", {"turn": 1})
    b = s.append("step/start", {"turn": 1, "step": 1})
    assert (a.seq, b.seq) == (0, 1)
    assert a.time == 1000
    assert s.open_turn == 1 and s.open_step == 1 and s.last_turn == 1


def test_bad_shapes_rejected() -> None:
    s = new()
    with pytest.raises(SessionError, match="turn"):
        s.append("turn/start", {"turn": "1"})
    with pytest.raises(SessionError):
        s.append("assistant/message", {"turn": 1, "step": 1, "message": {"id": "x"}}, surface_op="append")
    empty_provider = AssistantMessage(content=(), source=ModelSource(provider="", model="m"))
    with pytest.raises(SessionError, match="provider"):
        s.append_assistant_message(1, 1, empty_provider, source_event_seqs=[])
    assert len(s) == 0


def test_unknown_type_refused_unless_ignorable() -> None:
    s = new()
    with pytest.raises(SessionError, match="newer harness"):
        s.append("future/thing", {})
    event = s.append("future/thing", [1, 2], ignorable=True)
    assert event.ignorable and len(s) == 1
    # a plugin-merged type is known and kept as an opaque event
    s.append("session/title", {"title": "t"})
    assert s.derive_messages() == ()


def test_derive_messages_user_assistant_tool() -> None:
    s = new()
    s.append("turn/start", {"turn": 1})
    s.append("step/start", {"turn": 1, "step": 1})
    u = user("read README.md")
    s.append_user_message(u)
    c = s.append_chunk(1, 1, TextDelta(index=0, text="x"))
    call = ToolCallBlock(id="c1", name="read", arguments='{"file_path":"README.md"}')
    a = AssistantMessage(content=(call,), source=SRC)
    s.append_assistant_message(1, 1, a, source_event_seqs=[c.seq])
    tc = s.append_tool_call(1, 1, "c1", "read", call.arguments)
    r = ToolResultMessage.create("c1", "1:# DeepSeek Harness")
    s.append_tool_result(1, 1, r, source_event_seqs=[tc.seq])
    assert s.derive_messages() == (u, a, r)
    assert s.chunk_events(1, 1) == (c,)


def test_empty_assistant_message_logged_but_not_derived() -> None:
    s = new()
    e = s.append_assistant_message(1, 1, AssistantMessage(content=(), source=SRC), source_event_seqs=[])
    assert s.is_surface_node(e.seq)
    assert s.derive_messages() == ()


def test_derive_is_cached_and_each_node_projected_once() -> None:
    s = new()
    s.append_user_message(user("a"))
    first = s.derive_messages()
    assert s.derive_messages() is first  # no rebuild without a change
    s.append("turn/start", {"turn": 1})
    assert s.derive_messages() is first  # log-only events do not touch history
    s.append_user_message(user("b"))
    second = s.derive_messages()
    assert second is not first and second[0] is first[0]


def test_observers_called_and_failures_contained() -> None:
    errors: list[BaseException] = []
    s = Session(clock=clock, on_observer_error=lambda obs, exc: errors.append(exc))
    seen: list[SessionEvent] = []

    def boom(event: SessionEvent) -> None:
        raise RuntimeError("observer broke")

    s.subscribe(boom)
    unsubscribe = s.subscribe(seen.append)
    event = s.append("turn/start", {"turn": 1})
    assert seen == [event] and len(s) == 1
    assert [str(e) for e in errors] == ["observer broke"]
    unsubscribe()
    s.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    assert seen == [event]


def test_append_cannot_reenter_from_observer() -> None:
    errors: list[BaseException] = []
    s = Session(clock=clock, on_observer_error=lambda obs, exc: errors.append(exc))
    s.subscribe(lambda e: s.append("session/title", {"title": "x"}))
    s.append("turn/start", {"turn": 1})
    assert len(s) == 1
    assert "cannot reenter" in str(errors[0])


def test_seed_validated_and_end_seed_rule() -> None:
    s = new()
    s.append_user_message(user("a"))
    seeded = Session(s.header, seed=list(s.events), clock=clock)
    assert [e.type for e in seeded.events] == ["user/message", "session/end-seed"]
    again = Session(s.header, seed=list(seeded.events), clock=clock)
    assert len(again) == 2  # reopening an untouched session does not grow it
    assert Session(seed=[], clock=clock).events[0].type == "session/end-seed"
    assert len(Session(clock=clock)) == 0
    with pytest.raises(SessionError, match="contiguous"):
        Session(seed=[{"type": "turn/start", "seq": 3, "time": 0, "data": {"turn": 1}}])


def test_text_block_helper_roundtrip() -> None:
    s = new()
    msg = UserMessage(content=(TextBlock(text="hi"),))
    s.append_user_message(msg)
    assert s.message_at(0) == msg
