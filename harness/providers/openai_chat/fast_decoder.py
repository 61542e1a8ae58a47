"""`FastStreamDecoder`: `StreamDecoder` with two fast paths for a server that repeats the same
bytes around every delta, the decoder adapters use unless handed another through `decoder=`.

Once a chunk has shown that envelope (`{"id":…,"choices":[{"index":0,"delta":` … `,
"finish_reason":null}],"usage":null}`), a payload with the same head and tail only needs its delta
parsed; and the whole events of a read that are each one `data: ` line of that envelope are found
with one split of the bytes and checked in bulk, with no SSE decoding and no text decoding, each
delta parsed straight from its bytes. A short read (a live stream's one or two events) has its
whole events checked one by one the same way, and the unfinished event it ends with is held
here until the next read instead of being SSE-decoded twice. A delta that adds one string to one
block (reasoning, text, a call's arguments) teaches the bytes around its string
(`string_delta`): a later line with those bytes has only its string parsed, and a read whose
lines all have them (most reads of a long stream) is appended and made chunks in one go. Any
event of another shape goes through the plain path on its own, and the per-delta chunks are
built by slot writes (`SlotChunks`), so all paths give the very same chunks; the differential
tests hold this class to `StreamDecoder`. It always translates with
the stock `Translator` and `SSEDecoder`: the fast paths skip `Translator.feed_into`, so a decoder
made of other parts is the plain `StreamDecoder`, whose behaviour is theirs alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import repeat
from operator import getitem
from typing import Any, cast

from dshkit.harness.llm import StreamChunk
from dshkit.harness.providers.slot_chunks import (
    SlotChunks,
    reasoning_deltas,
    text_deltas,
    tool_call_deltas,
)

from .decoder import REFUSED, StreamDecoder, fast_loads, loads_payload, scan_once
from .string_delta import StringDelta, learn, one_string
from .translate import Translator

__all__ = ["FastStreamDecoder"]

_LEARN = 3
"""How many full-path chunks may teach the envelope before the stream is left to the plain path."""
_HEAD_IN_SEPARATOR = 16
"""How many bytes of the envelope's head `_feed_envelopes` splits on (see `_set_line_envelope`)."""
_BULK_READ = 2048
"""Reads shorter than this (a live stream's one or two events per read) skip the bulk path (its
set-up per read costs more than it saves on so few events) for `_feed_few`."""
_PROBES = 64
"""How many deltas may be tried as teachers of a one-string delta's bytes (`string_delta`)."""


class _SlotTranslator(SlotChunks, Translator):
    """The stock translator, its per-delta chunks built by slot writes."""

    __slots__ = ()


