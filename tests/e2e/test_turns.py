"""Turns and steps: pre-step reject/rewrite, the runtime-context snapshot, retries with
Retry-After, the max-steps limit."""

from __future__ import annotations

from typing import Any

from dshkit.harness.llm import UserMessage
from dshkit.harness.loop import AgentOptions
from dshkit.harness.loop.prestep import Enter, PreStep, PreStepDecision, Reject
from dshkit.harness.prompt import SystemPrompt
from dshkit.harness.prompt.runtime_context import (
    RUNTIME_CONTEXT_CLEARED,
    RUNTIME_CONTEXT_HEADER,
    RUNTIME_CONTEXT_PLUGIN,
)

from .conftest import MODEL, RigFactory, call, reply, script


async def test_pre_step_reject_blocks_the_turn_without_a_step(loop_rig: RigFactory) -> None:
    async def reject(payload: PreStep, nxt: Any) -> PreStepDecision:
        return Reject("not today")

    rig = await loop_rig(reply("never sent"), pre_step=[reject])
    outcome = await rig.run("hello")
    assert outcome.reason == {"kind": "blocked"}
    assert rig.types() == ["agent/inbox/spliced", "turn/start", "agent/inbox/spliced", "turn/end"]
    assert rig.requests == []
    assert rig.session.derive_messages() == []  # the rejected input is simply gone
    assert rig.server.journal.unused_steps()  # the scripted reply was never asked for


async def test_pre_step_rewrite_is_logged_then_sent(loop_rig: RigFactory) -> None:
    seen: list[tuple[int, int, list[str]]] = []

    async def rewrite(payload: PreStep, nxt: Any) -> PreStepDecision:
        seen.append((payload.turn, payload.step, [m.content[0].text for m in payload.messages]))  # type: ignore[union-attr]
        if payload.step > 1:
            return await nxt()
        return Enter((UserMessage.text(payload.messages[0].content[0].text.upper()),))  # type: ignore[union-attr]

    rig = await loop_rig(
        reply(calls=[call("list", "{}", "call_l")]), reply("done"), pre_step=[rewrite]
    )
    assert (await rig.run("list the files")).kind == "completed"
    assert seen == [(1, 1, ["list the files"]), (1, 2, [])]
    (user,) = rig.data("user/message")
    assert user["content"] == [{"type": "text", "text": "LIST THE FILES"}]
    assert rig.bodies[0]["messages"][1] == {"role": "user", "content": "LIST THE FILES"}


async def test_runtime_context_snapshot_only_when_changed(loop_rig: RigFactory) -> None:
    state = {"branch": "main"}
    prompt = SystemPrompt(persona="You help with Widget Forge.")
    prompt.context("git", lambda: f"branch: {state['branch']}")
    payloads: list[list[str]] = []

    async def spy(payload: PreStep, nxt: Any) -> PreStepDecision:
        payloads.append([m.content[0].text for m in payload.messages])  # type: ignore[union-attr]
        return await nxt()

    rig = await loop_rig(*(reply(f"answer {i}") for i in range(5)), prompt=prompt, pre_step=[spy])
    await rig.run("turn 1")  # snapshot: branch main
    await rig.run("turn 2")  # unchanged: no snapshot
    state["branch"] = "feature"
    await rig.run("turn 3")  # changed: new snapshot
    prompt.remove_context("git")
    await rig.run("turn 4")  # gone: the fixed "none" marker once
    await rig.run("turn 5")  # still gone: nothing
    snapshots = [e.data for e in rig.events("user/message") if e.data["source"]["kind"] == "plugin"]
    assert [s["content"][0]["text"] for s in snapshots] == [
        RUNTIME_CONTEXT_HEADER + "branch: main",
        RUNTIME_CONTEXT_HEADER + "branch: feature",
        RUNTIME_CONTEXT_CLEARED,
    ]
    assert all(s["source"]["plugin"] == RUNTIME_CONTEXT_PLUGIN for s in snapshots)
    assert len(rig.events("request/header")) == 1  # the system prompt stayed byte-stable
    assert len({b["messages"][0]["content"] for b in rig.bodies}) == 1
    # the snapshot goes after the claimed prompt, and never into the pre-step payload
    users = [(e.data["source"]["kind"], e.seq) for e in rig.events("user/message")]
    assert [k for k, _ in users] == ["user", "plugin", "user", "user", "plugin", "user", "plugin", "user"]
    assert payloads == [[f"turn {i}"] for i in range(1, 6)]
    per_turn = [sum(1 for m in b["messages"] if m["role"] == "user" and m["content"].startswith("Current runtime context")) for b in rig.bodies]
    assert per_turn == [1, 1, 2, 3, 3]


