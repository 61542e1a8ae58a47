"""One step of the loop (`StepRunner`), driven through an `Agent` over the in-memory
`ReplayAdapter`: retries are logged under one id per step and wait on the injected sleep or the
cancel signal, a cancel mid-stream keeps what the model had said, and the contexts tools add
wait for the next step, after every result of this one."""

from __future__ import annotations

import asyncio
from typing import Any

from dshkit.harness.llm import (
    Finish,
    FinishReason,
    LlmFailure,
    StreamChunk,
    ToolCallBlock,
    UserMessage,
)
from dshkit.harness.llm.chunks import BlockEnd, BlockStart, ToolCallDelta
from dshkit.harness.loop import Agent, AgentOptions
from dshkit.harness.session import Session
from dshkit.harness.session.lossless import thaw_json
from dshkit.harness.tools import ToolRuntime, define_tool
from dshkit.harness.tools.policy import Accept
from dshkit.harness.tools.results import ToolResult
from dshkit.harness.tools.runtime import ToolCall

from .test_agent import MODEL, text_reply
from .test_agent import Recording as replay


def tool_reply(*call_ids: str) -> list[StreamChunk]:
    chunks: list[StreamChunk] = []
    for index, call_id in enumerate(call_ids):
        chunks += [
            BlockStart(index=index, block_type="tool-call"),
            ToolCallDelta(index=index, id=call_id, name="echo", arguments_delta='{"text":"x"}'),
            BlockEnd(index=index, block=ToolCallBlock(id=call_id, name="echo", arguments='{"text":"x"}')),
        ]
    return [*chunks, Finish(reason=FinishReason(kind="tool-calls"))]


def error_reply(code: str) -> list[StreamChunk]:
    failure = LlmFailure(message=f"{code} for the test", code=code, status=503)
    return [Finish(reason=FinishReason(kind="error", failure=failure))]


def logged(session: Session, type_: str) -> list[dict[str, Any]]:
    return [thaw_json(e.data) for e in session.events if e.type == type_]


async def test_retry_is_logged_and_waits_the_injected_sleep() -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    session = Session()
    adapter = replay(error_reply("SERVER"), text_reply("ok"))
    agent = Agent(session, adapter, AgentOptions(model=MODEL), sleep=sleep, random=lambda: 0.5)
    outcome = await agent.run("go")
    assert outcome.kind == "completed"
    retries = logged(session, "llm/retry")
    assert len(retries) == 1 and retries[0]["failure"]["code"] == "SERVER"
    assert waits == [retries[0]["delayMs"] / 1000.0]


async def test_every_retry_of_a_step_carries_the_step_s_one_retry_id() -> None:
    async def sleep(seconds: float) -> None:
        pass

    session = Session()
    adapter = replay(error_reply("SERVER"), error_reply("RATE_LIMIT"), text_reply("ok"))
    assert (await Agent(session, adapter, AgentOptions(model=MODEL), sleep=sleep).run("go")).kind == "completed"
    retries, started = logged(session, "llm/retry"), logged(session, "llm/retry-started")
    assert [(r["retry"], r["failure"]["code"]) for r in retries] == [(1, "SERVER"), (2, "RATE_LIMIT")]
    ids = {r["retryId"] for r in retries + started}
    assert len(ids) == 1 and all(isinstance(i, str) and i for i in ids)
    assert [s["retry"] for s in started] == [1, 2] and len(logged(session, "step/start")) == 1


async def test_a_cancel_during_the_retry_wait_ends_the_turn_without_retrying() -> None:
    session = Session()
    adapter = replay(error_reply("SERVER"), text_reply("never"))

    async def sleep(seconds: float) -> None:
        agent.cancel()
        await asyncio.Event().wait()  # only the cancel signal ends this wait

    agent = Agent(session, adapter, AgentOptions(model=MODEL), sleep=sleep)
    outcome = await asyncio.wait_for(agent.run("go"), 30)  # a wait deaf to the signal would hang
    assert outcome.reason == {"kind": "aborted", "reason": {"kind": "user"}}
    assert len(logged(session, "llm/retry")) == 1 and logged(session, "llm/retry-started") == []
    assert adapter.unused() == [f"session {session.id!r} consumed 1/2 recorded call(s) of test"]


async def test_a_cancel_mid_stream_keeps_what_the_model_had_said() -> None:
    session = Session()
    agent = Agent(session, replay(text_reply("half an answer")), AgentOptions(model=MODEL))

    def cancel_on_text(event: Any) -> None:
        if event.type == "assistant/chunk" and event.data["chunk"]["type"] == "text-delta":
            agent.cancel(keep_inbox=True)

    session.subscribe(cancel_on_text)
    outcome = await agent.run("go")
    assert outcome.kind == "aborted"
    [message] = logged(session, "assistant/message")
    assert message["interrupted"] is True
    assert [b["text"] for b in message["message"]["content"]] == ["half an answer"]
    assert [c["chunk"]["type"] for c in logged(session, "assistant/chunk")] == ["block-start", "text-delta"]


async def test_tool_contexts_wait_for_the_next_step_after_every_result() -> None:
    def add_context(call: ToolCall, result: ToolResult, nxt: object) -> Accept:
        return Accept(additional_contexts=[UserMessage.text(f"context of {call.call_id}")])

    tools = ToolRuntime(
        [define_tool("echo", "x", {"type": "object"}, lambda a: "echoed", concurrency_safe=True)],
        post_execute=[add_context],
    )
    session = Session()
    agent = Agent(session, replay(tool_reply("c1", "c2"), text_reply("done")), AgentOptions(model=MODEL), tools=tools)
    assert (await agent.run("go")).kind == "completed"
    order = []
    for event in session.events:
        data = thaw_json(event.data)
        if event.type in ("tool/call", "tool/result"):
            call_id = data.get("callId") or data["message"]["content"][0]["toolCallId"]
            order.append(f"{event.type} {call_id}")
        elif event.type == "user/message":
            order.append(data["content"][0]["text"])
        elif event.type == "agent/inbox/spliced" and data["target"] == "next-step" and data["inserted"]:
            order.append("parked " + data["inserted"][0]["content"][0]["text"])
        elif event.type == "step/start":
            order.append("step")
    assert order == [
        "step", "go", "tool/call c1", "tool/call c2", "tool/result c1", "tool/result c2",
        "parked context of c1", "parked context of c2", "step", "context of c1", "context of c2",
    ]
    calls = {e.seq: thaw_json(e.data)["callId"] for e in session.events if e.type == "tool/call"}
    results = [e for e in session.events if e.type == "tool/result"]
    assert [calls[r.source_event_seqs[0]] for r in results] == ["c1", "c2"]  # type: ignore[index]