class FastStreamDecoder(StreamDecoder):
    """`StreamDecoder` with the envelope and bulk fast paths (see the module docstring)."""

    __slots__ = (
        "_learn", "_head", "_tail", "_line_head", "_cut", "_head_rest", "_line_tail", "_line_full", "_pending",
        "_probes", "_strings", "_last_string",
    )

    def __init__(self) -> None:
        super().__init__(_SlotTranslator())
        self._learn = _LEARN
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
        self._line_full = b""
        """`data: ` and the whole head."""
        self._pending = b""
        """The bytes after the last whole event of a short read, not yet SSE-decoded."""
        self._probes = _PROBES
        self._strings: dict[str, StringDelta] = {}
        """The learned deltas of one string (`string_delta`), the last one of each block kind."""
        self._last_string: StringDelta | None = None
        """The one read last: tried first."""

    def feed(self, data: bytes) -> list[StreamChunk]:
        if self.done or self.translator.finished:
            return []
        if self._pending:
            data = self._pending + data
            self._pending = b""
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
        if self._line_head:
            # At an event boundary, the whole events of this read are read without SSE
            # decoding: in bulk when there are many, one by one when there are a few.
            partial = self._sse.take_partial_line()
            if partial is not None:
                data = partial + data if partial else data
                if len(data) < _BULK_READ:
                    self._feed_few(data, out)
                    return out
                rest = self._feed_envelopes(data, out)
                if rest is None:
                    return out
                data = rest
        self._feed_events(data, out)
        return out

    def _feed_few(self, data: bytes, out: list[StreamChunk]) -> None:
        """A short read (which starts at an event boundary): each whole event that is one
        `data: ` line of a learned delta of one string has that string parsed, one of the
        learned envelope its delta (`_feed_line`), straight from its bytes; any other event,
        and the bytes after the last whole one, go through the plain path in order. Same
        chunks as the plain path, by the argument of `_feed_envelopes` (a CR anywhere sends the
        whole read to the plain path)."""
        end = data.rfind(b"\n\n")
        if end < 0 or b"\r" in data:
            self._feed_events(data, out)
            return
        translator = self.translator
        last = self._last_string
        for event in data[:end].split(b"\n\n"):
            if b"\n" not in event:
                # A learned delta of one string: the one read last, or another.
                known = last if last is not None and event.startswith(last.line) else self._string_delta(event, True)
                if known is not None and event.endswith(known.end):
                    try:  # (a line too short for both has an empty slot, or none: refused)
                        string = fast_loads(event[len(known.line) : known.stop])
                    except REFUSED:
                        string = None
                    if type(string) is str and self._append(known, string, out):
                        last = self._last_string = known
                        continue
                if not self._feed_line(event, out):
                    self._feed_events(event + b"\n\n", out)
            else:
                self._feed_events(event + b"\n\n", out)
            if self.done or translator.finished:
                return
        if end + 2 < len(data):
            # Held here, not given to the SSE decoder: it holds no blank line, so nothing in it
            # is dispatched before more bytes come (or the body ends: `close` feeds it then).
            self._pending = data[end + 2 :]

    def _feed_line(self, event: bytes, out: list[StreamChunk]) -> bool:
        """A whole event of one line (no LF) with the learned envelope: its delta parsed
        straight from its bytes and translated (and perhaps learned as a delta of one string).
        False, having done nothing, for an event of another shape or a slot that is not one
        JSON object (the plain path decides those)."""
        full, tail = self._line_full, self._line_tail
        if not (event.startswith(full) and event.endswith(tail) and len(event) > len(full) + len(tail)):
            return False
        slot = event[len(full) : -len(tail)]
        try:
            delta = fast_loads(slot)
        except REFUSED:
            return False
        if type(delta) is not dict:
            return False
        self.translator.feed_delta(delta, out)
        if self._probes and not self.translator.finished:
            self._learn_string(slot, delta)
        return True

    def close(self) -> list[StreamChunk]:
        out: list[StreamChunk] = []
        if self._pending and not (self.done or self.translator.finished):
            pending, self._pending = self._pending, b""
            self._feed_events(pending, out)
        return out + super().close()

    def _payload(self, payload: str, out: list[StreamChunk]) -> None:
        """One payload: its delta alone when it has the learned envelope, else the plain way
        (which may teach the envelope)."""
        head, tail = self._head, self._tail
        if head is not None and payload.startswith(head) and payload.endswith(tail) and len(payload) > len(head) + len(tail):
            # The slot must hold exactly one JSON object; anything else (or a refusal) takes
            # the plain path below, which decides as the standard library would.
            try:
                delta = fast_loads(payload[len(head) : len(payload) - len(tail)])
            except REFUSED:
                pass
            else:
                if type(delta) is dict:
                    self.translator.feed_delta(delta, out)
                    return
        super()._payload(payload, out)
        if head is None and self._learn and not self.translator.finished:
            self._learn -= 1
            self._learn_envelope(payload)

    def _feed_envelopes(self, data: bytes, out: list[StreamChunk]) -> bytes | None:
        """Read the whole events of `data` (which starts at an event boundary) in bulk:
        one split gives the events, one check of all of them that each is one `data: ` line
        of head + slot + tail and a blank line, and each slot is parsed straight from bytes,
        with no SSE decoding (each string alone when every line is the same learned delta of
        one string, `_read_run`). An event of any other shape goes through the plain path on
        its own. Returns the bytes after the last whole event (to be SSE-decoded as usual),
        or None when the stream ended.

        Same chunks as the plain path: the separator starts with LF LF and a piece read in
        bulk holds no LF, so a separator only matches from the end of one line, over a blank
        line, to the start of the next line, and such a piece is the rest of one event's only
        line. Everything else (a comment, an `event:` or `id:` line, an extra blank line,
        another envelope, an empty slot, bytes msgspec refuses, a delta that is not an
        object) is a piece that holds an LF or fails the checks, and its bytes, given back to
        the SSE decoder at an event boundary, decode as they would have in place. A CR
        anywhere sends the whole read to the plain path."""
        start, cut, head_rest, tail = self._line_head, self._cut, self._head_rest, self._line_tail
        end = data.rfind(b"\n\n")
        if end < 0 or b"\r" in data:
            return data
        pieces = data[:end].split(cut)
        lead = pieces[0]
        if lead.startswith(start):
            pieces[0] = lead[len(start) :]
        else:  # not an envelope line: its bytes up to the first separator are whole events
            del pieces[0]
            self._feed_events(lead + b"\n\n", out)
            if self.done or self.translator.finished:
                return None
        if pieces and self._read_run(pieces, out):
            return data[end + 2 :]
        # A piece too short for the head and tail has an empty slot (or none), which msgspec refuses.
        checked = bool(pieces) and (
            b"\n" not in b"".join(pieces)
            and all(map(bytes.startswith, pieces, repeat(head_rest)))
            and all(map(bytes.endswith, pieces, repeat(tail)))
        )
        translator = self.translator
        feed_delta = translator.feed_delta
        window = slice(len(head_rest), -len(tail))
        done = 0  # pieces read
        if checked:
            # The common case, with the slicing and parsing of the whole block in C.
            slots = cast("list[bytes]", list(map(getitem, pieces, repeat(window))))
            try:
                deltas = list(map(fast_loads, slots))
            except REFUSED:
                deltas = []  # some slot is refused: each piece on its own below
            for slot, delta in zip(slots, deltas, strict=False):  # deltas: all, or none
                if type(delta) is not dict:
                    break
                feed_delta(delta, out)
                done += 1
                if translator.finished:
                    return None
                if self._probes:
                    self._learn_string(slot, delta)
        size = len(head_rest) + len(tail)
        for piece in pieces[done:] if done else pieces:
            if checked or (
                b"\n" not in piece and piece.startswith(head_rest) and piece.endswith(tail) and len(piece) > size
            ):
                try:
                    delta = fast_loads(piece[window])
                except REFUSED:
                    delta = None
                if type(delta) is dict:
                    feed_delta(delta, out)
                    if translator.finished:
                        return None
                    continue
            self._feed_events(start + piece + b"\n\n", out)
            if self.done or translator.finished:
                return None
        return data[end + 2 :]

    def _string_delta(self, line: bytes, whole: bool) -> StringDelta | None:
        """The learned delta of one string that `line` (a whole line when `whole`, else a
        piece after `_line_head`) starts and ends as, if any."""
        for known in self._strings.values():
            if line.startswith(known.line if whole else known.piece) and line.endswith(known.end):
                return known
        return None

    def _learn_string(self, slot: bytes, delta: dict[str, Any]) -> None:
        """After `delta`, parsed from the `slot` bytes, took the dict path: when it is a delta
        of one string (`string_delta.one_string`) and its bytes are not known yet, learn them."""
        found = one_string(delta)
        if found is None:
            return
        kind, key = found
        known = self._strings.get(kind)
        if known is not None and slot.startswith(known.piece[len(self._head_rest) :]):
            return  # known (this one missed for its string, or its end)
        self._probes -= 1
        learned = learn(slot, delta, kind, key, self.translator, self._line_head, self._head_rest, self._line_tail)
        if learned is not None:
            self._strings[kind] = learned

    def _append(self, known: StringDelta, string: str, out: list[StreamChunk]) -> bool:
        """Translate the learned delta `known` with `string`: one append to its block and its
        chunk. False, having done nothing, for an empty reasoning or text string."""
        block = known.block
        if known.chunk is None:  # a tool call, filed as the translator files each call's delta
            translator = self.translator
            translator._last_tool = block
            out.append(translator.tool_call_delta(block.index, block.id, block.name or None, string))
        elif string:
            out.append(known.chunk(string))
        else:
            return False
        block.parts.append(string)
        return True

    def _read_run(self, pieces: list[bytes], out: list[StreamChunk]) -> bool:
        """Every piece (an envelope line after `_line_head`, as `_feed_envelopes` splits them)
        the same learned delta of one string, as nearly every read inside a long run of
        reasoning, text or one call's arguments is: their strings parsed, appended and made
        chunks all at once, in C. False, having read nothing, for any other read."""
        known = self._string_delta(pieces[0], False)
        if known is None:
            return False
        before, after = known.piece, known.end
        if (
            b"\n" in b"".join(pieces)
            or not all(map(bytes.startswith, pieces, repeat(before)))
            or not all(map(bytes.endswith, pieces, repeat(after)))
        ):
            return False
        try:  # (a piece too short for both has an empty slot, or none: refused)
            slots = cast("Iterator[bytes]", map(getitem, pieces, repeat(slice(len(before), known.stop))))
            strings = list(map(fast_loads, slots))
        except REFUSED:
            return False
        if not all(map(isinstance, strings, repeat(str))):
            return False
        block = known.block
        if known.chunk is None:
            self.translator._last_tool = block  # as the translator files each call's delta
            out += tool_call_deltas(block.index, block.id, block.name or None, strings)
        elif not all(strings):
            return False
        elif block.kind == "text":
            out += text_deltas(block.index, strings)
        else:
            out += reasoning_deltas(block.index, strings)
        block.parts += strings
        self._last_string = known
        return True

    def _learn_envelope(self, payload: str) -> None:
        """Remember `payload`'s bytes around `choices[0].delta` if they carry nothing else:
        one choice of index 0, no finish_reason, no usage, no error (a payload the plain path
        has just translated, so it is JSON: parsing it again costs only the first few)."""
        chunk = loads_payload(payload)
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
            _, end = scan_once(payload, start)
        except (StopIteration, ValueError, RecursionError):
            return
        head, tail = payload[:start], payload[end:]
        # Prove the slot: any delta put there must land in choices[0].delta, with all else equal.
        probe = {"dshkit-probe": [1]}
        try:
            parsed = json.loads(head + json.dumps(probe) + tail)
        except (ValueError, RecursionError):
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
            # A payload joined from several `data:` lines is no single line to match.
            if tail and not any(ch in head or ch in tail for ch in "\r\n"):
                self._set_line_envelope(head.encode("utf-8"), tail.encode("utf-8"))

    def _set_line_envelope(self, head: bytes, tail: bytes) -> None:
        """The bytes `_feed_envelopes` looks for. Blocks split on LF LF, `data: ` and the
        first bytes of the head: a separator under 100 bytes, since `bytes.split` searches
        for longer ones with an algorithm whose set-up cost it pays again at every match."""
        shared = head[:_HEAD_IN_SEPARATOR]
        self._line_head = b"data: " + shared
        self._cut = b"\n\n" + self._line_head
        self._head_rest = head[len(shared) :]
        self._line_tail = tail
        self._line_full = b"data: " + head
