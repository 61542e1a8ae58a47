"""JSON codec: the one place where snake_case attributes meet DSH's camelCase JSON.

Session logs, snapshots and `dshkit decode` all go through here, so a DSH log imports unchanged
and our own output round-trips losslessly. Decoding is strict about the fields it needs and
names the offending path in `CodecError`; unknown block types and source kinds are kept
verbatim (`OpaqueBlock`, `OpaqueSource`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .chunks import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishMeta,
    FinishReason,
    LlmFailure,
    ProviderError,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    TokenUsage,
    ToolCallDelta,
    Usage,
)
from .errors import JsonShapeError
from .messages import (
    AssistantMessage,
    ContentBlock,
    ImageAttachment,
    ImageBlock,
    Message,
    MessageSource,
    ModelSource,
    OpaqueBlock,
    OpaqueSource,
    PluginSource,
    ReasoningBlock,
    SystemMessage,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolSource,
    UserMessage,
    UserSource,
)
from .options import ToolSchema

__all__ = [
    "CodecError",
    "block_from_json",
    "block_to_json",
    "chunk_from_json",
    "chunk_to_json",
    "failure_from_json",
    "failure_to_json",
    "finish_reason_from_json",
    "finish_reason_to_json",
    "message_from_json",
    "message_to_json",
    "meta_to_json",
    "source_from_json",
    "source_to_json",
    "tool_schema_from_json",
    "tool_schema_to_json",
    "usage_from_json",
    "usage_to_json",
]

Json = Any


CodecError = JsonShapeError
"""The codec's name for :class:`JsonShapeError` (kept so existing imports and `except`s work)."""


def _obj(value: Json, path: str) -> Mapping[str, Json]:
    if not isinstance(value, dict):
        raise CodecError(path, f"expected an object, got {type(value).__name__}")
    return value


def _str(d: Mapping[str, Json], key: str, path: str) -> str:
    value = d.get(key)
    if not isinstance(value, str):
        raise CodecError(f"{path}.{key}", f"expected a string, got {_kind(value)}")
    return value


def _int(d: Mapping[str, Json], key: str, path: str) -> int:
    value = d.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise CodecError(f"{path}.{key}", f"expected an integer, got {_kind(value)}")
    return value


def _opt(d: Mapping[str, Json], key: str, types: type | tuple[type, ...], path: str) -> Any:
    value = d.get(key)
    if value is None:
        return None
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in _tuple(types)):
        raise CodecError(f"{path}.{key}", f"unexpected {_kind(value)}")
    return value


def _tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def _kind(value: Json) -> str:
    return "nothing" if value is None else type(value).__name__


def _list(d: Mapping[str, Json], key: str, path: str) -> list[Json]:
    value = d.get(key)
    if not isinstance(value, list):
        raise CodecError(f"{path}.{key}", f"expected a list, got {_kind(value)}")
    return value


# --- blocks ------------------------------------------------------------------------------------


def block_to_json(block: ContentBlock) -> dict[str, Json]:
    if isinstance(block, (TextBlock, ReasoningBlock)):
        return {"type": block.type, "text": block.text}
    if isinstance(block, ToolCallBlock):
        return {"type": "tool-call", "id": block.id, "name": block.name, "arguments": block.arguments}
    if isinstance(block, ToolResultBlock):
        out: dict[str, Json] = {
            "type": "tool-result",
            "toolCallId": block.tool_call_id,
            "content": [block_to_json(b) for b in block.content],
        }
        if block.is_error is not None:
            out["isError"] = block.is_error
        return out
    if isinstance(block, ImageBlock):
        a = block.attachment
        att: dict[str, Json] = {"attachmentId": a.attachment_id, "mediaType": a.media_type, "bytes": a.bytes}
        for key, value in (("width", a.width), ("height", a.height), ("name", a.name)):
            if value is not None:
                att[key] = value
        return {"type": "image", "attachment": att}
    return dict(block.data)


