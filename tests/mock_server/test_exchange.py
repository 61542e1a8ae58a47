"""The write side of one exchange: what reaches the client is exactly what was planned."""

from __future__ import annotations

import httpx
import pytest

from dshkit.mock_server import MockServerFactory, Script

from .wire import chat, parse_sse

#: Every answer here ends on its own: the timeout only bounds a hang, so a loaded machine never trips it.
PATIENT = 30.0


@pytest.mark.parametrize("delay_ms", [0, 1], ids=["fast-path", "paced"])
async def test_an_empty_raw_write_does_not_end_the_body(
    dshkit_mock_server: MockServerFactory, delay_ms: int
) -> None:
    # In chunked framing an empty chunk is the terminator; an empty scripted write must not
    # cut the body short on the unpaced fast path (nor on the paced one).
    writes = [{"text": "data: a\n\n", "delay_ms": delay_ms}, {"text": ""}, {"text": "data: [DONE]\n\n"}]
    server = await dshkit_mock_server(Script.of({"raw": {"writes": writes}}))
    async with httpx.AsyncClient(timeout=PATIENT) as c:
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
    async with httpx.AsyncClient(timeout=PATIENT) as c:
        r = await c.post(server.url, json=body)
    chunks = parse_sse(r.content).chunks
    assert any(c["choices"] and c["choices"][0]["finish_reason"] == "stop" for c in chunks)
    assert any(c.get("usage") for c in chunks) is has_usage
