"""Shapes upstream DSH writes on purpose load as they are; real defects load as warnings.

Each case is a minimal log in the shape of a real upstream fixture (the whole corpus is checked
by `test_upstream_logs.py`): packed rows whose time gaps go negative, the web app's flat surface
events, and events that break a rule in a log another program wrote.
"""

import json

import pytest

from dshkit.harness.llm import AssistantMessage, TextBlock, ToolCallBlock, UserMessage
from dshkit.harness.llm.codec import message_to_json
from dshkit.harness.llm.errors import SessionError
from dshkit.harness.llm.messages import ModelSource, ToolResultMessage
from dshkit.harness.replay.entries import derive_replay_script
from dshkit.harness.session import parse_session_log
from dshkit.harness.session.jsonl import dump_session
from dshkit.harness.session.shapes import logged_message

HEADER = '{"type":"session","version":0,"id":"x","createdAt":0,"cwd":"{{cwd}}","delegationDepth":0}'


def _log(*rows: object) -> str:
    return "\n".join([HEADER, *(json.dumps(r) for r in rows)]) + "\n"


def _chunk(chunk: dict[str, object], turn: int = 1, step: int = 1) -> dict[str, object]:
    return {"type": "assistant/chunk", "data": {"turn": turn, "step": step, "chunk": chunk}}


def test_projected_packed_row_with_negative_gaps_loads_and_repacks() -> None:
    """A projected row has no time0, so its members start at 0; a clock that stepped back
    makes the first gap (and so the rebuilt times) negative. The gaps survive a rewrite."""
    row = {"type": "text-chunks", "data": {"turn": 1, "step": 1, "index": 0, "dt": [-960585284, 3], "texts": ["a", "b", "c"]}}
    loaded = parse_session_log(_log(_chunk({"type": "block-start", "index": 0, "blockType": "text"}), row))
    times = [e.time for e in loaded.session.events]
    assert times == [0, 0, -960585284, -960585281]
    again = parse_session_log(dump_session(loaded.session))
    assert list(again.session.events) == list(loaded.session.events)
    assert json.loads(dump_session(loaded.session).splitlines()[2])["data"]["dt"] == [-960585284, 3]


FLAT_TURN = (
    {"type": "turn/start", "data": {"turn": 1, "trigger": {"kind": "message", "source": {"kind": "user", "rpcId": "{{rpcId}}"}}}},
    {"type": "user/message", "data": {"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user", "rpcId": "{{rpcId}}"}}, "surfaceOp": "append"},
    {"type": "step/start", "data": {"turn": 1, "step": 1}},
    _chunk({"type": "block-start", "index": 0, "blockType": "tool-call"}),
    _chunk({"type": "block-end", "index": 0, "block": {"type": "tool-call", "id": "c1", "name": "bash", "arguments": "{}"}}),
    _chunk({"type": "finish", "reason": {"kind": "tool-calls"}}),
    {"type": "assistant/message", "data": {"turn": 1, "step": 1, "content": [{"type": "tool-call", "id": "c1", "name": "bash", "arguments": "{}"}],
                                           "provenance": {"provider": "deepseek-official", "model": "deepseek-v4-flash"}, "usage": {"inputTokens": 1, "outputTokens": 1}},
     "sourceEventSeqs": [3, 4, 5], "surfaceOp": "append"},
    {"type": "tool/call", "data": {"turn": 1, "step": 1, "callId": "c1", "name": "bash", "arguments": "{}"}},
    {"type": "tool/result", "data": {"turn": 1, "step": 1, "callId": "c1", "content": [{"type": "text", "text": "ok"}], "isError": False},
     "sourceEventSeqs": [7], "surfaceOp": "append"},
    {"type": "step/end", "data": {"turn": 1, "step": 1}},
    {"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "completed"}}},
)


