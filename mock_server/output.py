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
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Generic, Protocol, TypeVar

from dshkit.mock_server.generate.events import JoinedEvents

__all__ = ["BATCH_BYTES", "FastOutput", "JoinedEvents", "Output", "PlainOutput", "Rendering", "StreamCache", "Template"]

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

    render: Callable[[E], Sequence[bytes]]
    """The reference renderer: the stream's SSE events, one bytes object per event."""
    envelope: E
    """This response's own fields (a completion id, `created`); the argument of `render`."""
    key: Hashable | None = None
    """Everything else the bytes depend on, the surface included; None: never cached."""
    template: Template[E] | None = None
    """How `envelope` shows in the bytes; None: the bytes depend on `key` alone."""
    fast: Callable[[E], Sequence[bytes]] | None = None
    """A faster renderer that gives the same events as `render` (the fast path uses it); it may
    return them as one :class:`JoinedEvents`."""


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
        return events.joined if isinstance(events, JoinedEvents) else b"".join(events)

    def writes(self, events: Sequence[bytes]) -> Sequence[bytes]:
        return _batches(events)


class _CachedStream:
    """One cached stream rendered with placeholder fields: the bytes between its runs of fields
    when every event spells them alike (filling it in is then one join), else the whole stream;
    and where its events end (given, or found after each blank line when asked for)."""

    __slots__ = ("_counts", "between", "blob", "ends", "fields", "parts", "pick", "size", "span", "terminator")

    def __init__(self, events: Sequence[bytes], fields: tuple[bytes, ...]) -> None:
        joined = events.joined if isinstance(events, JoinedEvents) else b"".join(events)
        # A field the stream never spells (a signature without a thinking block) is left out,
        # so the others can still be filled in as spans, and no replace looks for it.
        present = tuple(i for i, f in enumerate(fields) if f in joined)
        self.pick: tuple[int, ...] | None = present if len(present) < len(fields) else None
        """The indices of the fields the stream holds, when it lacks some; None: all of them."""
        fields = tuple(fields[i] for i in present)
        self.fields = fields
        self.size = len(joined)
        self.terminator = events.terminator if isinstance(events, JoinedEvents) else None
        self.ends: list[int] | None = None
        if self.terminator is None:
            self.ends = events.ends if isinstance(events, JoinedEvents) else list(accumulate(map(len, events)))
        # Where every event spells the fields in one order with the same bytes between them (the
        # usual envelope), the stream is kept cut at those spans, and only so (no second copy).
        self.blob: bytes | None = joined
        self.parts: list[bytes] | None = None
        self.span = b""
        self.between: tuple[bytes, ...] = ()
        if fields:
            found = _span(joined, fields)
            if found is not None:
                span, between = found
                n = joined.count(span)
                if all(joined.count(f) == n for f in fields):
                    self.parts = joined.split(span)
                    self.span, self.between, self.blob = span, between, None
        self._counts: list[tuple[int, ...]] | None = None

    def counts(self, ends: list[int]) -> list[tuple[int, ...]]:
        """How many of each placeholder come before each event's end (needed, and so counted,
        only when a value's length differs from its placeholder's)."""
        if self._counts is None:
            if self.parts is not None:  # every field once in each span, at the span's start or after it
                starts, at = [], 0
                for part in self.parts[:-1]:
                    at += len(part)
                    starts.append(at)
                    at += len(self.span)
                per_span = [bisect.bisect_left(starts, end) for end in ends]
                per_field = [per_span for _ in self.fields]
            else:
                assert self.blob is not None
                per_field = []
                for f in self.fields:
                    at, found = self.blob.find(f), []
                    while at >= 0:
                        found.append(at)
                        at = self.blob.find(f, at + len(f))
                    # A field never spans two events, so one that starts before an event's end lies in it.
                    per_field.append([bisect.bisect_left(found, end) for end in ends])
            self._counts = list(zip(*per_field, strict=True)) if per_field else [() for _ in ends]
        return self._counts

    def fill(self, values: tuple[bytes, ...]) -> JoinedEvents:
        """The stream with each placeholder field replaced by its value; event ends shift by the
        length differences (computed only when there are any and the ends are not found anew)."""
        if self.pick is not None:
            values = tuple(values[i] for i in self.pick)
        if self.parts is not None:
            between = self.between
            if len(between) == 1:  # the usual envelope: two fields
                span = values[0] + between[0] + values[1]
            else:
                span = values[0] + b"".join(b + v for b, v in zip(between, values[1:], strict=True))
            blob = span.join(self.parts)
        else:
            assert self.blob is not None
            blob = self.blob
            for f, v in zip(self.fields, values, strict=True):
                blob = blob.replace(f, v)
        if self.terminator is not None:
            return JoinedEvents(blob, terminator=self.terminator)
        assert self.ends is not None
        deltas = [len(v) - len(f) for f, v in zip(self.fields, values, strict=True)]
        ends = self.ends
        if any(deltas):
            ends = [
                end + sum(c * d for c, d in zip(counts, deltas, strict=True))
                for end, counts in zip(ends, self.counts(ends), strict=True)
            ]
        return JoinedEvents(blob, ends)


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


