"""StreamChunks back to DeepSeek's wire: the inverse of the adapter's translate step.

A session log keeps each model call as the `StreamChunk`s the adapter produced (dsh-testing.md
§2.2); token boundaries and split tool arguments survive, envelope fields and framing do not
(§6.1 item 1). :func:`wire_plan` re-encodes one call as what a DeepSeek server would have sent
so the real adapter can parse it again: text deltas become `delta.content`, reasoning deltas
`delta.reasoning_content`, tool-call deltas `delta.tool_calls` (id, type and name on a call's
first fragment only), usage rides on the finish chunk (the DeepSeek docs' placement) and the
finish kind becomes `finish_reason`. An error finish becomes what makes the adapter report the
same failure class: an HTTP error before any content, an EOF for `STREAM_CLOSED`, an empty
`stop` for `EMPTY_RESPONSE`, an in-band error event otherwise; an aborted call (the client gave
up) holds the stream open. The envelope (`id`, `created`, `system_fingerprint`) is synthesized
from a seed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from dshkit.harness.llm import (
    BlockEnd,
    BlockStart,
    ErrorCode,
    Finish,
    LlmFailure,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    Usage,
    is_context_window_exceeded,
)
from dshkit.mock_server.generate.encode import Framing, encode_events
from dshkit.mock_server.generate.reply import StreamMeta

__all__ = ["WirePlan", "wire_plan", "wire_usage"]

#: Failure code → the HTTP status that makes the adapter classify an error as that code again
#: (see `harness/providers/deepseek/failures.py`, `classify_status`).
_STATUS_OF: Mapping[str, int] = {
    ErrorCode.AUTH: 401,
    ErrorCode.QUOTA: 402,
    ErrorCode.RATE_LIMIT: 429,
    ErrorCode.CONTEXT_WINDOW_EXCEEDED: 400,
    ErrorCode.INVALID_REQUEST: 400,
    ErrorCode.SERVER: 500,
}
_TYPE_OF: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "invalid_request_error",
    429: "rate_limit_error",
}
#: Error codes that are wire finish reasons (`map_finish_reason` upper-cases unknown reasons).
_FINISH_CODES = {"CONTENT_FILTER": "content_filter", "INSUFFICIENT_SYSTEM_RESOURCE": "insufficient_system_resource"}
_FINISH_REASONS = {"stop": "stop", "tool-calls": "tool_calls", "max-tokens": "length"}


@dataclass(frozen=True, slots=True, kw_only=True)
class WirePlan:
    """What to send for one replayed call."""

    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    """Extra response headers (`Retry-After`)."""
    body: bytes | None = None
    """A JSON error body instead of a stream (`status` >= 400)."""
    events: tuple[bytes, ...] = ()
    """SSE events, one bytes object per event."""
    end: Literal["close", "eof", "hold", "reset"] = "close"
    """`close` ends the body normally; `eof` too but the events lack `[DONE]`; `hold` keeps the
    connection open until the client leaves; `reset` drops it (a transport failure)."""


def wire_usage(usage: TokenUsage) -> dict[str, Any]:
    """Disjoint counts back to DeepSeek's usage object (cached tokens are part of the prompt)."""
    cached = usage.cache_read_tokens
    prompt = usage.input_tokens + (cached or 0) + (usage.cache_write_tokens or 0)
    out: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": usage.output_tokens,
        "total_tokens": prompt + usage.output_tokens,
    }
    if cached is not None:
        out["prompt_tokens_details"] = {"cached_tokens": cached}
        out["prompt_cache_hit_tokens"] = cached
        out["prompt_cache_miss_tokens"] = prompt - cached
    if usage.reasoning_tokens is not None:
        out["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    return out


def _error_object(failure: LlmFailure, status: int | None) -> dict[str, Any]:
    pe = failure.provider_error
    type_ = (pe.type if pe and pe.type else None) or _TYPE_OF.get(status or 0, "api_error")
    code = (pe.code if pe and pe.code else None) or failure.code.lower()
    return {"message": failure.message, "type": type_, "param": pe.param if pe else None, "code": code}


class _Encoder:
    """Collects the payloads of one call; :func:`encode_events` frames them (S19, S20)."""

    def __init__(self, meta: StreamMeta, framing: Framing) -> None:
        self.meta = meta
        self.framing: Framing = framing
        self.payloads: list[Mapping[str, Any]] = []
        self.done = False

    def chunk(self, delta: Mapping[str, Any], finish: str | None = None, usage: Any = None) -> None:
        self.payloads.append(
            {
                "id": self.meta.id,
                "object": "chat.completion.chunk",
                "created": self.meta.created,
                "model": self.meta.model,
                "system_fingerprint": self.meta.system_fingerprint,
                "choices": [{"index": 0, "delta": dict(delta), "logprobs": None, "finish_reason": finish}],
                "usage": usage,
            }
        )

    @property
    def events(self) -> tuple[bytes, ...]:
        return tuple(encode_events(self.payloads, self.framing, done=self.done))


def wire_plan(
    chunks: Sequence[StreamChunk],
    meta: StreamMeta,
    *,
    failure: LlmFailure | None = None,
    hang: bool = False,
    framing: Framing = "lf",
) -> WirePlan:
    """The wire form of one logged call.

    `failure` ends the call with that error even without an error `finish` among `chunks` (an
    override's `throw` entry); `hang` holds the stream open after the chunks (a `hang` entry).
    """
    enc = _Encoder(meta, framing)
    tool_slot: dict[int, int] = {}  # harness block index -> wire tool_calls index
    started: set[int] = set()
    emitted: dict[int, list[str]] = {}
    usage: TokenUsage | None = None
    finish: Finish | None = None
    content = False
    enc.chunk({"role": "assistant", "content": ""})
    for chunk in chunks:
        if isinstance(chunk, (TextDelta, ReasoningDelta)):
            key = "content" if isinstance(chunk, TextDelta) else "reasoning_content"
            emitted.setdefault(chunk.index, []).append(chunk.text)
            if chunk.text:
                enc.chunk({key: chunk.text})
                content = True
        elif isinstance(chunk, ToolCallDelta):
            slot = tool_slot.setdefault(chunk.index, len(tool_slot))
            entry: dict[str, Any] = {"index": slot}
            function: dict[str, Any] = {"arguments": chunk.arguments_delta}
            if chunk.index not in started:
                started.add(chunk.index)
                entry.update(id=chunk.id, type="function")
                function = {"name": chunk.name or "", **function}
            entry["function"] = function
            enc.chunk({"tool_calls": [entry]})
            content = True
        elif isinstance(chunk, BlockEnd):
            content |= _finish_block(enc, chunk, tool_slot, started, emitted)
        elif isinstance(chunk, Usage):
            usage = chunk.usage
        elif isinstance(chunk, Finish):
            finish = chunk
        elif not isinstance(chunk, BlockStart):  # pragma: no cover - the union is closed
            raise TypeError(f"not a StreamChunk: {chunk!r}")
    if failure is None and finish is not None and not finish.reason.ok:
        failure = finish.reason.failure
        hang = hang or finish.reason.kind == "aborted"
    wire_u = wire_usage(usage) if usage is not None else None
    if hang:
        return WirePlan(events=enc.events, end="hold")
    if failure is not None:
        return _failed(enc, failure, content, wire_u)
    kind = finish.reason.kind if finish is not None else "stop"
    enc.chunk({}, _FINISH_REASONS.get(kind, "stop"), wire_u)
    enc.done = True
    return WirePlan(events=enc.events)


def _finish_block(
    enc: _Encoder,
    chunk: BlockEnd,
    tool_slot: dict[int, int],
    started: set[int],
    emitted: dict[int, list[str]],
) -> bool:
    """A block-end whose deltas do not add up to its block (a compaction call logs no deltas at
    all, §2.4): send what is missing so the adapter assembles the logged block."""
    block = chunk.block
    if isinstance(block, ToolCallBlock):
        if chunk.index in started:
            return False
        slot = tool_slot.setdefault(chunk.index, len(tool_slot))
        started.add(chunk.index)
        fn = {"name": block.name, "arguments": block.arguments}
        enc.chunk({"tool_calls": [{"index": slot, "id": block.id, "type": "function", "function": fn}]})
        return True
    if isinstance(block, (TextBlock, ReasoningBlock)):
        sent = "".join(emitted.get(chunk.index, ()))
        if block.text.startswith(sent) and len(block.text) > len(sent):
            key = "content" if isinstance(block, TextBlock) else "reasoning_content"
            enc.chunk({key: block.text[len(sent) :]})
            return True
    return False


def _failed(enc: _Encoder, failure: LlmFailure, content: bool, usage: Any) -> WirePlan:
    code = failure.code
    if code == ErrorCode.STREAM_CLOSED:
        return WirePlan(events=enc.events, end="eof")
    if code in (ErrorCode.TRANSPORT, ErrorCode.TIMEOUT):
        return WirePlan(events=enc.events, end="reset")
    if code == ErrorCode.EMPTY_RESPONSE and not content:
        enc.chunk({}, "stop", usage)
        enc.done = True
        return WirePlan(events=enc.events)
    if code in _FINISH_CODES:
        enc.chunk({}, _FINISH_CODES[code], usage)
        enc.done = True
        return WirePlan(events=enc.events)
    status = failure.status or _STATUS_OF.get(code)
    if not content and status is not None and status >= 400:
        err = _error_object(failure, status)
        if code == ErrorCode.CONTEXT_WINDOW_EXCEEDED and not is_context_window_exceeded(err["message"]):
            err["message"] += " (this model's maximum context length was exceeded)"
        headers: dict[str, str] = {"Content-Type": "application/json"}
        if failure.provider_retry_after_ms is not None:
            headers["Retry-After"] = f"{failure.provider_retry_after_ms / 1000:g}"
        if failure.request_id:
            headers["x-request-id"] = failure.request_id
        body = json.dumps({"error": err}, ensure_ascii=False).encode("utf-8")
        return WirePlan(status=status, headers=headers, body=body)
    # After content (or for a class no status expresses): DeepSeek's in-band error object.
    enc.payloads.append({"error": _error_object(failure, status)})
    return WirePlan(events=enc.events)
