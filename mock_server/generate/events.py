"""A stream's SSE events held as one bytes object, and the framing of a run of fragments into it.

The fast renderers write a whole stream into one `bytes` (:class:`JoinedEvents`): a response
sent whole takes it as it is, and the events are cut out of it only when something asks for
them one by one (a paced stream, a fault that sends part of a stream). :func:`frame_run` frames
every fragment of a string the same way (`pre`, the fragment as a JSON string, `post`) with one
escape and one encode for the whole string instead of one per fragment.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import overload

from dshkit.mock_server.generate.split import SEP, Run

__all__ = ["JoinedEvents", "frame_run"]

_SEP_UTF8 = SEP.encode()
_escape = json.encoder.encode_basestring  # a str as JSON, non-ASCII left as it is (C)


def frame_run(out: list[bytes], pre: bytes, run: Run, post: bytes) -> None:
    """Append to `out` the pieces of `pre + <fragment as JSON> + post` for every fragment of `run`.

    The joined fragments are escaped and encoded at once (JSON escaping works character by
    character and leaves SEP as it is), then cut at SEP's bytes: the cuts fall between the
    fragments' escapes, each fragment's quotes added by the piece between them. A lone
    surrogate raises UnicodeEncodeError, as encoding one fragment would.
    """
    text, count = run
    if not count:
        return
    parts = _escape(text).encode().split(_SEP_UTF8)  # the first opens a quote, the last closes one
    between = b'"' + post + pre + b'"'
    pieces = [between] * (2 * count - 1)
    pieces[::2] = parts
    out.append(pre)
    out += pieces
    out.append(post)


class JoinedEvents(Sequence[bytes]):
    """The SSE events of a stream as one bytes object (`joined`), cut into events only when asked.

    Where each event ends is given (`ends`), or found when first needed: after each
    `terminator` (the blank line that ends every event; the renderers that leave it to be found
    write no other, since their JSON escapes every line break).
    """

    __slots__ = ("_ends", "_terminator", "joined")

    def __init__(self, joined: bytes, ends: list[int] | None = None, *, terminator: bytes = b"\n\n") -> None:
        self.joined = joined
        self._ends = ends
        self._terminator = terminator

    @property
    def terminator(self) -> bytes | None:
        """The blank line the event ends are found after; None where the ends were given."""
        return self._terminator if self._ends is None else None

    @property
    def ends(self) -> list[int]:
        """Where each event ends in `joined`."""
        if self._ends is None:
            ends = [m.end() for m in re.finditer(re.escape(self._terminator), self.joined)]
            if len(self.joined) > (ends[-1] if ends else 0):
                ends.append(len(self.joined))  # bytes after the last blank line: one more event
            self._ends = ends
        return self._ends

    def __len__(self) -> int:
        return len(self.ends)

    @overload
    def __getitem__(self, index: int) -> bytes: ...
    @overload
    def __getitem__(self, index: slice) -> list[bytes]: ...
    def __getitem__(self, index: int | slice) -> bytes | list[bytes]:
        if isinstance(index, slice):
            return list(self)[index]
        ends = self.ends
        index = range(len(ends))[index]  # negative indices, and IndexError when out of range
        return self.joined[ends[index - 1] if index else 0 : ends[index]]

    def __iter__(self) -> Iterator[bytes]:
        start = 0
        for end in self.ends:
            yield self.joined[start:end]
            start = end

    def __eq__(self, other: object) -> bool:
        if isinstance(other, JoinedEvents):
            if self.terminator is not None and self.terminator == other.terminator:
                return self.joined == other.joined  # the same bytes cut after the same blank lines
            return self.joined == other.joined and self.ends == other.ends
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]
