"""A replayed call on DeepSeek's Chat Completions wire: the inverse of the adapter's translate step.

`dshkit.harness.replay.plan.plan_call` says what one logged call held and how it ended;
:func:`wire_plan` renders that plan as what a DeepSeek server would have sent, so the real
adapter parses it again: text pieces become `delta.content`, reasoning `delta.reasoning_content`,
tool-call pieces `delta.tool_calls` (id, type and name on a call's first fragment only, the wire
index counting calls in order), usage rides on the finish chunk (the DeepSeek docs' placement)
and the finish becomes `finish_reason`. An HTTP error is a JSON error body with `Retry-After`
and `x-request-id` from the failure; an in-band error is DeepSeek's `data: {"error": …}` event;
`eof` ends the body without `[DONE]`. The envelope (`id`, `created`, `system_fingerprint`) is
synthesized from a seed; token boundaries survive, the original envelope and framing do not
(dsh-testing.md §6.1 item 1).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from dshkit.mock_server.generate.encode import Framing, encode_events
from dshkit.mock_server.generate.reply import StreamMeta

if TYPE_CHECKING:
    from dshkit.harness.llm import LlmFailure, StreamChunk, TokenUsage

__all__ = ["WirePlan", "wire_plan", "wire_usage"]

_TYPE_OF: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "invalid_request_error",
    429: "rate_limit_error",
}
_FINISH_REASONS: Mapping[str, str] = {
    "stop": "stop",
    "tool-calls": "tool_calls",
    "max-tokens": "length",
    "content-filter": "content_filter",
    "insufficient-system-resource": "insufficient_system_resource",
}


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


def _error_object(failure: LlmFailure, message: str, status: int | None) -> dict[str, Any]:
    pe = failure.provider_error
    type_ = (pe.type if pe and pe.type else None) or _TYPE_OF.get(status or 0, "api_error")
    code = (pe.code if pe and pe.code else None) or failure.code.lower()
    return {"message": message, "type": type_, "param": pe.param if pe else None, "code": code}


def _http_error(failure: LlmFailure, message: str, status: int) -> WirePlan:
    err = _error_object(failure, message, status)
    headers: dict[str, str] = {"Content-Type": "application/json"}
    if failure.provider_retry_after_ms is not None:
        headers["Retry-After"] = f"{failure.provider_retry_after_ms / 1000:g}"
    if failure.request_id:
        headers["x-request-id"] = failure.request_id
    body = json.dumps({"error": err}, ensure_ascii=False).encode("utf-8")
    return WirePlan(status=status, headers=headers, body=body)


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
    # Imported here: the harness's replay package (and its session code) is needed only once a
    # logged call is replayed, not for a server to get ready.
    from dshkit.harness.replay.plan import plan_call

    plan = plan_call(chunks, failure, hang=hang)
    if plan.end == "http-error":
        assert plan.failure is not None and plan.status is not None
        return _http_error(plan.failure, plan.message, plan.status)
    payloads: list[Mapping[str, Any]] = []

    def chunk(delta: Mapping[str, Any], finish: str | None = None, usage: Any = None) -> None:
        payloads.append({
            "id": meta.id,
            "object": "chat.completion.chunk",
            "created": meta.created,
            "model": meta.model,
            "system_fingerprint": meta.system_fingerprint,
            "choices": [{"index": 0, "delta": dict(delta), "logprobs": None, "finish_reason": finish}],
            "usage": usage,
        })

    chunk({"role": "assistant", "content": ""})
    slots: dict[int, int] = {}  # block index -> wire tool_calls index
    for piece in plan.pieces:
        if piece.kind == "tool-call":
            entry: dict[str, Any] = {"index": slots.setdefault(piece.index, len(slots))}
            function: dict[str, Any] = {"arguments": piece.text}
            if piece.first:
                entry.update(id=piece.call_id, type="function")
                function = {"name": piece.name, **function}
            entry["function"] = function
            chunk({"tool_calls": [entry]})
        elif piece.text:
            chunk({"content" if piece.kind == "text" else "reasoning_content": piece.text})

    def events(done: bool) -> tuple[bytes, ...]:
        return tuple(encode_events(payloads, framing, done=done))

    if plan.end == "hold":
        return WirePlan(events=events(False), end="hold")
    if plan.end in ("eof", "reset"):
        return WirePlan(events=events(False), end=plan.end)
    if plan.end == "in-band-error":
        assert plan.failure is not None
        payloads.append({"error": _error_object(plan.failure, plan.message, plan.status)})  # DeepSeek's in-band error
        return WirePlan(events=events(False))
    chunk({}, _FINISH_REASONS[plan.finish], wire_usage(plan.usage) if plan.usage is not None else None)
    return WirePlan(events=events(True))
