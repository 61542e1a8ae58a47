"""`StreamDecoder`: the bytes of one Anthropic Messages response body in, `StreamChunk`s out (SSE
decode, JSON, translate), the plain path; `FastStreamDecoder`, the same with its per-delta chunks
built by slot writes, is what the adapter uses unless handed another decoder through `decoder=`.

Events are read by their JSON `type`; the `event:` line is not needed (AN43 is the SDK's
limitation, not ours), except that an `event: error` is terminal whatever its data holds.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from itertools import compress, count, islice, repeat
from operator import getitem, not_
from typing import Any, cast

from dshkit.harness.llm import LlmFailure, StreamChunk
from dshkit.harness.llm.stream_state import BlockState
from dshkit.harness.providers.openai_chat.decoder import REFUSED, fast_loads
from dshkit.harness.providers.slot_chunks import (
    SlotChunks,
    reasoning_deltas,
    text_deltas,
    tool_call_deltas,
)
from dshkit.harness.providers.sse import SSEDecoder

from .translate import Translator

__all__ = ["FastStreamDecoder", "StreamDecoder"]

_scan_once: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


class StreamDecoder:
    """Bytes of one response body in, `StreamChunk`s out: SSE decode, JSON, translate."""

    __slots__ = ("_sse", "translator")

    def __init__(self, translator: Translator | None = None) -> None:
        self._sse = SSEDecoder()
        self.translator = translator or Translator()

    @property
    def finished(self) -> bool:
        return self.translator.finished

    def feed(self, data: bytes) -> list[StreamChunk]:
        translator = self.translator
        if translator.finished:
            return []
        feed_into = translator.feed_into
        scan = _scan_once
        out: list[StreamChunk] = []
        for name, payload, _ in self._sse.feed_raw(data):
            if name is None:  # a comment: liveness, not data
                continue
            try:  # AN45: Anthropic pads data lines with spaces after the JSON
                event, end = scan(payload, 0)
                if end != len(payload):
                    event = json.loads(payload)
            except (StopIteration, ValueError, RecursionError):
                try:
                    event = json.loads(payload)
                except (ValueError, RecursionError):  # RecursionError: nested past the parser's reach
                    out += translator.error_event(payload) if name == "error" else translator.malformed(payload)
                    return out
            if name == "error" and not (type(event) is dict and event.get("type") == "error"):
                out += translator.feed({"type": "error", "error": event.get("error", event) if type(event) is dict else event})
                return out
            feed_into(event, out)
            if translator.finished:
                return out
        return out

    def close(self) -> list[StreamChunk]:
        """End of the body: an event without its closing blank line is not dispatched (AN44)."""
        if self.translator.finished:
            return []
        self._sse.close()
        return self.translator.close()

    def fail(self, failure: LlmFailure) -> list[StreamChunk]:
        """The body cut by a transport `failure`: the error finish keeps the signatures."""
        return self.translator.interrupted(failure)


class _SlotTranslator(SlotChunks, Translator):
    """The stock translator, its per-delta chunks built by slot writes."""

    __slots__ = ()


class FastStreamDecoder(StreamDecoder):
    """`StreamDecoder` on the stock `Translator` with its per-delta chunks built by slot writes
    (`SlotChunks`), and a bulk path for the events that make up nearly all of a stream.

    It keeps the unfinished event of each read itself, so the SSE decoder is only ever handed
    whole events and stays at an event boundary. A whole event that is exactly
    `event: content_block_delta` LF `data: ` + one line of JSON is parsed straight from its
    bytes by msgspec (no SSE decoding, no text decoding) and translated; any other event, or a
    payload msgspec refuses, goes through the plain path on its own, in order, so it decodes
    as it would have in place (that path decides as the standard library would). Once a block's
    delta has come compactly (`{"type":"content_block_delta","index":1,"delta":{"type":
    "text_delta","text":` + string + `}}`), its next deltas with those very bytes around the
    string have only the string parsed: msgspec must read it as exactly one non-empty string,
    so the event is that object, whose translation is the append; a run of such events
    (nearly every read inside a block's long run is one) is appended in one go. The first CR
    anywhere, or a byte order mark still to check, sends the rest of the stream to the plain
    path. The differential tests hold it to the plain decoder for any split of any bytes.
    """

    __slots__ = ("_rest", "_plain", "_line", "_line_block")

    def __init__(self) -> None:
        super().__init__(_SlotTranslator())
        self._rest = b""
        """The bytes after the last whole event fed so far (not yet given to the SSE decoder)."""
        self._plain = False
        """The rest of the stream takes the plain path (a CR was seen)."""
        self._line = _NO_LINE
        """How the deltas of `_line_block` start, up to their string (see `_delta`)."""
        self._line_block: BlockState = _NO_BLOCK

    def feed(self, data: bytes) -> list[StreamChunk]:
        if self._plain or self.translator.finished:
            return super().feed(data)
        if self._rest:
            data = self._rest + data
            self._rest = b""
        if b"\r" in data:
            self._plain = True
            return super().feed(data)
        end = data.rfind(b"\n\n")
        if end < 0:
            self._rest = data
            return []
        if end + 2 < len(data):
            self._rest = data[end + 2 :]
        out: list[StreamChunk] = []
        translator = self.translator
        if not self._sse.at_event_start():
            # The first event (the byte order mark is checked there) takes the plain path.
            first = data.find(b"\n\n") + 2
            out += super().feed(data[:first])
            if translator.finished:
                self._rest = b""
                return out
            if not self._sse.at_event_start():  # not expected after a whole event; never guessed at
                self._plain = True
                self._rest = b""
                return out + super().feed(data[first:])
            data = data[first:]
            end -= first
            if end < 0:
                return out
        events = data[:end].split(b"\n\n")
        at = 0
        while at < len(events):
            # Runs of the open block's learned line in bulk, the events between one by one.
            at = self._feed_each(events, self._read_run(events, at, out), out)
            if at < 0:
                self._rest = b""
                return out
        return out

    def _feed_each(self, events: list[bytes], at: int, out: list[StreamChunk]) -> int:
        """Events from `at` one by one, up to the end, or to just after the event that taught
        a new line (a run of it may follow); where it stopped, or -1 when the stream ended."""
        translator = self.translator
        feed_into = translator.feed_into
        plain = super().feed
        prefix, size = _DELTA_PREFIX, len(_DELTA_PREFIX)
        line, block = self._line, self._line_block
        for i in range(at, len(events)):
            event = events[i]
            if event.startswith(line) and event.endswith(b"}}") and not block.closed and event.find(b"\n", size) < 0:
                # The learned line of the open block's deltas: only its string is parsed.
                try:
                    fragment = fast_loads(event[len(line) : -2])
                except REFUSED:
                    fragment = None
                if type(fragment) is str and fragment:
                    block.parts.append(fragment)
                    if block.kind == "tool-call":
                        out.append(translator.tool_call_delta(block.index, block.id, block.name or None, fragment))
                    elif block.kind == "text":
                        out.append(translator.text_delta(block.index, fragment))
                    else:
                        out.append(translator.reasoning_delta(block.index, fragment))
                    continue
            if event.startswith(prefix) and event.find(b"\n", size) < 0:
                try:
                    parsed = fast_loads(event[size:])
                except REFUSED:
                    parsed = None
                if type(parsed) is dict:
                    if parsed.get("type") == "content_block_delta" and self._delta(parsed, out):
                        if self._line is not line:
                            return i + 1
                    else:
                        feed_into(parsed, out)
                        if translator.finished:
                            return -1
                    continue
            out += plain(event + b"\n\n")
            if translator.finished:
                return -1
        return len(events)

    def _read_run(self, events: list[bytes], at: int, out: list[StreamChunk]) -> int:
        """The events from `at` that have the learned line of the open block, when there are
        `_RUN` or more and each holds one non-empty string (nearly every read inside a block's
        long run of deltas): their strings parsed, appended and made chunks all at once, in C.
        Returns where the run ended (`at` when nothing was read)."""
        line, block = self._line, self._line_block
        if block.closed or len(events) - at < _RUN:
            return at
        starts = map(bytes.startswith, islice(events, at, None), repeat(line))
        stop = next(compress(count(at), map(not_, starts)), len(events))  # (lazily: the run only)
        if stop - at < _RUN:
            return at
        run = events[at:stop]
        if not all(map(bytes.endswith, run, repeat(b"}}"))):
            return at
        slots = cast("list[bytes]", list(map(getitem, run, repeat(slice(len(line), -2)))))
        if b"\n" in b"".join(slots):  # the line's own LF is its only one
            return at
        try:
            strings = list(map(fast_loads, slots))
        except REFUSED:
            return at
        if not (all(map(isinstance, strings, repeat(str))) and all(strings)):
            return at
        if block.kind == "tool-call":
            out += tool_call_deltas(block.index, block.id, block.name or None, strings)
        elif block.kind == "text":
            out += text_deltas(block.index, strings)
        else:
            out += reasoning_deltas(block.index, strings)
        block.parts += strings
        return stop

    def _delta(self, event: dict[str, Any], out: list[StreamChunk]) -> bool:
        """The common deltas (text, thinking, tool input to an open block of their kind), as
        `Translator._delta` takes them; False for anything else, which the translator then
        takes itself (a broken, closed or unknown block, another delta type, an empty text)."""
        translator = self.translator
        state = translator.keyed.get(event.get("index"))
        delta = event.get("delta")
        if state is None or type(delta) is not dict or state.closed:
            return False
        dtype = delta.get("type")
        kind = state.kind
        if dtype == "text_delta" and kind == "text":
            field = "text"
        elif dtype == "thinking_delta" and kind == "reasoning":
            field = "thinking"
        elif dtype == "input_json_delta" and kind == "tool-call":
            field = "partial_json"
        else:
            return False
        fragment = delta.get(field)
        if type(fragment) is not str or not fragment:
            return False
        state.parts.append(fragment)
        if kind == "tool-call":
            out.append(translator.tool_call_delta(state.index, state.id, state.name or None, fragment))
        elif kind == "text":
            out.append(translator.text_delta(state.index, fragment))
        else:
            out.append(translator.reasoning_delta(state.index, fragment))
        wire = event["index"]
        if state is not self._line_block and type(wire) is int:
            # This block's next deltas, when sent compactly, are read as one string each.
            self._line = _DELTA_PREFIX + _LINE.format(wire, dtype, field).encode()
            self._line_block = state
        return True

    def close(self) -> list[StreamChunk]:
        out: list[StreamChunk] = []
        if self._rest:
            rest, self._rest = self._rest, b""
            out += super().feed(rest)
        return out + super().close()


_DELTA_PREFIX = b"event: content_block_delta\ndata: "
_RUN = 16
"""Runs of fewer events than this (a live stream's read holds a few) skip `_read_run`, whose
set-up costs more than it saves on so few."""
_LINE = '{{"type":"content_block_delta","index":{},"delta":{{"type":"{}","{}":'
"""A delta event as DeepSeek and Anthropic send it, up to its string; `}}` follows the string."""
_NO_LINE = b"\n\n"
"""The line no event starts with (events are split on it): none learned yet."""
_NO_BLOCK = BlockState("none")
_NO_BLOCK.closed = True
