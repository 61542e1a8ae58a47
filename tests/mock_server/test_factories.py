"""`AwaitableMockServer`, what the plugin's factories return: awaited, it starts on the running
loop once and tells `on_started`; already serving (a sync test's thread), awaiting it starts
nothing; asked for its port before either, it says how to start it."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from dshkit.mock_server import MockServer, Script
from dshkit.mock_server.factories import AwaitableMockServer


async def test_awaiting_starts_the_server_once_on_the_running_loop(http: httpx.AsyncClient) -> None:
    serving_loops: list[asyncio.AbstractEventLoop] = []  # the loop each telemetry event is sent from

    def seen(event: dict[str, Any]) -> None:
        serving_loops.append(asyncio.get_running_loop())

    server = AwaitableMockServer(Script.replies("awaited"), on_event=seen)
    started: list[MockServer] = []
    server.on_started = started.append
    with pytest.raises(RuntimeError, match=r"await the fixture's factory \(`server = await dshkit_mock_server"):
        server.port  # noqa: B018 (the property raises)
    try:
        assert await server is server
        assert await server is server  # a second await neither restarts nor tells again
        assert started == [server]
        r = await http.post(server.url, json={"model": "deepseek-chat", "messages": [{"role": "user", "content": "x"}],
                                              "stream": False})
        assert r.json()["choices"][0]["message"]["content"] == "awaited"
        assert serving_loops and set(serving_loops) == {asyncio.get_running_loop()}  # served from this loop
    finally:
        await server.close()


async def test_a_server_already_serving_from_its_thread_is_handed_over_as_it_is() -> None:
    server = AwaitableMockServer()
    started: list[MockServer] = []
    server.on_started = started.append
    server.start_in_thread()
    try:
        port = server.port
        assert await server is server
        assert server.port == port and started == []
    finally:
        server.close_thread()
