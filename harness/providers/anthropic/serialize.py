"""Serialization: `GenerateOptions` → an Anthropic Messages request body, as DeepSeek's
`/anthropic` route reads it (anthropic.md §4–§7). Pure: same options, same bytes.

The three channels stay apart: the system prompt goes to top-level `system`, history to
`messages`, tool schemas to `tools` (`input_schema`). The Messages API wants strictly alternating
roles, so consecutive user-side messages (tool results, then the runtime-context snapshot or the
user's text) merge into one `user` turn with the `tool_result` blocks first. Reasoning travels back
as `thinking` blocks carrying the signature the stream gave them (kept in the assistant message's
replay state, see `translate.py`): DeepSeek answers 400 when a tool-use turn comes back without
its thinking (AN27), so such a turn gets an empty `{"thinking": "", "signature": ""}` block when
none was captured (AN28: accepted by the live endpoint).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from dshkit.harness.llm import (
    AssistantMessage,
    ErrorCode,
    GenerateOptions,
    TextBlock,
    ToolCallBlock,
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

__all__ = [
    "ANTHROPIC_EFFORTS",
    "AnthropicConfig",
    "DEFAULT_MAX_TOKENS",
    "REPLAY_PROTOCOL",
    "encode_body",
    "resolve_thinking",
    "serialize",
    "signatures_of",
    "tool_input",
]

ANTHROPIC_EFFORTS = ("off", "low", "high", "max")
"""The harness's effort names; `off` disables thinking, the rest go to `output_config.effort`."""
DEFAULT_MAX_TOKENS = 32768
"""The Messages API requires `max_tokens` (AN6); this is sent when neither the call nor the
configuration names one."""
REPLAY_PROTOCOL = "anthropic-messages"
"""Marks replay envelopes written by this provider: only those are read back for signatures."""
NO_OUTPUT = "(no output)"


@dataclass(frozen=True, slots=True, kw_only=True)
class AnthropicConfig:
    """Adapter-level defaults; per-call `GenerateOptions` fields win."""

    thinking: Literal["enabled", "disabled"] | None = None
    """None leaves thinking to the server's default (on at DeepSeek, AN32)."""
    reasoning_effort: str | None = None
    """`off`, `low`, `high` or `max`, used when the call does not say."""
    max_tokens: int | None = None


def resolve_thinking(options: GenerateOptions, config: AnthropicConfig) -> dict[str, Any]:
    """The `thinking` / `output_config` fields for this call (AN32–AN34)."""
    if options.purpose == "session-title":
        return {"thinking": {"type": "disabled"}}
    effort = options.reasoning_effort if options.reasoning_effort is not None else config.reasoning_effort
    if effort is not None and effort not in ANTHROPIC_EFFORTS:
        raise UsageError(
            f"reasoning effort {effort!r} is not one of {', '.join(ANTHROPIC_EFFORTS)}",
            ErrorCode.UNSUPPORTED_REASONING_EFFORT,
        )
    if config.thinking == "disabled" and effort not in (None, "off"):
        raise UsageError(
            f"reasoning effort {effort!r} needs thinking, but this adapter disables it",
            ErrorCode.UNSUPPORTED_REASONING_EFFORT,
        )
    if effort == "off":
        return {"thinking": {"type": "disabled"}}
    if effort is not None:
        return {"thinking": {"type": "enabled"}, "output_config": {"effort": effort}}
    if config.thinking is not None:
        return {"thinking": {"type": config.thinking}}
    return {}


def signatures_of(message: AssistantMessage) -> list[str | None]:
    """The thinking signature of each content block (None where there is none), read from the
    replay envelope this provider's translator put on the stream's finish."""
    state = message.source.replay_state if hasattr(message.source, "replay_state") else None
    blocks: Any = state.get("blocks") if isinstance(state, dict) else None
    response = state.get("response") if isinstance(state, dict) else None
    ours = isinstance(response, dict) and response.get("protocol") == REPLAY_PROTOCOL
    if not ours or not isinstance(blocks, list) or len(blocks) != len(message.content):
        # Another provider's state (or none): its signatures mean nothing here (AN31).
        return [None] * len(message.content)
    out: list[str | None] = []
    for entry in blocks:
        signature = entry.get("signature") if isinstance(entry, dict) else None
        out.append(signature if isinstance(signature, str) else None)
    return out


def tool_input(arguments: str) -> Any:
    """A tool call's raw argument string as the `input` object the Messages API wants.

    `""` (a call without arguments, AN56) is `{}`. Text that is not a JSON object cannot be
    carried as `input`; it travels wrapped so the model still sees what it wrote."""
    if not arguments.strip():
        return {}
    try:
        value = json.loads(arguments)
    except ValueError:
        return {"_raw_arguments": arguments}
    return value if isinstance(value, dict) else {"_raw_arguments": arguments}


