"""A stream's SSE events held as one bytes object, and the writing of a stream into one.

The fast renderers write a whole stream into one `bytes` (:class:`JoinedEvents`): a response
sent whole takes it as it is, and the events are cut out of it only when something asks for
them one by one (a paced stream, a fault that sends part of a stream). A :class:`BodyWriter`
takes the stream's pieces in order, and each string's fragments as one run framed the same way
(`pre`, the fragment as a JSON string, `post`): escaped and encoded at once, and framed by one
C-level replace over the whole stream, with no object and no join per fragment.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import overload

import msgspec

from dshkit.mock_server.generate.split import SEP, Run

__all__ = ["BodyWriter", "JoinedEvents", "json_string"]

_SEP_UTF8 = SEP.encode()
json_string: Callable[[str], bytes] = msgspec.json.Encoder().encode
"""A str as a JSON string in UTF-8, quotes included, non-ASCII left as it is: the bytes of
`json.encoder.encode_basestring(s).encode()` (the same escapes; a lone surrogate raises
UnicodeEncodeError there too), in one pass and about a tenth of the CPU on a long text, which a
new reply escapes whole (`tests/mock_server/test_output.py` holds the two equal)."""


class BodyWriter:
    """A stream written piece by piece into one bytes object.

    A run's fragments stay joined by SEP until :meth:`joined`: then each SEP becomes the bytes
    between one fragment's escape and the next (a closing quote, `post`, `pre`, an opening
    quote) by one C-level replace, every run but the longest in its own bytes and the longest
    in the whole stream, so the stream is made at its full size once. Where the other pieces
    hold a SEP byte (a model name or a call id may), that replace cannot be done: :meth:`joined`
    says None.
    """

    __slots__ = ("_pieces", "_runs")

    def __init__(self) -> None:
        self._pieces: list[bytes] = []
        self._runs: list[tuple[int, int, bytes]] = []  # (fragments, index in pieces, bytes between them)

    def add(self, piece: bytes) -> None:
        """Append bytes as they are."""
        self._pieces.append(piece)

    def run(self, pre: bytes, run: Run, post: bytes) -> None:
        """Append `pre + <fragment as JSON> + post` for every fragment of `run`. A lone surrogate
        raises UnicodeEncodeError, as encoding one fragment would."""
        text, count = run
        if not count:
            return
        if count > 1:
            self._runs.append((count, len(self._pieces) + 1, b'"' + post + pre + b'"'))
        # JSON escaping works character by character and leaves SEP as it is.
        self._pieces += (pre, json_string(text), post)

    def joined(self) -> bytes | None:
        """The stream's bytes; None when a piece added as it is holds a SEP byte."""
        pieces = list(self._pieces)
        if not self._runs:  # no fragment was joined to another: nothing to replace
            return b"".join(pieces)
        *others, (_, longest, between) = sorted(self._runs)
        for _, i, b in others:
            pieces[i] = pieces[i].replace(_SEP_UTF8, b)
        # The longest run holds its fragments' SEPs and no other (a Run's fragments hold none, and
        # JSON escaping writes none); any other SEP would be replaced too: then no stream. Each
        # piece is searched (memchr) rather than the whole body counted.
        if any(_SEP_UTF8 in piece for i, piece in enumerate(pieces) if i != longest):
            return None
        return b"".join(pieces).replace(_SEP_UTF8, between)


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
        self._terminator: bytes | None = None if ends is not None else terminator

    @property
    def terminator(self) -> bytes | None:
        """The blank line the event ends are found after; None where the ends were given (finding
        them when first needed leaves it as it is)."""
        return self._terminator

    @property
    def ends(self) -> list[int]:
        """Where each event ends in `joined`."""
        if self._ends is None:
            assert self._terminator is not None  # given ends or a terminator to find them after
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
