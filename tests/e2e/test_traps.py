"""The 28 surprising points of dsh-core.md §7, one test each, end to end over loopback.

Each test is named after its trap. Where dshkit departs from upstream on purpose (DESIGN.md,
"Decisions where we differ"), the test asserts dshkit's documented behaviour and says so.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from dshkit.harness.llm import GenerateOptions, StreamChunk, UserMessage
from dshkit.harness.llm.errors import SessionError
from dshkit.harness.loop import Agent, AgentOptions
from dshkit.harness.loop.prestep import PreStep, PreStepDecision, Reject
from dshkit.harness.prompt import SystemPrompt
from dshkit.harness.prompt.assembly import UNLISTED_TOOLS
from dshkit.harness.prompt.runtime_context import RUNTIME_CONTEXT_HEADER
from dshkit.harness.providers.deepseek import DeepSeekAdapter, DeepSeekConfig
from dshkit.harness.session import SessionHeader
from dshkit.harness.session.events import SessionEvent
from dshkit.harness.session.store import SessionStore
from dshkit.harness.tools import builtin_tools, define_tool
from dshkit.harness.tools.policy import Accept, Deny
from dshkit.harness.tools.results import ToolResult
from dshkit.harness.tools.runtime import ToolCall

from .conftest import MODEL, RigFactory, call, reply, script


def _text(result: Any) -> str:
    return str(result["message"]["content"][0]["content"][0]["text"])


def _call_ids(rig: Any) -> list[tuple[str, str]]:
    return [
        (e.type, e.data["callId"] if e.type == "tool/call" else e.data["message"]["source"]["callId"])
        for e in rig.events("tool/call", "tool/result")
    ]


def _user_texts(rig: Any, turn_events: list[SessionEvent]) -> list[str]:
    return [e.data["content"][0]["text"] for e in turn_events if e.type == "user/message"]


def _turn_events(rig: Any, turn: int) -> list[SessionEvent]:
    out: list[SessionEvent] = []
    inside = False
    for e in rig.session.events:
        if e.type == "turn/start":
            inside = e.data["turn"] == turn
        if inside:
            out.append(e)
    return out


async def test_trap_01_retries_stay_in_same_step(loop_rig: RigFactory) -> None:
    rig = await loop_rig("rate_limit", reply("second attempt"))
    assert (await rig.run("hi")).kind == "completed"
    assert [e.data for e in rig.events("step/start")] == [{"turn": 1, "step": 1}]
    assert len(rig.events("turn/start")) == 1
    (retry,) = rig.data("llm/retry")
    assert (retry["turn"], retry["step"]) == (1, 1)
    failed = [e for e in rig.events("assistant/chunk") if e.seq < rig.events("llm/retry")[0].seq]
    assert failed and failed[-1].data["chunk"]["reason"]["kind"] == "error"  # logged...
    (message,) = rig.events("assistant/message")
    assert not set(message.source_event_seqs or ()) & {e.seq for e in failed}  # ...but uncited
    assert message.source_event_seqs == tuple(
        e.seq for e in rig.events("assistant/chunk") if e.seq > rig.events("llm/retry-started")[0].seq
    )


async def test_trap_02_user_message_data_is_the_message(loop_rig: RigFactory) -> None:
    rig = await loop_rig(reply(calls=[call("list", "{}", "call_l")]), reply("done"))
    await rig.run("list")
    (user,) = rig.data("user/message")
    assert set(user) == {"id", "role", "content", "source"} and user["role"] == "user"
    for kind in ("assistant/message", "tool/result"):
        for data in rig.data(kind):
            assert {"turn", "step", "message"} <= set(data) and "role" not in data


async def test_trap_03_empty_assistant_message_logged_but_derives_nothing(loop_rig: RigFactory) -> None:
    rig = await loop_rig(reply("", finish="length"), reply("second"))
    assert (await rig.run("say nothing")).reason == {"kind": "max-tokens"}
    (anchor,) = rig.events("assistant/message")
    assert anchor.data["message"]["content"] == []
    assert anchor.source_event_seqs == tuple(e.seq for e in rig.events("assistant/chunk"))
    assert rig.session.is_surface_node(anchor.seq) and rig.session.message_at(anchor.seq) is None
    await rig.run("again")
    assert [m["role"] for m in rig.bodies[1]["messages"]] == ["system", "user", "user"]


async def test_trap_04_max_tokens_drops_tool_calls_and_is_sticky(loop_rig: RigFactory) -> None:
    holder: dict[str, Agent] = {}

    async def steer_once(payload: PreStep, nxt: Any) -> PreStepDecision:
        if (payload.turn, payload.step) == (1, 1):
            holder["agent"].inject("please continue")  # pending steering keeps the turn going
        return await nxt()

    rig = await loop_rig(
        reply("cut", calls=[call("write", {"file_path": "x", "content": "x"}, "call_w")], finish="length"),
        reply("finished"),
        reply("next turn"),
        pre_step=[steer_once],
    )
    holder["agent"] = rig.agent
    assert (await rig.run("go")).reason == {"kind": "max-tokens"}  # sticky over step 2's stop
    first = rig.data("assistant/message")[0]["message"]
    assert [b["type"] for b in first["content"]] == ["text"]  # the tool call is dropped
    assert rig.events("tool/call") == [] and not (rig.workspace / "x").exists()
    assert len(rig.events("step/start")) == 2
    assert (await rig.run("new turn")).reason == {"kind": "completed"}  # not across turns


async def test_trap_05_runtime_context_after_claimed_dedup_and_reemitted_after_shadowing(loop_rig: RigFactory) -> None:
    prompt = SystemPrompt()
    prompt.context("env", "os: linux")
    rig = await loop_rig(reply("one"), reply("two"), reply("three"), prompt=prompt)
    await rig.run("first")
    turn1 = _turn_events(rig, 1)
    assert _user_texts(rig, turn1) == ["first", RUNTIME_CONTEXT_HEADER + "os: linux"]
    await rig.run("second")  # unchanged: deduplicated
    assert _user_texts(rig, _turn_events(rig, 2)) == ["second"]
    # compaction-like replace shadowing the retained snapshot (host code between turns)
    nodes = rig.session.surface_nodes
    rig.session.append_user_message(
        UserMessage.text("Summary: the user said first and second."),
        surface_op={"op": "replace", "start": nodes[0], "end": nodes[-1]},
        source_event_seqs=list(nodes),
    )
    await rig.run("third")  # same context text, but the snapshot was shadowed: re-emitted
    assert _user_texts(rig, _turn_events(rig, 3)) == ["third", RUNTIME_CONTEXT_HEADER + "os: linux"]
    assert [m["content"] for m in rig.bodies[2]["messages"][1:]] == [
        "Summary: the user said first and second.", "third", RUNTIME_CONTEXT_HEADER + "os: linux"
    ]


async def test_trap_06_claim_order_next_step_first_one_followup_per_turn(loop_rig: RigFactory) -> None:
    rig = await loop_rig(reply("a"), reply("b"))
    rig.agent.inject("injected while idle")
    assert rig.events("turn/start") == []  # inject does not wake
    rig.agent.followup("first")
    rig.agent.followup("second")
    outcomes = await rig.agent.run_until_idle()
    rig.check()
    assert [o.turn for o in outcomes] == [1, 2]
    assert _user_texts(rig, _turn_events(rig, 1)) == ["injected while idle", "first"]
    assert _user_texts(rig, _turn_events(rig, 2)) == ["second"]


async def test_trap_07_invalid_json_fails_after_policy_and_empty_is_object(loop_rig: RigFactory) -> None:
    seen: list[Any] = []
    got: list[Any] = []
    probe = define_tool("probe", "records", {"type": "object"}, lambda a: got.append(a) or "ok")

    def spy(c: ToolCall, nxt: Any) -> Any:
        seen.append((c.name, c.arguments))
        return nxt()

    rig = await loop_rig(
        reply(calls=[call("probe", "not json", "call_1"), call("probe", "", "call_2")]),
        reply("done"),
        tools=[probe], builtin=False, pre_execute=[spy],
    )
    await rig.run("probe")
    assert seen == [("probe", "not json"), ("probe", {})]  # policy ran on the raw string
    assert [d["arguments"] for d in rig.data("tool/call")] == ["not json", ""]
    first, second = rig.data("tool/result")
    assert first["error"]["code"] == "INVALID_ARGS" and _text(first).startswith("Error: invalid arguments")
    assert got == [{}] and _text(second) == "ok"


async def test_trap_08_tool_call_id_and_name_only_on_first_fragment(loop_rig: RigFactory) -> None:
    rig = await loop_rig(
        reply(calls=[call("read", '{"file_path":"README.md"}', "call_frag")], stream={"arguments": {"mode": "fixed", "size": 4}}),
        reply("read"),
    )
    await rig.run("read")
    wire = rig.requests[0].data.decode()
    assert wire.count('"id":"call_frag"') == 1 and wire.count('"name":"read"') == 1  # only the first
    deltas = [e.data["chunk"] for e in rig.events("assistant/chunk") if e.data["chunk"]["type"] == "tool-call-delta"]
    assert len(deltas) > 2
    # the translator re-emits the stored id (and the stored name, once known) on every delta
    assert all((d["id"], d["name"]) == ("call_frag", "read") for d in deltas)
    block = rig.data("assistant/message")[0]["message"]["content"][-1]
    assert (block["id"], block["name"]) == ("call_frag", "read")


async def test_trap_09_block_ends_usage_and_finish_deferred_to_done(loop_rig: RigFactory) -> None:
    empty_reasoning_first = {
        "raw": {"writes": [{"text": t} for t in (
            'data: {"id":"r","object":"chat.completion.chunk","created":0,"model":"deepseek-v4-flash","choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning_content":""},"finish_reason":null}]}\n\n',
            'data: {"id":"r","object":"chat.completion.chunk","created":0,"model":"deepseek-v4-flash","choices":[{"index":0,"delta":{"content":"plain"},"finish_reason":"stop"}]}\n\n',
            'data: [DONE]\n\n',
        )]}
    }
    rig = await loop_rig(
        reply("text", reasoning="think", calls=[call("list", "{}", "call_l")]),
        reply("after"),
        empty_reasoning_first,
    )
    await rig.run("go")
    chunks = [e.data["chunk"]["type"] for e in rig.events("assistant/chunk") if e.data["step"] == 1]
    last_delta = max(i for i, t in enumerate(chunks) if t.endswith("-delta"))
    first_end = chunks.index("block-end")
    assert first_end > last_delta  # blocks stay open concurrently until [DONE]
    assert chunks[-3:] == ["block-end", "usage", "finish"] and chunks.count("block-end") == 3
    await rig.run("again")
    third = [e.data["chunk"] for e in rig.events("assistant/chunk") if e.data["turn"] == 2]
    assert [c["blockType"] for c in third if c["type"] == "block-start"] == ["text"]  # "" opened nothing


async def test_trap_10_empty_response_only_for_stop_without_blocks(loop_rig: RigFactory) -> None:
    rig = await loop_rig("empty", reply(reasoning="only thinking"), reply("", finish="length"))
    assert (await rig.run("one")).kind == "completed"
    (retry,) = rig.data("llm/retry")
    assert retry["failure"]["code"] == "EMPTY_RESPONSE"  # stop + no block: synthesized, retried
    content = rig.data("assistant/message")[0]["message"]["content"]
    assert [b["type"] for b in content] == ["reasoning"]  # reasoning-only is a success
    assert (await rig.run("two")).kind == "max-tokens"  # length with nothing is no error
    assert len(rig.data("llm/retry")) == 1


async def test_trap_11_usage_is_disjoint(loop_rig: RigFactory) -> None:
    base = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    both = {
        **base, "prompt_cache_hit_tokens": 60, "prompt_cache_miss_tokens": 40,
        "prompt_tokens_details": {"cached_tokens": 60},
        "completion_tokens_details": {"reasoning_tokens": 5},
    }
    hit_only = {**base, "prompt_cache_hit_tokens": 30, "prompt_cache_miss_tokens": 70}
    disagree = {**base, "prompt_tokens_details": {"cached_tokens": 60}, "prompt_cache_hit_tokens": 30}
    rig = await loop_rig(reply("one", usage=both), reply("two", usage=hit_only), reply("three", usage=disagree))
    for prompt in ("one", "two", "three"):
        await rig.run(prompt)
    logged = [d["usage"] for d in rig.data("assistant/message")]
    assert logged[0] == {"inputTokens": 40, "outputTokens": 20, "cacheReadTokens": 60, "reasoningTokens": 5}
    assert logged[1] == {"inputTokens": 70, "outputTokens": 20, "cacheReadTokens": 30}  # the fallback
    assert logged[2] == {"inputTokens": 40, "outputTokens": 20, "cacheReadTokens": 60}  # cached_tokens preferred


async def test_trap_12_assistant_content_empty_string_and_reasoning_echoed(loop_rig: RigFactory) -> None:
    rig = await loop_rig(
        reply(reasoning="need files", calls=[call("list", "{}", "call_l")]),
        reply("done", reasoning="now answer"),
        reply("bye"),
    )
    await rig.run("list")
    await rig.run("thanks")
    assistants = [m for m in rig.bodies[2]["messages"] if m["role"] == "assistant"]
    # dshkit departs here on purpose: a turn made only of tool calls sends `content: null`
    # (DeepSeekConfig.tool_only_content="empty" restores DSH's ""); a turn without tool calls
    # still never sends null (the 400 DSH's trap is about).
    assert assistants[0]["content"] is None
    assert [a.get("reasoning_content") for a in assistants] == ["need files", "now answer"]
    assert assistants[1]["content"] == "done"


async def test_trap_13_thinking_and_budget_fields_are_logged_or_adapter_configured(loop_rig: RigFactory) -> None:
    """dshkit has no prepareCall: nothing is materialized behind the log's back. Fields set on
    the agent go into the logged header; fields set on the adapter come from its config, which
    the rebuild serializes with. No `adapterDefaults` markers are written (a departure)."""
    agent_level = await loop_rig(reply("a"), options=AgentOptions(model=MODEL, reasoning_effort="high", max_tokens=256000))
    await agent_level.run("hi")
    config = agent_level.data("request/header")[0]["header"]["config"]
    assert config == {"provider": "deepseek", "model": MODEL, "reasoningEffort": "high", "maxTokens": 256000}
    body = agent_level.bodies[0]
    assert (body["thinking"], body["reasoning_effort"], body["max_tokens"]) == ({"type": "enabled"}, "high", 256000)

    adapter_level = await loop_rig(reply("b"), config=DeepSeekConfig(reasoning_effort="high", max_tokens=256000))
    await adapter_level.run("hi")
    header = adapter_level.data("request/header")[0]["header"]
    assert "adapterDefaults" not in header and set(header["config"]) == {"provider", "model"}
    assert adapter_level.bodies[0]["max_tokens"] == 256000  # from the adapter config; rebuild agrees

    plain = await loop_rig(reply("c"))
    await plain.run("hi")
    assert not {"thinking", "reasoning_effort", "max_tokens"} & set(plain.bodies[0])


async def test_trap_14_request_header_initial_resume_change(loop_rig: RigFactory, workspace: Path) -> None:
    prompt = SystemPrompt(persona="Persona one.")
    rig = await loop_rig(*(reply(str(i)) for i in range(4)), prompt=prompt)
    await rig.run("1")
    await rig.run("2")
    assert [d["reason"] for d in rig.data("request/header")] == ["initial"]
    prompt.replace_section("deployment:persona", "Persona two.")
    await rig.run("3")
    assert [d["reason"] for d in rig.data("request/header")] == ["initial", "change"]
    # a new loop instance on the same log (a restart) logs a header even though it is unchanged
    restarted = Agent(
        rig.session, rig.deepseek, AgentOptions(model=MODEL),
        prompt=SystemPrompt(persona="Persona two."), tools=type(rig.tools)(builtin_tools(workspace)),
    )
    await restarted.run("4")
    headers = rig.data("request/header")
    assert [d["reason"] for d in headers] == ["initial", "change", "resume"]
    assert headers[2]["header"] == headers[1]["header"]
    rig.check()


async def test_trap_15_done_missing_and_stream_errors(loop_rig: RigFactory) -> None:
    """As DSH by default: EOF after a finish_reason without [DONE] fails the call
    (STREAM_CLOSED, not retried; the adapter still flags its finish `meta.doneMissing`, and
    `missing_done="accept"` keeps the answer); EOF before any finish_reason is STREAM_CLOSED too.
    Departure: an in-band error object ends the stream as an error carrying its message instead
    of being ignored until EOF (the same outcome, a richer failure)."""
    rig = await loop_rig("done_missing", "partial_eof", {"fault": "inband_error", "message": "upstream exploded", "code": "mock_inband_error", "type": "invalid_request_error"})
    one = await rig.run("one")
    assert one.kind == "error" and one.reason["error"]["code"] == "STREAM_CLOSED"
    assert rig.data("assistant/chunk")[-1]["chunk"]["meta"]["doneMissing"] is True
    two = await rig.run("two")
    assert two.kind == "error" and two.reason["error"]["code"] == "STREAM_CLOSED"
    assert rig.data("llm/retry") == [] and len(rig.requests) == 2
    three = await rig.run("three")
    assert three.kind == "error" and "upstream exploded" in three.reason["error"]["message"]
    assert rig.events("assistant/message") == []  # failed attempts never reach history


async def test_trap_16_http_code_precedence(loop_rig: RigFactory) -> None:
    rig = await loop_rig(
        {"fault": "auth_error", "message": "quota exceeded for this key"}, "quota_exceeded", {"fault": "server_error", "message": "You exceeded your current quota"}
    )
    auth = await rig.run("one")
    assert auth.reason["error"]["code"] == "AUTH"  # 401 first, whatever the wording
    quota = await rig.run("two")
    assert (quota.reason["error"]["code"], quota.reason["error"]["status"]) == ("QUOTA", 429)  # not RATE_LIMIT
    server = await rig.run("three")
    assert server.reason["error"]["code"] == "QUOTA"  # quota wording beats 5xx
    assert rig.data("llm/retry") == []  # none of them is retryable


class _SelfAbortingAdapter:
    """Ends its own stream with an `aborted` finish while the turn is not cancelled."""

    def __init__(self, inner: DeepSeekAdapter) -> None:
        self.inner = inner
        self.capabilities = inner.capabilities

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        own = asyncio.Event()
        async for chunk in self.inner.stream(dataclasses.replace(options, signal=own)):
            yield chunk
            own.set()


async def test_trap_17_aborted_finish_without_cancel_is_an_error(loop_rig: RigFactory) -> None:
    rig = await loop_rig({"fault": "stall_after", "after_events": 2}, wrap=_SelfAbortingAdapter)
    outcome = await asyncio.wait_for(rig.run("hi"), 10)
    assert outcome.kind == "error" and outcome.reason["error"]["code"] == "ABORTED"
    assert rig.data("assistant/chunk")[-1]["chunk"]["reason"]["kind"] == "aborted"
    assert rig.events("assistant/message") == []


async def test_trap_18_denials_carry_no_code_and_unknown_tools_pass_pre_execute(loop_rig: RigFactory) -> None:
    pre: list[str] = []
    post: list[tuple[str, bool]] = []

    def policy(c: ToolCall, nxt: Any) -> Any:
        pre.append(c.name)
        return Deny("no writing") if c.name == "write" else nxt()

    def after(c: ToolCall, result: ToolResult, nxt: Any) -> Any:
        post.append((c.name, result.is_error))
        return Accept()

    rig = await loop_rig(
        reply(calls=[call("write", {"file_path": "a", "content": "b"}, "call_w"), call("nope", "{}", "call_n")]),
        reply("ok"),
        pre_execute=[policy], post_execute=[after],
    )
    await rig.run("go")
    assert pre == ["write", "nope"]
    assert post == [("write", True), ("nope", True)]  # the denial still went through post-execute
    denied, unknown = rig.data("tool/result")
    assert "error" not in denied and _text(denied) == "Error: no writing"
    assert unknown["error"] == {"name": "ToolNotFoundError", "code": "UNKNOWN_TOOL"}
    assert _text(unknown) == 'Error: unknown tool "nope"'


async def test_trap_19_ordered_commit_call_logged_before_policy(loop_rig: RigFactory) -> None:
    logged_first: list[bool] = []
    holder: dict[str, Any] = {}

    def policy(c: ToolCall, nxt: Any) -> Any:
        last = holder["session"].last_of("tool/call")
        logged_first.append(last is not None and last.data["callId"] == c.call_id)
        return nxt()

    one = define_tool("one", "exclusive", {"type": "object"}, lambda a: "1")
    two = define_tool("two", "exclusive", {"type": "object"}, lambda a: "2")
    rig = await loop_rig(
        reply(calls=[call("one", "{}", "call_1"), call("two", "{}", "call_2")]),
        reply("ok"),
        tools=[one, two], builtin=False, pre_execute=[policy],
    )
    holder["session"] = rig.session
    await rig.run("go")
    assert logged_first == [True, True]
    # exclusive calls: each call's result is committed before the next call starts
    assert _call_ids(rig) == [("tool/call", "call_1"), ("tool/result", "call_1"), ("tool/call", "call_2"), ("tool/result", "call_2")]
    seqs = {e.data["callId"]: e.seq for e in rig.events("tool/call")}
    assert [r.source_event_seqs for r in rig.events("tool/result")] == [(seqs["call_1"],), (seqs["call_2"],)]


async def test_trap_20_cancellation_never_leaves_dangling_calls(loop_rig: RigFactory) -> None:
    rig = await loop_rig(
        reply(calls=[call("read", {"file_path": "README.md"}, "call_1"), call("list", "{}", "call_2")]),
        reply("next turn"),
    )

    def cancel_on_message(event: SessionEvent) -> None:
        if event.type == "assistant/message":
            rig.agent.cancel()

    unsubscribe = rig.session.subscribe(cancel_on_message)
    assert (await rig.run("go")).kind == "aborted"
    unsubscribe()
    assert _call_ids(rig) == [("tool/call", "call_1"), ("tool/result", "call_1"), ("tool/call", "call_2"), ("tool/result", "call_2")]
    assert [r["error"]["code"] for r in rig.data("tool/result")] == ["ABORTED_BEFORE_DISPATCH"] * 2
    assert len(rig.events("assistant/message")) == 1  # the message stays
    assert (await rig.run("again")).kind == "completed"
    assert [m["role"] for m in rig.bodies[1]["messages"]] == ["system", "user", "assistant", "tool", "tool", "user"]


async def test_trap_21_surface_replace_is_content_only_for_tool_results(loop_rig: RigFactory) -> None:
    rig = await loop_rig(reply(calls=[call("read", {"file_path": "README.md"}, "call_r")]), reply("ok"), reply("again"))
    await rig.run("read")
    result = rig.events("tool/result")[0]
    data = result.data
    new = {**data, "message": {**data["message"], "content": [{**data["message"]["content"][0], "content": [{"type": "text", "text": "[pruned]"}]}]}}
    op = {"op": "replace", "start": result.seq, "end": result.seq}
    bad = {**new, "message": {**new["message"], "content": [{**new["message"]["content"][0], "isError": True}]}}
    with pytest.raises(SessionError):
        rig.session.append("tool/result", bad, surface_op=op, source_event_seqs=[result.seq])
    rig.session.append("tool/result", new, surface_op=op, source_event_seqs=[result.seq])
    await rig.run("and now?")
    (tool,) = [m for m in rig.bodies[2]["messages"] if m["role"] == "tool"]
    assert tool == {"role": "tool", "tool_call_id": "call_r", "content": "[pruned]"}


async def test_trap_22_end_seed_on_seeded_construction(loop_rig: RigFactory, workspace: Path, tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    session = store.create(SessionHeader.new(id="resumable", cwd=str(workspace)))
    rig = await loop_rig(reply("first"), reply("second"), session=session)
    await rig.run("one")
    store.close(session)
    rig.expect_violation = True  # this Session object is superseded; `resumed` checks the whole log
    reopened = store.open("resumable")
    assert reopened.events[-1].type == "session/end-seed"
    n = len(reopened)
    store.close(reopened)
    again = store.open("resumable")
    assert len(again) == n  # the seed already ends with end-seed: no growth
    resumed = await loop_rig(session=again, server=rig.server)
    assert (await resumed.run("two")).turn == 2  # numbering continues after the seed
    store.close(again)


async def test_trap_23_cancel_on_idle_clears_the_inbox(loop_rig: RigFactory) -> None:
    rig = await loop_rig(reply("a"), reply("b"))
    rig.agent.inject("stale")
    rig.agent.cancel()
    (canceled,) = [d for d in rig.data("agent/inbox/spliced") if d.get("outcome") == "canceled"]
    assert canceled["removedCount"] == 1 and canceled["target"] == "next-step"
    await rig.run("fresh")
    assert _user_texts(rig, _turn_events(rig, 1)) == ["fresh"]
    rig.agent.inject("kept")
    rig.agent.cancel(keep_inbox=True)
    await rig.run("later")
    assert _user_texts(rig, _turn_events(rig, 2)) == ["kept", "later"]


async def test_trap_24_reject_goes_idle_with_queued_work(loop_rig: RigFactory) -> None:
    async def reject_first(payload: PreStep, nxt: Any) -> PreStepDecision:
        return Reject() if payload.turn == 1 else await nxt()

    rig = await loop_rig(reply("second ran"), pre_step=[reject_first])
    idle = asyncio.Event()
    rig.agent.subscribe(lambda e: idle.set() if e.type == "agent/status" and e.data["status"] == "idle" else None)
    rig.agent.followup("first")
    rig.agent.followup("second")
    await asyncio.wait_for(idle.wait(), 10)
    assert [o.reason for o in rig.agent.outcomes] == [{"kind": "blocked"}]
    assert rig.agent.status == "idle"
    assert [e.type for e in _turn_events(rig, 1)] == ["turn/start", "agent/inbox/spliced", "turn/end"]  # zero steps
    outcomes = await rig.agent.run_until_idle()  # the next wake runs the queued work
    assert [o.kind for o in outcomes] == ["completed"]
    assert _user_texts(rig, _turn_events(rig, 2)) == ["second"]


async def test_trap_25_strict_prompt_interpolation(loop_rig: RigFactory, workspace: Path) -> None:
    bad = SystemPrompt()
    bad.section("rules", "You work in {{cwd}} as {{role}}.")
    rig = await loop_rig(reply("never"), prompt=bad)
    outcome = await rig.run("hi")
    assert outcome.kind == "error" and "role" in outcome.reason["error"]["message"]
    assert rig.events("step/start") == [] and rig.requests == []

    good = SystemPrompt()
    good.section("rules", "You work in {{cwd}}. Templates open with {{ and that is all.")
    ok = await loop_rig(reply("fine"), prompt=good)
    await ok.run("hi")
    assert ok.bodies[0]["messages"][0]["content"].endswith(f"You work in {workspace}. Templates open with {{{{ and that is all.")


async def test_trap_26_tools_sorted_by_name_unless_ordered(loop_rig: RigFactory) -> None:
    zeta = define_tool("zeta", "z", {"type": "object"}, lambda a: "z")
    alpha = define_tool("alpha", "a", {"type": "object"}, lambda a: "a")
    rig = await loop_rig(reply("x"), tools=[zeta, alpha], builtin=False)
    await rig.run("hi")
    assert [t["function"]["name"] for t in rig.bodies[0]["tools"]] == ["alpha", "zeta"]
    ordered = await loop_rig(reply("y"), tools=[zeta, alpha], builtin=False, prompt=SystemPrompt(tool_order=["zeta", UNLISTED_TOOLS]))
    await ordered.run("hi")
    assert [t["function"]["name"] for t in ordered.bodies[0]["tools"]] == ["zeta", "alpha"]


async def test_trap_27_lossless_json(loop_rig: RigFactory) -> None:
    echo = define_tool("echo", "echoes", {"type": "object"}, lambda a: "echoed")
    rig = await loop_rig(
        reply(calls=[call("echo", '{"x": NaN}', "call_nan"), call("echo", '{"x": -0.0}', "call_negzero")]),
        reply("ok"),
        tools=[echo], builtin=False,
    )
    await rig.run("go")
    nan, negzero = rig.data("tool/result")
    assert nan["error"]["code"] == "INVALID_ARGS"  # NaN is not JSON: the raw string is validated
    assert negzero["message"]["content"][0]["isError"] is True and "-0" in _text(negzero)
    n = len(rig.session)
    for value in (float("nan"), -0.0, math.inf, {1, 2}):
        with pytest.raises(SessionError):
            rig.session.append("todo/write", {"todos": [], "x": value})
    assert len(rig.session) == n  # nothing committed


async def test_trap_27_non_lossless_tool_output_is_invalid_tool_output(loop_rig: RigFactory) -> None:
    nan = define_tool("nan", "returns NaN", {"type": "object"}, lambda a: {"x": float("nan")})
    rig = await loop_rig(reply(calls=[call("nan", "{}", "call_nan")]), reply("ok"), tools=[nan], builtin=False)
    await rig.run("go")
    (result,) = rig.data("tool/result")
    assert result["error"]["code"] == "INVALID_TOOL_OUTPUT"


async def test_trap_28_no_built_in_max_steps(loop_rig: RigFactory) -> None:
    steps = [reply(calls=[call("list", "{}")]) for _ in range(12)] + [reply("finally")]
    rig = await loop_rig(scripts=[script(*steps)])
    outcome = await rig.run("list a lot")
    assert outcome.reason == {"kind": "completed"}
    assert len(rig.events("step/start")) == 13 and len(rig.requests) == 13
