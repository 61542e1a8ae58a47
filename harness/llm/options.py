"""What one model call is asked for: `GenerateOptions` and the model-facing `ToolSchema`."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .messages import Message

__all__ = ["GenerateOptions", "ToolChoice", "ToolSchema"]

ToolChoice = Literal["auto", "none", "required"] | str
"""How the model may use the tools: `auto` (it decides), `none` (no tool call), `required` (at
least one call), or any other string, which names the one tool it must call."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSchema:
    """A tool as the model sees it."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    """A JSON Schema object, sent to the model and used to validate the arguments it returns."""
    strict: bool | None = None
    """Ask the provider to hold the model's arguments to the schema (DeepSeek's strict mode).
    None says nothing; `False` is sent as `false`, since a falsy value is still a choice."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GenerateOptions:
    """One request to a model. `system`, `messages` and `tools` are three separate channels."""

    provider: str
    model: str
    messages: Sequence[Message]
    system: str | None = None
    tools: Sequence[ToolSchema] = ()
    reasoning_effort: str | None = None
    """`off`, `none`, `low`, `high` or `max`; None leaves it to the adapter's configuration.
    `off` and `none` both turn thinking off; `none` is also sent as the provider's own word."""
    tool_choice: ToolChoice | None = None
    """None leaves the provider's default (`auto` when tools are offered)."""
    temperature: float | None = None
    max_tokens: int | None = None
    stop: Sequence[str] | None = None
    signal: asyncio.Event | None = field(default=None, compare=False)
    """Set it to cancel the call: the stream ends with an `aborted` finish."""
    session_id: str | None = None
    purpose: Literal["compaction", "session-title"] | None = None
