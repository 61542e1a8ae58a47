"""`FastStreamDecoder` (the adapters' default) gives exactly the chunks of the plain `StreamDecoder`.

The fast decoder learns the envelope a server repeats around every delta, then parses only the
delta of a payload that has it, reads whole runs of such events in bulk without SSE decoding, and
builds the per-delta chunks by slot writes. The plain decoder does none of that, so decoding the
same bytes with both compares the paths. The streams mix chunks that fit the envelope with chunks
and framings that break it (finish reasons, usage, errors, extra keys, a changed id, whitespace,
nested `"delta"` keys, comments, `event:`/`id:`/`retry:` lines, CR and CRLF, extra blank lines,
split `data:` lines, a byte order mark, slots msgspec refuses), fed in reads from 1 byte to 64 KiB,
so the hit and every kind of miss are exercised on every path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from dshkit.harness.llm import StreamChunk
from dshkit.harness.llm.chunks import TextDelta
from dshkit.harness.llm.codec import chunk_to_json
from dshkit.harness.providers.openai_chat.decoder import StreamDecoder
from dshkit.harness.providers.openai_chat.fast_decoder import FastStreamDecoder
from dshkit.harness.providers.openai_chat.translate import Translator
from dshkit.mock_server import QUIRKS
from dshkit.mock_server.generate.chunks import generate_chunks
from dshkit.mock_server.generate.encode import encode_sse
from dshkit.mock_server.generate.reply import Reply, ToolCall

CAPTURES = Path(__file__).parent / "captures"
READS = [1, 2, 7, 64, 333, 1000, 2047, 2048, 2049, 2500, 4096, 1 << 16]
"""Read sizes around the bulk path's threshold (2 KiB) and the adapter's largest read."""


def _decode(decoder: StreamDecoder, body: bytes, step: int) -> list[dict[str, Any]]:
    out: list[StreamChunk] = []
    for i in range(0, len(body), step):
        out += decoder.feed(body[i : i + step])
    out += decoder.close()
    return [chunk_to_json(c) for c in out]


def _same(body: bytes, step: int = 1 << 16) -> bool:
    return _decode(FastStreamDecoder(), body, step) == _decode(StreamDecoder(), body, step)


def test_captures_decode_the_same_at_every_read_size() -> None:
    for path in sorted(CAPTURES.glob("*.sse")):
        for step in READS:
            assert _same(path.read_bytes(), step), (path.name, step)


def test_every_generator_quirk_decodes_the_same() -> None:
    reply = Reply(
        reasoning="Reasoning first. " * 40,
        content="Then text — with “quotes” and 中文. " * 40,
        tool_calls=[ToolCall(name="read", arguments='{"file_path": "README.md"}'),
                    ToolCall(name="grep", arguments='{"pattern": "a\\\\b"}')],
    )
    for quirk in QUIRKS:
        body = encode_sse(generate_chunks(reply, quirks=[quirk]), quirks=[quirk])
        for step in (7, 2048, 1 << 16):
            assert _same(body, step), (quirk, step)


_ID = "5d1c3a52-8f0e-4b8e-9a53-0c1e2f7b6a11"


def _event(delta: Any, *, finish: str | None = None, usage: Any = None, extra: dict[str, Any] | None = None,
           id_: str = _ID, spaced: bool = False, nested: bool = False, index: int = 0) -> bytes:
    chunk: dict[str, Any] = {"id": id_, "object": "chat.completion.chunk", "created": 1, "model": "m"}
    if nested:
        chunk["meta"] = {"delta": {"content": "not this one"}}
    chunk["choices"] = [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}]
    chunk["usage"] = usage
    chunk.update(extra or {})
    text = json.dumps(chunk, ensure_ascii=False, separators=(", ", ": ") if spaced else (",", ":"))
    return b"data: " + text.encode() + b"\n\n"


_deltas = st.one_of(
    st.builds(lambda t: {"content": t}, st.text(max_size=8)),
    st.builds(lambda t: {"content": None, "reasoning_content": t}, st.text(max_size=8)),
    st.builds(lambda t: {"content": t, "reasoning_content": None}, st.text(max_size=8)),
    st.builds(lambda t: {"reasoning": t}, st.text(max_size=8)),
    st.builds(lambda i, a: {"tool_calls": [{"index": i, "function": {"arguments": a}}]},
              st.integers(0, 2), st.text(max_size=6)),
    st.builds(lambda i: {"tool_calls": [{"index": i, "id": f"call_{i}", "type": "function",
                                          "function": {"name": "f", "arguments": ""}}]}, st.integers(0, 2)),
    st.builds(lambda a: {"tool_calls": [{"function": {"arguments": a}}]}, st.text(max_size=4)),  # no index
    st.builds(lambda a: {"tool_calls": [{"index": 0, "function": {"arguments": {"k": a}}}]}, st.text(max_size=4)),
    st.just({}),
    st.just({"role": "assistant", "content": ""}),
    st.just({"content": None, "tool_calls": None}),
    st.just({"tool_calls": "not a list"}),
)
_chunks = st.one_of(
    *[st.builds(_event, _deltas)] * 6,  # mostly the envelope the fast paths read
    st.builds(_event, _deltas, finish=st.sampled_from(["stop", "length", "tool_calls", "content_filter"])),
    st.builds(_event, _deltas, usage=st.just({"prompt_tokens": 5, "completion_tokens": 2})),
    st.builds(_event, _deltas, extra=st.just({"obfuscation": "xyz"})),
    st.builds(_event, _deltas, id_=st.just("another-id")),
    st.builds(_event, _deltas, spaced=st.just(True)),
    st.builds(_event, _deltas, nested=st.just(True)),
    st.builds(_event, _deltas, index=st.just(1)),  # a second choice: ignored
    st.just(_event("not an object")),
    st.just(b'data: {"id":"x","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}\n\n'),
    st.just(b'data: {"error":{"message":"overloaded","code":"server_error"}}\n\n'),
    st.just(b"data: [1, 2]\n\n"),
    st.just(b"data: {not json\n\n"),
)

# The same envelope byte for byte around an arbitrary slot: the bulk path's own checks.
_RAW_HEAD = _event({"content": "x"}).split(b'"delta":')[0] + b'"delta":'
_RAW_TAIL = b',"logprobs":null,"finish_reason":null}],"usage":null}'


def _raw(slot: bytes) -> bytes:
    return _RAW_HEAD + slot + _RAW_TAIL + b"\n\n"


# Look-alikes of the learned deltas of one string (the bytes around a string of a reasoning,
# text or arguments delta): each must decode as the plain decoder decodes it, in place.
_STRING_LOOKALIKES = [
    _raw(b'{"content":null,"reasoning_content":"a" }'),
    _raw(b'{"content":null,"reasoning_content":"a"\n}'),
    _raw(b'{"content":null,"reasoning_content":"a","reasoning_content":"b"}'),
    _raw(b'{"content":null,"reasoning_content":"a","content":"b"}'),
    _raw(b'{"content":null,"reasoning_content":"a"},{"x":"b"}'),
    _raw(b'{"content":null,"reasoning_content":""}'),
    _raw(b'{"content":null,"reasoning_content":null}'),
    _raw(b'{"content":null,"reasoning_content":5}'),
    _raw(b'{"content":null,"reasoning_content":["a"]}'),
    _raw(b'{"content":null,"reasoning_content":"\\ud800"}'),
    _raw(b'{"content":null,"reasoning_content":"\xff"}'),
    _raw(b'{"content":null,"reasoning_content":"a"}}'),
    _raw(b'{"content":null,"reasoning_content":'),
    _raw(b'{"content":"a","reasoning_content":null,"tool_calls":[{"index":0,"function":{"arguments":"x"}}]}'),
    _raw(b'{"content":"","reasoning_content":null}'),
    _raw(b'{"content":"a" ,"reasoning_content":null}'),
    _raw(b'{"content":"a","reasoning_content":"r"}'),
    _raw(b'{"content":"a"}'),
    _raw(b'{"tool_calls":[{"index":0,"function":{"arguments":""}}]}'),
    _raw(b'{"tool_calls":[{"index":0,"function":{"arguments":null}}]}'),
    _raw(b'{"tool_calls":[{"index":0,"function":{"arguments":{"k":1}}}]}'),
    _raw(b'{"tool_calls":[{"index":0,"function":{"arguments":"a"}},{"index":1}]}'),
    _raw(b'{"tool_calls":[{"index":0,"function":{"arguments":"a","name":"n"}}]}'),
    _raw(b'{"tool_calls":[{"index":0,"function":{"arguments":"a"},"id":"call_9"}]}'),
    _raw(b'{"tool_calls":[{"index":0,"function":{"arguments":"a"}}],"tool_calls":[{"function":{"arguments":"b"}}]}'),
    _raw(b'{"tool_calls":[{"index":1,"function":{"arguments":"a"}}]}'),
    _event({"content": None, "reasoning_content": "spaced"}, spaced=True),
]

_framings = st.one_of(
    *[_chunks] * 8,  # a chunk as servers frame it: one `data: ` line and a blank line
    st.builds(lambda e: b": keep-alive\n" + e, _chunks),
    st.just(b": keep-alive\n\n"),
    st.builds(lambda e: b"event: message\n" + e, _chunks),
    st.builds(lambda e: b"id: 7\n" + e, _chunks),
    st.builds(lambda e: b"retry: 10\n" + e, _chunks),
    st.just(b"retry: 10\n\nevent: ping\n\n"),  # blocks without data
    st.builds(lambda e: e.replace(b"\n", b"\r\n"), _chunks),  # CRLF
    st.builds(lambda e: e.replace(b"\n", b"\r"), _chunks),  # CR
    st.builds(lambda e: e + b"\n", _chunks),  # an extra blank line
    st.builds(lambda e: b"data:" + e[len(b"data: "):], _chunks),  # no space
    st.builds(lambda e: e.replace(b'"delta":', b'"delta":\ndata: ', 1), _chunks),  # two lines
    st.builds(lambda e: e.replace(b'"delta":', b'"delta":\n', 1), _chunks),  # the slot on a line of its own
    st.builds(lambda e: b"event: error\n" + e, _chunks),
    st.just(b"data: [DONE]\n\n"),  # everything after it is ignored
    st.just(_raw(b"")),  # an empty slot
    st.just(_raw(b'{"content":"\xff bad utf-8"}')),
    st.just(_raw(b'{"content":"a"} {"content":"b"}')),  # two values in one slot
    st.just(_raw(b'{"content":"a"')),  # a slot that is not JSON
    st.just(_raw(b'["not", "an object"]')),
    st.just(_raw(b'{"content":"lone \\ud800"}')),  # msgspec refuses, json.loads reads
    st.just(_raw(b'{"content":"x","n":NaN}')),
    st.just(_raw(b'{"content":"looks like \\n\\ndata: ' + _RAW_HEAD[:16].replace(b'"', b'\\"') + b'"}')),
    st.sampled_from(_STRING_LOOKALIKES),
)
_endings = st.sampled_from([b"data: [DONE]\n\n", b"data: [DONE]\n", b"", b'data: {"choi', b"data: [DONE]\r\n\r\n"])
_reads = st.one_of(st.sampled_from(READS), st.integers(1, 1 << 16))


@given(st.lists(_framings, min_size=1, max_size=60), st.booleans(), _endings, _reads)
def test_any_stream_decodes_the_same_on_both_decoders(events: list[bytes], bom: bool, end: bytes, step: int) -> None:
    learn = _event({"role": "assistant", "content": ""})  # most servers open this way
    body = (b"\xef\xbb\xbf" if bom else b"") + learn + b"".join(events) + end
    assert _same(body, step)


def test_a_long_stream_decodes_the_same_at_every_read_size() -> None:
    events = [_event({"content": None, "reasoning_content": f" r{i}"}) for i in range(300)]
    events += [_event({"content": f" t{i}"}) for i in range(300)]
    events.insert(150, b": keep-alive\n\n")
    events.insert(400, _raw(b'{"content":"lone \\ud800"}'))
    body = b"".join(events) + _event({}, finish="stop", usage={"prompt_tokens": 5, "completion_tokens": 2})
    body += b"data: [DONE]\n\n"
    for step in READS:
        assert _same(body, step), step


def test_a_nested_delta_key_never_teaches_a_wrong_envelope() -> None:
    body = b"".join(_event({"content": f"part {i}"}, nested=True) for i in range(50)) + b"data: [DONE]\n\n"
    texts = [c.text for c in FastStreamDecoder().feed(body) if isinstance(c, TextDelta)]
    assert texts == [f"part {i}" for i in range(50)]
    assert _same(body)


def test_a_translator_of_ones_own_keeps_its_behaviour_for_every_chunk() -> None:
    """`decoder=lambda: StreamDecoder(MyTranslator())` is how an adapter is handed another
    translation; it runs on the plain path, so an override sees every chunk, envelope or not."""

    class Shouting(Translator):
        __slots__ = ()

        def feed_into(self, chunk: Any, out: list[StreamChunk]) -> None:
            for choice in chunk.get("choices") or ():
                delta = choice.get("delta") or {}
                if isinstance(delta.get("content"), str):
                    delta["content"] = delta["content"].upper()
            super().feed_into(chunk, out)

    body = b"".join(_event({"content": f"t{i}"}) for i in range(200)) + b"data: [DONE]\n\n"
    for step in (7, 2048, 1 << 16):
        decoder = StreamDecoder(Shouting())
        chunks: list[StreamChunk] = []
        for i in range(0, len(body), step):
            chunks += decoder.feed(body[i : i + step])
        assert [c.text for c in chunks if isinstance(c, TextDelta)] == [f"T{i}" for i in range(200)], step


def test_a_slot_on_a_line_of_its_own_is_no_envelope_event_at_any_read_size() -> None:
    """`data: <head>` LF `<delta><tail>`: the second line is an unknown field, so the event's
    payload is the head alone (malformed); a short-read or bulk path that took the bytes
    between head and tail as the delta (JSON allows the leading LF) would read a delta."""
    learn = _event({"role": "assistant", "content": ""})
    split = _event({"content": "b"}).replace(b'"delta":', b'"delta":\n', 1)
    body = learn + _event({"content": "a"}) * 5 + split + _event({"content": "c"}) + b"data: [DONE]\n\n"
    for step in READS:
        assert _same(body, step), step


def test_look_alikes_of_a_learned_string_delta_decode_as_the_plain_decoder_does() -> None:
    """Once the deltas of one string (reasoning, text, a call's arguments) have taught their
    bytes, each look-alike right after them decodes as the plain decoder decodes it, and so do
    the learned deltas after it, in reads short and long."""
    learn = _event({"role": "assistant", "content": ""})
    opening = _event({"tool_calls": [{"index": 0, "id": "call_0", "type": "function",
                                      "function": {"name": "f", "arguments": ""}}]})
    runs = [
        [_event({"content": None, "reasoning_content": f" r{i}"}) for i in range(12)],
        [_event({"content": f" t{i}", "reasoning_content": None}) for i in range(12)],
        [_event({"content": f" o{i}"}) for i in range(12)],
        [_event({"tool_calls": [{"index": 0, "function": {"arguments": f"a{i}"}}]}) for i in range(12)],
    ]
    for run in runs:
        for odd in _STRING_LOOKALIKES:
            body = learn + opening + b"".join(run) + odd + b"".join(run) + b"data: [DONE]\n\n"
            for step in (7, 400, 2047, 2048, 1 << 16):
                assert _same(body, step), (run[0], odd, step)


def test_a_string_in_a_look_alike_place_teaches_nothing() -> None:
    """The key of the string also ends a key inside another object: the string found there
    equals the real one in the teacher, but its place is not the real one's."""
    fake = b'{"content":null,"reasoning_content":"b","x":{"\\"reasoning_content":"%s"}}'
    body = _event({"role": "assistant", "content": ""}) + b"".join(_raw(fake % s) for s in [b"b"] * 3 + [b"c", b"d"] * 20)
    for step in (400, 1 << 16):
        assert _same(body + b"data: [DONE]\n\n", step), step


def test_a_learned_call_delta_is_the_last_call_for_a_delta_without_an_index() -> None:
    def call(index: int, arguments: str, **more: Any) -> bytes:
        return _event({"tool_calls": [{"index": index, **more, "function": {"arguments": arguments}}]})

    body = _event({"role": "assistant", "content": ""}) + call(0, "", id="call_0") + b"".join(call(0, f"a{i}") for i in range(20))
    body += call(1, "", id="call_1") + call(0, "back") + _event({"tool_calls": [{"function": {"arguments": "which"}}]})
    for step in (400, 1 << 16):
        assert _same(body + b"data: [DONE]\n\n", step), step
