"""SSEDecoder: WHATWG framing over arbitrary reads (wire.md §12, A1; dsh-core.md §3.5)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dshkit.harness.providers.sse import SSEComment, SSEDecoder, SSEEvent, SSEField

Items = list[SSEEvent | SSEComment | SSEField]


def decode(*reads: bytes, fields: bool = False) -> tuple[Items, Items]:
    """The items of each read, and those of `close()`."""
    d = SSEDecoder(fields=fields)
    out: Items = []
    for r in reads:
        out += d.feed(r)
    return out, d.close()


def per_byte(data: bytes) -> tuple[Items, Items]:
    return decode(*(data[i : i + 1] for i in range(len(data))))


def all_splits(data: bytes) -> None:
    """The same bytes give the same events however they are split in two, or byte by byte."""
    whole = decode(data)
    for i in range(len(data) + 1):
        assert decode(data[:i], data[i:]) == whole, i
    assert per_byte(data) == whole


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_line_endings(eol: bytes) -> None:
    data = eol.join([b"data: {\"a\":1}", b"", b": keep-alive", b"", b"data:[DONE]", b"", b""])
    events, closing = decode(data)
    assert events == [SSEEvent('{"a":1}'), SSEComment("keep-alive"), SSEEvent("[DONE]")]
    assert closing == []
    all_splits(data)


def test_mixed_line_endings() -> None:
    data = b"data: a\r\n\ndata: b\r\rdata: c\n\r\n"
    assert decode(data)[0] == [SSEEvent("a"), SSEEvent("b"), SSEEvent("c")]
    all_splits(data)


def test_cr_at_end_of_one_read_lf_at_start_of_next() -> None:
    events, _ = decode(b"data: x\r", b"\n\r", b"\ndata: y\r\n\r\n")
    assert events == [SSEEvent("x"), SSEEvent("y")]
    # a CR alone followed by a read that does not start with LF is still a line end
    assert decode(b"data: x\r", b"\r")[0] == [SSEEvent("x")]
    # an empty read between the CR and the LF
    assert decode(b"data: x\r", b"", b"\n\r\n")[0] == [SSEEvent("x")]


def test_comments_reported_not_data() -> None:
    events, _ = decode(b": keep-alive\n\n: OPENROUTER PROCESSING\n\n:\n\ndata: d\n\n")
    assert events == [SSEComment("keep-alive"), SSEComment("OPENROUTER PROCESSING"), SSEComment(""), SSEEvent("d")]


def test_data_with_and_without_space() -> None:
    events, _ = decode(b"data:no-space\n\ndata: one-space\n\ndata:  two-spaces\n\n")
    assert [e.data for e in events] == ["no-space", "one-space", " two-spaces"]  # type: ignore[union-attr]


def test_multi_line_data_joined_with_lf() -> None:
    events, _ = decode(b"data: {\"a\":\ndata: 1}\ndata:\n\n")
    assert events == [SSEEvent('{"a":\n1}\n')]


def test_event_and_id_fields() -> None:
    events, _ = decode(b"event: error\ndata: {\"error\":{}}\n\nid: 7\ndata: x\n\ndata: y\n\n")
    assert events == [SSEEvent('{"error":{}}', "error"), SSEEvent("x", "message", "7"), SSEEvent("y", "message", "7")]


def test_an_id_with_a_nul_is_ignored_and_an_empty_event_name_is_message() -> None:
    events, _ = decode(b"id: 1\ndata: a\n\nid: 2\x003\nevent:\ndata: b\n\n")
    assert events == [SSEEvent("a", "message", "1"), SSEEvent("b", "message", "1")]


def test_event_name_does_not_leak_into_next_event_and_dataless_events_not_dispatched() -> None:
    events, _ = decode(b"event: ping\n\nretry: 0\n\nid: 1\n\ndata: a\n\n")
    assert events == [SSEEvent("a", "message", "1")]


def test_retry_sets_the_reconnection_time_when_it_is_digits() -> None:
    d = SSEDecoder()
    d.feed(b"retry: 3000\n\n")
    assert d.retry == 3000
    d.feed(b"retry: soon\n\nretry: -5\n\nretry: \xd9\xa3\n\n")  # not ASCII digits: ignored
    assert d.retry == 3000


def test_unknown_fields_are_ignored_and_a_bare_data_line_is_an_empty_line() -> None:
    events, _ = decode(b"retry: 10\nfoo: bar\nweird line\ndata: z\n\n")
    assert events == [SSEEvent("z")]
    # WHATWG: a line without a colon is a field name with an empty value, so `data` adds a line.
    assert decode(b"data\ndata: z\n\n")[0] == [SSEEvent("\nz")]


def test_fields_are_reported_only_when_asked() -> None:
    body = b"event: ping\n\nid: 9\nretry: 10\nfoo\ndata: x\n\n: c\n\n"
    assert decode(body)[0] == [SSEEvent("x", "message", "9"), SSEComment("c")]
    assert decode(body, fields=True)[0] == [
        SSEField("event", "ping"), SSEField("id", "9"), SSEField("retry", "10"), SSEField("foo", ""),
        SSEEvent("x", "message", "9"), SSEComment("c"),
    ]


def test_bom_stripped_once() -> None:
    data = b"\xef\xbb\xbfdata: a\n\n\xef\xbb\xbfdata: b\n\n"
    events, _ = decode(data)
    assert events[0] == SSEEvent("a")
    assert len(events) == 1  # a second BOM makes `\ufeffdata` an unknown field
    assert decode(b"\xef", b"\xbb", b"\xbfdata: a\n\n")[0] == [SSEEvent("a")]


def test_utf8_split_inside_character() -> None:
    data = "data: 中文🙂é\n\n".encode()
    all_splits(data)
    assert decode(data)[0] == [SSEEvent("中文🙂é")]


def test_invalid_utf8_is_replaced_not_raised() -> None:
    assert decode(b"data: \xff\xfe ok\n\n")[0] == [SSEEvent("\ufffd\ufffd ok")]


def test_close_dispatches_nothing_but_ends_the_last_line() -> None:
    assert decode(b"data: [DONE]\n") == ([], [])  # its blank line never came (WHATWG: dropped)
    assert decode(b"data: [DONE]") == ([], [])
    assert decode(b"data: a\ndata: b") == ([], [])
    assert decode(b"data: a\n\n") == ([SSEEvent("a")], [])
    assert decode(b"") == ([], [])
    assert decode(b": a comment without its line end") == ([], [SSEComment("a comment without its line end")])


def test_close_is_idempotent_and_forgets_the_pending_event() -> None:
    d = SSEDecoder()
    d.feed(b"data: x\n")
    assert d.close() == []
    assert d.close() == []
    assert d.feed(b"\n") == []  # the dropped event is not dispatched by a late blank line


def test_big_event_in_many_pieces_is_one_event() -> None:
    payload = b"x" * 100_000
    data = b"data: " + payload + b"\n\n"
    reads = [data[i : i + 7] for i in range(0, len(data), 7)]
    events, _ = decode(*reads)
    assert events == [SSEEvent(payload.decode())]


def test_every_split_of_a_realistic_body() -> None:
    body = (
        b"\xef\xbb\xbf: keep-alive\r\n\r\n"
        b'data: {"choices":[{"delta":{"content":"\xe4\xbd\xa0"}}]}\r\n\r\n'
        b"event: error\r\ndata: {\"error\":{\"message\":\"m\"}}\r\n\r\n"
        b"id: 3\rretry: 5\rdata: a\rdata: b\r\r"
        b"data: [DONE]\r\n\r\n"
    )
    all_splits(body)


_EVENTS = st.one_of(
    st.builds(lambda t: f"data: {t}\n\n", st.text(alphabet="ab {}\":é中", max_size=6)),
    st.builds(lambda t: f"data:{t}\r\n\r\n", st.text(alphabet="ab", max_size=3)),
    st.just(": keep-alive\n\n"),
    st.just("data: one\ndata: two\n\n"),
    st.just("data: x\rdata: y\r\r"),
    st.just("event: error\ndata: {}\n\n"),
    st.just("id: 7\ndata: x\n\n"),
    st.just("retry: 10\n\n"),
    st.just("\n"),
    st.just("data\n\n"),
    st.just("data: no-blank-yet\n"),
)


@given(st.lists(_EVENTS, max_size=40), st.booleans(), st.lists(st.integers(1, 300), min_size=1, max_size=8))
def test_any_reads_give_the_events_of_one_read(events: list[str], bom: bool, sizes: list[int]) -> None:
    body = ("\ufeff" if bom else "").encode() + "".join(events).encode()
    d = SSEDecoder(fields=True)
    out: Items = []
    start = i = 0
    while start < len(body):
        size = sizes[i % len(sizes)]
        out += d.feed(body[start : start + size])
        start += size
        i += 1
    assert (out, d.close()) == decode(body, fields=True)
