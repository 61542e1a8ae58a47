"""Request profiles of the Chat Completions wire: `ChatProfile`, what a family of servers adds to
the OpenAI request shape that `serialize` writes, and `DeepSeekConfig`, DeepSeek's profile (the
only one today), used by both adapters that talk to DeepSeek on this wire (`DeepSeekAdapter` on
httpx, `OpenAICompatAdapter` on the openai SDK). As in pydantic-ai, DeepSeek is OpenAI-compatible
plus a profile of quirks: its `thinking` / `reasoning_effort` fields (dsh-core.md §3.3), the
reasoning passed back on assistant turns (wire.md S7, A20), no forced tool choice while thinking
(A21, S9), and the `content` of a tool-only turn. Per-call `GenerateOptions` fields win over a
profile's defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias

from dshkit.harness.llm import ErrorCode, GenerateOptions
from dshkit.harness.llm.errors import UsageError

__all__ = ["REASONING_EFFORTS", "ChatProfile", "DeepSeekConfig", "Passback", "resolve_thinking"]

REASONING_EFFORTS = ("off", "none", "low", "high", "max")

Passback: TypeAlias = Literal["never", "when-present", "tool-turns"]
"""Which assistant turns carry their reasoning back as `reasoning_content`: none, those that had
some, or those and every tool-call turn (`""` when none was captured)."""


class ChatProfile(Protocol):
    """What a family of servers adds to, or changes in, the OpenAI request shape."""

    @property
    def max_tokens(self) -> int | None:
        """Sent when the call does not say."""
        ...

    @property
    def tool_only_content(self) -> Literal["null", "empty"]:
        """The `content` of an assistant turn made only of tool calls: `null` or `""`."""
        ...

    def request_fields(self, options: GenerateOptions, tool_choice: str | dict[str, Any] | None) -> dict[str, Any]:
        """The fields this family adds to the body for this call (raises `UsageError` for a
        call it cannot send)."""
        ...

    def passback(self, fields: Mapping[str, Any]) -> Passback:
        """How reasoning travels back, given the call's `request_fields`."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class DeepSeekConfig:
    """DeepSeek's profile and adapter-level defaults; per-call `GenerateOptions` fields win."""

    thinking: Literal["enabled", "disabled"] | None = None
    """None leaves thinking to the model's default (on for V4 ids)."""
    reasoning_effort: str | None = None
    """`off`, `low`, `high` or `max`, used when the call does not say."""
    max_tokens: int | None = None
    era: Literal["v4", "r1"] = "v4"
    """`r1` strips every `reasoning_content` and sends no thinking fields (R1-era API)."""
    tool_only_content: Literal["null", "empty"] = "null"
    """What `content` an assistant turn made only of tool calls sends: `null` (the default:
    the OpenAI shape, what DeepSeek's own clients send (rq01), and what gateways in front of
    models that reject empty text parts need) or `empty`, DSH's `""` (byte-identical requests
    to upstream DSH). DeepSeek accepts both; turns without tool calls always send a string."""

    def request_fields(self, options: GenerateOptions, tool_choice: str | dict[str, Any] | None) -> dict[str, Any]:
        """The thinking fields: `resolve_thinking`, then turned off for a forced tool choice."""
        return _force_fields(tool_choice, resolve_thinking(options, self), self)

    def passback(self, fields: Mapping[str, Any]) -> Passback:
        # We keep DSH's passback (every assistant turn that had reasoning carries it; tool-call
        # turns carry "" while thinking) rather than wire.md A20's SHOULD; R1-era models
        # rejected it, so `era="r1"` strips it all.
        if self.era == "r1":
            return "never"
        return "when-present" if fields.get("thinking", {}).get("type") == "disabled" else "tool-turns"


def resolve_thinking(options: GenerateOptions, config: DeepSeekConfig) -> dict[str, Any]:
    """The `thinking` / `reasoning_effort` fields for this call (dsh-core.md §3.3)."""
    if config.era == "r1":
        return {}
    if options.purpose == "session-title":
        return {"thinking": {"type": "disabled"}}
    effort = options.reasoning_effort if options.reasoning_effort is not None else config.reasoning_effort
    if effort is not None and effort not in REASONING_EFFORTS:
        raise UsageError(
            f"reasoning effort {effort!r} is not one of {', '.join(REASONING_EFFORTS)}",
            ErrorCode.UNSUPPORTED_REASONING_EFFORT,
        )
    if config.thinking == "disabled" and effort not in (None, "off", "none"):
        raise UsageError(
            f"reasoning effort {effort!r} needs thinking, but this adapter disables it",
            ErrorCode.UNSUPPORTED_REASONING_EFFORT,
        )
    if effort == "off":
        return {"thinking": {"type": "disabled"}}  # never send "off" itself
    if effort == "none":
        # DeepSeek accepts `none` and turns thinking off (observed, rq02); `thinking` says the
        # same in the documented way, for servers that map unknown efforts to `high`.
        return {"thinking": {"type": "disabled"}, "reasoning_effort": "none"}
    if effort is not None:
        return {"thinking": {"type": "enabled"}, "reasoning_effort": effort}
    if config.thinking is not None:
        return {"thinking": {"type": config.thinking}}
    return {}


def _force_fields(
    choice: str | dict[str, Any] | None, thinking: dict[str, Any], config: DeepSeekConfig
) -> dict[str, Any]:
    """Thinking fields for a forced `tool_choice`, which DeepSeek rejects in thinking mode
    (wire.md A21, S9): an explicit thinking request is a usage error; an unspecified one is
    turned off for this call, since V4 models think by default."""
    if choice != "required" and not isinstance(choice, dict):
        return thinking
    if config.era == "r1" or thinking.get("thinking", {}).get("type") == "disabled":
        return thinking
    if thinking:
        raise UsageError(
            "a forced tool_choice ('required' or a tool name) cannot be sent with thinking on: "
            "DeepSeek rejects it; set reasoning_effort='off' or use tool_choice 'auto'",
            ErrorCode.UNSUPPORTED_TOOL_CHOICE,
        )
    return {"thinking": {"type": "disabled"}}