def block_from_json(value: Json, path: str = "block") -> ContentBlock:
    d = _obj(value, path)
    kind = _str(d, "type", path)
    if kind == "text":
        return TextBlock(text=_str(d, "text", path))
    if kind == "reasoning":
        return ReasoningBlock(text=_str(d, "text", path))
    if kind == "tool-call":
        return ToolCallBlock(
            id=_str(d, "id", path), name=_str(d, "name", path), arguments=_str(d, "arguments", path)
        )
    if kind == "tool-result":
        is_error = d.get("isError")
        if is_error is not None and not isinstance(is_error, bool):
            raise CodecError(f"{path}.isError", f"expected a boolean, got {_kind(is_error)}")
        return ToolResultBlock(
            tool_call_id=_str(d, "toolCallId", path),
            content=tuple(
                block_from_json(b, f"{path}.content[{i}]")
                for i, b in enumerate(_list(d, "content", path))
            ),
            is_error=is_error,
        )
    if kind == "image":
        apath = f"{path}.attachment"
        a = _obj(d.get("attachment"), apath)
        return ImageBlock(
            attachment=ImageAttachment(
                attachment_id=_str(a, "attachmentId", apath),
                media_type=_str(a, "mediaType", apath),
                bytes=_int(a, "bytes", apath),
                width=_opt(a, "width", int, apath),
                height=_opt(a, "height", int, apath),
                name=_opt(a, "name", str, apath),
            )
        )
    return OpaqueBlock(type=kind, data=dict(d))


# --- sources and messages ----------------------------------------------------------------------


def source_to_json(source: MessageSource) -> dict[str, Json]:
    if isinstance(source, UserSource):
        return {"kind": "user"}
    if isinstance(source, ModelSource):
        out: dict[str, Json] = {"kind": "model", "provider": source.provider, "model": source.model}
        if source.replay_state is not None:
            out["replayState"] = source.replay_state
        return out
    if isinstance(source, ToolSource):
        return {"kind": "tool", "callId": source.call_id}
    if isinstance(source, PluginSource):
        return {"kind": "plugin", "plugin": source.plugin, **(source.form or {})}
    return dict(source.data)


def source_from_json(value: Json, path: str = "source") -> MessageSource:
    d = _obj(value, path)
    kind = _str(d, "kind", path)
    if kind == "user":
        return UserSource()
    if kind == "model":
        return ModelSource(
            provider=_str(d, "provider", path),
            model=_str(d, "model", path),
            replay_state=d.get("replayState"),
        )
    if kind == "tool":
        return ToolSource(call_id=_str(d, "callId", path))
    if kind == "plugin":
        extra = {k: v for k, v in d.items() if k not in ("kind", "plugin")}
        return PluginSource(plugin=_str(d, "plugin", path), form=extra or None)
    return OpaqueSource(kind=kind, data=dict(d))


def message_to_json(message: Message) -> dict[str, Json]:
    return {
        "id": message.id,
        "role": message.role,
        "content": [block_to_json(b) for b in message.content],
        "source": source_to_json(message.source),
    }


def message_from_json(value: Json, path: str = "message") -> Message:
    d = _obj(value, path)
    id_ = _str(d, "id", path)
    if not id_:
        raise CodecError(f"{path}.id", "a message id must not be empty")
    role = _str(d, "role", path)
    content = tuple(
        block_from_json(b, f"{path}.content[{i}]") for i, b in enumerate(_list(d, "content", path))
    )
    source = source_from_json(d.get("source"), f"{path}.source")
    if role == "assistant":
        if not isinstance(source, (ModelSource, OpaqueSource)):
            raise CodecError(f"{path}.source", "an assistant message needs a model source")
        return AssistantMessage(id=id_, content=content, source=source)
    if role == "system":
        return SystemMessage(id=id_, content=content, source=source)
    if role != "user":
        raise CodecError(f"{path}.role", f"unknown role {role!r} (expected user, assistant or system)")
    if isinstance(source, ToolSource):
        if len(content) != 1 or not isinstance(content[0], ToolResultBlock):
            raise CodecError(f"{path}.content", "a tool-result message holds exactly one tool-result block")
        if content[0].tool_call_id != source.call_id:
            raise CodecError(f"{path}.content[0].toolCallId", "does not match source.callId")
        return ToolResultMessage(id=id_, content=(content[0],), source=source)
    return UserMessage(id=id_, content=content, source=source)


