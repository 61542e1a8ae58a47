"""Serialization: `GenerateOptions` → a Chat Completions request body in the OpenAI shape
(dsh-core.md §3.2–3.4, wire.md A16–A23), with a server family's quirks from its `ChatProfile`
(`profile`; DeepSeek's by default). Pure: same options, same bytes.

The three channels stay separate: `system` becomes the first wire message, history follows in
order, tool schemas go to `tools`. Tool-call arguments are the model's raw string, byte for byte.
An internal `ToolResultMessage` becomes one `{"role": "tool"}` message per tool-result block.
Reasoning goes back as `reasoning_content` on the assistant turns the profile's passback names,
and an assistant turn made only of tool calls sends the profile's `content` (`null`, the OpenAI
shape, for DeepSeek unless configured otherwise). Optional fields are sent whenever they are set,
falsy or not (`temperature: 0`, `strict: false`, `tool_choice: "none"`).
"""

from __future__ import annotations

import json
from typing import Any

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
from dshkit.harness.llm.messages import (
    ImageBlock,
    ReasoningBlock,
    SystemMessage,
    ToolResultBlock,
    ToolResultMessage,
)

from .profile import ChatProfile, DeepSeekConfig, Passback

__all__ = ["encode_body", "serialize"]

_PLAIN_CHOICES = ("auto", "none", "required")
NO_OUTPUT = "(no output)"


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


def _assistant(message: AssistantMessage, *, passback: Passback, profile: ChatProfile) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": _text(message.content, TextBlock)}
    calls = [b for b in message.content if isinstance(b, ToolCallBlock)]
    if calls and not out["content"] and profile.tool_only_content == "null":
        out["content"] = None
    if passback != "never":
        reasoning = _text(message.content, ReasoningBlock)
        if reasoning or (calls and passback == "tool-turns"):
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
            "the Chat Completions adapters cannot send image blocks; replace them with text first",
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


def serialize(options: GenerateOptions, profile: ChatProfile | None = None) -> dict[str, Any]:
    """The request body as a JSON-ready dict. Optional fields are omitted, never null.

    Raises `UsageError` for a call the profile cannot send (DeepSeek: an effort it does not
    know, a forced tool choice with thinking on) or a tool choice the tools cannot meet.
    """
    profile = profile if profile is not None else DeepSeekConfig()
    choice = _tool_choice(options)
    fields = profile.request_fields(options, choice)
    passback = profile.passback(fields)
    messages: list[dict[str, Any]] = []
    if options.system is not None:
        messages.append({"role": "system", "content": options.system})
    for message in options.messages:
        if isinstance(message, AssistantMessage):
            messages.append(_assistant(message, passback=passback, profile=profile))
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
    body.update(fields)
    if options.tools:
        body["tools"] = [_tool(t) for t in options.tools]
    if choice is not None:
        body["tool_choice"] = choice
    if options.temperature is not None:
        body["temperature"] = options.temperature
    max_tokens = options.max_tokens if options.max_tokens is not None else profile.max_tokens
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
    """The bytes sent: compact UTF-8 JSON (argument strings stay byte-identical inside it).
    A history holding a lone surrogate (a model's `"\\ud800"`, kept whole by the session log)
    is sent with ASCII escapes instead of failing to encode; the server then answers for it
    (DeepSeek: a 400)."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(body, ensure_ascii=True, separators=(",", ":")).encode("ascii")
