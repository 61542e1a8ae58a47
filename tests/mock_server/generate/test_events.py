"""A stream held as one bytes object (`generate/events.py`): what a `BodyWriter` writes is every
fragment framed and escaped on its own, and a `JoinedEvents` is the list of its events."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dshkit.mock_server.generate.events import BodyWriter, JoinedEvents
from dshkit.mock_server.generate.split import SEP

# Runs as the renderers write them, of several lengths and in any order among plain pieces; the
# fragments hold characters JSON escapes, and no piece holds the joiner.
_LAYOUTS: list[list[tuple[str, Any]]] = [
    [("add", b"head;"), ("run", (b"<", ["a", 'b"c', "\n", "é中🎉"], b">")), ("add", b";"),
     ("run", (b"{", ["x", "\\y"], b"}")), ("run", (b"(", ["only"], b")")), ("add", b";tail")],
    [("run", (b"1", ["p", "q"], b"2")), ("run", (b"3", ["r", "s", "t"], b"4")), ("run", (b"5", ["u", "v"], b"6"))],
    [("add", b"a"), ("run", (b"pre", [], b"post")), ("add", b"b")],
    [("run", (b"", ["", "", "\x00\t"], b"\n\n"))],
    [],
]


def _spelled(fragment: str) -> bytes:
    return json.dumps(fragment, ensure_ascii=False).encode()


def _write(items: list[tuple[str, Any]]) -> BodyWriter:
    out = BodyWriter()
    for kind, item in items:
        if kind == "add":
            out.add(item)
        else:
            pre, fragments, post = item
            out.run(pre, (SEP.join(fragments), len(fragments)), post)
    return out


@pytest.mark.parametrize("items", _LAYOUTS)
def test_a_written_stream_is_each_fragment_framed_on_its_own(items: list[tuple[str, Any]]) -> None:
    """Runs of any lengths, in any order among plain pieces: each fragment comes out as
    `pre` + its JSON string + `post`, in order, and an empty run writes nothing at all."""
    want = b"".join(
        item if kind == "add" else b"".join(item[0] + _spelled(f) + item[2] for f in item[1])
        for kind, item in items
    )
    assert _write(items).joined() == want


def test_a_joiner_outside_the_runs_gives_no_stream() -> None:
    """A piece added as it is that holds the joiner (a model name may) cannot be told from a
    joint: with a run to join there is no stream; with none the bytes are kept as they are."""
    run = ("run", (b"[", ["a", "b"], b"]"))
    assert _write([("add", b"m\x7f"), run]).joined() is None
    assert _write([run, ("add", b"\x7f")]).joined() is None
    assert _write([("add", b"m\x7f"), ("run", (b"[", ["a"], b"]"))]).joined() == b'm\x7f["a"]'


def test_a_lone_surrogate_is_refused() -> None:
    with pytest.raises(UnicodeEncodeError):
        _write([("run", (b"", ["ok", "\ud800"], b""))])


def test_events_are_cut_after_each_blank_line_and_the_rest_is_one_more() -> None:
    events = [b"data: a\n\n", b"data: \xc3\xa9\n\n", b": c\n\n", b"data: tail"]
    joined = JoinedEvents(b"".join(events))
    assert joined.terminator == b"\n\n"
    assert list(joined) == events and len(joined) == 4
    assert [joined[i] for i in range(-4, 4)] == events + events
    assert joined[1:3] == events[1:3] and joined[::-1] == events[::-1]
    with pytest.raises(IndexError):
        joined[4]
    with pytest.raises(IndexError):
        joined[-5]
    assert joined.terminator == b"\n\n"  # still: finding the ends does not make them given
    crlf = JoinedEvents(b"data: a\r\n\r\ndata: b\r\n\r\n", terminator=b"\r\n\r\n")
    assert list(crlf) == [b"data: a\r\n\r\n", b"data: b\r\n\r\n"] and crlf.terminator == b"\r\n\r\n"
    assert list(JoinedEvents(b"")) == []


def test_given_ends_are_taken_as_they_are() -> None:
    """Ends given by the renderer cut the bytes there, blank lines or not."""
    joined = JoinedEvents(b"abc\n\ndef", [2, 8])
    assert list(joined) == [b"ab", b"c\n\ndef"] and joined.terminator is None


def test_equality_is_that_of_the_events() -> None:
    data = b"data: a\n\ndata: b\n\n"
    found = JoinedEvents(data)
    assert found == [b"data: a\n\n", b"data: b\n\n"] and found == JoinedEvents(data)
    assert found == JoinedEvents(data, [9, 18])
    assert found != JoinedEvents(data, [18]) and found != [data] and found != data
    assert found != JoinedEvents(data + b"data: c\n\n")
    with pytest.raises(TypeError):
        hash(found)
