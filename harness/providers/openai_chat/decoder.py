"""`StreamDecoder`: the bytes of one Chat Completions response body in, `StreamChunk`s out (SSE
decode, JSON, translate), one event at a time. It is the plain path, the reference every fast
path is held to (`fast_decoder`), and what an adapter runs when it is handed a `Translator` or an
`SSEDecoder` of its own through `decoder=`.

JSON is parsed with msgspec's untyped decoder, the fastest of the parsers we measured on this
workload (a few hundred bytes per payload, ten thousand payloads per stream). It builds the same
`dict`/`list`/`str`/`int`/`float` values as `json.loads` for every input both accept, and refuses
a few inputs `json.loads` takes (escaped lone surrogates, `NaN`/`Infinity`, numbers too large
for a float). Whenever it refuses, the payload goes through `json.loads`, so malformed or unusual
input gets the same chunks, the same failure messages and the same exceptions as with the
standard library alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import msgspec

from dshkit.harness.llm import Finish, LlmFailure, StreamChunk, jsonio
from dshkit.harness.providers.sse import SSEDecoder

from .translate import Translator

__all__ = ["StreamDecoder", "loads_payload"]

fast_loads: Callable[[str | bytes], Any] = msgspec.json.Decoder().decode
# msgspec's DecodeError is also the parent of its ValidationError (`1e400`). Its nesting limit
# sits close to, not exactly at, the standard library's, so its RecursionError is a refusal too:
# `json.loads` then decides.
REFUSED = (msgspec.DecodeError, RecursionError)

# The C scanner behind `json.loads`, the first step of the fallback (and, in `fast_decoder`, how
# the end of `choices[0].delta` is found in a payload).
scan_once: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _std_loads(payload: str) -> Any:
    """The standard library's reading of one payload: raises `ValueError` when it is not JSON,
    `JsonTooDeep` (a `ValueError` too) when it nests deeper than Python's parser can go."""
    try:
        try:
            chunk, end = scan_once(payload, 0)
        except StopIteration:
            return json.loads(payload)
        if end != len(payload):
            return json.loads(payload)  # surrounding whitespace is fine, extra data is an error
    except RecursionError:
        raise jsonio.too_deep("data:", jsonio.nesting_depth(payload), jsonio.MAX_DEPTH) from None
    return chunk


def loads_payload(payload: str) -> Any:
    """One `data:` payload as `json.loads` reads it (msgspec first); `ValueError` when it is
    not JSON."""
    try:
        return fast_loads(payload)
    except REFUSED:
        return _std_loads(payload)


class StreamDecoder:
    """Bytes of one response body in, `StreamChunk`s out: SSE decode, JSON, translate."""

    __slots__ = ("_sse", "translator", "done")

    def __init__(self, translator: Translator | None = None, sse: SSEDecoder | None = None) -> None:
        self._sse = sse or SSEDecoder()
        self.translator = translator or Translator()
        self.done = False
        """`data: [DONE]` was dispatched (everything after it is ignored)."""

    @property
    def finished(self) -> bool:
        return self.translator.finished

    def feed(self, data: bytes) -> list[StreamChunk]:
        if self.done or self.translator.finished:
            return []
        out: list[StreamChunk] = []
        self._feed_events(data, out)
        return out

    def _feed_events(self, data: bytes, out: list[StreamChunk]) -> None:
        """SSE-decode `data`, then each event in turn, until the stream ends."""
        translator = self.translator
        for name, payload, _ in self._sse.feed_raw(data):
            if name != "message":
                if name is None:  # a comment: liveness, not data
                    continue
                if name == "error":
                    out += translator.error_event(payload)
                    return
            if payload == "[DONE]":
                self.done = True
                out += translator.end(done=True)
                return
            self._payload(payload, out)
            if translator.finished:
                return

    def _payload(self, payload: str, out: list[StreamChunk]) -> None:
        """One `data:` payload: parsed, then translated."""
        try:
            chunk = loads_payload(payload)
        except ValueError:
            out += self.translator.malformed(payload)
            return
        self.translator.feed_into(chunk, out)

    def close(self) -> list[StreamChunk]:
        """End of the body."""
        if self.done or self.translator.finished:
            return []
        self._sse.close()
        return self.translator.end(done=False)

    def fail(self, failure: LlmFailure) -> list[StreamChunk]:
        """The body cut by a transport `failure`: the plain error finish."""
        return [Finish.failed(failure)]
