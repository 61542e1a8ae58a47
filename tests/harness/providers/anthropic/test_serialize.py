"""Anthropic request bodies from the harness's messages and options (anthropic.md §4–§7, AN77):
channels kept apart, alternating turns with tool results first, thinking passback with the
signature the stream gave (AN27/AN28), `is_error` said in the text (AN25), effort and thinking
fields, and `max_tokens` always present (AN6)."""

from __future__ import annotations

from typing import Any

import pytest

from dshkit.harness.llm import (
    AssistantMessage,
    ErrorCode,
    GenerateOptions,
    TextBlock,
    ToolCallBlock,
    ToolSchema,
    UserMessage,
)
from dshkit.harness.llm.errors import UsageError
from dshkit.harness.llm.messages import ModelSource, OpaqueBlock, ReasoningBlock, ToolResultMessage
from dshkit.harness.providers.anthropic import AnthropicConfig
from dshkit.harness.providers.anthropic.serialize import (
    DEFAULT_MAX_TOKENS,
    REPLAY_PROTOCOL,
    serialize,
    tool_input,
)

READ = ToolSchema(name="read", description="Read a file.", parameters={"type": "object", "properties": {"file_path": {"type": "string"}}})


def anthropic_state(*signatures: str | None) -> dict[str, Any]:
    return {
        "response": {"protocol": REPLAY_PROTOCOL, "id": "m1"},
        "blocks": [None if s is None else {"signature": s} for s in signatures],
    }


def tool_turn(state: Any = None, *, reasoning: bool = True) -> AssistantMessage:
    blocks: list[Any] = [ReasoningBlock(text="Read it.")] if reasoning else []
    blocks.append(ToolCallBlock(id="toolu_1", name="read", arguments='{"file_path": "README.md"}'))
    return AssistantMessage(content=tuple(blocks), source=ModelSource(provider="deepseek", model="m", replay_state=state))


def options(*messages: Any, **kw: Any) -> GenerateOptions:
    return GenerateOptions(provider="deepseek", model="deepseek-v4-flash", messages=list(messages), **kw)


def test_channels_and_required_fields() -> None:
    body = serialize(options(UserMessage.text("hi"), system="Be brief.", tools=[READ], temperature=0.5, stop=["```"]))
    assert body == {
        "model": "deepseek-v4-flash",
        "max_tokens": DEFAULT_MAX_TOKENS,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "stream": True,
        "tools": [{"name": "read", "description": "Read a file.", "input_schema": dict(READ.parameters)}],
        "temperature": 0.5,
        "stop_sequences": ["```"],
    }


def test_tool_round_trip_passes_thinking_back_with_its_signature() -> None:
    """AN27/AN30: assistant [thinking{thinking, signature}, tool_use], then user [tool_result]."""
    body = serialize(options(
        UserMessage.text("What is this?"),
        tool_turn(anthropic_state("sig-uuid", None)),
        ToolResultMessage.create("toolu_1", "# dshkit"),
        UserMessage.text("(runtime context)"),
    ))
    assert body["messages"][1:] == [
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Read it.", "signature": "sig-uuid"},
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"file_path": "README.md"}},
        ]},
        # one user turn: tool results first, then the text that followed them
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "# dshkit"},
            {"type": "text", "text": "(runtime context)"},
        ]},
    ]


def test_tool_turn_without_captured_thinking_gets_an_empty_block() -> None:
    """History from another adapter (no reasoning, no signature) still passes DeepSeek's check."""
    body = serialize(options(UserMessage.text("q"), tool_turn(reasoning=False), ToolResultMessage.create("toolu_1", "x")))
    assert body["messages"][1]["content"][0] == {"type": "thinking", "thinking": "", "signature": ""}


def test_no_empty_thinking_block_when_thinking_is_off() -> None:
    body = serialize(options(UserMessage.text("q"), tool_turn(reasoning=False), ToolResultMessage.create("toolu_1", "x"), reasoning_effort="off"))
    assert [b["type"] for b in body["messages"][1]["content"]] == ["tool_use"]
    assert body["thinking"] == {"type": "disabled"}