_ABSENT = _CachedStream.__new__(_CachedStream)
"""What the stream cache holds for a key it has no entry for (None: the key's stream is never
cached); never filled in."""


class StreamCache:
    """Encoded streams of recent replies, so a step served again is not generated again.

    A stream is stored once as a template rendered with the placeholder fields of its
    :class:`Rendering` and filled in per response. A template is kept only after it proved to
    fill in to exactly the stream rendered the normal way (else its key is marked uncacheable),
    so a quirk that reshapes the envelope can never be served wrong. A key is admitted on its
    second request: a stream asked for once (a new reply every step) costs one rendering, not
    the three a stored template takes (this response, the placeholder one and the proof). The
    keys seen once are remembered by their hash alone (a key holds its reply, which may be
    long); two keys that share one only admit the second a request early.

    The cache holds at most :attr:`SIZE` templates and :attr:`BYTES` bytes of them (the oldest
    go first); a stream longer than that is rendered every time.
    """

    SIZE = 32
    #: The most bytes the stored templates hold together.
    BYTES = 64 * 1024 * 1024
    #: How many keys seen once are remembered (oldest forgotten first).
    SEEN = 256

    def __init__(self) -> None:
        self._templates: dict[Hashable, _CachedStream | None] = {}
        self._seen: dict[int, None] = {}
        self._bytes = 0

    @property
    def stored_bytes(self) -> int:
        """The bytes the stored templates hold."""
        return self._bytes

    def events(self, r: Rendering[Any]) -> Sequence[bytes]:
        render = r.fast or r.render
        if r.key is None:
            return render(r.envelope)
        key = r.key
        # One lookup: hashing the key (a reply and its plans, through their dataclass hashes) is
        # most of what a cached stream costs here.
        try:
            template: _CachedStream | None = self._templates.get(key, _ABSENT)
        except TypeError:  # a reply carrying a usage mapping: its text stands in for it
            key = repr(key)
            template = self._templates.get(key, _ABSENT)
        if template is None:
            return render(r.envelope)
        if template is not _ABSENT:
            return template.fill(r.template.spell(r.envelope) if r.template is not None else ())
        seen = hash(key)
        events = render(r.envelope)
        if seen not in self._seen:
            if len(self._seen) >= self.SEEN:
                del self._seen[next(iter(self._seen))]  # the oldest
            self._seen[seen] = None
            return events
        del self._seen[seen]
        stored: _CachedStream | None = None
        if r.template is None:
            stored = _CachedStream(events, ())
        else:
            placeholder = r.template.placeholder(r.envelope)
            stored = _CachedStream(render(placeholder), r.template.spell(placeholder))
            if stored.fill(r.template.spell(r.envelope)) != events:
                stored = None
        if stored is not None and stored.size > self.BYTES:
            stored = None
        self._store(key, stored)
        return events

    def _store(self, key: Hashable, stored: _CachedStream | None) -> None:
        size = stored.size if stored is not None else 0
        while self._templates and (len(self._templates) >= self.SIZE or self._bytes + size > self.BYTES):
            oldest = self._templates.pop(next(iter(self._templates)))
            self._bytes -= oldest.size if oldest is not None else 0
        self._templates[key] = stored
        self._bytes += size


def _batches(pieces: Sequence[bytes], limit: int = BATCH_BYTES) -> list[bytes]:
    """`pieces` joined into consecutive batches of at most `limit` bytes; a piece longer than
    that is a batch of its own. Empty pieces vanish: joined, they add nothing to the body."""
    if isinstance(pieces, JoinedEvents) and len(pieces.joined) <= limit:
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