def _assistant(message: AssistantMessage, *, thinking_on: bool) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    signatures = signatures_of(message)
    has_calls = any(isinstance(b, ToolCallBlock) for b in message.content)
    has_thinking = any(isinstance(b, ReasoningBlock) for b in message.content)
    if has_calls and thinking_on and not has_thinking:
        # AN27/AN28: a tool-use turn must carry a thinking block in thinking mode.
        content.append({"type": "thinking", "thinking": "", "signature": ""})
    for block, signature in zip(message.content, signatures, strict=True):
        if isinstance(block, ReasoningBlock):
            content.append({"type": "thinking", "thinking": block.text, "signature": signature or ""})
        elif isinstance(block, TextBlock):
            if block.text:  # the API rejects empty text blocks
                content.append({"type": "text", "text": block.text})
        elif isinstance(block, ToolCallBlock):
            content.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": tool_input(block.arguments)}
            )
        # Opaque blocks (redacted thinking, server-tool blocks) are never sent back (AN24).
    if not content:
        content.append({"type": "text", "text": NO_OUTPUT})
    return {"role": "assistant", "content": content}


def _result(block: ToolResultBlock) -> dict[str, Any]:
    if any(isinstance(b, ImageBlock) for b in block.content):
        raise UsageError(
            "the Anthropic adapter cannot send image blocks in tool results; replace them with text first",
            ErrorCode.UNSUPPORTED_CONTENT,
        )
    text = "".join(b.text for b in block.content if isinstance(b, TextBlock)) or NO_OUTPUT
    out: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.tool_call_id}
    if block.is_error:
        # DeepSeek ignores `is_error` (AN25): the text itself must say it failed.
        if not text.lower().startswith("error"):
            text = f"Error: {text}"
        out["is_error"] = True
    out["content"] = text
    return out


def _user_blocks(message: UserMessage | ToolResultMessage) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(tool_result blocks, other blocks) of one user-side message."""
    results: list[dict[str, Any]] = []
    other: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            results.append(_result(block))
        elif isinstance(block, TextBlock):
            if block.text:
                other.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageBlock):
            raise UsageError(
                "the Anthropic adapter cannot send image blocks; replace them with text first",
                ErrorCode.UNSUPPORTED_CONTENT,
            )
    return results, other


def _messages(options: GenerateOptions, *, thinking_on: bool) -> tuple[list[dict[str, Any]], list[str]]:
    """History as alternating turns, and the text of system messages met inside it."""
    out: list[dict[str, Any]] = []
    systems: list[str] = []
    results: list[dict[str, Any]] = []
    other: list[dict[str, Any]] = []

    def flush() -> None:
        if results or other:
            # tool_result blocks first: they answer the previous assistant turn (AN26).
            out.append({"role": "user", "content": results + other})
            results.clear()
            other.clear()

    for message in options.messages:
        if isinstance(message, AssistantMessage):
            flush()
            out.append(_assistant(message, thinking_on=thinking_on))
        elif isinstance(message, SystemMessage):
            systems.append("".join(b.text for b in message.content if isinstance(b, TextBlock)))
        else:
            r, o = _user_blocks(message)
            results += r
            other += o
    flush()
    return out, systems


def serialize(options: GenerateOptions, config: AnthropicConfig | None = None) -> dict[str, Any]:
    """The request body as a JSON-ready dict. Optional fields are omitted, never null.

    Raises `UsageError` for an effort the adapter cannot send or content it cannot carry.
    """
    config = config or AnthropicConfig()
    thinking = resolve_thinking(options, config)
    thinking_on = thinking.get("thinking", {}).get("type") != "disabled"
    messages, systems = _messages(options, thinking_on=thinking_on)
    max_tokens = options.max_tokens if options.max_tokens is not None else config.max_tokens
    body: dict[str, Any] = {
        "model": options.model,
        "max_tokens": max_tokens if max_tokens is not None else DEFAULT_MAX_TOKENS,
    }
    texts = ([options.system] if options.system is not None else []) + systems
    if systems:
        body["system"] = [{"type": "text", "text": t} for t in texts if t]
    elif options.system is not None:
        body["system"] = options.system
    body["messages"] = messages
    body["stream"] = True
    body.update(thinking)
    if options.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
            for t in options.tools
        ]
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.stop is not None:
        body["stop_sequences"] = list(options.stop)
    return body


def encode_body(body: dict[str, Any]) -> bytes:
    """The bytes sent: compact UTF-8 JSON. A history holding a lone surrogate (a model's
    `"\\ud800"`, kept whole by the session log) is sent with ASCII escapes instead of failing to
    encode; the server then answers for it (DeepSeek: a 400)."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(body, ensure_ascii=True, separators=(",", ":")).encode("ascii")
