"""Serialization: `GenerateOptions` → DeepSeek request body (dsh-core.md §3.2–3.4, wire.md
A16–A23). Pure: same options, same bytes.

The three channels stay separate: `system` becomes the first wire message, history follows in
order, tool schemas go to `tools`. Tool-call arguments are the model's raw string, byte for byte.
An internal `ToolResultMessage` becomes one `{"role": "tool"}` message per tool-result block.
We keep DSH's reasoning passback (every assistant turn that had reasoning carries
`reasoning_content`; tool-call turns carry `""` when none was captured) rather than wire.md
A20's SHOULD; `era="r1"` strips it all, as R1-era models rejected it. Unlike DSH, an assistant
turn made only of tool calls sends `content: null` by default (`tool_only_content="empty"` sends
DSH's `""`): see `DeepSeekConfig.tool_only_content`. Optional fields are sent whenever they are
set, falsy or not (`temperature: 0`, `strict: false`, `tool_choice: "none"`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from dshkit.harness.llm import (
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
    ToolSchema,
    UsageError,
    UserMessage,
)

__all__ = ["DeepSeekConfig", "REASONING_EFFORTS", "encode_body", "resolve_thinking", "serialize"]

REASONING_EFFORTS = ("off", "none", "low", "high", "max")
_PLAIN_CHOICES = ("auto", "none", "required")
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
    tool_only_content: Literal["null", "empty"] = "null"
    """What `content` an assistant turn made only of tool calls sends: `null` (the default:
    the OpenAI shape, what DeepSeek's own clients send (rq01), and what gateways in front of
    models that reject empty text parts need) or `empty`, DSH's `""` (byte-identical requests
    to upstream DSH). DeepSeek accepts both; turns without tool calls always send a string."""


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


def _text(blocks: Any, kind: type[TextBlock] | type[ReasoningBlock]) -> str:
    return "".join(b.text for b in blocks if isinstance(b, kind))


def _tool_choice(options: GenerateOptions) -> str | dict[str, Any] | None:
    """The wire `tool_choice`: `auto`/`none`/`required` as strings, any other value as the
    named-function object. Raises `UsageError` for a forced choice the tools cannot meet."""
    choice = options.tool_choice
    if choice is None:
        return None
    names = [t.name for t in options.tools]
    if choice in _PLAIN_CHOICES:
        if choice == "required" and not names:
            raise UsageError(
                "tool_choice 'required' needs at least one tool in `tools`",
                ErrorCode.UNSUPPORTED_TOOL_CHOICE,
            )
        return choice
    if choice not in names:
        raise UsageError(
            f"tool_choice names {choice!r}, which is not among the offered tools "
            f"({', '.join(names) or 'none'}); use auto, none, required or an offered tool's name",
            ErrorCode.UNSUPPORTED_TOOL_CHOICE,
        )
    return {"type": "function", "function": {"name": choice}}


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


def _assistant(
    message: AssistantMessage, *, passback: bool, thinking_on: bool, config: DeepSeekConfig
) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": _text(message.content, TextBlock)}
    calls = [b for b in message.content if isinstance(b, ToolCallBlock)]
    if calls and not out["content"] and config.tool_only_content == "null":
        out["content"] = None
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
    choice = _tool_choice(options)
    thinking = _force_fields(choice, resolve_thinking(options, config), config)
    thinking_on = thinking.get("thinking", {}).get("type") != "disabled"
    passback = config.era != "r1"
    messages: list[dict[str, Any]] = []
    if options.system is not None:
        messages.append({"role": "system", "content": options.system})
    for message in options.messages:
        if isinstance(message, AssistantMessage):
            messages.append(_assistant(message, passback=passback, thinking_on=thinking_on, config=config))
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
        body["tools"] = [_tool(t) for t in options.tools]
    if choice is not None:
        body["tool_choice"] = choice
    if options.temperature is not None:
        body["temperature"] = options.temperature
    max_tokens = options.max_tokens if options.max_tokens is not None else config.max_tokens
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if options.stop is not None:
        body["stop"] = list(options.stop)
    return body


def _tool(tool: ToolSchema) -> dict[str, Any]:
    function: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "parameters": dict(tool.parameters),
    }
    if tool.strict is not None:
        function["strict"] = tool.strict
    return {"type": "function", "function": function}


def encode_body(body: dict[str, Any]) -> bytes:
    """The bytes sent: compact UTF-8 JSON (argument strings stay byte-identical inside it)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
