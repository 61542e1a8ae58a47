"""`FastStreamDecoder` (the Anthropic adapter's default: per-delta chunks built by slot writes)
gives exactly the chunks of the plain `StreamDecoder`, for any sequence of events, framed with or
without `event:` lines, with pings, comments and CRLF, fed in reads from 1 byte to 64 KiB."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from dshkit.harness.llm import StreamChunk, chunk_to_json
from dshkit.harness.providers.anthropic import FastStreamDecoder, StreamDecoder

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


def _frame(events: list[dict[str, Any]], named: bool, crlf: bool) -> bytes:
    body = sse(*events)
    if not named:
        body = b"".join(line + b"\n" for line in body.split(b"\n") if not line.startswith(b"event: "))
    return body.replace(b"\n", b"\r\n") if crlf else body


@given(st.lists(_events, max_size=40), st.booleans(), st.booleans(), st.booleans(),
       st.one_of(st.sampled_from([1, 7, 333, 2048, 1 << 16]), st.integers(1, 1 << 16)))
def test_any_stream_decodes_the_same_on_both_decoders(
    events: list[dict[str, Any]], named: bool, crlf: bool, ends: bool, step: int
) -> None:
    body = _frame([start(), *events, *([MESSAGE_STOP] if ends else [])], named, crlf)
    body = body.replace(b"\n\n", b"\n: keep-alive\n\n", 1)
    assert _decode(FastStreamDecoder(), body, step) == _decode(StreamDecoder(), body, step)


def test_a_real_shaped_turn_decodes_the_same_at_every_read_size() -> None:
    for step in (1, 2, 64, 2048, 1 << 16):
        assert _decode(FastStreamDecoder(), TOOL_TURN, step) == _decode(StreamDecoder(), TOOL_TURN, step)
