import math

import pytest

from dshkit.harness.llm import AssistantMessage, TextBlock, ToolCallBlock, UserMessage
from dshkit.harness.llm.chunks import TextDelta
from dshkit.harness.llm.codec import message_to_json
from dshkit.harness.llm.errors import SessionError
from dshkit.harness.llm.messages import ModelSource, ToolResultMessage
from dshkit.harness.session import Session, SessionHeader
from dshkit.harness.session.events import SessionEvent, SurfaceReplace
from dshkit.harness.session.lossless import FrozenDict

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


@pytest.mark.parametrize(
    "bad",
    [math.nan, math.inf, -math.inf, -0.0, (1, 2), {1: "x"}, object(), b"x", {"a": {1, 2}}],
)
def test_lossless_json_rejected_and_nothing_committed(bad: object) -> None:
    s = new()
    with pytest.raises(SessionError):
        s.append("todo/write", {"todos": [], "x": bad})
    assert len(s) == 0


def test_cycle_rejected() -> None:
    s = new()
    data: dict[str, object] = {"todos": []}
    data["self"] = data
    with pytest.raises(SessionError, match="cycle"):
        s.append("todo/write", data)


def test_data_is_copied_and_frozen() -> None:
    s = new()
    data = {"todos": [{"content": "a", "status": "pending"}]}
    event = s.append("todo/write", data)
    data["todos"].append({"content": "b", "status": "pending"})
    assert len(event.data["todos"]) == 1
    assert isinstance(event.data, FrozenDict)
    assert event.data == {"todos": [{"content": "a", "status": "pending"}]}
    with pytest.raises(TypeError):
        event.data["x"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        event.data["todos"].append(1)


def test_surface_op_required_on_surface_types_and_forbidden_elsewhere() -> None:
    s = new()
    with pytest.raises(SessionError, match="surfaceOp"):
        s.append("user/message", message_to_json(user("hi")))
    with pytest.raises(SessionError, match="not a surface event"):
        s.append("turn/start", {"turn": 1}, surface_op="append")
    with pytest.raises(SessionError, match="not a surface event"):
        s.append("turn/start", {"turn": 1}, source_event_seqs=[])
    assert len(s) == 0


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


def test_empty_source_event_seqs_only_on_assistant_message() -> None:
    s = new()
    with pytest.raises(SessionError, match="empty sourceEventSeqs"):
        s.append_user_message(user("x"), source_event_seqs=[])


def test_source_event_seqs_must_be_earlier_and_unique() -> None:
    s = new()
    s.append("turn/start", {"turn": 1})
    with pytest.raises(SessionError, match="earlier"):
        s.append_user_message(user("x"), source_event_seqs=[5])
    with pytest.raises(SessionError, match="duplicates"):
        s.append_user_message(user("x"), source_event_seqs=[0, 0])
    assert len(s) == 1


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


def test_replace_by_position_and_generation() -> None:
    s = new()
    a = s.append_user_message(user("a"))
    b = s.append_user_message(user("b"))
    c = s.append_user_message(user("c"))
    summary = user("summary")
    r1 = s.append_user_message(summary, surface_op=SurfaceReplace(a.seq, b.seq), source_event_seqs=[a.seq, b.seq])
    assert s.surface_nodes == (r1.seq, c.seq)
    assert s.replace_generation == 1
    assert [m.content[0].text for m in s.derive_messages()] == ["summary", "c"]  # type: ignore[union-attr]
    # after a replace, start may be numerically greater than end (positions count, not numbers)
    r2 = s.append_user_message(
        user("all"), surface_op={"op": "replace", "start": r1.seq, "end": c.seq},
        source_event_seqs=[r1.seq, c.seq],
    )
    assert s.surface_nodes == (r2.seq,)
    assert s.replace_generation == 2


def test_replace_errors_leave_state_untouched() -> None:
    s = new()
    a = s.append_user_message(user("a"))
    b = s.append_user_message(user("b"))
    before = (len(s), s.surface_nodes, s.derive_messages())
    with pytest.raises(SessionError, match="not a current surface node"):
        s.append_user_message(user("x"), surface_op=SurfaceReplace(a.seq, 99), source_event_seqs=[a.seq])
    with pytest.raises(SessionError, match="after end"):
        s.append_user_message(user("x"), surface_op=SurfaceReplace(b.seq, a.seq), source_event_seqs=[a.seq, b.seq])
    with pytest.raises(SessionError, match="shadowed"):
        s.append_user_message(user("x"), surface_op=SurfaceReplace(a.seq, b.seq), source_event_seqs=[a.seq])
    with pytest.raises(SessionError, match="exactly"):
        s.append_user_message(user("x"), surface_op={"op": "replace", "start": 0, "end": 1, "x": 1})
    assert (len(s), s.surface_nodes, s.derive_messages()) == before


def test_tool_result_replace_only_inner_content() -> None:
    s = new()
    tc = s.append_tool_call(1, 1, "c1", "read", "{}")
    original = ToolResultMessage.create("c1", "long output")
    r = s.append_tool_result(1, 1, original, source_event_seqs=[tc.seq])
    pruned = ToolResultMessage.create("c1", "[pruned]", id=original.id)
    s.append("tool/result", {"turn": 1, "step": 1, "message": message_to_json(pruned)},
             surface_op=SurfaceReplace(r.seq, r.seq), source_event_seqs=[r.seq])
    assert s.derive_messages() == (pruned,)
    changed_id = ToolResultMessage.create("c1", "[pruned]")
    last = s.surface_nodes[0]
    with pytest.raises(SessionError, match=r"only message\.content"):
        s.append("tool/result", {"turn": 1, "step": 1, "message": message_to_json(changed_id)},
                 surface_op=SurfaceReplace(last, last), source_event_seqs=[last])
    u = s.append_user_message(user("u"))
    with pytest.raises(SessionError, match="exactly one tool/result"):
        s.append("tool/result", {"turn": 1, "step": 1, "message": message_to_json(pruned)},
                 surface_op=SurfaceReplace(last, u.seq), source_event_seqs=[last, u.seq])


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