def test_web_app_flat_surface_events_derive_and_rewrite_verbatim() -> None:
    loaded = parse_session_log(_log(*FLAT_TURN))
    session = loaded.session
    user, assistant, result = session.derive_messages()
    assert isinstance(user, UserMessage) and user.content == (TextBlock(text="hi"),)
    assert isinstance(assistant, AssistantMessage)
    assert assistant.content == (ToolCallBlock(id="c1", name="bash", arguments="{}"),)
    assert assistant.source == ModelSource(provider="deepseek-official", model="deepseek-v4-flash")
    assert isinstance(result, ToolResultMessage) and result.source.call_id == "c1"
    assert result.content[0].is_error is False and result.content[0].content == (TextBlock(text="ok"),)
    assert [m.id for m in (user, assistant, result)] == ["logged-seq-1", "logged-seq-6", "logged-seq-8"]
    # the data is kept as logged: no envelope is invented when the log is written back
    rewritten = [json.loads(line) for line in dump_session(session, pack_chunks=False).splitlines()[1:]]
    assert [{k: v for k, v in r.items() if k not in ("seq", "time")} for r in rewritten] == list(FLAT_TURN)
    assert message_to_json(logged_message("assistant/message", session.events[6].data, seq=6)) == message_to_json(assistant)


def test_flat_tool_result_replace_may_change_only_its_content() -> None:
    """A surface replace of a tool result (compaction of its output) keeps everything but the
    content; in the flat form the content sits beside the event fields."""
    result = FLAT_TURN[8]
    shorter = {"type": "tool/result", "data": dict(result["data"], content=[{"type": "text", "text": "[trimmed]"}]),  # type: ignore[arg-type]
               "sourceEventSeqs": [8], "surfaceOp": {"op": "replace", "start": 8, "end": 8}}
    session = parse_session_log(_log(*FLAT_TURN, shorter)).session
    assert session.derive_messages()[-1].content[0].content == (TextBlock(text="[trimmed]"),)  # type: ignore[union-attr]
    renamed = dict(shorter, data=dict(shorter["data"], callId="c2"))  # type: ignore[arg-type]
    loaded = parse_session_log(_log(*FLAT_TURN, renamed), lenient=True)
    assert len(loaded.defects) == 1 and "may change only" in loaded.defects[0]


def test_flat_assistant_message_without_provenance_is_a_located_error() -> None:
    bad = dict(FLAT_TURN[6], data={k: v for k, v in FLAT_TURN[6]["data"].items() if k != "provenance"})  # type: ignore[attr-defined]
    with pytest.raises(SessionError, match=r"provenance: expected a JSON object"):
        parse_session_log(_log(*FLAT_TURN[:6], bad, *FLAT_TURN[7:]))


def test_lenient_load_keeps_a_broken_event_as_a_defect_and_reads_the_rest() -> None:
    """Strict loading refuses a bad line that a later turn/end commits; an imported log instead
    keeps that line verbatim as a defect (with a located message) and loads everything else."""
    broken = {"type": "request/header", "data": {"header": {"config": {"model": "fake"}}, "reason": "initial"}}
    text = _log(FLAT_TURN[0], FLAT_TURN[1], FLAT_TURN[2], broken, *FLAT_TURN[3:])
    with pytest.raises(SessionError, match="later turn/end exists"):
        parse_session_log(text)
    loaded = parse_session_log(text, lenient=True)
    session = loaded.session
    assert loaded.defects == ("<session log>:5: request/header (seq 3) data.header.config.provider: expected a non-empty string",)
    assert session.events[3].defect is not None and session.last_of("request/header") is None
    assert len(session.derive_messages()) == 3
    assert loaded.closers == () and session.open_turn is None
    assert dump_session(session, pack_chunks=False).splitlines()[4] == json.dumps(
        {"type": "request/header", "seq": 3, "time": 0, "data": broken["data"]}, separators=(",", ":"))
    assert len(derive_replay_script(session.events)) == 1
