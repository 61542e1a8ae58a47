"""Wire inputs → mock-server script steps, and history specs → harness messages.

The mock server already knows generated replies, named faults and raw bytes; this module maps a
scenario's `wire` onto those step kinds (hand-written SSE and HTTP bodies become raw writes built
here, so the mock server needs nothing new), and turns the scenario's request spec into the
`GenerateOptions` the harness would pass its adapter.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dshkit.harness.llm import (
    AssistantMessage,
    GenerateOptions,
    Message,
    TextBlock,
    ToolCallBlock,
    ToolSchema,
    UserMessage,
)
from dshkit.harness.llm.messages import (
    ContentBlock,
    ImageAttachment,
    ImageBlock,
    ModelSource,
    OpaqueBlock,
    ReasoningBlock,
    SystemMessage,
    ToolResultBlock,
    ToolResultMessage,
)
from dshkit.mock_server.generate.writes import plan_writes
from dshkit.mock_server.scripts import FaultStep, RawStep, ReplyStep
from dshkit.mock_server.scripts import Step as MockStep

from .scenario import BlockIn, MessageSpec, RequestSpec, SseSpec, Wire

__all__ = ["build_messages", "build_options", "encode_sse_spec", "to_mock_step"]

_SSE_HEADERS = {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _full_chunk(spec: SseSpec, event: Mapping[str, Any]) -> dict[str, Any]:
    if "choices" in event or not ({"delta", "finish_reason"} & event.keys()):
        return dict(event)
    choice: dict[str, Any] = {
        "index": event.get("index", 0),
        "delta": event.get("delta", {}),
        "logprobs": event.get("logprobs"),
        "finish_reason": event.get("finish_reason"),
    }
    chunk: dict[str, Any] = {
        "id": spec.id,
        "object": "chat.completion.chunk",
        "created": spec.created,
        "model": spec.model,
        "system_fingerprint": spec.system_fingerprint,
        "choices": [choice],
        "usage": event.get("usage"),
    }
    extra = {k: v for k, v in event.items() if k not in ("index", "delta", "logprobs", "finish_reason", "usage")}
    chunk.update(extra)
    return chunk


def encode_sse_spec(spec: SseSpec, protocol: str = "chat") -> bytes:
    """The body bytes of a hand-written SSE spec: chat chunks as `data:` lines closed by
    `[DONE]`, or (on `anthropic`) events framed with their `event:` line and no `[DONE]`."""
    eol = {"lf": b"\n", "crlf": b"\r\n", "cr": b"\r"}[spec.framing]
    out: list[bytes] = []
    for event in spec.events:
        if isinstance(event, str):
            out.append(event.encode("utf-8"))
        elif protocol == "anthropic":
            name = str(event.get("type", "message")).encode("utf-8")
            out.append(b"event: " + name + eol + b"data: " + _dumps(dict(event)) + eol + eol)
        else:
            out.append(b"data: " + _dumps(_full_chunk(spec, event)) + eol + eol)
    if spec.done if spec.done is not None else protocol == "chat":
        out.append(b"data: [DONE]" + eol + eol)
    return b"".join(out)


def _raw_writes(writes: list[bytes], delay_ms: int) -> list[dict[str, Any]]:
    return [{"b64": base64.b64encode(w).decode("ascii"), "delay_ms": delay_ms} for w in writes]


def to_mock_step(wire: Wire, *, base: Path, seed: int = 0, protocol: str = "chat") -> MockStep:
    """The mock-server step that plays `wire` (files resolve against `base`); `protocol` frames
    hand-written SSE for that surface."""
    timing = wire.timing.model_dump()
    if wire.reply is not None:
        return ReplyStep.model_validate({"reply": wire.reply, "stream": wire.stream, "timing": timing})
    if wire.fault is not None:
        return FaultStep.model_validate(
            {"fault": wire.fault, "stream": wire.stream, "timing": timing, **wire.fault_options}
        )
    if wire.sse is not None:
        spec = wire.sse
        data = encode_sse_spec(spec, protocol)
        writes = plan_writes(data, spec.writes.to_plan(seed))
        raw = {
            "status": spec.status,
            "headers": spec.headers if spec.headers is not None else _SSE_HEADERS,
            "writes": _raw_writes(writes, spec.write_delay_ms),
        }
        return RawStep.model_validate({"raw": raw, "timing": timing})
    if wire.http is not None:
        http = wire.http
        body = http.body if isinstance(http.body, str) else json.dumps(http.body)
        headers = {"Content-Type": "application/json", **http.headers}
        body_writes = [{"text": body}] if body else []
        return RawStep.model_validate(
            {"raw": {"status": http.status, "headers": headers, "writes": body_writes}, "timing": timing}
        )
    assert wire.recording is not None
    rec = wire.recording
    step = RawStep.model_validate(
        {"raw": {"file": str(base / rec.file), "write_plan": rec.writes}, "timing": timing}
    )
    step.raw.load_file(None)
    return step


# --- the request side ------------------------------------------------------------------------


def _blocks(content: str | list[BlockIn]) -> tuple[ContentBlock, ...]:
    if isinstance(content, str):
        return (TextBlock(text=content),) if content else ()
    out: list[ContentBlock] = []
    for b in content:
        if b.text is not None:
            out.append(TextBlock(text=b.text))
        elif b.image is not None:
            img = b.image
            out.append(ImageBlock(attachment=ImageAttachment(
                attachment_id=str(img.get("attachment_id", "sha256:0")),
                media_type=str(img.get("media_type", "image/png")),
                bytes=int(img.get("bytes", 1)),
            )))
        elif b.opaque is not None:
            out.append(OpaqueBlock(type=str(b.opaque.get("type", "x-unknown")), data=dict(b.opaque)))
        elif b.tool_result is not None:
            tr = b.tool_result
            out.append(ToolResultBlock(
                tool_call_id=str(tr["tool_call_id"]),
                content=(TextBlock(text=str(tr.get("content", ""))),),
                is_error=bool(tr.get("is_error", False)),
            ))
    return tuple(out)


def build_messages(specs: list[MessageSpec], *, model: str) -> list[Message]:
    """History messages from their specs."""
    out: list[Message] = []
    for i, m in enumerate(specs):
        mid = f"conf-msg-{i}"
        if m.role == "user":
            out.append(UserMessage(content=_blocks(m.content), id=mid))
        elif m.role == "system":
            out.append(SystemMessage(content=_blocks(m.content), id=mid))
        elif m.role == "tool":
            assert m.tool_call_id is not None
            text = m.content if isinstance(m.content, str) else "".join(b.text or "" for b in m.content)
            out.append(ToolResultMessage.create(m.tool_call_id, text, is_error=m.is_error, id=mid))
        else:
            blocks: list[ContentBlock] = []
            if m.reasoning is not None:
                blocks.append(ReasoningBlock(text=m.reasoning))
            blocks.extend(_blocks(m.content))
            blocks.extend(ToolCallBlock(id=c.id, name=c.name, arguments=c.arguments) for c in m.tool_calls)
            out.append(AssistantMessage(
                content=tuple(blocks), source=ModelSource(provider="conformance", model=model), id=mid
            ))
    return out


def build_options(
    spec: RequestSpec, messages: list[Message], *, provider: str, session_id: str | None = None
) -> GenerateOptions:
    """The `GenerateOptions` of one call over `messages`."""
    return GenerateOptions(
        session_id=session_id,
        provider=provider,
        model=spec.model,
        messages=tuple(messages),
        system=spec.system,
        tools=tuple(
            ToolSchema(name=t.name, description=t.description, parameters=t.parameters, strict=t.strict)
            for t in spec.tools
        ),
        reasoning_effort=spec.reasoning_effort,
        tool_choice=spec.tool_choice,
        temperature=spec.temperature,
        max_tokens=spec.max_tokens,
        stop=tuple(spec.stop) if spec.stop is not None else None,
        purpose=spec.purpose,
    )
