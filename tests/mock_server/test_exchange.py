"""The write side of one exchange: what reaches the client is exactly what was planned."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from dshkit.mock_server import MockServerFactory, Reply, Script, encode_stream
from dshkit.mock_server.exchange import BATCH_BYTES, _EncodedStreams
from dshkit.mock_server.generate.reply import StreamMeta, make_meta

from .wire import chat, parse_sse, reassemble


@pytest.mark.parametrize("delay_ms", [0, 1], ids=["fast-path", "paced"])
async def test_an_empty_raw_write_does_not_end_the_body(
    dshkit_mock_server: MockServerFactory, delay_ms: int
) -> None:
    # In chunked framing an empty chunk is the terminator; an empty scripted write must not
    # cut the body short on the unpaced fast path (nor on the paced one).
    writes = [{"text": "data: a\n\n", "delay_ms": delay_ms}, {"text": ""}, {"text": "data: [DONE]\n\n"}]
    server = await dshkit_mock_server(Script.of({"raw": {"writes": writes}}))
    async with httpx.AsyncClient(timeout=2) as c:
        r = await c.post(server.url, json=chat())
    assert r.content == b"data: a\n\ndata: [DONE]\n\n"
    assert [w.data for w in server.journal.last.writes] == [b"data: a\n\n", b"", b"data: [DONE]\n\n"]
    assert server.journal.last.outcome == "completed"


@pytest.mark.parametrize(
    ("stream_options", "has_usage"),
    [(None, True), ({"include_usage": True}, True), ({"include_usage": False}, False)],
    ids=["absent", "true", "false"],
)
@pytest.mark.parametrize("quirks", [[], ["usage_chunk"]], ids=["deepseek", "usage-chunk"])
async def test_include_usage_false_leaves_usage_out(
    dshkit_mock_server: MockServerFactory, stream_options: dict[str, bool] | None, has_usage: bool, quirks: list[str]
) -> None:
    # DeepSeek sends usage even when not asked (ds16); an explicit `false` is honoured.
    server = await dshkit_mock_server(Script.of({"reply": {"content": "hi"}, "stream": {"quirks": quirks}}))
    body = chat(**({"stream_options": stream_options} if stream_options is not None else {}))
    async with httpx.AsyncClient(timeout=2) as c:
        r = await c.post(server.url, json=body)
    chunks = parse_sse(r.content).chunks
    assert any(c["choices"] and c["choices"][0]["finish_reason"] == "stop" for c in chunks)
    assert any(c.get("usage") for c in chunks) is has_usage


async def test_a_default_stream_costs_few_writes_and_a_write_plan_its_own(
    dshkit_mock_server: MockServerFactory,
) -> None:
    # Without a write plan the events are coalesced: one transport write (one journal write)
    # per batch of up to BATCH_BYTES, not one per SSE event; the body is unchanged.
    short = "w " * 100
    long = "x" * 40 + " " + "y " * 60_000  # well over BATCH_BYTES of SSE
    steps: list[dict[str, Any]] = [
        {"reply": {"content": short}},
        {"reply": {"content": long}},
        {"reply": {"content": short}, "stream": {"writes": {"events_per_write": 1}}},
        {"reply": {"content": short}, "stream": {"writes": {"size": 16}}},
    ]
    server = await dshkit_mock_server(Script.of(*steps))
    bodies = []
    async with httpx.AsyncClient(timeout=10) as c:
        for _ in steps:
            r = await c.post(server.url, json=chat())
            assert r.status_code == 200
            bodies.append(r.content)
    short_events, long_events, planned, sized = server.journal.entries[-4:]
    def content(body: bytes) -> str:
        return str(reassemble(parse_sse(body).chunks)["content"])

    assert content(bodies[0]) == short and len(parse_sse(bodies[0]).events) > 100
    assert short_events.write_count == 1 and short_events.data == bodies[0]
    assert content(bodies[1]) == long and long_events.data == bodies[1]
    assert 2 <= long_events.write_count <= len(bodies[1]) // BATCH_BYTES + 1
    assert all(len(w.data) <= BATCH_BYTES for w in long_events.writes)
    # A write plan, even one asking for the default's one event per write, keeps its writes.
    assert planned.write_count == len(parse_sse(bodies[2]).events) and planned.data == bodies[2]
    assert all(len(w.data) <= 16 for w in sized.writes) and sized.write_count >= len(bodies[3]) // 16
    assert sized.data == bodies[3] and content(bodies[3]) == short


def test_an_encoded_stream_is_reused_with_this_responses_id_and_created() -> None:
    cache = _EncodedStreams()
    calls: list[StreamMeta] = []
    reply = Reply(content='say "id":"x" and "created":1 ' * 20)

    def encode(meta: StreamMeta) -> list[bytes]:
        calls.append(meta)
        return encode_stream(reply, model="deepseek-v4-flash", thinking=False, seed=5, meta=meta)

    first = make_meta("deepseek-v4-flash", seed=5, created=1_700_000_000)
    again = make_meta("deepseek-v4-flash", seed=5, created=1_700_000_007, repeat=1)
    assert cache.encode("k", first, encode) == encode_stream(
        reply, model="deepseek-v4-flash", thinking=False, seed=5, meta=first
    )
    n = len(calls)
    expected = encode_stream(reply, model="deepseek-v4-flash", thinking=False, seed=5, meta=again)
    assert cache.encode("k", again, encode) == expected and len(calls) == n  # not generated again
    assert first.id != again.id and again.id.encode() in expected[0]

    # An envelope the placeholders cannot fill in (here: spaced JSON) is never served from a
    # template: that key is encoded anew every time, still exactly.
    def spaced(meta: StreamMeta) -> list[bytes]:
        calls.append(meta)
        return [json.dumps({"id": meta.id, "created": meta.created}).encode()]

    assert cache.encode("s", first, spaced) == spaced(first)
    n = len(calls)
    assert cache.encode("s", again, spaced) == spaced(again) and len(calls) == n + 2


def test_a_filled_template_cuts_its_events_where_the_fields_changed_length() -> None:
    """The filled stream is one bytes object; its events are cut at ends shifted by how much the
    id and `created` grew or shrank, and must equal the stream encoded afresh, event by event."""
    from dshkit.mock_server.exchange import FilledEvents, _batches

    cache = _EncodedStreams()
    reply = Reply(content="word " * 50)

    def encode(meta: StreamMeta) -> list[bytes]:
        return encode_stream(reply, model="deepseek-v4-flash", thinking=False, seed=9, meta=meta)

    cache.encode("k", make_meta("deepseek-v4-flash", seed=9, created=1_700_000_000), encode)
    for created in (7, 1_700_000_001, 10**15):  # shorter, same and longer than the placeholder
        meta = make_meta("deepseek-v4-flash", seed=9, created=created, repeat=3)
        filled = cache.encode("k", meta, encode)
        expected = encode(meta)
        assert isinstance(filled, FilledEvents)
        assert list(filled) == expected and len(filled) == len(expected)
        assert filled[0] == expected[0] and filled[-1] == expected[-1] and filled[2:5] == expected[2:5]
        assert _batches(filled) == [b"".join(expected)]  # coalescing takes the joined stream as is
    with pytest.raises(IndexError):
        filled[len(expected)]


def test_a_template_whose_fields_are_not_side_by_side_is_filled_by_replacing() -> None:
    """Envelopes that do not all spell id-then-created alike (field order varies) take the
    replace path, and still come out exactly as encoded afresh."""
    cache = _EncodedStreams()

    def encode(meta: StreamMeta) -> list[bytes]:
        ident, created = json.dumps(meta.id), meta.created
        return [b'{"id":%s,"created":%d}\n' % (ident.encode(), created),
                b'{"created":%d,"id":%s}\n' % (created, ident.encode())]

    cache.encode("k", make_meta("deepseek-v4-flash", seed=3, created=1_700_000_000), encode)
    for created in (5, 1_700_000_009):
        meta = make_meta("deepseek-v4-flash", seed=3, created=created, repeat=2)
        assert list(cache.encode("k", meta, encode)) == encode(meta)