def test_foreign_replay_state_is_not_read_for_signatures() -> None:
    """AN31: another provider's envelope (no protocol mark) is ignored; the key stays present."""
    state = {"response": {}, "blocks": [{"signature": "other"}, None]}
    body = serialize(options(UserMessage.text("q"), tool_turn(state), ToolResultMessage.create("toolu_1", "x")))
    assert body["messages"][1]["content"][0]["signature"] == ""


def test_parallel_results_merge_into_one_user_turn_and_errors_say_so() -> None:
    calls = AssistantMessage(
        content=(ToolCallBlock(id="a", name="read", arguments=""), ToolCallBlock(id="b", name="read", arguments="{}")),
        source=ModelSource(provider="deepseek", model="m"),
    )
    body = serialize(options(UserMessage.text("q"), calls, ToolResultMessage.create("a", "boom", is_error=True),
                             ToolResultMessage.create("b", "Error: already said"), reasoning_effort="off"))
    assert body["messages"][1]["content"] == [
        {"type": "tool_use", "id": "a", "name": "read", "input": {}},  # "" → {} (AN56)
        {"type": "tool_use", "id": "b", "name": "read", "input": {}},
    ]
    assert body["messages"][2] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "a", "is_error": True, "content": "Error: boom"},
        {"type": "tool_result", "tool_use_id": "b", "content": "Error: already said"},
    ]}


def test_opaque_blocks_are_never_sent_back() -> None:
    """AN24: redacted thinking and server-tool blocks cannot be carried to DeepSeek."""
    message = AssistantMessage(
        content=(OpaqueBlock(type="redacted_thinking", data={"type": "redacted_thinking", "data": "x"}), TextBlock(text="ok")),
        source=ModelSource(provider="deepseek", model="m"),
    )
    body = serialize(options(UserMessage.text("q"), message, UserMessage.text("again")))
    assert body["messages"][1] == {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}


@pytest.mark.parametrize(
    ("effort", "config", "fields"),
    [
        (None, AnthropicConfig(), {}),
        ("off", AnthropicConfig(), {"thinking": {"type": "disabled"}}),
        ("max", AnthropicConfig(), {"thinking": {"type": "enabled"}, "output_config": {"effort": "max"}}),
        (None, AnthropicConfig(reasoning_effort="low"), {"thinking": {"type": "enabled"}, "output_config": {"effort": "low"}}),
        (None, AnthropicConfig(thinking="disabled"), {"thinking": {"type": "disabled"}}),
    ],
)
def test_thinking_fields(effort: str | None, config: AnthropicConfig, fields: dict[str, Any]) -> None:
    body = serialize(options(UserMessage.text("q"), reasoning_effort=effort), config)
    assert {k: body[k] for k in ("thinking", "output_config") if k in body} == fields


def test_bad_effort_is_a_usage_error() -> None:
    with pytest.raises(UsageError) as info:
        serialize(options(UserMessage.text("q"), reasoning_effort="medium"))
    assert info.value.code == ErrorCode.UNSUPPORTED_REASONING_EFFORT


def test_max_tokens_from_call_then_config() -> None:
    assert serialize(options(UserMessage.text("q"), max_tokens=7), AnthropicConfig(max_tokens=9))["max_tokens"] == 7
    assert serialize(options(UserMessage.text("q")), AnthropicConfig(max_tokens=9))["max_tokens"] == 9


@pytest.mark.parametrize(("raw", "value"), [("", {}), ("  ", {}), ('{"a": 1}', {"a": 1}), ('{"a": ', {"_raw_arguments": '{"a": '}), ("[1]", {"_raw_arguments": "[1]"})])
def test_tool_input_from_raw_arguments(raw: str, value: Any) -> None:
    assert tool_input(raw) == value
