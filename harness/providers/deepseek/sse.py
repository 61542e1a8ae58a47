"""Incremental Server-Sent Events decoder: network reads in, events out (the first stage after
the HTTP response in the seed's walk: SSE bytes → events → wire chunks).

It follows the WHATWG rules the openai SDK and DSH use: LF, CRLF and CR line ends; a blank line
dispatches an event; `data:` lines (with or without one space) join with `\\n`; `event:` names it;
`:` lines are comments, reported as `SSEComment` (liveness, never data). Any split of the same
bytes gives the same events: only the unfinished tail is kept, as a list of pieces joined once
when its line ends, so a 1 MiB event fed byte by byte stays linear.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import repeat

__all__ = ["SSEComment", "SSEDecoder", "SSEEvent"]


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event."""

    data: str
    event: str = "message"
    id: str | None = None


@dataclass(frozen=True, slots=True)
class SSEComment:
    """A `:` comment line such as `: keep-alive` (liveness, not data)."""

    text: str


class SSEDecoder:
    """Feed it bytes as they arrive; it returns the events each read completes."""

    __slots__ = ("_pieces", "_skip_lf", "_data", "_event", "_id", "_bom_checked")

    def __init__(self) -> None:
        self._pieces: list[bytes] = []  # the unfinished line, in pieces
        self._skip_lf = False  # the last read ended with CR: a leading LF belongs to it
        self._data: list[str] = []
        self._event: str | None = None
        self._id: str | None = None
        self._bom_checked = False

    def feed(self, chunk: bytes) -> list[SSEEvent | SSEComment]:
        return [
            SSEComment(data) if name is None else SSEEvent(data, name, event_id)
            for name, data, event_id in self.feed_raw(chunk)
        ]

    def feed_raw(self, chunk: bytes) -> list[tuple[str | None, str, str | None]]:
        """`feed` without the event objects, for the hot path: `(event name, data, id)` per
        event and `(None, text, None)` per comment."""
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if not chunk:
            return []
        if b"\r" in chunk:
            self._skip_lf = chunk[-1:] == b"\r"
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        last = chunk.rfind(b"\n")
        if last < 0:
            self._pieces.append(chunk)
            return []
        if self._pieces:
            self._pieces.append(chunk[:last])
            text = b"".join(self._pieces)
            self._pieces.clear()
        else:
            text = chunk[:last]
        if last + 1 < len(chunk):
            self._pieces.append(chunk[last + 1 :])
        # Only whole lines are decoded, so no UTF-8 sequence is cut; LF never occurs inside
        # one, so decoding the block at once equals decoding line by line.
        return self._lines(text.decode("utf-8", "replace").split("\n"))

    def take_partial_line(self) -> bytes | None:
        """At an event boundary (no data, event name or CR pending; the BOM already checked),
        hand over the unfinished line, possibly empty, and forget it: the caller may then read
        the bytes that follow it on its own, as long as it gives back (to `feed_raw`) every
        byte from the first event it does not read. None when not at such a boundary."""
        if self._data or self._event is not None or self._skip_lf or not self._bom_checked:
            return None
        if not self._pieces:
            return b""
        line = self._pieces[0] if len(self._pieces) == 1 else b"".join(self._pieces)
        self._pieces.clear()
        return line

    def _lines(self, lines: list[str]) -> list[tuple[str | None, str, str | None]]:
        if not self._bom_checked:
            self._bom_checked = True
            if lines[0].startswith("\ufeff"):
                lines[0] = lines[0][1:]
        if len(lines) > 8 and self._event is None:
            if not self._data:
                return self._plain(lines)
            if not lines[0]:  # the blank line ending an event the last read began
                out = self._slow(lines[:1])
                out += self._plain(lines[1:])
                return out
        return self._slow(lines)

    def _plain(self, lines: list[str]) -> list[tuple[str | None, str, str | None]]:
        """The shape nearly every server sends, checked and decoded in bulk: one `data: `
        line then a blank line, per event, from a clean state (no pending data or event
        name). Anything else, anywhere in the block, takes the line-by-line rules."""
        events = lines[0::2]
        blanks = lines[1::2]
        if any(blanks) or not all(map(str.startswith, events, repeat("data: ", len(events)))):
            return self._slow(lines)
        event_id = self._id
        out: list[tuple[str | None, str, str | None]] = [
            ("message", line[6:], event_id) for line in events[: len(blanks)]
        ]
        if len(events) > len(blanks):  # the last event's blank line is in the next read
            self._data.append(events[-1][6:])
        return out

    def _slow(self, lines: list[str]) -> list[tuple[str | None, str, str | None]]:
        """The WHATWG rules, line by line."""
        out: list[tuple[str | None, str, str | None]] = []
        data = self._data
        for line in lines:
            if line.startswith("data:"):
                data.append(line[6:] if line[5:6] == " " else line[5:])
            elif not line:
                if data:
                    text = data[0] if len(data) == 1 else "\n".join(data)
                    out.append((self._event or "message", text, self._id))
                    data.clear()
                self._event = None
            elif line[0] == ":":
                out.append((None, line[1:].lstrip(" "), None))
            else:
                name, _, value = line.partition(":")
                if value[:1] == " ":
                    value = value[1:]
                if name == "event":
                    self._event = value
                elif name == "id" and "\0" not in value:
                    self._id = value
                # `retry:` and unknown fields do not affect payloads.
        return out

    def close(self) -> str | None:
        """End of input. Returns the data of an event that never got its blank line (it is not
        dispatched, as WHATWG says), or None when nothing was pending."""
        if self._pieces:
            self._lines(b"".join(self._pieces).decode("utf-8", "replace").split("\n"))
            self._pieces.clear()
        if not self._data:
            return None
        text = "\n".join(self._data)
        self._data.clear()
        return text
