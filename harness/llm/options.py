"""What one model call is asked for: `GenerateOptions` and the model-facing `ToolSchema`."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .messages import Message

__all__ = ["GenerateOptions", "ToolSchema"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSchema:
    """A tool as the model sees it."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    """A JSON Schema object, sent to the model and used to validate the arguments it returns."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GenerateOptions:
    """One request to a model. `system`, `messages` and `tools` are three separate channels."""

    provider: str
    model: str
    messages: Sequence[Message]
    system: str | None = None
    tools: Sequence[ToolSchema] = ()
    reasoning_effort: str | None = None
    """`off`, `low`, `high` or `max`; None leaves it to the adapter's configuration."""
    temperature: float | None = None
    max_tokens: int | None = None
    stop: Sequence[str] | None = None
    signal: asyncio.Event | None = field(default=None, compare=False)
    """Set it to cancel the call: the stream ends with an `aborted` finish."""
    session_id: str | None = None
    purpose: Literal["compaction", "session-title"] | None = None
