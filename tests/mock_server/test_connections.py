"""Connection-level defences: the listen backlog and the header/idle/body timeouts."""

from __future__ import annotations

import asyncio
import contextlib
import json
import selectors
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from dshkit.mock_server import MockServer, Script

from ..together import Played, play_together

CLIENTS = 400
BODY = json.dumps({"model": "deepseek-chat", "messages": [{"role": "user", "content": "hi"}]}).encode()


def connect_all(port: int, n: int, timeout: float = 3.0) -> tuple[int, list[socket.socket]]:
    """Open `n` non-blocking connections while the server accepts none (its loop is busy in
    this very call), and return how many the kernel completed and the sockets.

    A connection completes only if the listen queue has room for it: past the backlog the
    kernel drops the SYN and the socket stays unconnected until the deadline.
    """
    socks: list[socket.socket] = []
    with selectors.DefaultSelector() as sel:
        for _ in range(n):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
            socks.append(s)
            sel.register(s, selectors.EVENT_WRITE)
        connected = 0
        deadline = time.monotonic() + timeout
        while connected < n and (left := deadline - time.monotonic()) > 0:
            for key, _ in sel.select(left):
                sel.unregister(key.fileobj)
                if key.fileobj.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:  # type: ignore[union-attr]
                    connected += 1
    return connected, socks


async def test_400_clients_connecting_at_once_are_all_queued() -> None:
    async with MockServer() as server:
        connected, socks = connect_all(server.port, CLIENTS)
        for s in socks:
            s.close()
        assert connected == CLIENTS, f"only {connected} of {CLIENTS} connections were queued"

        # And served: 400 concurrent requests, each answered.
        async def one() -> bytes:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(b"GET /models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = await reader.read()
            writer.close()
            return data

        async with asyncio.timeout(60):
            answers = await asyncio.gather(*(one() for _ in range(CLIENTS)))
    assert all(a.startswith(b"HTTP/1.1 200") for a in answers)


async def read_until_closed(reader: asyncio.StreamReader, limit: float = 10) -> bytes:
    """Everything the server sends until it closes; fails (not hangs) after `limit` seconds."""
    async with asyncio.timeout(limit):
        return await reader.read()


# The four exchanges below each wait out the server's idle timeout (or a scripted delay longer
# than it): played together once (`tests/together.py`), each test judges its own.


async def _slowloris() -> tuple[bytes, bytes, int]:
    async with MockServer(idle_timeout=0.3) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"POST /chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: app")
        partial = await read_until_closed(reader)
        writer.close()
        # A connection that never sends a byte is closed the same way.
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        silent = await read_until_closed(reader)
        writer.close()
        return partial, silent, len(server.journal)


async def _idle_keep_alive() -> bytes:
    async with MockServer(idle_timeout=0.3) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"POST /chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%b"
                     % (len(BODY), BODY))
        data = await read_until_closed(reader)
        writer.close()
    return data


async def _slow_body() -> tuple[bytes, str | None]:
    async with MockServer(idle_timeout=0.3) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"POST /chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%b"
                     % (len(BODY), BODY[:10]))
        data = await read_until_closed(reader)
        writer.close()
    return data, server.journal.last.outcome


async def _slow_response() -> bytes:
    script = Script.of({"reply": {"content": "late"}, "timing": {"headers_delay_ms": 900}})
    async with MockServer(script, idle_timeout=0.3) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"POST /chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                     b"Content-Length: %d\r\n\r\n%b" % (len(BODY), BODY))
        data = await read_until_closed(reader)
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
    return data


TIMED: dict[str, Callable[[], Awaitable[Any]]] = {
    "slowloris": _slowloris, "idle keep-alive": _idle_keep_alive, "slow body": _slow_body,
    "slow response": _slow_response,
}
timed_group = pytest.mark.xdist_group("connection_timeouts")


@pytest.fixture(scope="module")
def timed() -> Played[str, Any]:
    return play_together(TIMED)


@timed_group
def test_slowloris_partial_header_is_closed_after_the_timeout(timed: Played[str, Any]) -> None:
    partial, silent, requests = timed["slowloris"]
    assert partial == b""
    assert silent == b""  # a connection that never sent a byte
    assert requests == 0  # no request was ever complete


@timed_group
def test_idle_keep_alive_connection_is_closed_after_its_response(timed: Played[str, Any]) -> None:
    data = timed["idle keep-alive"]
    assert data.startswith(b"HTTP/1.1 200") and b'"You said: \\"hi\\""' in data


@timed_group
def test_slow_body_gets_408(timed: Played[str, Any]) -> None:
    data, outcome = timed["slow body"]
    head, _, rest = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408") and b"did not arrive within 0.3 s" in rest
    assert outcome == "rejected"


@timed_group
def test_a_slow_response_is_not_cut_by_the_idle_timeout(timed: Played[str, Any]) -> None:
    """The timeout guards request heads and bodies, never the server's own (scripted) delays."""
    data = timed["slow response"]
    assert data.startswith(b"HTTP/1.1 200") and b"late" in data
