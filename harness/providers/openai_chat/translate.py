"""Translation: Chat Completions chunks → `StreamChunk`s (dsh-core.md §3.6–3.7, wire.md A1–A15).

`Translator` parses one response, whoever read its chunks off the wire (the SSE decoder of
`decoder`, or the openai SDK in `openai_compat`): which harness block each wire stream maps to
(one reasoning block, one text block, one block per `tool_calls[].index`), the last
finish_reason, the last non-null usage and the response ids; the blocks, usage and end rules it
hands to the shared `dshkit.harness.llm.StreamState`. DeepSeek's `reasoning_content` and the
quirks of other OpenAI-compatible servers (`delta.reasoning`, usage on a `choices: []` chunk,
ids repeated or blanked on later fragments, explicit nulls) are absorbed here and nowhere else.
"""

from __future__ import annotations

import json
from typing import Any

from dshkit.harness.llm import ErrorCode, FinishReason, LlmFailure, StreamChunk, TokenUsage
from dshkit.harness.llm.stream_state import BlockState, StreamState
from dshkit.harness.providers.failures import failure_from_error_object

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


def _malformed(message: str) -> LlmFailure:
    return LlmFailure(message=message, code=ErrorCode.MALFORMED_RESPONSE)


class Translator(StreamState):
    """Stateful translation of one response's wire chunks (parsed JSON objects).

    The blocks, usage, ids and end rules are the shared `StreamState` (a base class rather than
    a member: the decoder reads `finished` and the deltas reach the state once per wire chunk,
    so no indirection on the hot path); this class is only the Chat Completions parsing."""

    __slots__ = ("_last_tool", "finish_reason")

    def __init__(self) -> None:
        super().__init__()
        self._last_tool: BlockState | None = None
        self.finish_reason: str | None = None
        """The last non-null wire finish_reason (A7)."""

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
                self.token_usage = map_usage(usage)
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
            self.token_usage = map_usage(usage)

    def feed_delta(self, delta: dict[str, Any], out: list[StreamChunk]) -> None:
        """Apply one `choices[0].delta` object: reasoning, then content, then tool calls."""
        reasoning = delta.get("reasoning_content")
        if reasoning is None:
            reasoning = delta.get("reasoning")  # the field name some other servers use
        if reasoning and type(reasoning) is str:
            self.add_reasoning(reasoning, out)
        content = delta.get("content")
        if content and type(content) is str:
            self.add_text(content, out)
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
                wire_index = next(k for k, v in self.keyed.items() if v is last)
            else:
                wire_index = max(self.keyed, default=-1) + 1
        call = self.keyed.get(wire_index)
        if call is None:
            call = self.tool_call(wire_index, out)
        self._last_tool = call
        # A later `"id": ""` or a repeated type never starts a new call.
        if id_ and not isinstance(id_, str):
            id_ = None
        function = entry.get("function")
        name: Any = None
        fragment = ""
        if function:
            if not isinstance(function, dict):
                if id_ and not call.id:
                    call.id = id_
                return _malformed(f"`function` is not an object: {_clip(entry)}")
            name = function.get("name")
            if name and not isinstance(name, str):
                name = None
            args = function.get("arguments")
            if isinstance(args, str):
                fragment = args
            elif args is not None:
                # A few servers send an object; keep it as compact JSON text.
                fragment = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
        self.add_tool_delta(call, id_, name, fragment, out)
        return None

    def _terminate(self, failure: LlmFailure, *, keep_usage: bool = False) -> list[StreamChunk]:
        """End the stream early with an error finish carrying the response ids; with
        `keep_usage`, the usage received so far goes out first (a provider's in-band error)."""
        return self.fail(failure, keep_usage=keep_usage)

    # --- events that are not chunks --------------------------------------------------------

    def error_event(self, data: str) -> list[StreamChunk]:
        """An `event: error` SSE event: terminal, whatever its data holds (A12)."""
        if self.finished:
            return []
        try:
            payload: Any = json.loads(data)
        except (ValueError, RecursionError):  # RecursionError: nested past the parser's reach
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

        After a finish_reason (or `[DONE]`, which counts as `stop`), blocks are closed and the
        finish is a success, flagged `done_missing` when `[DONE]` never came. Before any
        finish_reason, EOF is a `STREAM_CLOSED` failure and the open blocks stay as they are
        (the partial message)."""
        reason = self.finish_reason
        if reason is None and done:
            reason = "stop"
        return self.finish(
            map_finish_reason(reason) if reason is not None else None,
            unfinished=_STREAM_CLOSED,
            done_missing=not done,
        )


_STREAM_CLOSED = LlmFailure(
    message="SSE stream ended without [DONE]", code=ErrorCode.STREAM_CLOSED  # DSH's words
)


def _clip(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "…"
