import asyncio

import pytest

from dshkit.harness.llm import TextBlock, UserMessage
from dshkit.harness.tools import ToolRuntime, define_tool
from dshkit.harness.tools.policy import Accept, Allow, Ask, Block, Deny
from dshkit.harness.tools.results import ToolResult
from dshkit.harness.tools.runtime import ToolCall, parse_arguments

ECHO_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


def echo_tool(**kw: object) -> object:
    return define_tool("echo", "Echo text.", ECHO_SCHEMA, lambda args: args["text"], **kw)  # type: ignore[arg-type]


def test_lenient_parse() -> None:
    assert parse_arguments("") == {}
    assert parse_arguments('{"a": 1}') == {"a": 1}
    assert parse_arguments("{bad") == "{bad"
    assert parse_arguments("NaN") == "NaN"


async def test_invalid_json_becomes_invalid_args_result() -> None:
    rt = ToolRuntime([echo_tool()])
    result = await rt.execute("c1", "echo", '{"text": ')
    assert result.is_error
    assert result.text == 'Error: invalid arguments: "arguments" must be an object'
    assert result.error_event_data() == {"name": "ToolArgsError", "code": "INVALID_ARGS"}


async def test_raising_tool_becomes_error_result() -> None:
    def boom(args: object) -> str:
        raise RuntimeError("disk on fire")

    result = await ToolRuntime([define_tool("b", "x", {"type": "object"}, boom)]).execute("c", "b", "{}")
    assert result.is_error and result.text == "Error: disk on fire"
    assert result.error_event_data() is None  # not a coded HarnessError


async def test_unknown_tool_passes_policy_first() -> None:
    seen: list[str] = []

    def policy(call: ToolCall, nxt: object) -> Allow:
        seen.append(call.name)
        return Allow()

    rt = ToolRuntime([echo_tool()], pre_execute=[policy], visible=["echo"])
    result = await rt.execute("c", "nope", "{}")
    assert seen == ["nope"]
    assert result.text == 'Error: unknown tool "nope"'
    assert result.error_event_data() == {"name": "ToolNotFoundError", "code": "UNKNOWN_TOOL"}


async def test_policy_deny_has_no_code_and_still_runs_post() -> None:
    posts: list[ToolResult] = []

    async def post(call: ToolCall, result: ToolResult, nxt: object) -> Accept:
        posts.append(result)
        return Accept()

    rt = ToolRuntime([echo_tool()], pre_execute=[lambda c, n: Deny("not today")], post_execute=[post])
    result = await rt.execute("c", "echo", '{"text": "x"}')
    assert result.text == "Error: not today" and result.error_event_data() is None
    assert posts == [result]


async def test_ask_approve_deny_and_no_channel() -> None:
    calls: list[str] = []
    tool = define_tool("danger", "x", {"type": "object"}, lambda a: calls.append("ran") or "done", requires_approval=True)
    assert (await ToolRuntime([tool]).execute("c", "danger", "{}")).text == (
        'Error: tool "danger" requires approval, but no approval channel is available'
    )
    approved = await ToolRuntime([tool], approver=lambda call, reason: True).execute("c", "danger", "{}")
    assert approved.text == "done" and calls == ["ran"]
    rejected = await ToolRuntime([tool], approver=lambda call, reason: "rejected").execute("c", "danger", "{}")
    assert rejected.text == 'Error: the user rejected tool "danger"'


async def test_policy_ask_from_chain() -> None:
    rt = ToolRuntime([echo_tool()], pre_execute=[lambda c, n: Ask("check")], approver=lambda c, r: "cancelled")
    assert (await rt.execute("c", "echo", '{"text": "x"}')).text == 'Error: approval for tool "echo" was cancelled'


async def test_guards_cannot_be_loosened_by_policy() -> None:
    rt = ToolRuntime(
        [echo_tool()],
        pre_execute=[lambda c, n: Allow()],
        guards=[lambda c: "secrets are off limits" if "secret" in c.raw_arguments else None],
    )
    assert (await rt.execute("c", "echo", '{"text": "secret"}')).text == "Error: secrets are off limits"
    assert (await rt.execute("c", "echo", '{"text": "ok"}')).text == "ok"


async def test_pre_execute_chain_defers_with_next() -> None:
    order: list[str] = []

    async def outer(call: ToolCall, nxt: object) -> object:
        order.append("outer")
        return await nxt()  # type: ignore[operator]

    def inner(call: ToolCall, nxt: object) -> Deny:
        order.append("inner")
        return Deny("inner says no")

    result = await ToolRuntime([echo_tool()], pre_execute=[outer, inner]).execute("c", "echo", '{"text": "x"}')
    assert order == ["outer", "inner"] and result.text == "Error: inner says no"


async def test_execute_waterfall_wraps_body() -> None:
    async def wrap(call: ToolCall, nxt: object) -> ToolResult:
        result: ToolResult = await nxt()  # type: ignore[operator]
        return ToolResult(is_error=False, content=(TextBlock(text=f"[{result.text}]"),))

    assert (await ToolRuntime([echo_tool()], execute_wrappers=[wrap]).execute("c", "echo", '{"text": "x"}')).text == "[x]"


async def test_post_execute_replace_add_and_block() -> None:
    ctx = UserMessage.text("note for next step")
    replace = ToolRuntime([echo_tool()], post_execute=[lambda c, r, n: Accept(content=[TextBlock(text="replaced")], additional_contexts=[ctx])])
    result = await replace.execute("c", "echo", '{"text": "x"}')
    assert result.text == "replaced" and result.additional_contexts == (ctx,) and not result.is_error
    block = ToolRuntime([echo_tool()], post_execute=[lambda c, r, n: Block("withheld by policy")])
    blocked = await block.execute("c", "echo", '{"text": "x"}')
    assert blocked.is_error and blocked.text == "withheld by policy"
    assert blocked.error is not None and blocked.error.message == "withheld by policy" and blocked.error_event_data() is None


async def test_finalize_content_and_observers() -> None:
    seen: list[str] = []

    def boom(call: ToolCall, result: ToolResult) -> None:
        raise RuntimeError("observer broke")

    tool = echo_tool(finalize_content=lambda call, content: [TextBlock(text="final")])
    rt = ToolRuntime([tool], observers=[boom, lambda c, r: seen.append(r.text)])
    assert (await rt.execute("c", "echo", '{"text": "x"}')).text == "final"
    assert seen == ["final"]


async def test_arguments_are_frozen_copies() -> None:
    got: list[object] = []

    def handler(args: dict[str, object], call: ToolCall) -> str:
        got.append(call.arguments)
        args["mutated"] = True  # the handler gets its own plain copy
        return "ok"

    rt = ToolRuntime([define_tool("t", "x", {"type": "object"}, handler)])
    await rt.execute("c", "t", '{"a": [1]}')
    with pytest.raises(TypeError):
        got[0]["a"].append(2)  # type: ignore[index]


async def test_signal_before_start_aborts_before_dispatch() -> None:
    signal = asyncio.Event()
    signal.set()
    result = await ToolRuntime([echo_tool()]).execute("c", "echo", '{"text": "x"}', signal=signal)
    assert result.error_event_data() == {"name": "AbortError", "code": "ABORTED_BEFORE_DISPATCH"}
    assert result.text == "Error: tool call aborted before dispatch"
