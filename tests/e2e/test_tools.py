"""Tool calls through the loop: ordered commit, lenient argument parsing, failures, policy."""

from __future__ import annotations

import asyncio
from typing import Any

from dshkit.harness.tools import define_tool
from dshkit.harness.tools.policy import ApprovalResult, Deny, no_tty_approver
from dshkit.harness.tools.runtime import ToolCall

from .conftest import RigFactory, call, reply

OBJECT = {"type": "object", "properties": {"name": {"type": "string"}}}


def _result_text(data: Any) -> str:
    return str(data["message"]["content"][0]["content"][0]["text"])


def _tool_messages(body: Any) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "tool"]


async def test_parallel_calls_commit_in_model_order(loop_rig: RigFactory) -> None:
    names = ["a", "b", "c"]
    started = {n: asyncio.Event() for n in names}
    gate = {n: asyncio.Event() for n in names}
    done = {n: asyncio.Event() for n in names}
    finished: list[str] = []

    async def gated(args: dict[str, Any]) -> str:
        name = args["name"]
        started[name].set()
        await gate[name].wait()
        finished.append(name)
        done[name].set()
        return f"body {name}"

    tool = define_tool("gated", "waits for its gate", OBJECT, gated, concurrency_safe=True)
    calls = [call("gated", {"name": n}, f"call_{n}") for n in names]
    rig = await loop_rig(reply(calls=calls), reply("all three done", match={"tool_result": "call_c"}), tools=[tool])

    async def release_backwards() -> None:
        for n in names:  # every body is running at once before any may finish
            await started[n].wait()
        for n in reversed(names):
            gate[n].set()
            await done[n].wait()

    controller = asyncio.create_task(release_backwards())
    outcome = await asyncio.wait_for(rig.run("run all three"), 10)
    await controller
    assert outcome.kind == "completed"
    assert finished == ["c", "b", "a"]
    step1 = [(e.type, e.data.get("callId") or e.data["message"]["source"]["callId"]) for e in rig.events("tool/call", "tool/result")]
    assert step1 == [
        ("tool/call", "call_a"), ("tool/call", "call_b"), ("tool/call", "call_c"),
        ("tool/result", "call_a"), ("tool/result", "call_b"), ("tool/result", "call_c"),
    ]
    calls_by_id = {e.data["callId"]: e.seq for e in rig.events("tool/call")}
    for result in rig.events("tool/result"):
        assert result.source_event_seqs == (calls_by_id[result.data["message"]["source"]["callId"]],)
    assert [m["tool_call_id"] for m in _tool_messages(rig.bodies[1])] == ["call_a", "call_b", "call_c"]
    assert [m["content"] for m in _tool_messages(rig.bodies[1])] == ["body a", "body b", "body c"]


async def test_invalid_json_arguments_become_invalid_args_in_next_request(loop_rig: RigFactory) -> None:
    seen: list[Any] = []

    def spy(c: ToolCall, nxt: Any) -> Any:
        seen.append(c.arguments)  # policy runs BEFORE validation and sees the raw string
        return nxt()

    rig = await loop_rig(
        reply(calls=[call("read", '{"file_path": "README.md"', "call_bad")]),
        reply("sorry", match={"tool_result": "call_bad"}),
        pre_execute=[spy],
    )
    assert (await rig.run("read it")).kind == "completed"
    assert seen == ['{"file_path": "README.md"']
    (logged,) = rig.data("tool/call")
    assert logged["arguments"] == '{"file_path": "README.md"'
    (result,) = rig.data("tool/result")
    assert result["error"] == {"name": "ToolArgsError", "code": "INVALID_ARGS"}
    assert result["message"]["content"][0]["isError"] is True
    assert _result_text(result) == 'Error: invalid arguments: "arguments" must be an object'
    (wire,) = _tool_messages(rig.bodies[1])
    assert wire == {"role": "tool", "tool_call_id": "call_bad", "content": _result_text(result)}
    # the raw, broken string is what the model sees again as its own call
    assistant = rig.bodies[1]["messages"][2]
    assert assistant["tool_calls"][0]["function"]["arguments"] == '{"file_path": "README.md"'


async def test_empty_arguments_are_an_empty_object(loop_rig: RigFactory) -> None:
    got: list[Any] = []
    ping = define_tool("ping", "answers pong", {"type": "object", "properties": {}}, lambda a: got.append(a) or "pong")
    rig = await loop_rig(reply(calls=[call("ping", "", "call_p")]), reply("pong it was"), tools=[ping], builtin=False)
    assert (await rig.run("ping")).kind == "completed"
    assert got == [{}]
    assert rig.data("tool/call")[0]["arguments"] == ""
    assert _tool_messages(rig.bodies[1])[0]["content"] == "pong"


async def test_a_tool_that_raises_is_an_error_result(loop_rig: RigFactory) -> None:
    def explode(args: Any) -> str:
        raise RuntimeError("disk on fire")

    boom = define_tool("boom", "always fails", {"type": "object"}, explode)
    rig = await loop_rig(reply(calls=[call("boom", "{}", "call_b")]), reply("it failed"), tools=[boom], builtin=False)
    assert (await rig.run("try")).kind == "completed"
    (result,) = rig.data("tool/result")
    assert _result_text(result) == "Error: disk on fire"
    assert result["message"]["content"][0]["isError"] is True
    assert "error" not in result  # not a HarnessError: no coded identity
    assert _tool_messages(rig.bodies[1])[0]["content"] == "Error: disk on fire"


async def test_policy_deny(loop_rig: RigFactory) -> None:
    def deny_writes(c: ToolCall, nxt: Any) -> Any:
        return Deny("writes are off today") if c.name == "write" else nxt()

    rig = await loop_rig(
        reply(calls=[call("write", {"file_path": "x.txt", "content": "x"}, "call_w")]),
        reply("ok, no write"),
        pre_execute=[deny_writes],
    )
    assert (await rig.run("write x")).kind == "completed"
    (result,) = rig.data("tool/result")
    assert _result_text(result) == "Error: writes are off today"
    assert "error" not in result  # denials carry no code
    assert not (rig.workspace / "x.txt").exists()


BASH = {"command": "echo approved-run"}


async def test_ask_approved(loop_rig: RigFactory) -> None:
    asked: list[tuple[str, str | None]] = []

    def approve(c: ToolCall, reason: str | None) -> ApprovalResult:
        asked.append((c.name, reason))
        return ApprovalResult("allowed-once")

    rig = await loop_rig(reply(calls=[call("bash", BASH, "call_sh")]), reply("ran"), approver=approve)
    assert (await rig.run("run it")).kind == "completed"
    assert asked == [("bash", 'tool "bash" requires approval')]
    assert "approved-run" in _result_text(rig.data("tool/result")[0])


async def test_ask_denied_by_the_user(loop_rig: RigFactory) -> None:
    rig = await loop_rig(reply(calls=[call("bash", BASH, "call_sh")]), reply("not run"), approver=lambda c, r: False)
    assert (await rig.run("run it")).kind == "completed"
    assert _result_text(rig.data("tool/result")[0]) == 'Error: the user rejected tool "bash"'


async def test_ask_without_a_tty_is_a_denial_saying_how_to_allow(loop_rig: RigFactory) -> None:
    rig = await loop_rig(reply(calls=[call("bash", BASH, "call_sh")]), reply("not run"), approver=no_tty_approver)
    assert (await rig.run("run it")).kind == "completed"
    text = _result_text(rig.data("tool/result")[0])
    assert text.startswith('Error: tool "bash" requires approval') and "--yes" in text
    assert _tool_messages(rig.bodies[1])[0]["content"] == text
