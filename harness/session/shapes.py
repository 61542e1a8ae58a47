"""Shape checks for the data of core event types, run before an event is committed.

In the seed's walk these guard the events that carry what the model sees: a `user/message` must
be a whole user message, an `assistant/message` wraps an assistant message from a model source,
a `tool/result` wraps a tool-result message answering one call (dsh-core.md §1.2, §1.9). For the
three surface types the check decodes the message once, and `Session` keeps that decoded value
as the event's projection, so deriving history never decodes twice. Plugin types are accepted as
any JSON object.

DSH's web app writes the three surface types in a flat form, without a message envelope or a
message id: `user/message {content, source}`, `assistant/message {turn, step, content,
provenance: {provider, model}, usage?}` and `tool/result {turn, step, callId, content, isError}`.
Those load too: the data stays verbatim (so the log rewrites byte for byte) and the projected
message gets the id `logged-seq-N` from the event's seq.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from dshkit.harness.llm import AssistantMessage, Message, UserMessage
from dshkit.harness.llm.codec import (
    CodecError,
    block_from_json,
    message_from_json,
    source_from_json,
)
from dshkit.harness.llm.errors import SessionError
from dshkit.harness.llm.messages import ModelSource, ToolResultBlock, ToolResultMessage, ToolSource

from .events import SURFACE_EVENT_TYPES
from .lossless import JsonValue

__all__ = ["check_event_data", "logged_message"]


def _fail(where: str, problem: str) -> SessionError:
    return SessionError(f"{where}: {problem}", "INVALID_EVENT")


def _obj(data: JsonValue, where: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise _fail(where, "expected a JSON object")
    return data


def _int(d: Mapping[str, Any], key: str, where: str, minimum: int = 1) -> None:
    value = d.get(key)
    if type(value) is not int or value < minimum:
        raise _fail(f"{where}.{key}", f"expected an integer >= {minimum}, got {value!r}")


def _str(d: Mapping[str, Any], key: str, where: str, *, nonempty: bool = False) -> None:
    value = d.get(key)
    if not isinstance(value, str) or (nonempty and not value):
        raise _fail(f"{where}.{key}", "expected a non-empty string" if nonempty else "expected a string")


def _turn(data: JsonValue, where: str) -> Mapping[str, Any]:
    d = _obj(data, where)
    _int(d, "turn", where)
    return d


def _turn_step(data: JsonValue, where: str) -> Mapping[str, Any]:
    d = _turn(data, where)
    _int(d, "step", where)
    return d


def _message(value: JsonValue, where: str) -> Message:
    try:
        return message_from_json(value, where)
    except CodecError as exc:
        raise SessionError(str(exc), "INVALID_EVENT") from exc


def _flat_id(seq: int | None) -> str:
    return f"logged-seq-{seq if seq is not None else 'unknown'}"


def _blocks(d: Mapping[str, Any], where: str) -> tuple[Any, ...]:
    content = d.get("content")
    if not isinstance(content, list):
        raise _fail(f"{where}.content", "expected a list of content blocks")
    try:
        return tuple(block_from_json(b, f"{where}.content[{i}]") for i, b in enumerate(content))
    except CodecError as exc:
        raise SessionError(str(exc), "INVALID_EVENT") from exc


def _is_flat(d: Mapping[str, Any]) -> bool:
    """The web app's form: `content` beside the event fields, no `message`/`id` envelope."""
    return "content" in d and "message" not in d and "id" not in d


def _user_message(data: JsonValue, where: str, seq: int | None = None) -> Message:
    d = _obj(data, where)
    if _is_flat(d) and "role" not in d:
        try:
            source = source_from_json(d.get("source"), f"{where}.source")
        except CodecError as exc:
            raise SessionError(str(exc), "INVALID_EVENT") from exc
        if isinstance(source, (ToolSource, ModelSource)):
            raise _fail(f"{where}.source", "a user/message holds a user-role message")
        return UserMessage(id=_flat_id(seq), content=_blocks(d, where), source=source)
    message = _message(data, where)
    if not isinstance(message, (UserMessage, ToolResultMessage)):
        raise _fail(f"{where}.role", "a user/message holds a user-role message")
    return message


def _flat_assistant(d: Mapping[str, Any], where: str, seq: int | None) -> AssistantMessage:
    prov = _obj(d.get("provenance"), f"{where}.provenance")
    _str(prov, "provider", f"{where}.provenance", nonempty=True)
    _str(prov, "model", f"{where}.provenance", nonempty=True)
    source = ModelSource(provider=prov["provider"], model=prov["model"], replay_state=prov.get("replayState"))
    return AssistantMessage(id=_flat_id(seq), content=_blocks(d, where), source=source)


def _assistant_message(data: JsonValue, where: str, seq: int | None = None) -> Message:
    d = _turn_step(data, where)
    if _is_flat(d):
        message: Message = _flat_assistant(d, where, seq)
    else:
        message = _message(d.get("message"), f"{where}.message")
    if not isinstance(message, AssistantMessage):
        raise _fail(f"{where}.message.role", "expected 'assistant'")
    source = message.source
    if not isinstance(source, ModelSource) or not source.provider or not source.model:
        raise _fail(f"{where}.message.source", "expected {kind:'model'} with a provider and model")
    if "interrupted" in d and d["interrupted"] is not True:
        raise _fail(f"{where}.interrupted", "only `true` is allowed")
    if "usage" in d:
        _obj(d["usage"], f"{where}.usage")
    return message


