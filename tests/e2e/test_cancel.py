"""Cancellation mid-stream and mid-tool, and crash repair of a log a real run wrote: each leaves
a log that saves, loads and derives messages a provider accepts."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from dshkit.harness.llm import GenerateOptions, UserMessage
from dshkit.harness.providers.openai_chat.serialize import serialize
from dshkit.harness.session import Session, SessionHeader
from dshkit.harness.session.events import SessionEvent
from dshkit.harness.session.jsonl import load_session, save_session
from dshkit.harness.session.repair import TOOL_OUTCOME_UNKNOWN_TEXT
from dshkit.harness.session.store import SessionStore
from dshkit.harness.tools import define_tool
from dshkit.harness.tools.runtime import ToolCall

from .conftest import MODEL, RigFactory, call, check_one_rule, reply


def _first_chunk(session: Session) -> asyncio.Event:
    seen = asyncio.Event()

    def observer(event: SessionEvent) -> None:
        if event.type == "assistant/chunk":
            seen.set()

    session.subscribe(observer)
    return seen


def _round_trip(session: Session, path: Path) -> Session:
    """Save, load, and check the derived history is a request a provider accepts."""
    save_session(session, path)
    loaded = load_session(path)
    assert [e.type for e in loaded.events] == [e.type for e in session.events]
    assert list(loaded.derive_messages()) == list(session.derive_messages())
    body = serialize(GenerateOptions(provider="deepseek", model=MODEL, messages=(*loaded.derive_messages(), UserMessage.text("next"))))
    calls = [c["id"] for m in body["messages"] if m["role"] == "assistant" for c in m.get("tool_calls", ())]
    answered = [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
    assert calls == answered  # every call the model made is answered, nothing dangles
    return loaded


async def test_cancel_mid_stream(loop_rig: RigFactory, tmp_path: Path) -> None:
    stall = {"fault": "stall_after", "after_events": 2, "text": "a partial answer that never ends"}
    rig = await loop_rig(stall, reply("second turn works"))
    seen = _first_chunk(rig.session)
    task = asyncio.create_task(rig.agent.run("tell me a story"))
    await asyncio.wait_for(seen.wait(), 10)
    rig.agent.cancel()
    outcome = await asyncio.wait_for(task, 10)
    assert outcome.reason == {"kind": "aborted", "reason": {"kind": "user"}}
    (message,) = rig.events("assistant/message")
    assert message.data["interrupted"] is True
    assert message.data["message"]["content"][0]["type"] == "text"
    assert rig.data("assistant/chunk")[-1]["chunk"]["reason"]["kind"] == "aborted"
    assert rig.types()[-3:] == ["assistant/message", "step/end", "turn/end"]
    rig.check()
    loaded = _round_trip(rig.session, tmp_path / "s.jsonl")
    assert loaded.derive_messages()[-1].role == "assistant"  # the prefix is history
    # the agent is usable again; the interrupted prefix is sent on the next request
    assert (await rig.run("go on")).kind == "completed"
    assert rig.bodies[1]["messages"][2]["role"] == "assistant"


async def test_cancel_mid_stream_drops_a_half_streamed_tool_call(loop_rig: RigFactory, tmp_path: Path) -> None:
    # a reply that opens with text, then starts a tool call, then stalls
    raw_events = [
        '{"id":"x","object":"chat.completion.chunk","created":0,"model":"deepseek-v4-flash","choices":[{"index":0,"delta":{"role":"assistant","content":"Let me look."},"finish_reason":null}]}',
        '{"id":"x","object":"chat.completion.chunk","created":0,"model":"deepseek-v4-flash","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_half","type":"function","function":{"name":"read","arguments":"{\\"file_"}}]},"finish_reason":null}]}',
    ]
    stalling = {"raw": {"writes": [{"text": f"data: {e}\n\n"} for e in raw_events] + [{"text": ": waiting\n\n", "delay_ms": 60000}]}}
    rig = await loop_rig(stalling)
    seen = asyncio.Event()

    def on_call_delta(event: SessionEvent) -> None:
        if event.type == "assistant/chunk" and event.data["chunk"]["type"] == "tool-call-delta":
            seen.set()

    rig.session.subscribe(on_call_delta)
    task = asyncio.create_task(rig.agent.run("read it"))
    await asyncio.wait_for(seen.wait(), 10)
    rig.agent.cancel()
    assert (await asyncio.wait_for(task, 10)).kind == "aborted"
    (message,) = rig.data("assistant/message")
    assert message["interrupted"] is True
    assert [b["type"] for b in message["message"]["content"]] == ["text"]  # the call is dropped
    assert rig.events("tool/call") == []
    _round_trip(rig.session, tmp_path / "s.jsonl")


async def test_cancel_mid_tool(loop_rig: RigFactory, tmp_path: Path) -> None:
    started = asyncio.Event()

    async def wait_forever(args: Any, c: ToolCall) -> str:
        started.set()
        await c.signal.wait()  # a well-behaved long tool watches its signal
        return "stopped"

    waiter = define_tool("wait", "waits", {"type": "object"}, wait_forever)
    rig = await loop_rig(
        reply(calls=[call("wait", "{}", "call_1"), call("read", {"file_path": "README.md"}, "call_2"), call("list", "{}", "call_3")]),
        tools=[waiter],
    )
    task = asyncio.create_task(rig.agent.run("wait, then read"))
    await asyncio.wait_for(started.wait(), 10)
    rig.agent.cancel()
    outcome = await asyncio.wait_for(task, 10)
    assert outcome.kind == "aborted"
    pairs = [(e.type, e.data.get("callId") or e.data["message"]["source"]["callId"]) for e in rig.events("tool/call", "tool/result")]
    assert pairs == [
        ("tool/call", "call_1"), ("tool/result", "call_1"),
        ("tool/call", "call_2"), ("tool/result", "call_2"),
        ("tool/call", "call_3"), ("tool/result", "call_3"),
    ]
    codes = [r["error"]["code"] for r in rig.data("tool/result")]
    assert codes == ["ABORTED", "ABORTED_BEFORE_DISPATCH", "ABORTED_BEFORE_DISPATCH"]
    assert rig.types()[-2:] == ["step/end", "turn/end"]
    _round_trip(rig.session, tmp_path / "s.jsonl")


async def test_crash_repair_of_a_truncated_log_from_a_real_run(loop_rig: RigFactory, workspace: Path, tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    session = store.create(SessionHeader.new(id="crashy", cwd=str(workspace)))
    rig = await loop_rig(
        reply(reasoning="read first", calls=[call("read", {"file_path": "README.md"}, "call_r")]),
        reply("it is Widget Forge"),
        session=session,
    )
    assert (await rig.run("what is this?")).kind == "completed"
    store.close(session)
    path = store.path_for("crashy")
    lines = path.read_bytes().splitlines(keepends=True)
    # the process died right after logging tool/call, halfway through writing the next line
    cut = next(i for i, line in enumerate(lines) if b'"type":"tool/call"' in line)
    path.write_bytes(b"".join(lines[: cut + 1]) + lines[cut + 1][: len(lines[cut + 1]) // 2])

    repaired = load_session(path)
    tail = [e.type for e in repaired.events][-4:]
    assert tail == ["tool/call", "tool/result", "step/end", "turn/end"]
    closer = repaired.events[-3]
    assert closer.data["error"] == {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"}
    assert closer.data["message"]["content"][0]["content"][0]["text"] == TOOL_OUTCOME_UNKNOWN_TEXT
    assert closer.source_event_seqs == (repaired.events[-4].seq,)
    assert repaired.events[-1].data["reason"] == {"kind": "interrupted"}
    # the repair was written back: loading again changes nothing
    again = load_session(path)
    assert [e.type for e in again.events] == [e.type for e in repaired.events]
    _round_trip(repaired, tmp_path / "copy.jsonl")
    # and the log up to the crash still rebuilds the first request the server received
    check_one_rule(list(repaired.events), "crashy", rig.requests[:1], rig.deepseek.config)