# --- usage, failures, finish -------------------------------------------------------------------

_USAGE_KEYS = (
    ("input_tokens", "inputTokens"),
    ("output_tokens", "outputTokens"),
    ("cache_read_tokens", "cacheReadTokens"),
    ("cache_write_tokens", "cacheWriteTokens"),
    ("reasoning_tokens", "reasoningTokens"),
)


def usage_to_json(usage: TokenUsage) -> dict[str, Json]:
    out: dict[str, Json] = {}
    for attr, key in _USAGE_KEYS:
        value = getattr(usage, attr)
        if value is not None:
            out[key] = value
    return out


def usage_from_json(value: Json, path: str = "usage") -> TokenUsage:
    d = _obj(value, path)
    return TokenUsage(
        input_tokens=_int(d, "inputTokens", path),
        output_tokens=_int(d, "outputTokens", path),
        cache_read_tokens=_opt(d, "cacheReadTokens", int, path),
        cache_write_tokens=_opt(d, "cacheWriteTokens", int, path),
        reasoning_tokens=_opt(d, "reasoningTokens", int, path),
    )


def failure_to_json(failure: LlmFailure) -> dict[str, Json]:
    out: dict[str, Json] = {"message": failure.message, "code": failure.code}
    if failure.status is not None:
        out["status"] = failure.status
    if failure.provider_retry_after_ms is not None:
        out["providerRetryAfterMs"] = failure.provider_retry_after_ms
    if failure.request_id is not None:
        out["requestId"] = failure.request_id
    if failure.provider_error is not None:
        pe = failure.provider_error
        out["providerError"] = {"type": pe.type, "code": pe.code, "param": pe.param}
    return out


def failure_from_json(value: Json, path: str = "failure") -> LlmFailure:
    d = _obj(value, path)
    provider_error = None
    pe = d.get("providerError")
    if pe is not None:
        pe = _obj(pe, f"{path}.providerError")
        ppath = f"{path}.providerError"
        provider_error = ProviderError(
            type=_opt(pe, "type", str, ppath),
            code=_opt(pe, "code", str, ppath),
            param=_opt(pe, "param", str, ppath),
        )
    return LlmFailure(
        message=_str(d, "message", path),
        code=_str(d, "code", path),
        status=_opt(d, "status", int, path),
        provider_retry_after_ms=_opt(d, "providerRetryAfterMs", (int, float), path),
        request_id=_opt(d, "requestId", str, path),
        provider_error=provider_error,
    )


def finish_reason_to_json(reason: FinishReason) -> dict[str, Json]:
    out: dict[str, Json] = {"kind": reason.kind}
    if reason.failure is not None:
        out["failure"] = failure_to_json(reason.failure)
    return out


def finish_reason_from_json(value: Json, path: str = "reason") -> FinishReason:
    d = _obj(value, path)
    failure = d.get("failure")
    return FinishReason(
        kind=_str(d, "kind", path),
        failure=failure_from_json(failure, f"{path}.failure") if failure is not None else None,
    )


def meta_to_json(meta: FinishMeta) -> dict[str, Json]:
    out: dict[str, Json] = {
        "id": meta.id,
        "model": meta.model,
        "systemFingerprint": meta.system_fingerprint,
        "doneMissing": meta.done_missing,
    }
    if meta.request_id is not None:
        out["requestId"] = meta.request_id
    return out


def _meta_from_json(value: Json, path: str) -> FinishMeta:
    d = _obj(value, path)
    return FinishMeta(
        id=_opt(d, "id", str, path),
        model=_opt(d, "model", str, path),
        system_fingerprint=_opt(d, "systemFingerprint", str, path),
        done_missing=bool(d.get("doneMissing", False)),
        request_id=_opt(d, "requestId", str, path),
    )