def _flat_tool_result(d: Mapping[str, Any], where: str, seq: int | None) -> ToolResultMessage:
    _str(d, "callId", where, nonempty=True)
    error = d.get("isError")
    if error is not None and not isinstance(error, bool):
        raise _fail(f"{where}.isError", "expected a boolean")
    block = ToolResultBlock(tool_call_id=d["callId"], content=_blocks(d, where), is_error=error)
    return ToolResultMessage(id=_flat_id(seq), content=(block,), source=ToolSource(call_id=d["callId"]))


def _tool_result(data: JsonValue, where: str, seq: int | None = None) -> Message:
    d = _turn_step(data, where)
    if _is_flat(d):
        message: Message = _flat_tool_result(d, where, seq)
    else:
        message = _message(d.get("message"), f"{where}.message")
    if not isinstance(message, ToolResultMessage) or not message.source.call_id:
        raise _fail(
            f"{where}.message",
            "expected a tool-result message: source {kind:'tool', callId} and exactly one "
            "tool-result block answering that callId",
        )
    if "error" in d:
        err = _obj(d["error"], f"{where}.error")
        _str(err, "name", f"{where}.error")
        _str(err, "code", f"{where}.error")
    return message


def _assistant_chunk(data: JsonValue, where: str) -> None:
    d = _turn_step(data, where)
    chunk = _obj(d.get("chunk"), f"{where}.chunk")
    _str(chunk, "type", f"{where}.chunk", nonempty=True)


def _tool_call(data: JsonValue, where: str) -> None:
    d = _turn_step(data, where)
    _str(d, "callId", where, nonempty=True)
    _str(d, "name", where)
    _str(d, "arguments", where)


def _turn_end(data: JsonValue, where: str) -> None:
    d = _turn(data, where)
    reason = _obj(d.get("reason"), f"{where}.reason")
    _str(reason, "kind", f"{where}.reason", nonempty=True)


def _request_header(data: JsonValue, where: str) -> None:
    d = _obj(data, where)
    header = _obj(d.get("header"), f"{where}.header")
    config = _obj(header.get("config"), f"{where}.header.config")
    _str(config, "provider", f"{where}.header.config", nonempty=True)
    _str(config, "model", f"{where}.header.config", nonempty=True)
    if "reasoningEffort" in config:
        _str(config, "reasoningEffort", f"{where}.header.config", nonempty=True)
    defaults = header.get("adapterDefaults")
    if defaults is not None:
        defaults = _obj(defaults, f"{where}.header.adapterDefaults")
        for key, value in defaults.items():
            if key not in ("reasoningEffort", "maxTokens") or value is not True:
                raise _fail(f"{where}.header.adapterDefaults.{key}", "only reasoningEffort/maxTokens: true")
            if key not in config:
                raise _fail(f"{where}.header.adapterDefaults.{key}", "marks a field the config lacks")
    if d.get("reason") not in ("initial", "resume", "change"):
        raise _fail(f"{where}.reason", "expected 'initial', 'resume' or 'change'")


def _request_context(data: JsonValue, where: str) -> None:
    d = _obj(data, where)
    _str(d, "provider", where, nonempty=True)
    _str(d, "model", where, nonempty=True)


def _todo_write(data: JsonValue, where: str) -> None:
    d = _obj(data, where)
    if not isinstance(d.get("todos"), list):
        raise _fail(f"{where}.todos", "expected a list")


def _any_object(data: JsonValue, where: str) -> None:
    _obj(data, where)


_MESSAGES: Final[dict[str, Callable[[JsonValue, str, int | None], Message]]] = {
    "user/message": _user_message,
    "assistant/message": _assistant_message,
    "tool/result": _tool_result,
}
"""The surface types: each check decodes the event's message (either form)."""

_CHECKS: Final[dict[str, Callable[[JsonValue, str], Any]]] = {
    "turn/start": _turn,
    "turn/end": _turn_end,
    "step/start": _turn_step,
    "step/end": _turn_step,
    "assistant/chunk": _assistant_chunk,
    "tool/call": _tool_call,
    "todo/write": _todo_write,
    "request/header": _request_header,
    "request/context": _request_context,
    "session/end-seed": _any_object,
}


def logged_message(type_: str, data: JsonValue, *, seq: int | None = None, where: str = "data") -> Message:
    """The message a surface event (`user/message`, `assistant/message`, `tool/result`) logs,
    in either form (enveloped or the web app's flat one), empty anchors included.

    Raises `SessionError` (code `INVALID_EVENT`) naming the field, also for another type.
    """
    decode = _MESSAGES.get(type_)
    if decode is None:
        raise _fail(where, f"{type_!r} is not a surface event type; it logs no message")
    return decode(data, where, seq)


def check_event_data(type_: str, data: JsonValue, where: str = "data", *, seq: int | None = None) -> Message | None:
    """Validate `data` for a core `type_`; return the projected message of a surface event.

    Raises `SessionError` (code `INVALID_EVENT`) naming the field.
    """
    if type_ in _MESSAGES:
        message = logged_message(type_, data, seq=seq, where=where)
        # DSH's empty completion anchor is logged but derives to no message (trap 3).
        if type_ == "assistant/message" and not message.content:
            return None
        return message if type_ in SURFACE_EVENT_TYPES else None
    _CHECKS.get(type_, _any_object)(data, where)
    return None
