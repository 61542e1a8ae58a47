"""`define_tool` and `ToolDefinition`: the schema a tool is defined with, how a call's arguments
are checked against it (readable violations the model can correct), and how the handler's value
is checked against an output schema and rendered to content."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from dshkit.harness.llm import TextBlock
from dshkit.harness.llm.errors import ToolArgsError, ToolError, UsageError
from dshkit.harness.tools import ToolRuntime, define_tool

ECHO_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


def echo_tool(**kw: object) -> object:
    return define_tool("echo", "Echo text.", ECHO_SCHEMA, lambda args: args["text"], **kw)  # type: ignore[arg-type]


async def test_schema_violations_are_readable() -> None:
    rt = ToolRuntime([echo_tool()])
    missing = await rt.execute("c1", "echo", "{}")
    assert missing.text == 'Error: invalid arguments: missing required property "text"'
    wrong = await rt.execute("c1", "echo", '{"text": 5}')
    assert wrong.text == 'Error: invalid arguments: "text" must be a string'


async def test_empty_arguments_are_an_empty_object() -> None:
    seen: list[object] = []
    tool = define_tool("noargs", "x", {"type": "object", "properties": {}}, lambda args: seen.append(args) or "ok")
    result = await ToolRuntime([tool]).execute("c1", "noargs", "")
    assert not result.is_error and seen == [{}]


async def test_pydantic_parameters_give_a_model_instance() -> None:
    class Args(BaseModel):
        path: str
        count: int = 1

    tool = define_tool("p", "x", Args, lambda a: f"{a.path}x{a.count}")
    assert tool.parameters["required"] == ["path"]
    rt = ToolRuntime([tool])
    assert (await rt.execute("c", "p", '{"path": "a", "count": 3}')).text == "ax3"
    assert (await rt.execute("c", "p", '{"count": 3}')).error.code == "INVALID_ARGS"  # type: ignore[union-attr]


async def test_output_schema_and_render() -> None:
    tool = define_tool(
        "count", "x", {"type": "object"}, lambda a: {"n": 2},
        output_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        render=lambda args, value: f"n={value['n']}",
    )
    assert (await ToolRuntime([tool]).execute("c", "count", "{}")).text == "n=2"
    bad = define_tool("bad", "x", {"type": "object"}, lambda a: {"n": "x"}, output_schema={"type": "object", "properties": {"n": {"type": "integer"}}})
    result = await ToolRuntime([bad]).execute("c", "bad", "{}")
    assert result.error is not None and result.error.code == "INVALID_TOOL_OUTPUT"


def test_an_invalid_schema_is_refused_when_the_tool_is_defined() -> None:
    with pytest.raises(UsageError, match="tool 't': invalid JSON Schema"):
        define_tool("t", "x", {"type": "object", "properties": {"a": {"type": 5}}}, lambda a: "")
    with pytest.raises(UsageError, match="tool 'o': invalid JSON Schema"):
        define_tool("o", "x", {"type": "object"}, lambda a: "", output_schema={"type": "nothing"})


async def test_an_unchecked_schema_still_validates_every_call() -> None:
    # check_schema=False only defers building the validators to the first call.
    tool = echo_tool(check_schema=False, output_schema={"type": "string", "maxLength": 3})
    rt = ToolRuntime([tool])
    wrong = await rt.execute("c", "echo", '{"text": 1}')
    assert wrong.text == 'Error: invalid arguments: "text" must be a string'
    assert (await rt.execute("c", "echo", '{"text": "hi"}')).text == "hi"
    long = await rt.execute("c", "echo", '{"text": "long"}')
    assert long.error is not None and long.error.code == "INVALID_TOOL_OUTPUT"




def test_violations_name_the_place_and_the_rule() -> None:
    tool = define_tool("t", "x", {
        "type": "object",
        "properties": {
            "mode": {"enum": ["fast", "slow"]},
            "items": {"type": "array", "items": {
                "type": "object", "properties": {"n": {"type": ["integer", "null"]}}, "required": ["n"],
            }},
        },
        "additionalProperties": False,
    }, lambda a: "")
    with pytest.raises(ToolArgsError) as caught:
        tool.validate_arguments({"mode": "quick", "items": [{"n": 1}, {"n": "2"}, {}], "extra": 1})
    assert str(caught.value) == (
        'invalid arguments: "extra" is not a declared property (additionalProperties: false); '
        '"items[1].n" must be an integer or null; missing required property "items[2].n"; '
        '"mode" must be one of ["fast", "slow"]'
    )


def test_parameters_must_be_an_object_schema_or_a_model() -> None:
    with pytest.raises(UsageError, match='must have "type": "object"'):
        define_tool("t", "x", {"type": "string"}, lambda a: "")
    with pytest.raises(UsageError, match="pydantic model class or a JSON Schema dict"):
        define_tool("t", "x", "text", lambda a: "")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="non-empty name"):
        define_tool("", "x", {"type": "object"}, lambda a: "")


def test_concurrency_safe_only_when_the_predicate_says_exactly_true() -> None:
    def safe(args: dict[str, Any]) -> Any:
        if args["text"] == "boom":
            raise RuntimeError("predicate broke")
        return 1 if args["text"] == "truthy" else True

    tool = define_tool("echo", "x", ECHO_SCHEMA, lambda a: "", concurrency_safe=safe)
    assert tool.is_concurrency_safe({"text": "yes"}) is True
    assert tool.is_concurrency_safe({"text": "truthy"}) is False
    assert tool.is_concurrency_safe({"text": "boom"}) is False
    assert tool.is_concurrency_safe({"text": 5}) is False  # invalid arguments never reach it


async def test_output_that_cannot_be_logged_or_rendered_is_invalid_tool_output() -> None:
    not_json = define_tool("nan", "x", {"type": "object"}, lambda a: {"n": float("nan")})
    with pytest.raises(ToolError, match='tool "nan" returned invalid output') as caught:
        await not_json.invoke({}, None)  # type: ignore[arg-type]
    assert caught.value.code == "INVALID_TOOL_OUTPUT"

    def render(args: object, value: object) -> str:
        raise KeyError("shown")

    broken = define_tool("r", "x", {"type": "object"}, lambda a: {"n": 1}, render=render)
    with pytest.raises(ToolError, match=r"output\.render failed: 'shown'") as caught:
        await broken.invoke({}, None)  # type: ignore[arg-type]
    assert caught.value.code == "INVALID_TOOL_OUTPUT"
    blocks = define_tool("b", "x", {"type": "object"}, lambda a: [TextBlock(text="as is")])
    assert await blocks.invoke({}, None) == ([TextBlock(text="as is")], (TextBlock(text="as is"),))  # type: ignore[arg-type]
