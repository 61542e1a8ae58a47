"""The envelope fast path of `StreamDecoder` gives exactly the chunks of the full path.

A `Translator` subclass turns the fast path off (see `StreamDecoder`), so decoding the same bytes
with `Translator()` and with `_FullPath()` compares the two paths. Streams mix chunks that fit the
learned envelope with chunks that break it (finish reasons, usage, extra keys, a changed id,
whitespace, nested `"delta"` keys), so both the hit and every kind of miss are exercised.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from dshkit.harness.llm import chunk_to_json
from dshkit.harness.providers.deepseek import SSEDecoder, StreamDecoder, Translator
from dshkit.mock_server import QUIRKS, Reply, ToolCall, encode_sse, generate_chunks

CAPTURES = Path(__file__).parent / "captures"


class _FullPath(Translator):
    """Same behaviour; being a subclass keeps the decoder on the full path."""


def _decode(body: bytes, translator: Translator | None, step: int) -> list[dict[str, Any]]:
    decoder = StreamDecoder(translator)
    out = []
    for i in range(0, len(body), step):
        out += decoder.feed(body[i : i + step])
    out += decoder.close()
    return [chunk_to_json(c) for c in out]


def _same(body: bytes, step: int = 1 << 16) -> bool:
    return _decode(body, None, step) == _decode(body, _FullPath(), step)


def test_fast_path_is_taken_on_a_deepseek_stream() -> None:
    chunks = generate_chunks(Reply(reasoning="Think it over.", content="An answer, in parts."))
    decoder = StreamDecoder()
    decoder.feed(encode_sse(chunks))
    assert decoder.envelope_learned
    assert not StreamDecoder(_FullPath()).envelope_learned


def test_captures_decode_the_same_on_both_paths() -> None:
    for path in sorted(CAPTURES.glob("*.sse")):
        assert _same(path.read_bytes()), path.name


def test_every_generator_quirk_decodes_the_same_on_both_paths() -> None:
    reply = Reply(
        reasoning="Reasoning first.",
        content="Then text — with “quotes” and 中文.",
        tool_calls=[ToolCall(name="read", arguments='{"file_path": "README.md"}'),
                    ToolCall(name="grep", arguments='{"pattern": "a\\\\b"}')],
    )
    for quirk in QUIRKS:
        body = encode_sse(generate_chunks(reply, quirks=[quirk]), quirks=[quirk])
        assert _same(body), quirk
        assert _same(body, step=7), quirk


_ID = "5d1c3a52-8f0e-4b8e-9a53-0c1e2f7b6a11"


def _event(delta: Any, *, finish: str | None = None, usage: Any = None, extra: dict[str, Any] | None = None,
           id_: str = _ID, spaced: bool = False, nested: bool = False) -> bytes:
    chunk: dict[str, Any] = {"id": id_, "object": "chat.completion.chunk", "created": 1, "model": "m"}
    if nested:
        chunk["meta"] = {"delta": {"content": "not this one"}}
    chunk["choices"] = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
    chunk["usage"] = usage
    chunk.update(extra or {})
    text = json.dumps(chunk, ensure_ascii=False, separators=(", ", ": ") if spaced else (",", ":"))
    return b"data: " + text.encode() + b"\n\n"


_deltas = st.one_of(
    st.builds(lambda t: {"content": t}, st.text(max_size=8)),
    st.builds(lambda t: {"content": None, "reasoning_content": t}, st.text(max_size=8)),
    st.builds(lambda t: {"reasoning": t}, st.text(max_size=8)),
    st.builds(lambda i, a: {"tool_calls": [{"index": i, "function": {"arguments": a}}]},
              st.integers(0, 2), st.text(max_size=6)),
    st.builds(lambda i: {"tool_calls": [{"index": i, "id": f"call_{i}", "type": "function",
                                          "function": {"name": "f", "arguments": ""}}]}, st.integers(0, 2)),
    st.just({}),
    st.just({"content": None, "tool_calls": None}),
)
_events = st.one_of(
    st.builds(_event, _deltas),
    st.builds(_event, _deltas),
    st.builds(_event, _deltas, finish=st.sampled_from(["stop", "length", "tool_calls"])),
    st.builds(_event, _deltas, usage=st.just({"prompt_tokens": 5, "completion_tokens": 2})),
    st.builds(_event, _deltas, extra=st.just({"obfuscation": "xyz"})),
    st.builds(_event, _deltas, id_=st.just("another-id")),
    st.builds(_event, _deltas, spaced=st.just(True)),
    st.builds(_event, _deltas, nested=st.just(True)),
    st.just(b"data: {not json\n\n"),
)


@given(st.lists(_events, min_size=1, max_size=20), st.booleans(), st.integers(1, 64))
def test_mixed_envelopes_decode_the_same_on_both_paths(events: list[bytes], done: bool, step: int) -> None:
    body = b"".join(events) + (b"data: [DONE]\n\n" if done else b"")
    assert _same(body, step)


def test_a_nested_delta_key_never_teaches_a_wrong_envelope() -> None:
    body = b"".join(_event({"content": f"part {i}"}, nested=True) for i in range(5)) + b"data: [DONE]\n\n"
    decoder = StreamDecoder()
    decoder.feed(body)
    assert _same(body)
    assert not decoder.envelope_learned


# --- the bulk path: blocks of envelope events read without SSE decoding -----------------------
#
# Once the envelope is learned, `StreamDecoder` reads a run of plain envelope events (one
# `data: ` line and a blank line each) in one split of the bytes. Every other SSE framing must
# stop that run exactly at the event that breaks it, so these streams put framings the bulk
# path does not read between envelope events, and compare with the full path (which never
# learns an envelope) at many read sizes.

_RAW_HEAD = _event({"content": "x"}).split(b'"delta":')[0] + b'"delta":'
_RAW_TAIL = b',"logprobs":null,"finish_reason":null}],"usage":null}'


def _raw(slot: bytes) -> bytes:
    """An envelope event with `slot` between head and tail, byte for byte."""
    return _RAW_HEAD + slot + _RAW_TAIL + b"\n\n"


_framings = st.one_of(
    st.builds(_event, _deltas),  # the plain event the bulk path reads
    st.builds(_event, _deltas),
    st.builds(_event, _deltas),
    st.builds(lambda e: b": keep-alive\n" + e, st.builds(_event, _deltas)),  # a comment first
    st.builds(lambda e: b"event: message\n" + e, st.builds(_event, _deltas)),
    st.builds(lambda e: b"id: 7\n" + e, st.builds(_event, _deltas)),
    st.builds(lambda e: b"retry: 10\n" + e, st.builds(_event, _deltas)),
    st.builds(lambda e: e.replace(b"\n", b"\r\n"), st.builds(_event, _deltas)),  # CRLF
    st.builds(lambda e: e + b"\n", st.builds(_event, _deltas)),  # an extra blank line
    st.builds(lambda e: b"data:" + e[len(b"data: "):], st.builds(_event, _deltas)),  # no space
    st.builds(lambda e: e.replace(b'"delta":', b'"delta":\ndata: ', 1), st.builds(_event, _deltas)),  # two lines
    st.builds(lambda e: b"event: error\n" + e, st.builds(_event, _deltas)),
    st.just(_raw(b"")),  # an empty slot
    st.just(_raw(b'{"content":"\xff bad utf-8"}')),
    st.just(_raw(b'{"content":"a"} {"content":"b"}')),  # two values in one slot
    st.just(_raw(b'{"content":"a"')),  # a slot that is not JSON
    st.just(_raw(b'["not", "an object"]')),
    st.just(_raw(b'{"content":"lone \\ud800"}')),  # msgspec refuses, json.loads reads
    st.just(_raw(b'{"content":"looks like \\n\\ndata: ' + _RAW_HEAD[:16].replace(b'"', b'\\"') + b'"}')),
    st.just(b"data: {not json\n\n"),
)


@given(st.lists(_framings, min_size=1, max_size=30), st.booleans(), st.sampled_from([1, 64, 333, 2048, 2500, 4096, 1 << 16]))
def test_other_framings_between_envelope_events_decode_the_same_on_both_paths(
    events: list[bytes], done: bool, step: int
) -> None:
    learn = _event({"role": "assistant", "content": ""})
    body = learn + b"".join(events) + (b"data: [DONE]\n\n" if done else b"")
    assert _same(body, step)


def test_a_long_stream_is_read_in_bulk_and_decodes_the_same() -> None:
    events = [_event({"content": None, "reasoning_content": f" r{i}"}) for i in range(300)]
    events += [_event({"content": f" t{i}"}) for i in range(300)]
    events.insert(150, b": keep-alive\n\n")
    events.insert(400, _raw(b'{"content":"lone \\ud800"}'))
    body = b"".join(events) + _event({}, finish="stop", usage={"prompt_tokens": 5, "completion_tokens": 2})
    body += b"data: [DONE]\n\n"
    for step in (2048, 5000, 1 << 16):  # reads from 2 KiB on take the bulk path
        decoder = StreamDecoder()
        for i in range(0, len(body), step):
            decoder.feed(body[i : i + step])
        assert decoder.bulk_events > 450, step  # nearly every delta skipped SSE decoding
        assert decoder.comments == 1
        assert _same(body, step)
    small = StreamDecoder()  # a live stream's small reads keep the per-event path
    for i in range(0, len(body), 1000):
        small.feed(body[i : i + 1000])
    assert small.bulk_events == 0 and small.envelope_learned
    assert _same(body, 1000)


def test_an_injected_sse_decoder_subclass_keeps_every_event() -> None:
    class _OwnFraming(SSEDecoder):
        """Same behaviour; being a subclass means the decoder cannot assume its framing."""

    body = b"".join(_event({"content": f" t{i}"}) for i in range(200)) + b"data: [DONE]\n\n"
    decoder = StreamDecoder(sse=_OwnFraming())
    decoder.feed(body)
    assert decoder.envelope_learned and decoder.bulk_events == 0
