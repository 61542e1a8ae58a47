"""`GenerateOptions`: one model call's request, compared by what is asked and never by its cancel signal."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from dshkit.harness.llm import GenerateOptions, ToolSchema, UserMessage


def test_requests_are_equal_whatever_their_cancel_signal_and_differ_by_any_field_asked() -> None:
    """A request rebuilt from a log (no signal) equals the live one that had a signal."""
    tool = ToolSchema(name="read", description="Read a file", parameters={"type": "object"}, strict=False)
    live = GenerateOptions(provider="deepseek", model="m", messages=(UserMessage.text("hi", id="u1"),),
                           tools=(tool,), tool_choice="auto", signal=asyncio.Event())
    rebuilt = dataclasses.replace(live, signal=None)
    assert live == rebuilt
    changes: dict[str, Any] = {  # one change to each field asked; a new field must be added here too
        "provider": "anthropic", "model": "m2", "messages": (UserMessage.text("hi", id="u2"),), "system": "sys",
        "tools": (dataclasses.replace(tool, strict=None),), "reasoning_effort": "off", "tool_choice": "read",
        "temperature": 0.5, "max_tokens": 64, "stop": ("END",), "session_id": "s-1", "purpose": "compaction",
    }
    assert set(changes) == {f.name for f in dataclasses.fields(GenerateOptions)} - {"signal"}
    for name, value in changes.items():
        assert dataclasses.replace(rebuilt, **{name: value}) != live, name
    with pytest.raises(dataclasses.FrozenInstanceError):
        live.model = "other"  # type: ignore[misc]
