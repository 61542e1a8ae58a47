"""Answering one routed request (`Responder`): pacing, write plans, keep-alives before the first
byte, raw files and logged calls, as a client reads them.

Pacing is observed from a raw socket: no event arrives before its scheduled time (late is
possible on a loaded machine, early never)."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import time
from typing import Any

import httpx
import pytest

from dshkit.mock_server import MockServerFactory, Script

from .wire import chat, parse_sse, reassemble

# -- pacing and write plans, both paths ---------------------------------------------------------


@pytest.mark.parametrize("fast_path", [True, False], ids=["fast", "plain"])
async def test_a_paced_stream_reaches_the_socket_on_schedule(
    dshkit_mock_server: MockServerFactory, fast_path: bool
) -> None:
    """Read from a raw socket: event k never arrives before k pacing delays after the request
    was sent (late is possible on a loaded machine, early never)."""
    delay_ms = 30
    server = await dshkit_mock_server(Script.of({
        "reply": {"content": "one two three four"}, "stream": {"split": {"mode": "whole"}},
        "timing": {"chunk_delay_ms": delay_ms}}), fast_path=fast_path)
    body = json.dumps(chat(thinking={"type": "disabled"})).encode()
    request = (f"POST /chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body

    def read_all() -> tuple[float, list[tuple[float, bytes]]]:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
            sent = time.monotonic()
            sock.sendall(request)
            reads = []
            while data := sock.recv(1 << 16):
                reads.append((time.monotonic(), data))
        return sent, reads

    sent, reads = await asyncio.to_thread(read_all)
    arrivals = [t for t, data in reads for _ in range(data.count(b"data: "))]
    for k, t in enumerate(arrivals):
        assert t - sent >= 0.9 * k * delay_ms / 1000, (k, t - sent)
    head, _, chunked = b"".join(data for _, data in reads).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"transfer-encoding: chunked" in head.lower()
    parsed = parse_sse(_dechunk(chunked))
    assert len(arrivals) == len(parsed.events) == 4 and parsed.done  # role, text, finish, [DONE]


def _dechunk(data: bytes) -> bytes:
    """An HTTP/1.1 chunked body, decoded."""
    out = b""
    while True:
        size_line, _, rest = data.partition(b"\r\n")
        size = int(size_line, 16)
        if not size:
            return out
        out += rest[:size]
        data = rest[size + 2 :]


@pytest.mark.parametrize("fast_path", [True, False], ids=["fast", "plain"])
async def test_a_write_plan_keeps_its_writes_on_either_path(
    dshkit_mock_server: MockServerFactory, fast_path: bool
) -> None:
    """A script that gives `stream.writes` (even the default's one event per write) gets exactly
    those writes, as the journal records them, on either path."""
    short = "w " * 40
    server = await dshkit_mock_server(Script.of(
        {"reply": {"content": short}, "stream": {"writes": {"events_per_write": 1}}},
        {"reply": {"content": short}, "stream": {"writes": {"size": 16}}},
    ), fast_path=fast_path)
    async with httpx.AsyncClient(timeout=5) as c:
        for _ in range(2):
            r = await c.post(server.url, json=chat())
            assert r.status_code == 200 and parse_sse(r.content).done
    per_event, sized = server.journal.entries[-2:]
    assert [w.data for w in per_event.writes] == [e for e in re.split(rb"(?<=\n\n)", per_event.data) if e]
    assert len(per_event.writes) == len(parse_sse(per_event.data).events) > 40
    assert all(0 < len(w.data) <= 16 for w in sized.writes) and len(sized.writes) >= len(sized.data) // 16


# -- raw steps -----------------------------------------------------------------------------------


async def test_a_raw_file_step_is_one_response_on_the_fast_path_and_a_write_per_event_on_the_plain(
    dshkit_mock_server: MockServerFactory, tmp_path: Any
) -> None:
    body = b"".join(b"data: {\"n\":%d}\n\n" % i for i in range(50)) + b"data: [DONE]\n\n"
    (tmp_path / "r.sse").write_bytes(body)
    for fast_path, writes in ((True, [body]), (False, [e for e in re.split(rb"(?<=\n\n)", body) if e])):
        server = await dshkit_mock_server(Script.of({"raw": {"file": str(tmp_path / "r.sse")}}), fast_path=fast_path)
        async with httpx.AsyncClient(timeout=5) as c:
            r = await c.post(server.url, json=chat())
        assert r.content == body
        assert [w.data for w in server.journal.last.writes] == writes


# -- keep-alives before the first byte (S17, S21) ------------------------------------------------


async def test_a_first_byte_delay_is_filled_with_keep_alives_then_the_answer(
    dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient
) -> None:
    """One filler every `keep_alive_interval_ms` until `first_byte_delay_ms` has passed: SSE
    comments ahead of a stream, blank lines ahead of a whole JSON body."""
    timing = {"first_byte_delay_ms": 40, "keep_alive_interval_ms": 10}
    step = {"reply": {"content": "after the wait"}, "timing": timing}
    server = await dshkit_mock_server(Script.of(step, step))
    waited: list[tuple[httpx.Response, float]] = []
    for request in (chat(), chat(stream=False)):  # late is possible on a loaded machine, early never
        sent = time.monotonic()
        waited.append((await http.post(server.url, json=request), time.monotonic() - sent))
    (streamed, streamed_s), (whole, whole_s) = waited
    assert min(streamed_s, whole_s) >= 0.9 * timing["first_byte_delay_ms"] / 1000, waited
    parsed = parse_sse(streamed.content)
    assert streamed.content.startswith(b": keep-alive\n\n" * 4 + b"data: ")
    assert parsed.comments == ["keep-alive"] * 4 and reassemble(parsed.chunks)["content"] == "after the wait"
    assert whole.content.startswith(b"\n" * 4 + b"{")
    assert json.loads(whole.content)["choices"][0]["message"]["content"] == "after the wait"


# -- logged calls ----------------------------------------------------------------------------------


async def test_a_logged_call_is_filled_from_the_request_or_refused_when_it_drifted(
    dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient
) -> None:
    """`{{fromRequest:REGEX}}` takes its value from the live request's messages; a request that
    holds no match gets a 418 (a mock-side answer no client retries), not a guessed value."""
    step = {"chunks": {"chunks": [{"type": "text-delta", "index": 0, "text": "on {{fromRequest:goal-[0-9]+}}"},
                                  {"type": "finish", "reason": {"kind": "stop"}}]}}
    server = await dshkit_mock_server(Script.of(step, step), assert_all_requests_served=False)
    filled = await http.post(server.url, json=chat("work on goal-42"))
    drifted = await http.post(server.url, json=chat("no goal here"))
    assert reassemble(parse_sse(filled.content).chunks)["content"] == "on goal-42"
    assert drifted.status_code == 418
    error = drifted.json()["error"]
    assert error["code"] == "mock_replay_placeholder" and "goal-[0-9]+" in error["message"]
