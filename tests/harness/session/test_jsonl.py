"""JSONL persistence: logs written and read back (packed or not), torn tails cut and kept, crashed
turns repaired and written back, unknown event types refused."""

import json
from pathlib import Path

import pytest

from dshkit.harness.llm import AssistantMessage, ToolCallBlock, UserMessage
from dshkit.harness.llm.chunks import TextDelta
from dshkit.harness.llm.errors import SessionError
from dshkit.harness.llm.messages import ModelSource
from dshkit.harness.session import Session, SessionHeader, parse_session_log
from dshkit.harness.session.jsonl import dump_session, load_session, save_session
from dshkit.harness.session.repair import TOOL_NOT_STARTED_TEXT, TOOL_OUTCOME_UNKNOWN_TEXT
from dshkit.harness.session.store import SessionStore

SRC = ModelSource(provider="deepseek", model="deepseek-chat")


def tick() -> int:
    tick.now += 7  # type: ignore[attr-defined]
    return tick.now  # type: ignore[attr-defined, no-any-return]


tick.now = 0  # type: ignore[attr-defined]


def full_turn(s: Session) -> None:
    s.append("turn/start", {"turn": 1})
    s.append("step/start", {"turn": 1, "step": 1})
    s.append_user_message(UserMessage.text("hello"))
    seqs = [s.append_chunk(1, 1, TextDelta(index=0, text=t)).seq for t in ["He", "ll", "o", "!"]]
    s.append_assistant_message(1, 1, AssistantMessage(content=(), source=SRC), source_event_seqs=seqs)
    s.append("step/end", {"turn": 1, "step": 1})
    s.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})


def test_header_line_and_round_trip(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, clock=tick)
    s = store.create(id="abc", cwd="/work")
    full_turn(s)
    store.close(s)
    lines = (tmp_path / "abc.jsonl").read_text().splitlines()
    assert json.loads(lines[0]) == {
        "type": "session", "version": 0, "id": "abc", "createdAt": s.header.created_at,
        "cwd": "/work", "delegationDepth": 0,
    }
    assert any(json.loads(line)["type"] == "text-chunks" for line in lines[1:])
    loaded = load_session(tmp_path / "abc.jsonl")
    assert [e for e in loaded.events] == list(s.events)
    assert loaded.derive_messages() == s.derive_messages()
    assert dump_session(loaded) == dump_session(s)
    # unpacked and packed forms decode identically
    flat = tmp_path / "flat.jsonl"
    flat.write_text(dump_session(s, pack_chunks=False))
    assert list(load_session(flat).events) == list(s.events)


def test_save_session_snapshot(tmp_path: Path) -> None:
    s = Session(SessionHeader.new(id="x"), clock=tick)
    full_turn(s)
    path = save_session(s, tmp_path / "deep" / "x.jsonl")
    assert list(load_session(path).events) == list(s.events)


def crashed_log(tmp_path: Path, *, tool_call_logged: bool) -> tuple[Path, Session]:
    store = SessionStore(tmp_path, clock=tick)
    s = store.create(id="crash")
    s.append("turn/start", {"turn": 1})
    s.append("step/start", {"turn": 1, "step": 1})
    s.append_user_message(UserMessage.text("run it"))
    c = s.append_chunk(1, 1, TextDelta(index=0, text="x"))
    calls = (ToolCallBlock(id="a", name="bash", arguments="{}"), ToolCallBlock(id="b", name="bash", arguments="{}"))
    s.append_assistant_message(1, 1, AssistantMessage(content=calls, source=SRC), source_event_seqs=[c.seq])
    if tool_call_logged:
        s.append_tool_call(1, 1, "a", "bash", "{}")
    store.close(s)
    return store.path_for("crash"), s


