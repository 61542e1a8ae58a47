"""`StreamDecoder`: the bytes of one Anthropic Messages response body in, `StreamChunk`s out (SSE
decode, JSON, translate), the plain path; `FastStreamDecoder`, the same with its per-delta chunks
built by slot writes, is what the adapter uses unless handed another decoder through `decoder=`.

Events are read by their JSON `type`; the `event:` line is not needed (AN43 is the SDK's
limitation, not ours), except that an `event: error` is terminal whatever its data holds.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from dshkit.harness.llm import LlmFailure, StreamChunk
from dshkit.harness.providers.slot_chunks import SlotChunks
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
    (`SlotChunks`): the same chunks, held to the plain decoder by the differential tests."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(_SlotTranslator())
