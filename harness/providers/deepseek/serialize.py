"""Serialization: `GenerateOptions` → DeepSeek request body (dsh-core.md §3.2–3.4, wire.md
A16–A23). Pure: same options, same bytes.

The three channels stay separate: `system` becomes the first wire message, history follows in
order, tool schemas go to `tools`. Tool-call arguments are the model's raw string, byte for byte.
An internal `ToolResultMessage` becomes one `{"role": "tool"}` message per tool-result block.
We keep DSH's reasoning passback (every assistant turn that had reasoning carries
`reasoning_content`; tool-call turns carry `""` when none was captured) rather than wire.md
A20's SHOULD; `era="r1"` strips it all, as R1-era models rejected it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from harness.llm import (
    AssistantMessage,
    ErrorCode,
    GenerateOptions,
    ImageBlock,
    ReasoningBlock,
    SystemMessage,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolResultMessage,
    UsageError,
    UserMessage,
)

__all__ = ["DeepSeekConfig", "REASONING_EFFORTS", "encode_body", "resolve_thinking", "serialize"]

REASONING_EFFORTS = ("off", "low", "high", "max")
NO_OUTPUT = "(no output)"


@dataclass(frozen=True, slots=True, kw_only=True)
class DeepSeekConfig:
    """Adapter-level defaults; per-call `GenerateOptions` fields win."""

    thinking: Literal["enabled", "disabled"] | None = None
    """None leaves thinking to the model's default (on for V4 ids)."""
    reasoning_effort: str | None = None
    """`off`, `low`, `high` or `max`, used when the call does not say."""
    max_tokens: int | None = None
    era: Literal["v4", "r1"] = "v4"
    """`r1` strips every `reasoning_content` and sends no thinking fields (R1-era API)."""


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
    if config.thinking == "disabled" and effort not in (None, "off"):
        raise UsageError(
            f"reasoning effort {effort!r} needs thinking, but this adapter disables it",
            ErrorCode.UNSUPPORTED_REASONING_EFFORT,
        )
    if effort == "off":
        return {"thinking": {"type": "disabled"}}  # never send "off" itself
    if effort is not None:
        return {"thinking": {"type": "enabled"}, "reasoning_effort": effort}
    if config.thinking is not None:
        return {"thinking": {"type": config.thinking}}
    return {}


def _text(blocks: Any, kind: type[TextBlock] | type[ReasoningBlock]) -> str:
    return "".join(b.text for b in blocks if isinstance(b, kind))


def _assistant(message: AssistantMessage, *, passback: bool, thinking_on: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": _text(message.content, TextBlock)}
    calls = [b for b in message.content if isinstance(b, ToolCallBlock)]
    if passback:
        reasoning = _text(message.content, ReasoningBlock)
        if reasoning or (calls and thinking_on):
            # Thinking mode requires reasoning_content on tool-call turns (wire.md S7); an empty
            # string is accepted where none was captured.
            out["reasoning_content"] = reasoning
    if calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ]
    return out


def _user(message: UserMessage | ToolResultMessage) -> list[dict[str, Any]]:
    if any(isinstance(b, ImageBlock) for b in message.content):
        # DSH projects images to text before the text path; reaching here is a caller error.
        raise UsageError(
            "the DeepSeek text adapter cannot send image blocks; replace them with text first",
            ErrorCode.UNSUPPORTED_CONTENT,
        )
    text = _text(message.content, TextBlock)
    results = [b for b in message.content if isinstance(b, ToolResultBlock)]
    out: list[dict[str, Any]] = []
    for result in results:
        body = _text(result.content, TextBlock)
        out.append({"role": "tool", "tool_call_id": result.tool_call_id, "content": body or NO_OUTPUT})
    # Tool messages first: they must follow the assistant turn that made the calls, before any
    # user text (wire.md A18; DeepSeek answers 400 "No tool output found" otherwise).
    if text or not results:
        out.append({"role": "user", "content": text})
    return out


def serialize(options: GenerateOptions, config: DeepSeekConfig | None = None) -> dict[str, Any]:
    """The request body as a JSON-ready dict. Optional fields are omitted, never null.

    Raises `UsageError` (UNSUPPORTED_REASONING_EFFORT) for an effort the adapter cannot send.
    """
    config = config or DeepSeekConfig()
    thinking = resolve_thinking(options, config)
    thinking_on = thinking.get("thinking", {}).get("type") != "disabled"
    passback = config.era != "r1"
    messages: list[dict[str, Any]] = []
    if options.system is not None:
        messages.append({"role": "system", "content": options.system})
    for message in options.messages:
        if isinstance(message, AssistantMessage):
            messages.append(_assistant(message, passback=passback, thinking_on=thinking_on))
        elif isinstance(message, SystemMessage):
            messages.append({"role": "system", "content": _text(message.content, TextBlock)})
        else:
            messages.extend(_user(message))
    body: dict[str, Any] = {
        "model": options.model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    body.update(thinking)
    if options.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": dict(t.parameters),
                },
            }
            for t in options.tools
        ]
    if options.temperature is not None:
        body["temperature"] = options.temperature
    max_tokens = options.max_tokens if options.max_tokens is not None else config.max_tokens
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if options.stop is not None:
        body["stop"] = list(options.stop)
    return body


def encode_body(body: dict[str, Any]) -> bytes:
    """The bytes sent: compact UTF-8 JSON (argument strings stay byte-identical inside it)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