def test_crash_repair_writes_closers_back(tmp_path: Path) -> None:
    path, original = crashed_log(tmp_path, tool_call_logged=True)
    call_seq = len(original) - 1
    repaired = load_session(path)
    tail = list(repaired.events)[len(original):]
    assert [e.type for e in tail] == ["tool/result", "tool/result", "step/end", "turn/end"]
    started, not_started = tail[0], tail[1]
    assert started.data["error"] == {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"}
    assert started.source_event_seqs == (call_seq,)
    assert started.data["message"]["content"][0]["content"][0]["text"] == TOOL_OUTCOME_UNKNOWN_TEXT
    assert started.data["message"]["id"] == f"interrupted-tool-result-a-{started.seq}"
    assert not_started.data["error"]["code"] == "TOOL_NOT_STARTED"
    assert not_started.source_event_seqs is None
    assert not_started.data["message"]["content"][0]["content"][0]["text"] == TOOL_NOT_STARTED_TEXT
    assert tail[-1].data == {"turn": 1, "reason": {"kind": "interrupted"}}
    assert all(e.time == original.events[-1].time for e in tail)
    # written back: a second load finds a closed turn and adds nothing
    again = parse_session_log(path.read_bytes())
    assert again.closers == () and list(again.session.events) == list(repaired.events)


def test_truncated_jsonl_torn_tail_is_cut_and_repaired(tmp_path: Path) -> None:
    path, _ = crashed_log(tmp_path, tool_call_logged=True)
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) - 25])  # tear the last line (the tool/call) mid-write
    loaded = parse_session_log(path.read_bytes())
    assert loaded.dropped_lines == 1
    repaired = load_session(path)
    types = [e.type for e in repaired.events]
    assert types[-4:] == ["tool/result", "tool/result", "step/end", "turn/end"]
    # the call was lost with the torn line, so both results say "not started"
    assert {e.data["error"]["code"] for e in repaired.events if e.type == "tool/result"} == {"TOOL_NOT_STARTED"}
    for line in path.read_text().splitlines():
        json.loads(line)  # the file is whole again
    # nothing is lost: the cut bytes are kept beside the log
    assert path.with_name(path.name + ".torn").read_bytes() == raw[loaded.good_bytes : len(raw) - 25]


def test_a_cut_tail_is_kept_and_reported(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    s = Session(SessionHeader.new(id="k"), clock=tick)
    full_turn(s)
    path = tmp_path / "k.jsonl"
    bad = b'{"type":"turn/start","seq":99,"time":1,"data":{"turn":"not a number"}}\n'
    path.write_bytes(dump_session(s).encode() + bad)
    with caplog.at_level("WARNING", logger="dshkit.harness.session"):
        loaded = load_session(path)
    assert list(loaded.events) == list(s.events)
    assert (tmp_path / "k.jsonl.torn").read_bytes() == bad
    assert "k.jsonl.torn" in caplog.text and "1 unreadable line" in caplog.text


def test_bad_line_before_a_turn_end_is_corruption(tmp_path: Path) -> None:
    s = Session(SessionHeader.new(id="c"), clock=tick)
    full_turn(s)
    lines = dump_session(s, pack_chunks=False).splitlines()
    lines[2] = lines[2][:10]
    with pytest.raises(SessionError, match=r"<session log>:3: .*corruption") as info:
        parse_session_log("\n".join(lines))
    assert info.value.code == "SESSION_CORRUPT"
    gap = dump_session(s, pack_chunks=False).splitlines()
    del gap[2]
    with pytest.raises(SessionError, match="contiguous"):
        parse_session_log("\n".join(gap))


def test_torn_tail_after_last_turn_end_is_tolerated() -> None:
    s = Session(SessionHeader.new(id="t"), clock=tick)
    full_turn(s)
    text = dump_session(s) + '{"type":"turn/start","seq":'
    loaded = parse_session_log(text)
    assert loaded.dropped_lines == 1 and loaded.closers == ()
    assert list(loaded.session.events) == list(s.events)


def test_unknown_type_refused_ignorable_accepted() -> None:
    header = json.dumps({"type": "session", "version": 0, "id": "u", "createdAt": 0, "delegationDepth": 0})
    unknown = json.dumps({"type": "brand/new", "seq": 0, "time": 0, "data": {}})
    with pytest.raises(SessionError, match="newer harness") as info:
        parse_session_log(f"{header}\n{unknown}\n")
    assert info.value.code == "SESSION_FORMAT_UNSUPPORTED"
    ignorable = json.dumps({"type": "brand/new", "seq": 0, "time": 0, "data": {"x": 1}, "ignorable": True})
    loaded = parse_session_log(f"{header}\n{ignorable}\n")
    assert loaded.session.events[0].ignorable
