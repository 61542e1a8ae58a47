"""`StreamDecoder`: the bytes of one response body in, `StreamChunk`s out (SSE decode, JSON,
translate), used by the adapter over the network, by `dshkit decode` over a file and by the
benchmark over memory, so all three run exactly the same code.

JSON is parsed with msgspec's untyped decoder, the fastest of the parsers we measured on this
workload (a few hundred bytes per payload, ten thousand payloads per stream). It builds the same
`dict`/`list`/`str`/`int`/`float` values as `json.loads` for every input both accept, and refuses
a few inputs `json.loads` takes (escaped lone surrogates, `NaN`/`Infinity`, numbers too large
for a float). Whenever it refuses, the payload goes through `json.loads` exactly as before, so
malformed or unusual input gets the same chunks, the same failure messages and the same
exceptions as with the standard library alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import msgspec

from harness.llm import StreamChunk

from .sse import SSEDecoder
from .translate import Translator

__all__ = ["StreamDecoder"]

_fast_loads: Callable[[str], Any] = msgspec.json.Decoder().decode
# msgspec's DecodeError is also the parent of its ValidationError (`1e400`). Its nesting limit
# sits close to, not exactly at, the standard library's, so its RecursionError is a refusal too:
# `json.loads` then decides, as it did before.
_Refused = (msgspec.DecodeError, RecursionError)

# The C scanner behind `json.loads`, used to find where `choices[0].delta` ends when learning
# the envelope (msgspec cannot parse from an offset) and as the first step of the fallback.
_scan_once: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _std_loads(payload: str) -> Any:
    """The standard library's reading of one payload (the fallback): raises `ValueError` when
    it is not JSON, and whatever `json.loads` raises otherwise (deep nesting)."""
    try:
        chunk, end = _scan_once(payload, 0)
    except StopIteration:
        return json.loads(payload)
    if end != len(payload):
        return json.loads(payload)  # surrounding whitespace is fine, extra data is an error
    return chunk


class StreamDecoder:
    """Bytes of one response body in, `StreamChunk`s out: SSE decode, JSON, translate."""

    __slots__ = ("_sse", "translator", "done", "comments", "_head", "_tail", "_learn")

    def __init__(self, translator: Translator | None = None, sse: SSEDecoder | None = None) -> None:
        self._sse = sse or SSEDecoder()
        self.translator = translator or Translator()
        self.done = False
        """`data: [DONE]` was dispatched."""
        self.comments = 0
        """Comment lines seen (keep-alives)."""
        # The envelope fast path: a server repeats the same bytes around every delta
        # (`{"id":…,"choices":[{"index":0,"delta":` … `,"finish_reason":null}],"usage":null}`).
        # Once a chunk has shown that shape (and a probe proved the slot between the two is
        # exactly `choices[0].delta`), later payloads with the same head and tail only need
        # their delta parsed; everything else takes the full path. Same chunks either way.
        self._head: str | None = None
        self._tail = ""
        # Full-path chunks that may still teach the envelope. A Translator subclass may
        # override `feed_into`, which the fast path skips, so it always takes the full path.
        self._learn = 3 if type(self.translator) is Translator else 0

    @property
    def finished(self) -> bool:
        return self.translator.finished

    @property
    def envelope_learned(self) -> bool:
        """Whether the envelope fast path is active for this stream."""
        return self._head is not None

    def feed(self, data: bytes) -> list[StreamChunk]:
        if self.done or self.translator.finished:
            return []
        translator = self.translator
        feed_into = translator.feed_into
        feed_delta = translator.feed_delta
        loads = _fast_loads
        head, tail = self._head, self._tail
        start = len(head) if head is not None else 0
        stop = -len(tail) if tail else None
        out: list[StreamChunk] = []
        for name, payload, _ in self._sse.feed_raw(data):
            if name != "message":
                if name is None:  # a comment: liveness, not data
                    self.comments += 1
                    continue
                if name == "error":
                    out += translator.error_event(payload)
                    return out
            if payload == "[DONE]":
                self.done = True
                out += translator.end(done=True)
                return out
            if (
                head is not None
                and payload.startswith(head)
                and payload.endswith(tail)
                and len(payload) > start + len(tail)
            ):
                # The slot must hold exactly one JSON object; anything else (or a refusal)
                # takes the full path below, which decides as the standard library would.
                try:
                    delta = loads(payload[start:stop])
                except _Refused:
                    pass
                else:
                    if type(delta) is dict:
                        feed_delta(delta, out)
                        if translator.finished:
                            return out
                        continue
            try:  # this loop runs once per wire chunk: the fast parser first
                chunk = loads(payload)
            except _Refused:
                try:
                    chunk = _std_loads(payload)
                except ValueError:
                    out += translator.malformed(payload)
                    return out
            feed_into(chunk, out)
            if translator.finished:
                return out
            if head is None and self._learn:
                self._learn -= 1
                self._learn_envelope(payload, chunk)
                head, tail = self._head, self._tail
                start = len(head) if head is not None else 0
                stop = -len(tail) if tail else None
        return out

    def _learn_envelope(self, payload: str, chunk: Any) -> None:
        """Remember `payload`'s bytes around `choices[0].delta` if they carry nothing else:
        one choice of index 0, no finish_reason, no usage, no error."""
        if type(chunk) is not dict or chunk.get("usage") or "error" in chunk:
            return
        choices = chunk.get("choices")
        if type(choices) is not list or len(choices) != 1 or type(choices[0]) is not dict:
            return
        choice = choices[0]
        if choice.get("index", 0) != 0 or choice.get("finish_reason") or type(choice.get("delta")) is not dict:
            return
        at = payload.find('"delta":')
        if at <= 0 or payload[at - 1] not in ",{":
            return
        start = at + len('"delta":')
        try:
            _, end = _scan_once(payload, start)
        except (StopIteration, ValueError):
            return
        head, tail = payload[:start], payload[end:]
        # Prove the slot: any delta put there must land in choices[0].delta, with all else equal.
        probe = {"dshkit-probe": [1]}
        try:
            parsed = json.loads(head + json.dumps(probe) + tail)
        except ValueError:
            return
        rest = {k: v for k, v in chunk.items() if k != "choices"}
        if (
            type(parsed) is dict
            and {k: v for k, v in parsed.items() if k != "choices"} == rest
            and type(parsed.get("choices")) is list
            and len(parsed["choices"]) == 1
            and type(parsed["choices"][0]) is dict
            and parsed["choices"][0] == {**choice, "delta": probe}
        ):
            self._head, self._tail = head, tail

    def close(self) -> list[StreamChunk]:
        """End of the body."""
        if self.done or self.translator.finished:
            return []
        self._sse.close()
        return self.translator.end(done=False)
