"""Translation: Anthropic Messages stream events → `StreamChunk`s (anthropic.md §9–§13, §15).

`Translator` holds one response's state (the shared `dshkit.harness.llm.StreamState` plus what this
wire adds): the message id and model from `message_start`, one harness block per wire
`content_block` index (`thinking` → reasoning, `text` → text, `tool_use` →
tool-call; other block types pass through as opaque blocks, AN78), each thinking block's
signature (the last `signature_delta` wins, AN58), the merged usage (a `message_delta` field
replaces the `message_start` one, AN62) and the stop reason. A block ends at its
`content_block_stop`; blocks still open at `message_stop` or end of body are closed then (AN51).
Tool input stays the exact concatenation of its `partial_json` fragments (AN57). Each thinking
signature rides to the next request in the finish's replay envelope
(`{"response": {"protocol", "id"}, "blocks": [{"signature"} | None, …]}`, one entry per block),
which the loop keeps on the assistant message; an error finish (`pause_turn`, an in-band
`error`, a cut stream) carries it too once a signature arrived, so no signature is lost. `StreamDecoder` (in `decoder`) feeds it from body
bytes, the SDK adapter from the SDK's events.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from dshkit.harness.llm import ErrorCode, Finish, FinishReason, LlmFailure, StreamChunk, TokenUsage
from dshkit.harness.llm.messages import ContentBlock, OpaqueBlock
from dshkit.harness.llm.stream_state import BlockState, StreamState

from .failures import failure_from_error_event
from .serialize import REPLAY_PROTOCOL

__all__ = ["Translator", "events_from_message", "map_stop_reason", "map_usage"]

_STOP_KINDS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool-calls",
    "max_tokens": "max-tokens",
    "model_context_window_exceeded": "max-tokens",
}
_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens_details",
)


def map_stop_reason(reason: str) -> FinishReason:
    """AN60: `end_turn`/`stop_sequence` → stop, `tool_use` → tool-calls, `max_tokens` and
    `model_context_window_exceeded` → max-tokens. `refusal` is a CONTENT_FILTER error;
    `pause_turn` is not final (the client must resend), so it is never a silent stop: it is an
    error coded PAUSE_TURN; unknown values are errors coded by their name."""
    kind = _STOP_KINDS.get(reason)
    if kind is not None:
        return FinishReason(kind=kind)
    code: str
    if reason == "refusal":
        code = ErrorCode.CONTENT_FILTER
    else:
        code = reason.upper().replace("-", "_").replace(" ", "_") or str(ErrorCode.UNKNOWN)
    return FinishReason(kind="error", failure=LlmFailure(message=f"model stopped: {reason}", code=code))


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def map_usage(usage: dict[str, Any]) -> TokenUsage:
    """Merged wire usage → disjoint counts. `input_tokens` already excludes cached tokens
    (AN63), so it maps straight to uncached input."""
    details = usage.get("output_tokens_details")
    thinking = _count(details.get("thinking_tokens")) if isinstance(details, dict) else None
    return TokenUsage(
        input_tokens=_count(usage.get("input_tokens")) or 0,
        output_tokens=_count(usage.get("output_tokens")) or 0,
        cache_read_tokens=_count(usage.get("cache_read_input_tokens")),
        cache_write_tokens=_count(usage.get("cache_creation_input_tokens")),
        reasoning_tokens=thinking,
    )


_KNOWN_KINDS = ("text", "reasoning", "tool-call")


class _Block(BlockState):
    """A content block: the shared bookkeeping plus its thinking signature and raw start."""

    __slots__ = ("signature", "start")

    def __init__(self, kind: str, start: dict[str, Any]) -> None:
        super().__init__(kind)  # `text`, `reasoning`, `tool-call`, or an opaque wire type
        self.signature: str | None = None
        self.start = start

    def block(self) -> ContentBlock:
        if self.kind in _KNOWN_KINDS:
            return super().block()
        data = dict(self.start)
        if self.parts:
            data["partial_json"] = "".join(self.parts)  # server_tool_use input, kept raw
        return OpaqueBlock(type=self.kind, data=data)


def _malformed(message: str) -> LlmFailure:
    return LlmFailure(message=message, code=ErrorCode.MALFORMED_RESPONSE)


_STREAM_CLOSED = LlmFailure(
    message="Anthropic stream ended before a stop_reason and without message_stop",
    code=ErrorCode.STREAM_CLOSED,
)


class Translator(StreamState):
    """Stateful translation of one response's events (parsed JSON objects); the blocks, ids
    and end rules are the shared `StreamState`, its `keyed` blocks filed by wire index."""

    __slots__ = ("_usage", "stop_reason", "stop_sequence", "started")

    def __init__(self) -> None:
        super().__init__()
        self._usage: dict[str, Any] = {}
        self.stop_reason: str | None = None
        """The last non-null `message_delta.delta.stop_reason`."""
        self.stop_sequence: str | None = None
        """The stop string that ended the text, when `stop_reason` is `stop_sequence`."""
        self.started = False
        """`message_start` was seen."""

    @property
    def usage(self) -> dict[str, Any]:
        """The merged wire usage so far (a copy)."""
        return dict(self._usage)

    def feed(self, event: Any) -> list[StreamChunk]:
        """Translate one parsed event."""
        out: list[StreamChunk] = []
        self.feed_into(event, out)
        return out

    def feed_into(self, event: Any, out: list[StreamChunk]) -> None:
        """`feed`, appending to `out`."""
        if self.finished:
            return
        if type(event) is not dict:
            out += self._terminate(_malformed(f"stream event is not a JSON object: {_clip(event)}"))
            return
        kind = event.get("type")
        if kind == "content_block_delta":
            self._delta(event, out)
        elif kind == "content_block_start":
            self._start(event, out)
        elif kind == "content_block_stop":
            self._stop(event, out)
        elif kind == "message_start":
            self._message_start(event, out)
        elif kind == "message_delta":
            self._message_delta(event, out)
        elif kind == "message_stop":
            out += self._end(truncated=False)
        elif kind == "error" or (kind is None and isinstance(event.get("error"), dict)):
            # The second form is the OpenAI-style in-band `{"error": {...}}` a gateway may send.
            out += self._terminate(failure_from_error_event(event.get("error", event)))
        # Unknown event types are ignored (AN55).

    # --- events ----------------------------------------------------------------------------

    def _message_start(self, event: dict[str, Any], out: list[StreamChunk]) -> None:
        message = event.get("message")
        if not isinstance(message, dict):
            out += self._terminate(_malformed(f"`message_start` without a message: {_clip(event)}"))
            return
        self.started = True
        id_, model = message.get("id"), message.get("model")
        self.id = id_ if isinstance(id_, str) else None
        self.model = model if isinstance(model, str) else None
        usage = message.get("usage")
        if isinstance(usage, dict):
            self._merge_usage(usage)

    def _start(self, event: dict[str, Any], out: list[StreamChunk]) -> None:
        wire = event.get("index")
        block = event.get("content_block")
        if not isinstance(wire, int) or isinstance(wire, bool) or not isinstance(block, dict):
            out += self._terminate(_malformed(f"bad `content_block_start`: {_clip(event)}"))
            return
        if wire in self.keyed:
            out += self._terminate(_malformed(f"content block {wire} started twice"))
            return
        wire_type = block.get("type")
        kind = {"text": "text", "thinking": "reasoning", "tool_use": "tool-call"}.get(
            wire_type if isinstance(wire_type, str) else "", str(wire_type)
        )
        state = _Block(kind, block)
        self.open_block(state, out, wire)
        if kind == "text":
            text = block.get("text")
            if isinstance(text, str) and text:
                self.append_text(state, text, out)
        elif kind == "reasoning":
            thinking, signature = block.get("thinking"), block.get("signature")
            # AN50: DeepSeek may leave `signature` out of the start; it counts as absent.
            if isinstance(signature, str) and signature:
                state.signature = signature
            if isinstance(thinking, str) and thinking:
                self.append_reasoning(state, thinking, out)
        elif kind == "tool-call":
            id_, name = block.get("id"), block.get("name")
            state.id = id_ if isinstance(id_, str) else ""
            state.name = name if isinstance(name, str) else ""
            given = block.get("input")
            # A complete input in the start (no deltas to come) is kept as compact JSON text;
            # the usual `{}` placeholder is not: the deltas are the arguments (AN56).
            args = json.dumps(given, ensure_ascii=False, separators=(",", ":")) if given else ""
            self.append_arguments(state, args, out)

    def _delta(self, event: dict[str, Any], out: list[StreamChunk]) -> None:
        state = self.keyed.get(event.get("index"))
        delta = event.get("delta")
        if state is None:
            # AN48: a delta for a block that never started is a broken stream.
            out += self._terminate(_malformed(f"delta for a content block that never started: {_clip(event)}"))
            return
        if not isinstance(delta, dict):
            out += self._terminate(_malformed(f"`content_block_delta` without a delta object: {_clip(event)}"))
            return
        if state.closed:
            return  # a straggler after content_block_stop
        dtype = delta.get("type")
        if dtype == "text_delta":
            text = delta.get("text")
            if isinstance(text, str) and text and state.kind == "text":
                self.append_text(state, text, out)
        elif dtype == "input_json_delta":
            fragment = delta.get("partial_json")
            if isinstance(fragment, str) and fragment:
                if state.kind == "tool-call":
                    self.append_arguments(state, fragment, out)
                else:
                    state.parts.append(fragment)  # an opaque block's input, kept raw
        elif dtype == "thinking_delta":
            text = delta.get("thinking")
            if isinstance(text, str) and text and state.kind == "reasoning":
                self.append_reasoning(state, text, out)
        elif dtype == "signature_delta":
            signature = delta.get("signature")
            if isinstance(signature, str) and isinstance(state, _Block):
                state.signature = signature  # replaces, as the SDK does (AN58)
        # citations_delta and unknown delta types are ignored (AN78).

    def _stop(self, event: dict[str, Any], out: list[StreamChunk]) -> None:
        state = self.keyed.get(event.get("index"))
        if state is None:
            out += self._terminate(_malformed(f"stop for a content block that never started: {_clip(event)}"))
            return
        self.close_block(state, out)

    def _message_delta(self, event: dict[str, Any], out: list[StreamChunk]) -> None:
        delta = event.get("delta")
        if isinstance(delta, dict):
            reason = delta.get("stop_reason")
            if isinstance(reason, str) and reason:
                self.stop_reason = reason
            sequence = delta.get("stop_sequence")
            if isinstance(sequence, str):
                self.stop_sequence = sequence
        usage = event.get("usage")
        if isinstance(usage, dict):
            self._merge_usage(usage)

    def _merge_usage(self, usage: dict[str, Any]) -> None:
        # AN62: totals, not increments; a present non-null field replaces, an absent one keeps.
        for name in _USAGE_FIELDS:
            value = usage.get(name)
            if value is not None:
                self._usage[name] = value

    # --- ending ----------------------------------------------------------------------------

    def _terminate(self, failure: LlmFailure) -> list[StreamChunk]:
        """End early with an error finish; open blocks stay open (the partial message), and
        the signatures received so far stay on the finish."""
        return self._keep_signatures(self.fail(failure))

    def _keep_signatures(self, out: list[StreamChunk]) -> list[StreamChunk]:
        """Put the replay envelope on an error finish too when a thinking block got its
        signature: a `pause_turn` turn is resent with its blocks, and a failed one is worth
        diagnosing with them (the shared rule attaches it to successful finishes only)."""
        if not out or not any(isinstance(b, _Block) and b.signature for b in self.blocks):
            return out
        last = out[-1]
        if isinstance(last, Finish) and last.replay_state is None:
            out[-1] = dataclasses.replace(last, replay_state=self.replay_state())
        return out

    def replay_state(self) -> dict[str, Any]:
        """The envelope carried on the finish: each thinking block's signature, by position."""
        blocks: list[Any] = [
            {"signature": b.signature or ""} if isinstance(b, _Block) and b.kind == "reasoning" else None
            for b in self.blocks
        ]
        return {"response": {"protocol": REPLAY_PROTOCOL, "id": self.id}, "blocks": blocks}

    def _end(self, *, truncated: bool) -> list[StreamChunk]:
        """`message_stop`, or end of body (`truncated`). After a stop reason, open blocks are
        closed and the finish is a success (flagged `done_missing` when `message_stop` never
        came, AN71); before one, it is a STREAM_CLOSED failure keeping the partial blocks."""
        if self.finished:
            return []
        if self.stop_reason is None:
            reason = None
        else:
            reason = map_stop_reason(self.stop_reason)
            self.token_usage = map_usage(self._usage) if self._usage else None
        unfinished = (
            _STREAM_CLOSED if truncated else _malformed("Anthropic stream sent message_stop without any stop_reason")
        )
        return self._keep_signatures(
            self.finish(reason, unfinished=unfinished, done_missing=truncated, replay_state=self.replay_state)
        )

    def error_event(self, data: str) -> list[StreamChunk]:
        """An `event: error` whose data is not a JSON object: terminal all the same (AN69)."""
        if self.finished:
            return []
        return self._terminate(failure_from_error_event({"message": data or "provider sent an error event"}))

    def interrupted(self, failure: LlmFailure) -> list[StreamChunk]:
        """The stream ended by a `failure` raised outside its events (a TCP reset; the SDK
        raising on an `error` event): the error finish, keeping the signatures received."""
        if self.finished:
            return []
        return self._terminate(failure)

    def malformed(self, data: str) -> list[StreamChunk]:
        """A `data:` payload that is not JSON."""
        if self.finished:
            return []
        return self._terminate(_malformed(f"malformed SSE payload: {_clip(data)}"))

    def close(self) -> list[StreamChunk]:
        """End of the body without `message_stop`."""
        return self._end(truncated=True)


def events_from_message(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A non-streaming Message body (AN40) as the events a stream of it would hold, so both
    take the one translation path: each block arrives complete in its `content_block_start`."""
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    head = {k: v for k, v in message.items() if k not in ("content", "stop_reason", "stop_sequence")}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {**head, "content": []}}]
    for index, block in enumerate(blocks):
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        events.append({"type": "content_block_stop", "index": index})
    delta = {"stop_reason": message.get("stop_reason"), "stop_sequence": message.get("stop_sequence")}
    events.append({"type": "message_delta", "delta": delta, "usage": message.get("usage") or {}})
    events.append({"type": "message_stop"})
    return events


def _clip(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "…"
