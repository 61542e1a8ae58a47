"""The one incremental Server-Sent Events decoder: network reads in, events out. It is the first
stage after the HTTP response in the seed's walk (SSE bytes → events → wire chunks) for every
wire, and the reader the server checks and the tests use to see a body as a client does.

It follows the WHATWG rules that DSH and the official SDKs follow: a line ends at LF, CRLF or a
lone CR (a CR ending one read and an LF starting the next are one line end); one byte order mark
at the very start is dropped; a blank line dispatches the event; `data` lines (with or without
one space after the colon) join with LF; `event` names the event (`message` when unnamed) and is
forgotten after each dispatch; `id` is kept for every later event unless it holds a NUL; `retry`
made of ASCII digits sets `retry`; a line starting with `:` is a comment, reported as
`SSEComment` (liveness, never data); other fields are ignored; a block without data is not
dispatched, nor is an event whose blank line never came. Any split of the same bytes gives the
same events: only the unfinished tail is kept, as a list of pieces joined once when its line
ends, so a 1 MiB event fed byte by byte stays linear.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

__all__ = ["RawItem", "SSEComment", "SSEDecoder", "SSEEvent", "SSEField"]


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event."""

    data: str
    event: str = "message"
    id: str | None = None


@dataclass(frozen=True, slots=True)
class SSEComment:
    """A `:` comment line such as `: keep-alive` (liveness, not data); `text` is what follows
    the colon, leading spaces dropped."""

    text: str


@dataclass(frozen=True, slots=True)
class SSEField:
    """A field line other than `data` (`event`, `id`, `retry` or an unknown name), reported only
    by a decoder made with `fields=True`, for readers that judge a server's framing."""

    name: str
    value: str


RawItem: TypeAlias = tuple[str | None, str, str | None]
"""What `feed_raw` gives per item, without building objects: `(event name, data, id)` for an
event, `(None, text, None)` for a comment and, with `fields=True`, `(None, value, field name)`
for another field line."""


class SSEDecoder:
    """Feed it bytes as they arrive; it returns the events each read completes."""

    __slots__ = ("_pieces", "_skip_lf", "_bom_checked", "_data", "_event", "_id", "_fields", "retry")

    def __init__(self, *, fields: bool = False) -> None:
        """With `fields`, field lines other than `data` are reported too (`SSEField`)."""
        self._pieces: list[bytes] = []  # the unfinished line, in pieces
        self._skip_lf = False  # the last read ended with CR: a leading LF belongs to it
        self._bom_checked = False
        self._data: list[str] = []
        self._event: str | None = None
        self._id: str | None = None
        self._fields = fields
        self.retry: int | None = None
        """The reconnection time in milliseconds the last valid `retry` field set."""

    def feed(self, chunk: bytes) -> list[SSEEvent | SSEComment | SSEField]:
        """The events (and comments) this read completes."""
        return _items(self.feed_raw(chunk))

    def close(self) -> list[SSEEvent | SSEComment | SSEField]:
        """End of input. A last line without its line end is taken as ended (so a last comment
        is reported), and nothing more is dispatched: an event whose blank line never came is
        dropped, as WHATWG says. Closing twice gives nothing the second time."""
        if not self._pieces:
            self._data.clear()
            return []
        text = b"".join(self._pieces)
        self._pieces.clear()
        out = self._lines(text.decode("utf-8", "replace").split("\n"))
        self._data.clear()
        self._event = None
        return _items(out)

    def feed_raw(self, chunk: bytes) -> list[RawItem]:
        """`feed` without the objects, for decoders on the hot path (see `RawItem`)."""
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

    def at_event_start(self) -> bool:
        """Nothing is pending (no unfinished line, data, event name or CR) and the byte order
        mark was checked: bytes fed from here on decode as a stream of their own would, but
        for the BOM check and a kept `id`."""
        return not (self._pieces or self._data or self._event is not None or self._skip_lf) and self._bom_checked

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

    def _lines(self, lines: list[str]) -> list[RawItem]:
        if not self._bom_checked:
            self._bom_checked = True
            if lines[0].startswith("\ufeff"):
                lines[0] = lines[0][1:]
        out: list[RawItem] = []
        data = self._data
        for line in lines:
            if not line:
                if data:
                    text = data[0] if len(data) == 1 else "\n".join(data)
                    out.append((self._event or "message", text, self._id))
                    data.clear()
                self._event = None
                continue
            if line[0] == ":":
                out.append((None, line[1:].lstrip(" "), None))
                continue
            # `data: x` is by far the most common line: no partition for it.
            if line.startswith("data:"):
                data.append(line[6:] if line[5:6] == " " else line[5:])
                continue
            name, _, value = line.partition(":")  # a line without a colon is a name alone
            if value[:1] == " ":
                value = value[1:]
            if name == "data":
                data.append(value)
                continue
            if name == "event":
                self._event = value
            elif name == "id" and "\0" not in value:
                self._id = value
            elif name == "retry" and value.isascii() and value.isdigit():
                self.retry = int(value)
            if self._fields:
                out.append((None, value, name))
        return out


def _items(raw: list[RawItem]) -> list[SSEEvent | SSEComment | SSEField]:
    out: list[SSEEvent | SSEComment | SSEField] = []
    for name, data, extra in raw:
        if name is not None:
            out.append(SSEEvent(data, name, extra))
        elif extra is None:
            out.append(SSEComment(data))
        else:
            out.append(SSEField(extra, data))
    return out
