"""SSEDecoder: WHATWG framing over arbitrary reads (wire.md §12, A1; dsh-core.md §3.5)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dshkit.harness.providers.deepseek import SSEComment, SSEDecoder, SSEEvent


def decode(*reads: bytes) -> tuple[list[SSEEvent | SSEComment], str | None]:
    d = SSEDecoder()
    out: list[SSEEvent | SSEComment] = []
    for r in reads:
        out += d.feed(r)
    return out, d.close()


def per_byte(data: bytes) -> tuple[list[SSEEvent | SSEComment], str | None]:
    return decode(*(data[i : i + 1] for i in range(len(data))))


def all_splits(data: bytes) -> None:
    """The same bytes give the same events however they are split in two."""
    whole = decode(data)
    for i in range(len(data) + 1):
        assert decode(data[:i], data[i:]) == whole, i
    assert per_byte(data) == whole


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_line_endings(eol: bytes) -> None:
    data = eol.join([b"data: {\"a\":1}", b"", b": keep-alive", b"", b"data:[DONE]", b"", b""])
    events, pending = decode(data)
    assert events == [SSEEvent('{"a":1}'), SSEComment("keep-alive"), SSEEvent("[DONE]")]
    assert pending is None
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


def test_event_name_does_not_leak_into_next_event_and_dataless_events_not_dispatched() -> None:
    events, _ = decode(b"event: ping\n\nretry: 0\n\nid: 1\n\ndata: a\n\n")
    assert events == [SSEEvent("a", "message", "1")]


def test_unknown_fields_and_field_without_colon_ignored() -> None:
    events, _ = decode(b"retry: 10\nfoo: bar\ndata\nweird line\ndata: z\n\n")
    assert events == [SSEEvent("z")]


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


def test_close_reports_event_missing_blank_line() -> None:
    assert decode(b"data: [DONE]\n") == ([], "[DONE]")
    assert decode(b"data: [DONE]") == ([], "[DONE]")
    assert decode(b"data: a\ndata: b") == ([], "a\nb")
    assert decode(b"data: a\n\n") == ([SSEEvent("a")], None)
    assert decode(b"") == ([], None)
    assert decode(b": a comment without its line end") == ([], None)


def test_close_is_idempotent() -> None:
    d = SSEDecoder()
    d.feed(b"data: x")
    assert d.close() == "x"
    assert d.close() is None


def test_big_event_in_many_pieces_is_one_event() -> None:
    payload = b"x" * 100_000
    data = b"data: " + payload + b"\n\n"
    reads = [data[i : i + 7] for i in range(0, len(data), 7)]
    events, _ = decode(*reads)
    assert events == [SSEEvent(payload.decode())]


def test_every_split_of_a_realistic_body() -> None:
    body = (
        b": keep-alive\r\n\r\n"
        b'data: {"choices":[{"delta":{"content":"\xe4\xbd\xa0"}}]}\r\n\r\n'
        b"event: error\r\ndata: {\"error\":{\"message\":\"m\"}}\r\n\r\n"
        b"data: [DONE]\r\n\r\n"
    )
    all_splits(body)


class _LineByLine(SSEDecoder):
    """The decoder with its bulk path for plain `data:` blocks turned off: the reference."""

    def _plain(self, lines: list[str]) -> list[tuple[str | None, str, str | None]]:
        return self._slow(lines)


_PLAIN_EVENT = st.builds(lambda t: f"data: {t}\n\n", st.text(alphabet="ab {}\":é", max_size=6))
# Mostly plain events (so many blocks reach the bulk path), each other shape now and then.
_SSE_EVENTS = st.one_of(
    *[_PLAIN_EVENT] * 40,
    st.builds(lambda t: f"data:{t}\n\n", st.text(alphabet="ab", max_size=3)),
    st.just(": keep-alive\n\n"),
    st.just("data: one\ndata: two\n\n"),
    st.just("data: x\ndata: y\ndata: z\n\n"),
    st.just("event: error\ndata: {}\n\n"),
    st.just("id: 7\ndata: x\n\n"),
    st.just("retry: 10\n\n"),
    st.just("\n"),
    st.just("data: crlf\r\n\r\n"),
    st.just("data: no-blank-yet\n"),
)


@given(st.lists(_SSE_EVENTS, min_size=0, max_size=60), st.lists(st.integers(1, 400), min_size=1, max_size=8))
def test_bulk_path_gives_the_line_by_line_events(events: list[str], sizes: list[int]) -> None:
    body = "".join(events).encode()
    results = []
    for decoder in (SSEDecoder(), _LineByLine()):
        out: list[SSEEvent | SSEComment] = []
        start, i = 0, 0
        while start < len(body):
            size = sizes[i % len(sizes)]
            out += decoder.feed(body[start : start + size])
            start += size
            i += 1
        results.append((out, decoder.close()))
    assert results[0] == results[1]


_ODD_SHAPES = [
    "data:tight\n\n", ": keep-alive\n\n", "data: one\ndata: two\n\n", "data: x\ndata: y\ndata: z\n\n",
    "event: error\ndata: {}\n\n", "id: 7\ndata: x\n\n", "retry: 10\n\n", "\n", "data: crlf\r\n\r\n",
    "data: no-blank-yet\n", "data: a\n\ndata: b\n\n",
]


@pytest.mark.parametrize("odd", _ODD_SHAPES)
def test_an_odd_event_among_plain_ones_decodes_line_by_line_at_every_split(odd: str) -> None:
    body = ("".join(f"data: {i}\n\n" for i in range(10)) + odd + "".join(f"data: {i}\n\n" for i in range(10, 20))).encode()
    for cut in range(len(body) + 1):
        bulk, reference = SSEDecoder(), _LineByLine()
        got = bulk.feed(body[:cut]) + bulk.feed(body[cut:])
        want = reference.feed(body[:cut]) + reference.feed(body[cut:])
        assert (got, bulk.close()) == (want, reference.close()), cut


def test_bulk_path_handles_an_event_whose_blank_line_comes_in_the_next_read() -> None:
    body = b"".join(b"data: %d\n\n" % i for i in range(20))
    cut = body.index(b"data: 9\n") + len(b"data: 9\n")  # between the data line and its blank
    events, pending = decode(body[:cut], body[cut:])
    assert [e.data for e in events if isinstance(e, SSEEvent)] == [str(i) for i in range(20)]
    assert pending is None
