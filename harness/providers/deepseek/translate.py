"""Translation: DeepSeek wire chunks → `StreamChunk`s (dsh-core.md §3.6–3.7, wire.md A1–A15).

`Translator` holds the state of one response: which harness block each wire stream maps to
(one reasoning block, one text block, one block per `tool_calls[].index`), the last
finish_reason, the last non-null usage and the response ids. Dialect quirks of other
OpenAI-compatible servers (`delta.reasoning`, usage on a `choices: []` chunk, ids repeated or
blanked on later fragments, explicit nulls) are absorbed here and nowhere else.
`StreamDecoder` (in `decoder`) composes the SSE decoder with it: bytes in, chunks out, one
terminal `Finish`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import fields
from typing import Any

from harness.llm import (
    BlockEnd,
    BlockStart,
    ErrorCode,
    Finish,
    FinishMeta,
    FinishReason,
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
)

from .failures import failure_from_error_object

__all__ = ["Translator", "map_finish_reason", "map_usage"]

_FINISH_KINDS = {"stop": "stop", "tool_calls": "tool-calls", "length": "max-tokens"}


def map_finish_reason(reason: str) -> FinishReason:
    """`stop`, `tool_calls` and `length` map to their kinds; anything else (content_filter,
    insufficient_system_resource, values we have never seen) is an error finish coded by it."""
    kind = _FINISH_KINDS.get(reason)
    if kind is not None:
        return FinishReason(kind=kind)
    code = reason.upper().replace("-", "_").replace(" ", "_") or ErrorCode.UNKNOWN
    return FinishReason(
        kind="error", failure=LlmFailure(message=f"model stopped: {reason}", code=code)
    )


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def map_usage(usage: dict[str, Any]) -> TokenUsage:
    """Wire usage → disjoint counts: cached prompt tokens are subtracted from input."""
    prompt = _count(usage.get("prompt_tokens")) or 0
    details = usage.get("prompt_tokens_details")
    cache_read = _count(details.get("cached_tokens")) if isinstance(details, dict) else None
    if cache_read is None:
        cache_read = _count(usage.get("prompt_cache_hit_tokens"))
    out_details = usage.get("completion_tokens_details")
    reasoning = (
        _count(out_details.get("reasoning_tokens")) if isinstance(out_details, dict) else None
    )
    return TokenUsage(
        input_tokens=prompt - (cache_read or 0),
        output_tokens=_count(usage.get("completion_tokens")) or 0,
        cache_read_tokens=cache_read,
        reasoning_tokens=reasoning,
    )


class _ToolCall:
    __slots__ = ("index", "id", "name", "parts")

    def __init__(self, index: int) -> None:
        self.index = index
        self.id = ""
        self.name = ""
        self.parts: list[str] = []


# Fast constructors for the three chunks made once per wire delta. The chunk classes are frozen
# slotted dataclasses, whose generated `__init__` sets each field through `object.__setattr__`
# after parsing keywords: about half of the translator's time per delta. Writing the slots
# directly builds the very same instance (equal, same hash, same repr) in less than half the
# time. Only used while the classes have exactly the fields written here; otherwise (a field
# added to `harness.llm`), the ordinary constructor runs and nothing can be left unset.
_new = object.__new__


def _slot_setters(cls: type, names: tuple[str, ...]) -> tuple[Callable[[Any, Any], None], ...] | None:
    if tuple(sorted(f.name for f in fields(cls))) != tuple(sorted(names)):
        return None
    return tuple(vars(cls)[name].__set__ for name in names)


_REASONING = _slot_setters(ReasoningDelta, ("index", "text", "type"))
_TEXT = _slot_setters(TextDelta, ("index", "text", "type"))
_TOOL = _slot_setters(ToolCallDelta, ("index", "id", "arguments_delta", "name", "type"))


def _reasoning_delta(index: int, text: str) -> ReasoningDelta:
    """`ReasoningDelta(index=index, text=text)`, faster (see `_slot_setters`)."""
    if _REASONING is None:
        return ReasoningDelta(index=index, text=text)
    chunk: ReasoningDelta = _new(ReasoningDelta)
    set_index, set_text, set_type = _REASONING
    set_index(chunk, index)
    set_text(chunk, text)
    set_type(chunk, "reasoning-delta")
    return chunk


def _text_delta(index: int, text: str) -> TextDelta:
    """`TextDelta(index=index, text=text)`, faster (see `_slot_setters`)."""
    if _TEXT is None:
        return TextDelta(index=index, text=text)
    chunk: TextDelta = _new(TextDelta)
    set_index, set_text, set_type = _TEXT
    set_index(chunk, index)
    set_text(chunk, text)
    set_type(chunk, "text-delta")
    return chunk


def _tool_call_delta(index: int, id_: str, name: str | None, arguments: str) -> ToolCallDelta:
    """`ToolCallDelta(index=…, id=…, name=…, arguments_delta=…)`, faster (see `_slot_setters`)."""
    if _TOOL is None:
        return ToolCallDelta(index=index, id=id_, name=name, arguments_delta=arguments)
    chunk: ToolCallDelta = _new(ToolCallDelta)
    set_index, set_id, set_arguments, set_name, set_type = _TOOL
    set_index(chunk, index)
    set_id(chunk, id_)
    set_arguments(chunk, arguments)
    set_name(chunk, name)
    set_type(chunk, "tool-call-delta")
    return chunk


def _malformed(message: str) -> LlmFailure:
    return LlmFailure(message=message, code=ErrorCode.MALFORMED_RESPONSE)


class Translator:
    """Stateful translation of one response's wire chunks (parsed JSON objects)."""

    __slots__ = (
        "_next_index",
        "_text",
        "_reasoning",
        "_reasoning_parts",
        "_text_parts",
        "_tools",
        "_last_tool",
        "_order",
        "finish_reason",
        "_usage",
        "id",
        "model",
        "system_fingerprint",
        "finished",
    )

    def __init__(self) -> None:
        self._next_index = 0
        self._text: int | None = None
        self._reasoning: int | None = None
        self._text_parts: list[str] = []
        self._reasoning_parts: list[str] = []
        self._tools: dict[int, _ToolCall] = {}
        self._last_tool: _ToolCall | None = None
        self._order: list[tuple[int, str, Any]] = []
        self.finish_reason: str | None = None
        """The last non-null wire finish_reason (A7)."""
        self._usage: TokenUsage | None = None
        self.id: str | None = None
        self.model: str | None = None
        self.system_fingerprint: str | None = None
        self.finished = False
        """A terminal `Finish` has been produced; later input is ignored."""

    # --- per chunk -------------------------------------------------------------------------

    def feed(self, chunk: Any) -> list[StreamChunk]:
        """Translate one parsed `data:` payload."""
        out: list[StreamChunk] = []
        self.feed_into(chunk, out)
        return out

    def feed_into(self, chunk: Any, out: list[StreamChunk]) -> None:
        """`feed`, appending to `out` (the hot path: no list per payload)."""
        if self.finished:
            return
        if not isinstance(chunk, dict):
            out += self._terminate(_malformed(f"wire chunk is not a JSON object: {_clip(chunk)}"))
            return
        if self.id is None:
            self._take_ids(chunk)
        error = chunk.get("error")
        if error:
            # Usage on the error chunk itself (OpenRouter's oc05 shape) is billed work: keep it.
            usage = chunk.get("usage")
            if usage and isinstance(usage, dict):
                self._usage = map_usage(usage)
            out += self._terminate(failure_from_error_object(error), keep_usage=True)
            return
        choices = chunk.get("choices")
        if choices:
            if not isinstance(choices, list):
                out += self._terminate(_malformed(f"`choices` is not a list: {_clip(chunk)}"))
                return
            mark = len(out)  # a malformed choice emits nothing of its payload but the finish
            for choice in choices:
                if not isinstance(choice, dict):
                    del out[mark:]
                    out += self._terminate(_malformed(f"a choice is not an object: {_clip(chunk)}"))
                    return
                if choice.get("index", 0) not in (0, None):
                    continue  # n > 1 is not something the harness asks for
                delta = choice.get("delta")
                if delta:
                    if not isinstance(delta, dict):
                        del out[mark:]
                        out += self._terminate(_malformed(f"`delta` is not an object: {_clip(chunk)}"))
                        return
                    self.feed_delta(delta, out)
                    if self.finished:
                        return
                reason = choice.get("finish_reason")
                if reason and isinstance(reason, str):
                    self.finish_reason = reason
        usage = chunk.get("usage")
        if usage and isinstance(usage, dict):
            self._usage = map_usage(usage)

    def feed_delta(self, delta: dict[str, Any], out: list[StreamChunk]) -> None:
        """Apply one `choices[0].delta` object: reasoning, then content, then tool calls."""
        reasoning = delta.get("reasoning_content")
        if reasoning is None:
            reasoning = delta.get("reasoning")  # the field name some other servers use
        if reasoning and type(reasoning) is str:
            index = self._reasoning
            if index is None:
                index = self._reasoning = self._open("reasoning", out)
                self._order.append((index, "reasoning", None))
            self._reasoning_parts.append(reasoning)
            out.append(_reasoning_delta(index, reasoning))
        content = delta.get("content")
        if content and type(content) is str:
            index = self._text
            if index is None:
                index = self._text = self._open("text", out)
                self._order.append((index, "text", None))
            self._text_parts.append(content)
            out.append(_text_delta(index, content))
        calls = delta.get("tool_calls")
        if calls:
            failure = self._calls(calls, delta, out)
            if failure is not None:
                out += self._terminate(failure)

    def _take_ids(self, chunk: dict[str, Any]) -> None:
        id_, model, fp = chunk.get("id"), chunk.get("model"), chunk.get("system_fingerprint")
        self.id = id_ if isinstance(id_, str) else None
        self.model = model if isinstance(model, str) else None
        self.system_fingerprint = fp if isinstance(fp, str) else None

    def _open(self, kind: str, out: list[StreamChunk]) -> int:
        index = self._next_index
        self._next_index += 1
        out.append(BlockStart(index=index, block_type=kind))
        return index

    def _calls(self, calls: Any, delta: dict[str, Any], out: list[StreamChunk]) -> LlmFailure | None:
        if not isinstance(calls, list):
            return _malformed(f"`tool_calls` is not a list: {_clip(delta)}")
        for entry in calls:
            if not isinstance(entry, dict):
                return _malformed(f"a tool_calls entry is not an object: {_clip(delta)}")
            failure = self._tool_delta(entry, out)
            if failure is not None:
                return failure
        return None

    def _tool_delta(self, entry: dict[str, Any], out: list[StreamChunk]) -> LlmFailure | None:
        wire_index = entry.get("index")
        id_ = entry.get("id")
        if not isinstance(wire_index, int) or isinstance(wire_index, bool):
            # No index: a fresh non-empty id starts a call, anything else continues the last.
            last = self._last_tool
            if last is not None and (not id_ or id_ == last.id):
                wire_index = next(k for k, v in self._tools.items() if v is last)
            else:
                wire_index = max(self._tools, default=-1) + 1
        call = self._tools.get(wire_index)
        if call is None:
            call = self._tools[wire_index] = _ToolCall(self._open("tool-call", out))
            self._order.append((call.index, "tool-call", call))
        self._last_tool = call
        # A later `"id": ""` or a repeated type never starts a new call; id and name come from
        # the first delta that carries them (A5), so a repeated or changed one neither
        # concatenates nor replaces.
        if id_ and isinstance(id_, str) and not call.id:
            call.id = id_
        function = entry.get("function")
        fragment = ""
        if function:
            if not isinstance(function, dict):
                return _malformed(f"`function` is not an object: {_clip(entry)}")
            name = function.get("name")
            if name and isinstance(name, str) and not call.name:
                call.name = name
            args = function.get("arguments")
            if isinstance(args, str):
                fragment = args
            elif args is not None:
                # A few servers send an object; keep it as compact JSON text.
                fragment = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
        call.parts.append(fragment)
        out.append(_tool_call_delta(call.index, call.id, call.name or None, fragment))
        return None

    def _terminate(self, failure: LlmFailure, *, keep_usage: bool = False) -> list[StreamChunk]:
        """End the stream early with an error finish carrying the response ids; with
        `keep_usage`, the usage received so far goes out first (a provider's in-band error)."""
        self.finished = True
        finish = Finish(reason=FinishReason(kind="error", failure=failure), meta=self._meta(False))
        if keep_usage and self._usage is not None:
            return [Usage(usage=self._usage), finish]
        return [finish]

    def _meta(self, done_missing: bool) -> FinishMeta:
        return FinishMeta(
            id=self.id,
            model=self.model,
            system_fingerprint=self.system_fingerprint,
            done_missing=done_missing,
        )

    # --- events that are not chunks --------------------------------------------------------

    def error_event(self, data: str) -> list[StreamChunk]:
        """An `event: error` SSE event: terminal, whatever its data holds (A12)."""
        if self.finished:
            return []
        try:
            payload: Any = json.loads(data)
        except ValueError:
            payload = {"message": data or "provider sent an error event"}
        if isinstance(payload, dict) and "error" in payload:
            payload = payload["error"]
        return self._terminate(failure_from_error_object(payload), keep_usage=True)

    def malformed(self, data: str) -> list[StreamChunk]:
        """A `data:` payload that is not JSON."""
        if self.finished:
            return []
        return self._terminate(_malformed(f"malformed SSE payload: {_clip(data)}"))

    def end(self, *, done: bool) -> list[StreamChunk]:
        """Close the response: `done` is whether `data: [DONE]` was dispatched.

        After a finish_reason (or `[DONE]`), blocks are closed and the finish is a success,
        flagged `done_missing` when `[DONE]` never came. Before any finish_reason, EOF is a
        `STREAM_CLOSED` failure and the open blocks stay as they are (the partial message)."""
        if self.finished:
            return []
        self.finished = True
        if not done and self.finish_reason is None:
            failure = LlmFailure(
                message="stream ended before a finish_reason and without [DONE]",
                code=ErrorCode.STREAM_CLOSED,
            )
            return [Finish(reason=FinishReason(kind="error", failure=failure), meta=self._meta(True))]
        out: list[StreamChunk] = []
        for index, kind, call in self._order:
            block: Any
            if kind == "reasoning":
                block = ReasoningBlock(text="".join(self._reasoning_parts))
            elif kind == "text":
                block = TextBlock(text="".join(self._text_parts))
            else:
                block = ToolCallBlock(id=call.id, name=call.name, arguments="".join(call.parts))
            out.append(BlockEnd(index=index, block=block))
        if self._usage is not None:
            out.append(Usage(usage=self._usage))
        reason = map_finish_reason(self.finish_reason or "stop")
        if reason.kind == "stop" and not self._order:
            reason = FinishReason(
                kind="error",
                failure=LlmFailure(
                    message="model returned a completed response with no content",
                    code=ErrorCode.EMPTY_RESPONSE,
                ),
            )
        out.append(Finish(reason=reason, meta=self._meta(not done)))
        return out


def _clip(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "…"
