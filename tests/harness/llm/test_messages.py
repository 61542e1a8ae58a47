"""Messages: the tool-result message's invariants and constructor, and an assistant message's calls."""

from __future__ import annotations

import dataclasses

import pytest

from dshkit.harness.llm.messages import (
    AssistantMessage,
    ModelSource,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolSource,
    UserMessage,
)


def test_tool_result_message_invariants() -> None:
    with pytest.raises(ValueError, match="answers"):
        ToolResultMessage(content=(ToolResultBlock(tool_call_id="a", content=()),), source=ToolSource(call_id="b"))
    with pytest.raises(ValueError, match="exactly one"):
        ToolResultMessage(content=(), source=ToolSource(call_id="b"))  # type: ignore[arg-type]


def test_assistant_tool_calls_property() -> None:
    calls = (ToolCallBlock(id="c0", name="read", arguments="{}"), ToolCallBlock(id="c1", name="ls", arguments=""))
    message = AssistantMessage(
        content=(ReasoningBlock(text="r"), calls[0], TextBlock(text="t"), calls[1]),
        source=ModelSource(provider="deepseek", model="m"),
    )
    assert message.tool_calls == calls
    assert AssistantMessage(content=(TextBlock(text="t"),), source=message.source).tool_calls == ()


def test_create_builds_the_one_block_answering_its_call() -> None:
    made = ToolResultMessage.create("c1", [TextBlock(text="a"), TextBlock(text="b")], is_error=True, id="r1")
    assert made == ToolResultMessage(
        id="r1", source=ToolSource(call_id="c1"),
        content=(ToolResultBlock(tool_call_id="c1", content=(TextBlock(text="a"), TextBlock(text="b")), is_error=True),),
    )
    first, second = ToolResultMessage.create("c2", "out"), ToolResultMessage.create("c2", "out")
    assert first.block.content == (TextBlock(text="out"),) and first.block.is_error is False  # always written
    assert first.id and second.id != first.id  # each message gets its own identity
    assert UserMessage.text("hi").id != UserMessage.text("hi").id
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.id = "other"  # type: ignore[misc]
