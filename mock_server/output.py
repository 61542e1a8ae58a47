"""How a generated stream becomes bytes and writes: the plain reference path and the fast path.

A surface describes each generated stream as a :class:`Rendering` (how to render it, for which
per-response fields, and what else its bytes depend on); an :class:`Output` turns it into SSE
events and decides how they go out. :class:`PlainOutput` is the reference: every response is
rendered event by event and each event is its own write after the headers. :class:`FastOutput`
(a server's default, `MockServer(fast_path=True)`) gives a client the same bytes for less CPU:
a stream served again is filled in from a cached template instead of generated again, a stream
with nothing scheduled between its headers and its end leaves as one response (headers, body
and terminator in one `send()`), and other unpaced events are joined into writes of up to
:data:`BATCH_BYTES`. Which output a server uses never changes what a client receives
(`tests/mock_server/test_output.py` checks it on both surfaces).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, overload

__all__ = ["BATCH_BYTES", "FastOutput", "FilledEvents", "Output", "PlainOutput", "Rendering", "StreamCache", "Template"]

E = TypeVar("E")

#: The most bytes one coalesced write carries.
BATCH_BYTES = 0x10000


@dataclass(frozen=True, slots=True, kw_only=True)
class Template(Generic[E]):
    """How a stream's per-response fields are spelled, so a cached stream can be filled in."""

    placeholder: Callable[[E], E]
    """This response's fields with fixed values of the usual lengths instead of its own: what
    the template is rendered with (called only when a stream is stored)."""
    spell: Callable[[E], tuple[bytes, ...]]
    """Each field as it appears in the bytes; spelled with its JSON key, so text inside a string
    value (where quotes are escaped) can never match it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Rendering(Generic[E]):
    """One generated stream as a surface describes it."""

    render: Callable[[E], list[bytes]]
    """The reference renderer: the stream's SSE events, one bytes object per event."""
    envelope: E
    """This response's own fields (a completion id, `created`); the argument of `render`."""
    key: Hashable | None = None
    """Everything else the bytes depend on, the surface included; None: never cached."""
    template: Template[E] | None = None
    """How `envelope` shows in the bytes; None: the bytes depend on `key` alone."""
    fast: Callable[[E], list[bytes]] | None = None
    """A faster renderer that gives the same bytes as `render` (the fast path uses it)."""


class Output(Protocol):
    """What a server does with a generated stream: render it, and choose its writes."""

    def events(self, rendering: Rendering[Any]) -> Sequence[bytes]:
        """The stream's SSE events, one bytes object per event."""
        ...

    def whole(self, events: Sequence[bytes]) -> bytes | None:
        """The body to send as one response when nothing is scheduled between the headers and
        the end; None: send the headers, then each write."""
        ...

    def writes(self, events: Sequence[bytes]) -> Sequence[bytes]:
        """The network writes for events sent without a write plan or pacing."""
        ...


class PlainOutput:
    """The reference path: render every response afresh; headers first, then one write per event."""

    def events(self, rendering: Rendering[Any]) -> Sequence[bytes]:
        return rendering.render(rendering.envelope)

    def whole(self, events: Sequence[bytes]) -> bytes | None:
        return None

    def writes(self, events: Sequence[bytes]) -> Sequence[bytes]:
        return events


class FastOutput:
    """The fast path: cached stream templates, one-response bodies, coalesced writes."""

    def __init__(self) -> None:
        self.streams = StreamCache()

    def events(self, rendering: Rendering[Any]) -> Sequence[bytes]:
        return self.streams.events(rendering)

    def whole(self, events: Sequence[bytes]) -> bytes | None:
        return events.joined if isinstance(events, FilledEvents) else b"".join(events)

    def writes(self, events: Sequence[bytes]) -> Sequence[bytes]:
        return _batches(events)


class FilledEvents(Sequence[bytes]):
    """The SSE events of a stream filled in from a template, cut out of the whole stream only
    when asked for: a whole-body response takes `joined` as it is, so the common path never slices."""

    __slots__ = ("_ends", "joined")

    def __init__(self, joined: bytes, ends: list[int]) -> None:
        self.joined = joined
        self._ends = ends

    def __len__(self) -> int:
        return len(self._ends)

    @overload
    def __getitem__(self, index: int) -> bytes: ...
    @overload
    def __getitem__(self, index: slice) -> list[bytes]: ...
    def __getitem__(self, index: int | slice) -> bytes | list[bytes]:
        if isinstance(index, slice):
            return list(self)[index]
        index = range(len(self._ends))[index]  # negative indices, and IndexError when out of range
        return self.joined[self._ends[index - 1] if index else 0 : self._ends[index]]

    def __iter__(self) -> Iterator[bytes]:
        start = 0
        for end in self._ends:
            yield self.joined[start:end]
            start = end

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


