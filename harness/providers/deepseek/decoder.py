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

Two fast paths rest on a server repeating the same bytes around every delta. Once a chunk has
shown that envelope, a payload with the same head and tail only needs its delta parsed; and
the whole events of a read that are each one `data: ` line of that envelope are found with one
split of the bytes and checked in bulk, with no SSE decoding and no text decoding at all, each
delta parsed straight from its bytes. Any event of another shape is decoded by the general path
on its own, so both give the very same chunks as SSE-decoding every event.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from itertools import repeat
from operator import getitem
from typing import Any, cast

import msgspec

from dshkit.harness.llm import StreamChunk

from .sse import SSEDecoder
from .translate import Translator

__all__ = ["StreamDecoder"]

_fast_loads: Callable[[str | bytes], Any] = msgspec.json.Decoder().decode
# msgspec's DecodeError is also the parent of its ValidationError (`1e400`). Its nesting limit
# sits close to, not exactly at, the standard library's, so its RecursionError is a refusal too:
# `json.loads` then decides, as it did before.
_Refused = (msgspec.DecodeError, RecursionError)
_HEAD_IN_SEPARATOR = 16
"""How many bytes of the envelope's head `_feed_envelopes` splits on (see `_set_line_envelope`)."""
_BULK_READ = 2048
"""Reads shorter than this (a live stream's one or two events per read) skip the bulk path: its
set-up per read costs more than it saves on so few events."""

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

    __slots__ = (
        "_sse", "translator", "done", "comments", "bulk_events",
        "_head", "_tail", "_learn", "_line_head", "_cut", "_head_rest", "_line_tail",
    )

    def __init__(self, translator: Translator | None = None, sse: SSEDecoder | None = None) -> None:
        self._sse = sse or SSEDecoder()
        self.translator = translator or Translator()
        self.done = False
        """`data: [DONE]` was dispatched."""
        self.comments = 0
        """Comment lines seen (keep-alives)."""
        self.bulk_events = 0
        """Events read by the bulk path for blocks of envelope events (`_feed_envelopes`)."""
        # The envelope fast path: a server repeats the same bytes around every delta
        # (`{"id":…,"choices":[{"index":0,"delta":` … `,"finish_reason":null}],"usage":null}`).
        # Once a chunk has shown that shape (and a probe proved the slot between the two is
        # exactly `choices[0].delta`), later payloads with the same head and tail only need
        # their delta parsed; everything else takes the full path. Same chunks either way.
        self._head: str | None = None
        self._tail = ""
        # The same envelope as bytes, for reading whole blocks of such events without SSE
        # decoding (`_feed_envelopes`): each event is `data: ` + head + delta + tail + LF LF.
        self._line_head = b""
        """`data: ` and the first bytes of the head: how such an event's line starts."""
        self._cut = b""
        """LF LF and `_line_head`: where a block of such events is split."""
        self._head_rest = b""
        self._line_tail = b""
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
        out: list[StreamChunk] = []
        at = 0
        while self._learn and self._head is None:
            # Still learning the envelope: one event at a time, so that the rest of this
            # read can already be read in bulk once it is learned.
            stop = data.find(b"\n\n", at)
            if stop < 0:
                break
            self._feed_events(data[at : stop + 2], out)
            at = stop + 2
            if self.done or self.translator.finished:
                return out
        if at:
            data = data[at:]
        if self._line_head and len(data) >= _BULK_READ:
            # At an event boundary, the whole events of this read are read in bulk.
            partial = self._sse.take_partial_line()
            if partial is not None:
                rest = self._feed_envelopes(partial + data if partial else data, out)
                if rest is None:
                    return out
                data = rest
        self._feed_events(data, out)
        return out

    def _feed_events(self, data: bytes, out: list[StreamChunk]) -> None:
        """The general path: SSE-decode `data`, then each event's payload in turn."""
        translator = self.translator
        feed_into = translator.feed_into
        feed_delta = translator.feed_delta
        loads = _fast_loads
        head, tail = self._head, self._tail
        start = len(head) if head is not None else 0
        stop = -len(tail) if tail else None
        for name, payload, _ in self._sse.feed_raw(data):
            if name != "message":
                if name is None:  # a comment: liveness, not data
                    self.comments += 1
                    continue
                if name == "error":
                    out += translator.error_event(payload)
                    return
            if payload == "[DONE]":
                self.done = True
                out += translator.end(done=True)
                return
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
                            return
                        continue
            try:  # this loop runs once per wire chunk: the fast parser first
                chunk = loads(payload)
            except _Refused:
                try:
                    chunk = _std_loads(payload)
                except ValueError:
                    out += translator.malformed(payload)
                    return
            feed_into(chunk, out)
            if translator.finished:
                return
            if head is None and self._learn:
                self._learn -= 1
                self._learn_envelope(payload, chunk)
                head, tail = self._head, self._tail
                start = len(head) if head is not None else 0
                stop = -len(tail) if tail else None

    def _feed_envelopes(self, data: bytes, out: list[StreamChunk]) -> bytes | None:
        """Read the whole events of `data` (which starts at an event boundary) in bulk:
        one split gives the events, one check of all of them that each is one `data: ` line
        of head + slot + tail and a blank line, and each slot is parsed straight from bytes,
        with no SSE decoding. An event of any other shape goes through the general path on
        its own. Returns the bytes after the last whole event (to be SSE-decoded as usual),
        or None when the stream ended.

        Same chunks as the general path: the separator starts with LF LF and a piece read in
        bulk holds no LF, so a separator only matches from the end of one line, over a blank
        line, to the start of the next line, and such a piece is the rest of one event's only
        line. Everything else (a comment, an `event:` or `id:` line, an extra blank line,
        another envelope, an empty slot, bytes msgspec refuses, a delta that is not an
        object) is a piece that holds an LF or fails the checks, and its bytes, given back to
        the SSE decoder at an event boundary, decode as they would have in place. A CR
        anywhere sends the whole read to the general path."""
        start, cut, head_rest, tail = self._line_head, self._cut, self._head_rest, self._line_tail
        end = data.rfind(b"\n\n")
        if end < 0 or b"\r" in data:
            return data
        pieces = data[:end].split(cut)
        lead = pieces[0]
        if lead.startswith(start):
            pieces[0] = lead[len(start) :]
            skip, cuts = 0, len(pieces) - 1
        else:  # not an envelope line: its bytes up to the first separator are whole events
            del pieces[0]
            self._feed_events(lead + b"\n\n", out)
            if self.done or self.translator.finished:
                return None
            skip, cuts = len(lead), len(pieces)
        size = len(head_rest) + len(tail)
        checked = bool(pieces) and (
            data.count(b"\n", skip, end) == 2 * cuts  # no piece holds an LF
            and all(map(bytes.startswith, pieces, repeat(head_rest)))
            and all(map(bytes.endswith, pieces, repeat(tail)))
            and min(map(len, pieces)) > size
        )
        translator = self.translator
        feed_delta = translator.feed_delta
        loads = _fast_loads
        window = slice(len(head_rest), -len(tail))
        done = 0  # pieces read
        if checked:
            # The common case, with the slicing and parsing of the whole block in C.
            try:
                slots = cast("Iterator[bytes]", map(getitem, pieces, repeat(window)))
                deltas = list(map(loads, slots))
            except _Refused:
                deltas = []  # some slot is refused: each piece on its own below
            for delta in deltas:
                if type(delta) is not dict:
                    break
                feed_delta(delta, out)
                done += 1
                if translator.finished:
                    self.bulk_events += done
                    return None
        bulk = done
        for piece in pieces[done:] if done else pieces:
            if checked or (
                b"\n" not in piece and piece.startswith(head_rest) and piece.endswith(tail) and len(piece) > size
            ):
                try:
                    delta = loads(piece[window])
                except _Refused:
                    delta = None
                if type(delta) is dict:
                    bulk += 1
                    feed_delta(delta, out)
                    if translator.finished:
                        break
                    continue
            self._feed_events(start + piece + b"\n\n", out)
            if self.done or translator.finished:
                break
        self.bulk_events += bulk
        if self.done or translator.finished:
            return None
        return data[end + 2 :]

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
            # A payload joined from several `data:` lines is no single line to match, and an
            # SSEDecoder subclass may frame events its own way, which the bulk path would skip.
            if tail and type(self._sse) is SSEDecoder and not any(ch in head or ch in tail for ch in "\r\n"):
                self._set_line_envelope(head.encode("utf-8"), tail.encode("utf-8"))

    def _set_line_envelope(self, head: bytes, tail: bytes) -> None:
        """The bytes `_feed_envelopes` looks for. Blocks split on LF LF, `data: ` and the
        first bytes of the head: a separator under 100 bytes, since `bytes.split` searches
        for longer ones with an algorithm whose set-up cost it pays again at every match."""
        shared = head[:_HEAD_IN_SEPARATOR]
        self._line_head = b"data: " + shared
        self._cut = b"\n\n" + self._line_head
        self._head_rest = head[len(shared):]
        self._line_tail = tail

    def close(self) -> list[StreamChunk]:
        """End of the body."""
        if self.done or self.translator.finished:
            return []
        self._sse.close()
        return self.translator.end(done=False)