# --- chunks ------------------------------------------------------------------------------------


def chunk_to_json(chunk: StreamChunk) -> dict[str, Json]:
    """A chunk as DSH logs it, e.g. `{"type": "text-delta", "index": 0, "text": "Hi"}`."""
    if isinstance(chunk, TextDelta):
        return {"type": "text-delta", "index": chunk.index, "text": chunk.text}
    if isinstance(chunk, ReasoningDelta):
        return {"type": "reasoning-delta", "index": chunk.index, "text": chunk.text}
    if isinstance(chunk, ToolCallDelta):
        out: dict[str, Json] = {"type": "tool-call-delta", "index": chunk.index, "id": chunk.id}
        if chunk.name is not None:
            out["name"] = chunk.name
        out["argumentsDelta"] = chunk.arguments_delta
        return out
    if isinstance(chunk, BlockStart):
        return {"type": "block-start", "index": chunk.index, "blockType": chunk.block_type}
    if isinstance(chunk, BlockEnd):
        return {"type": "block-end", "index": chunk.index, "block": block_to_json(chunk.block)}
    if isinstance(chunk, Usage):
        return {"type": "usage", "usage": usage_to_json(chunk.usage)}
    out = {"type": "finish", "reason": finish_reason_to_json(chunk.reason)}
    if chunk.replay_state is not None:
        out["replayState"] = chunk.replay_state
    if chunk.meta is not None:
        out["meta"] = meta_to_json(chunk.meta)
    return out


def chunk_from_json(value: Json, path: str = "chunk") -> StreamChunk:
    d = _obj(value, path)
    kind = _str(d, "type", path)
    if kind == "text-delta":
        return TextDelta(index=_int(d, "index", path), text=_str(d, "text", path))
    if kind == "reasoning-delta":
        return ReasoningDelta(index=_int(d, "index", path), text=_str(d, "text", path))
    if kind == "tool-call-delta":
        # DSH writes `id: undefined` as a missing key; keep it as "" so the block falls back
        # to `call-<index>` exactly as DSH's assembler does.
        id_ = d.get("id")
        if id_ is not None and not isinstance(id_, str):
            raise CodecError(f"{path}.id", f"expected a string, got {_kind(id_)}")
        return ToolCallDelta(
            index=_int(d, "index", path),
            id=id_ or "",
            name=_opt(d, "name", str, path),
            arguments_delta=_str(d, "argumentsDelta", path),
        )
    if kind == "block-start":
        return BlockStart(index=_int(d, "index", path), block_type=_str(d, "blockType", path))
    if kind == "block-end":
        return BlockEnd(
            index=_int(d, "index", path), block=block_from_json(d.get("block"), f"{path}.block")
        )
    if kind == "usage":
        return Usage(usage=usage_from_json(d.get("usage"), f"{path}.usage"))
    if kind == "finish":
        meta = d.get("meta")
        return Finish(
            reason=finish_reason_from_json(d.get("reason"), f"{path}.reason"),
            replay_state=d.get("replayState"),
            meta=_meta_from_json(meta, f"{path}.meta") if meta is not None else None,
        )
    raise CodecError(f"{path}.type", f"unknown stream chunk type {kind!r}")


def tool_schema_to_json(schema: ToolSchema) -> dict[str, Json]:
    out: dict[str, Json] = {"name": schema.name, "description": schema.description, "parameters": dict(schema.parameters)}
    if schema.strict is not None:
        out["strict"] = schema.strict
    return out


def tool_schema_from_json(value: Json, path: str = "tool") -> ToolSchema:
    d = _obj(value, path)
    params = d.get("parameters", {"type": "object", "properties": {}})
    return ToolSchema(
        name=_str(d, "name", path),
        description=d.get("description") or "",
        parameters=_obj(params, f"{path}.parameters"),
        strict=d["strict"] if isinstance(d.get("strict"), bool) else None,
    )