async def test_retry_429_honours_retry_after_in_the_same_step(loop_rig: RigFactory) -> None:
    rig = await loop_rig({"fault": "rate_limit", "retry_after": 2}, reply("after the wait"))
    assert (await rig.run("hi")).kind == "completed"
    (retry,) = rig.data("llm/retry")
    assert retry["delayMs"] == 2000 and type(retry["delayMs"]) is int  # whole ms, as DSH logs it
    assert (retry["turn"], retry["step"], retry["retry"]) == (1, 1, 1)
    assert retry["failure"]["code"] == "RATE_LIMIT" and retry["failure"]["status"] == 429
    assert rig.sleeps == [2.0]
    assert len(rig.events("step/start")) == 1
    assert rig.types()[rig.types().index("llm/retry") :] == [
        "llm/retry", "llm/retry-started", "assistant/message", "step/end", "turn/end"
    ]
    assert len(rig.requests) == 2 and rig.bodies[0] == rig.bodies[1]


async def test_retry_503_honours_retry_after(loop_rig: RigFactory) -> None:
    unavailable = {
        "raw": {
            "status": 503,
            "headers": {"Content-Type": "application/json", "Retry-After": "3"},
            "writes": [{"text": '{"error": {"message": "Server overloaded", "type": "service_unavailable", "param": null, "code": "service_unavailable"}}'}],
        }
    }
    rig = await loop_rig(unavailable, unavailable, reply("third time lucky"))
    assert (await rig.run("hi")).kind == "completed"
    retries = rig.data("llm/retry")
    assert [(r["retry"], r["delayMs"], r["failure"]["status"]) for r in retries] == [(1, 3000, 503), (2, 3000, 503)]
    # one retry chain, one retryId (DSH reuses it), echoed by each llm/retry-started
    assert len({r["retryId"] for r in retries}) == 1
    assert {s["retryId"] for s in rig.data("llm/retry-started")} == {retries[0]["retryId"]}
    assert rig.sleeps == [3.0, 3.0]
    assert len(rig.events("step/start")) == 1
    # every failed attempt's chunks stay logged, but the message cites only the last attempt
    (message,) = rig.events("assistant/message")
    finishes = [e.seq for e in rig.events("assistant/chunk") if e.data["chunk"]["type"] == "finish"]
    assert len(finishes) == 3
    assert all(seq not in message.source_event_seqs for seq in finishes[:2])


async def test_retry_backoff_without_retry_after_uses_the_injected_random(loop_rig: RigFactory) -> None:
    rig = await loop_rig("server_error", "server_error", reply("ok"))
    assert (await rig.run("hi")).kind == "completed"
    delays = [r["delayMs"] for r in rig.data("llm/retry")]
    assert delays == [500, 1000] and all(type(d) is int for d in delays)  # random 0.5 → no jitter
    assert rig.sleeps == [0.5, 1.0]


async def test_max_steps_ends_the_turn(loop_rig: RigFactory) -> None:
    loop = script(reply(calls=[call("list", "{}")]), repeat_last=True)
    rig = await loop_rig(scripts=[loop], options=AgentOptions(model=MODEL, max_steps=3))
    outcome = await rig.run("keep listing")
    assert outcome.reason == {"kind": "max-steps", "limit": 3}
    assert len(rig.requests) == 3
    assert len(rig.events("step/start")) == 3
    assert rig.data("turn/end")[-1]["reason"] == {"kind": "max-steps", "limit": 3}
