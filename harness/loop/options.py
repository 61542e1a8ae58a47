"""What the agent is configured with and what it reports: options, live events, turn outcomes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from dshkit.harness.llm.retry import RetryPolicy
from dshkit.harness.tools.scheduler import DEFAULT_MAX_PARALLEL

__all__ = ["AgentEvent", "AgentOptions", "TurnOutcome"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentOptions:
    """How the agent calls the model."""

    model: str
    provider: str = "deepseek"
    reasoning_effort: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] | None = None
    max_steps: int | None = None
    """End a turn with `{"kind": "max-steps", "limit": N}` after N steps (a dshkit extension;
    DSH has no step budget)."""
    max_parallel_tool_calls: int = DEFAULT_MAX_PARALLEL
    retry_policy: RetryPolicy | None = field(default_factory=RetryPolicy)
    """None disables retries."""
    missing_done: Literal["fail", "accept"] = "fail"
    """A stream that ended after its finish_reason but without `data: [DONE]` (the adapter's
    finish carries `meta.doneMissing`): `fail` ends the call as DSH does, a `STREAM_CLOSED`
    failure (`SSE stream ended without [DONE]`, not retried by the default policy); `accept`
    keeps the answer, as dshkit's adapters report it (DESIGN.md)."""
    empty_body: Literal["fail", "retry"] = "fail"
    """A 200 response whose body ended before any byte (the adapter's `EMPTY_RESPONSE` finish that
    carries no response facts, `meta`): `fail` ends the call as DSH does, `STREAM_CLOSED` (`SSE
    stream ended without [DONE]`, not retried); `retry` keeps the adapter's retryable
    `EMPTY_RESPONSE`. An empty completion (events, but no content) is `EMPTY_RESPONSE` either way."""


@dataclass(frozen=True, slots=True)
class AgentEvent:
    """A live event a UI can follow. `session/event` carries each committed `SessionEvent`;
    `agent/status` carries `{"status": "running" | "idle"}`; `agent/error` the failure."""

    type: str
    data: Any


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """How a turn ended: its number and the logged `turn/end` reason."""

    turn: int
    reason: Mapping[str, Any]

    @property
    def kind(self) -> str:
        return str(self.reason["kind"])