class _CachedStream:
    """One cached stream with placeholder fields: the events joined, where each event ends, and
    how many of each placeholder come before each end."""

    __slots__ = ("_counts", "between", "blob", "ends", "fields", "parts")

    def __init__(self, events: list[bytes], fields: tuple[bytes, ...]) -> None:
        self.fields = fields
        self.blob = b"".join(events)
        # Where every event spells the fields in one order with the same bytes between them (the
        # usual envelope), the stream is kept cut at those spans: filling it in is one join.
        self.parts: list[bytes] | None = None
        self.between: tuple[bytes, ...] = ()
        if fields:
            found = _span(self.blob, fields)
            if found is not None:
                span, between = found
                n = self.blob.count(span)
                if all(self.blob.count(f) == n for f in fields):
                    self.parts = self.blob.split(span)
                    self.between = between
        self.ends: list[int] = []
        end = 0
        for e in events:
            end += len(e)
            self.ends.append(end)
        self._counts: list[tuple[int, ...]] | None = None

    def counts(self) -> list[tuple[int, ...]]:
        """How many of each placeholder come before each event's end (needed, and so counted,
        only when a value's length differs from its placeholder's)."""
        if self._counts is None:
            per_field = []
            for f in self.fields:
                starts = []
                at = self.blob.find(f)
                while at >= 0:
                    starts.append(at)
                    at = self.blob.find(f, at + len(f))
                # A field never spans two events, so one that starts before an event's end lies in it.
                per_field.append([bisect.bisect_left(starts, end) for end in self.ends])
            self._counts = list(zip(*per_field, strict=True)) if per_field else [() for _ in self.ends]
        return self._counts

    def fill(self, values: tuple[bytes, ...]) -> FilledEvents:
        """The stream with each placeholder field replaced by its value; event ends shift by the
        length differences (computed only when there are any)."""
        if self.parts is not None:
            span = values[0] + b"".join(b + v for b, v in zip(self.between, values[1:], strict=True))
            blob = span.join(self.parts)
        else:
            blob = self.blob
            for f, v in zip(self.fields, values, strict=True):
                blob = blob.replace(f, v)
        deltas = [len(v) - len(f) for f, v in zip(self.fields, values, strict=True)]
        ends = self.ends
        if any(deltas):
            ends = [
                end + sum(c * d for c, d in zip(counts, deltas, strict=True))
                for end, counts in zip(ends, self.counts(), strict=True)
            ]
        return FilledEvents(blob, ends)


def _span(blob: bytes, fields: tuple[bytes, ...]) -> tuple[bytes, tuple[bytes, ...]] | None:
    """The first run `fields[0] … fields[1] … ` in `blob`, and the bytes between the fields."""
    start = blob.find(fields[0])
    if start < 0:
        return None
    pos = start + len(fields[0])
    between: list[bytes] = []
    for f in fields[1:]:
        at = blob.find(f, pos)
        if at < 0:
            return None
        between.append(blob[pos:at])
        pos = at + len(f)
    return blob[start:pos], tuple(between)


class StreamCache:
    """Encoded streams of recent replies, so a step served again is not generated again.

    A stream is stored once as a template rendered with the placeholder fields of its
    :class:`Rendering` and filled in per response. A template is kept only after it proved to
    fill in to exactly the stream rendered the normal way (else its key is marked uncacheable),
    so a quirk that reshapes the envelope can never be served wrong. A key is admitted on its
    second request: a stream asked for once (a new reply every step) costs one rendering, not
    the three a stored template takes (this response, the placeholder one and the proof).
    """

    SIZE = 32
    #: How many keys seen once are remembered (oldest forgotten first).
    SEEN = 256

    def __init__(self) -> None:
        self._templates: dict[Hashable, _CachedStream | None] = {}
        self._seen: dict[Hashable, None] = {}

    def events(self, r: Rendering[Any]) -> Sequence[bytes]:
        render = r.fast or r.render
        if r.key is None:
            return render(r.envelope)
        key = r.key
        try:
            hash(key)
        except TypeError:  # a reply carrying a usage mapping: its text stands in for it
            key = repr(key)
        if key in self._templates:
            template = self._templates[key]
            if template is None:
                return render(r.envelope)
            return template.fill(r.template.spell(r.envelope) if r.template is not None else ())
        events = render(r.envelope)
        if key not in self._seen:
            if len(self._seen) >= self.SEEN:
                del self._seen[next(iter(self._seen))]  # the oldest
            self._seen[key] = None
            return events
        del self._seen[key]
        if r.template is None:
            stored: _CachedStream | None = _CachedStream(events, ())
        else:
            placeholder = r.template.placeholder(r.envelope)
            stored = _CachedStream(render(placeholder), r.template.spell(placeholder))
            if stored.fill(r.template.spell(r.envelope)) != events:
                stored = None
        if len(self._templates) >= self.SIZE:
            del self._templates[next(iter(self._templates))]  # the oldest
        self._templates[key] = stored
        return events


def _batches(pieces: Sequence[bytes], limit: int = BATCH_BYTES) -> list[bytes]:
    """`pieces` joined into consecutive batches of at most `limit` bytes; a piece longer than
    that is a batch of its own. Empty pieces vanish: joined, they add nothing to the body."""
    if isinstance(pieces, FilledEvents) and len(pieces.joined) <= limit:
        return [pieces.joined] if pieces.joined else []
    out: list[bytes] = []
    run: list[bytes] = []
    size = 0
    for p in pieces:
        if size + len(p) > limit and run:
            out.append(b"".join(run))
            run, size = [], 0
        run.append(p)
        size += len(p)
    if size:
        out.append(b"".join(run))
    return out
