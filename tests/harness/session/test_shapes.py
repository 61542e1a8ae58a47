"""`shapes.py`: the data checks of core event types, and the web app's flat surface events.

Each log case is a minimal one in the shape of a real upstream fixture (the whole corpus is
checked by `tests/e2e/test_upstream_logs.py`): the web app's flat `user/message`,
`assistant/message` and `tool/result`, and events that break a rule in a log another program
wrote, which a lenient load keeps as defects.
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
from dshkit.harness.session.shapes import check_event_data, logged_message

HEADER = '{"type":"session","version":0,"id":"x","createdAt":0,"cwd":"{{cwd}}","delegationDepth":0}'


def _log(*rows: object) -> str:
    return "\n".join([HEADER, *(json.dumps(r) for r in rows)]) + "\n"


def _chunk(chunk: dict[str, object], turn: int = 1, step: int = 1) -> dict[str, object]:
    return {"type": "assistant/chunk", "data": {"turn": turn, "step": step, "chunk": chunk}}


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


TOOL_MESSAGE = message_to_json(ToolResultMessage.create("c1", "ok", id="r1"))
CONFIG = {"provider": "deepseek", "model": "deepseek-chat", "reasoningEffort": "high"}


@pytest.mark.parametrize(
    ("type_", "data", "where"),
    [
        ("step/start", {"turn": 1, "step": 0}, "data.step: expected an integer >= 1"),
        ("turn/end", {"turn": 1, "reason": {"kind": ""}}, "data.reason.kind: expected a non-empty string"),
        ("tool/call", {"turn": 1, "step": 1, "callId": "c", "name": "bash", "arguments": {}}, "data.arguments: expected a string"),
        ("assistant/chunk", {"turn": 1, "step": 1, "chunk": {}}, "data.chunk.type"),
        ("todo/write", {"todos": {}}, "data.todos: expected a list"),
        ("request/context", {"provider": "deepseek"}, "data.model"),
        ("request/header", {"header": {"config": CONFIG}, "reason": "restart"}, "data.reason: expected 'initial'"),
        ("request/header", {"header": {"config": CONFIG, "adapterDefaults": {"temperature": True}}, "reason": "initial"},
         "data.header.adapterDefaults.temperature: only reasoningEffort/maxTokens"),
        ("request/header", {"header": {"config": CONFIG, "adapterDefaults": {"maxTokens": True}}, "reason": "initial"},
         "data.header.adapterDefaults.maxTokens: marks a field the config lacks"),
        ("assistant/message", {"turn": 1, "step": 1, "message": message_to_json(AssistantMessage(content=(TextBlock(text="x"),), source=ModelSource(provider="p", model="m"))), "interrupted": False},
         "data.interrupted: only `true`"),
        ("tool/result", {"turn": 1, "step": 1, "message": TOOL_MESSAGE, "error": {"name": "E"}}, "data.error.code"),
        ("tool/result", {"turn": 1, "step": 1, "message": message_to_json(UserMessage.text("x"))}, "data.message: expected a tool-result message"),
        ("user/message", {"content": [], "source": {"kind": "tool", "callId": "c1"}}, "data.source: a user/message holds a user-role message"),
        ("session/title", ["t"], "data: expected a JSON object"),
    ],
    ids=["step-zero", "reason-without-kind", "arguments-not-text", "chunk-without-type", "todos-not-a-list",
         "context-without-model", "unknown-reason", "default-of-another-field", "default-of-a-missing-field",
         "interrupted-false", "error-without-code", "result-of-no-call", "flat-user-from-a-tool", "plugin-data-not-an-object"],
)
def test_core_event_data_of_the_wrong_shape_is_refused_naming_the_field(type_: str, data: object, where: str) -> None:
    with pytest.raises(SessionError) as info:
        check_event_data(type_, data)
    assert info.value.code == "INVALID_EVENT" and str(info.value).startswith(where)


def test_only_a_surface_event_projects_a_message() -> None:
    header = {"header": {"config": CONFIG, "adapterDefaults": {"reasoningEffort": True}}, "reason": "resume"}
    assert check_event_data("request/header", header) is None
    assert check_event_data("tool/result", {"turn": 1, "step": 1, "message": TOOL_MESSAGE}) == ToolResultMessage.create("c1", "ok", id="r1")
    with pytest.raises(SessionError, match="'tool/call' is not a surface event type"):
        logged_message("tool/call", {"turn": 1, "step": 1, "callId": "c", "name": "n", "arguments": "{}"})
