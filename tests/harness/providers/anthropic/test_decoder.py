"""`FastStreamDecoder` (the Anthropic adapter's default: per-delta chunks built by slot writes)
gives exactly the chunks of the plain `StreamDecoder`, for any sequence of events, framed with or
without `event:` lines, with pings, comments and CRLF, fed in reads from 1 byte to 64 KiB."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from dshkit.harness.llm import StreamChunk
from dshkit.harness.llm.codec import chunk_to_json
from dshkit.harness.providers.anthropic.decoder import FastStreamDecoder, StreamDecoder

from .wire import MESSAGE_STOP, PING, TOOL_TURN, block_start, delta, message_delta, sse, start, stop


def _decode(decoder: StreamDecoder, body: bytes, step: int) -> list[dict[str, Any]]:
    out: list[StreamChunk] = []
    for i in range(0, len(body), step):
        out += decoder.feed(body[i : i + step])
    out += decoder.close()
    return [chunk_to_json(c) for c in out]


_blocks = st.sampled_from([
    {"type": "text", "text": ""}, {"type": "thinking", "thinking": ""},
    {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}, {"type": "server_tool_use", "id": "s", "name": "web"},
])
_events = st.one_of(
    st.builds(block_start, st.integers(0, 3), _blocks),
    *[st.builds(lambda i, t: delta(i, "text_delta", text=t), st.integers(0, 3), st.text(max_size=6))] * 3,
    *[st.builds(lambda i, t: delta(i, "thinking_delta", thinking=t), st.integers(0, 3), st.text(max_size=6))] * 3,
    st.builds(lambda i, t: delta(i, "input_json_delta", partial_json=t), st.integers(0, 3), st.text(max_size=6)),
    st.builds(lambda i: delta(i, "signature_delta", signature="sig"), st.integers(0, 3)),
    st.builds(stop, st.integers(0, 3)),
    st.just(PING),
    st.builds(message_delta, st.sampled_from([None, "end_turn", "tool_use", "max_tokens", "refusal"])),
    st.just({"type": "fancy_new"}),
    st.just({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}),
)


def _frame(events: list[dict[str, Any]], named: bool, crlf: bool, compact: bool = False) -> bytes:
    if compact:  # as DeepSeek and Anthropic send them: the learned delta lines match
        body = b"".join(f"event: {e['type']}\ndata: {json.dumps(e, separators=(',', ':'))}\n\n".encode() for e in events)
    else:
        body = sse(*events)
    if not named:
        body = b"".join(line + b"\n" for line in body.split(b"\n") if not line.startswith(b"event: "))
    return body.replace(b"\n", b"\r\n") if crlf else body


@given(st.lists(_events, max_size=40), st.booleans(), st.booleans(), st.booleans(),
       st.one_of(st.sampled_from([1, 7, 333, 2048, 1 << 16]), st.integers(1, 1 << 16)), st.booleans())
def test_any_stream_decodes_the_same_on_both_decoders(
    events: list[dict[str, Any]], named: bool, crlf: bool, ends: bool, step: int, compact: bool
) -> None:
    body = _frame([start(), *events, *([MESSAGE_STOP] if ends else [])], named, crlf, compact)
    body = body.replace(b"\n\n", b"\n: keep-alive\n\n", 1)
    assert _decode(FastStreamDecoder(), body, step) == _decode(StreamDecoder(), body, step)


def test_a_real_shaped_turn_decodes_the_same_at_every_read_size() -> None:
    compact = _frame([json.loads(line[6:]) for line in TOOL_TURN.split(b"\n") if line.startswith(b"data: ")], True, False, True)
    for body in (TOOL_TURN, compact):
        for step in (1, 2, 64, 2048, 1 << 16):
            assert _decode(FastStreamDecoder(), body, step) == _decode(StreamDecoder(), body, step)


_DELTA_LINE = b"event: content_block_delta\ndata: "
# Event blocks that look like the bulk path's delta events but are not all plain ones: each must
# decode exactly as the plain decoder decodes it, in place.
_ODD_EVENTS = [
    _DELTA_LINE + b'{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"ok"}}       ',
    _DELTA_LINE + b'{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"\\ud800"}}',
    _DELTA_LINE + b'{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"\xff\xfe"}}',
    _DELTA_LINE + b'{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"a"}',
    _DELTA_LINE + b'{"type":"message_stop"}',
    _DELTA_LINE + b'{"type":"content_block_delta","index":9,"delta":{"type":"text_delta","text":"x"}}',
    _DELTA_LINE + b'{"type":"content_block_delta","index":1,"delta":"nope"}',
    _DELTA_LINE + b'{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":""}}',
    # Look-alikes of a learned delta line (its bytes up to the string, then `}}`):
    _DELTA_LINE + b'{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"s" }}',
    _DELTA_LINE + b'{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"s"\n}}',
    _DELTA_LINE + b'{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"a","text":"b"}}',
    _DELTA_LINE + b'{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"a"},"x":{"y":"b"}}',
    _DELTA_LINE + b'{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":null}}',
    _DELTA_LINE + b'{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":["l"]}}',
    _DELTA_LINE + b'{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"q"}}}',
    _DELTA_LINE + b'{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"ab"]}',
    _DELTA_LINE + b'{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"ab" }',
    _DELTA_LINE + b'{"type":"content_block_delta","index":1.0,"delta":{"type":"text_delta","text":"f"}}',
    _DELTA_LINE + b'{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"t"}}',
    _DELTA_LINE + b'{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":1e400}}',
    _DELTA_LINE + b'[1, 2]',
    _DELTA_LINE + b'{"a":1}\ndata: {"b":2}',
    _DELTA_LINE + b'{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"x"}}\nid: 7',
    b"event: error\ndata: " + b'{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"x"}}',
    b'event: content_block_delta\ndata:{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"y"}}',
    b'data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"z"}}',
    b"",
    b": keep-alive",
    b"event: content_block_delta",
    b'\xef\xbb\xbfevent: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"b"}}',
]
_odd_events = st.sampled_from(_ODD_EVENTS)


_text_events = st.builds(
    lambda t, sep: _DELTA_LINE + json.dumps(delta(1, "text_delta", text=t), separators=sep).encode(),
    st.text(max_size=5), st.sampled_from([(", ", ": "), (",", ":")]),
)


@given(st.lists(st.one_of(_odd_events, _text_events, st.just(stop(1)).map(lambda e: sse(e)[:-2])), max_size=12),
       st.booleans(), st.booleans(), st.booleans(), st.integers(1, 300))
def test_odd_bytes_around_the_bulk_path_decode_as_the_plain_decoder_does(
    events: list[bytes], bom: bool, headless: bool, ends: bool, step: int
) -> None:
    """The bulk path's delta events next to look-alikes: padding, escaped lone surrogates,
    invalid UTF-8, truncated or non-object JSON, another type under the same `event:` line, an
    unknown block, extra lines, `event: error`, `data:` without its space, empty blocks and a
    byte order mark (at the start, or later where it is text), in reads of any size; with or
    without the events that open the stream (a stream may start with a delta)."""
    head = b"" if headless else sse(start(), block_start(1, {"type": "text", "text": ""}))
    body = (b"\xef\xbb\xbf" if bom else b"") + head + b"".join(e + b"\n\n" for e in events)
    body += sse(stop(1), message_delta("end_turn"), MESSAGE_STOP) if ends else b""
    assert _decode(FastStreamDecoder(), body, step) == _decode(StreamDecoder(), body, step)


def test_look_alikes_of_a_learned_delta_line_decode_as_the_plain_decoder_does() -> None:
    """Once a compact text delta has taught its line, every look-alike right after it (and a
    delta after the block's stop) still decodes as the plain decoder decodes it."""
    head = sse(start(), block_start(1, {"type": "text", "text": ""}))
    learn = _DELTA_LINE + json.dumps(delta(1, "text_delta", text="a"), separators=(",", ":")).encode() + b"\n\n"
    for odd in [*_ODD_EVENTS, sse(stop(1))[:-2]]:
        body = head + learn * 3 + odd + b"\n\n" + learn + sse(message_delta("end_turn"), MESSAGE_STOP)
        for step in (7, 333, 1 << 16):
            assert _decode(FastStreamDecoder(), body, step) == _decode(StreamDecoder(), body, step), (odd, step)


def test_look_alikes_inside_a_run_of_learned_lines_decode_as_the_plain_decoder_does() -> None:
    """A read made only of a block's learned lines is read at once; a look-alike among them
    (reads of many sizes put it in such reads) sends that read to the per-event path."""
    head = sse(start(), block_start(1, {"type": "text", "text": ""}))
    learn = [_DELTA_LINE + json.dumps(delta(1, "text_delta", text=f"w{i}"), separators=(",", ":")).encode() + b"\n\n"
             for i in range(30)]
    for odd in [*_ODD_EVENTS, sse(stop(1))[:-2]]:
        body = head + b"".join(learn) + odd + b"\n\n" + b"".join(learn) + sse(stop(1), message_delta("end_turn"), MESSAGE_STOP)
        for step in range(150, 4000, 100):
            assert _decode(FastStreamDecoder(), body, step) == _decode(StreamDecoder(), body, step), (odd, step)
