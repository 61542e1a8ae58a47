"""`GenerateOptions`: one model call's request, compared by what is asked and never by its cancel signal."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from dshkit.harness.llm import GenerateOptions, ToolSchema, UserMessage


def test_requests_are_equal_whatever_their_cancel_signal_and_differ_by_any_field_asked() -> None:
    """A request rebuilt from a log (no signal) equals the live one that had a signal."""
    tool = ToolSchema(name="read", description="Read a file", parameters={"type": "object"}, strict=False)
    live = GenerateOptions(provider="deepseek", model="m", messages=(UserMessage.text("hi", id="u1"),),
                           tools=(tool,), tool_choice="auto", signal=asyncio.Event())
    rebuilt = dataclasses.replace(live, signal=None)
    assert live == rebuilt
    for change in ({"tool_choice": "read"}, {"reasoning_effort": "off"}, {"tools": (dataclasses.replace(tool, strict=None),)},
                   {"purpose": "compaction"}):
        assert dataclasses.replace(rebuilt, **change) != live, change
    with pytest.raises(dataclasses.FrozenInstanceError):
        live.model = "other"  # type: ignore[misc]
