"""The write side of one exchange: what reaches the client is exactly what was planned."""

from __future__ import annotations

import httpx
import pytest

from dshkit.mock_server import MockServerFactory, Script

from .wire import chat

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
