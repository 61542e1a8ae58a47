"""A small aiohttp server on 127.0.0.1:0 that serves raw bytes, for the adapter tests of every
provider.

Each test gives a handler; the fixture records every request (path, headers, body) and, at
teardown, sets `release` so handlers parked on it finish, then closes the server.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest_asyncio
from aiohttp import web
from aiohttp.test_utils import TestServer

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class RawServer:
    release: asyncio.Event = field(default_factory=asyncio.Event)
    requests: list[Received] = field(default_factory=list)
    _servers: list[TestServer] = field(default_factory=list)

    async def serve(self, handler: Handler) -> str:
        """Start a server answering every POST with `handler`; returns its base URL."""

        async def recording(request: web.Request) -> web.StreamResponse:
            body = await request.read()
            self.requests.append(
                Received(request.method, request.path, {k.lower(): v for k, v in request.headers.items()}, body)
            )
            return await handler(request)

        app = web.Application()
        app.router.add_route("POST", "/{tail:.*}", recording)
        server = TestServer(app, host="127.0.0.1", port=0)
        await server.start_server()
        self._servers.append(server)
        return str(server.make_url("")).rstrip("/")


@pytest_asyncio.fixture
async def raw_server() -> AsyncIterator[RawServer]:
    state = RawServer()
    try:
        yield state
    finally:
        state.release.set()
        for server in reversed(state._servers):
            await server.close()


def body(data: bytes, status: int = 200, headers: dict[str, str] | None = None, content_type: str = "text/event-stream") -> Handler:
    """A handler answering with fixed bytes."""

    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(status=status, body=data, headers={"Content-Type": content_type, **(headers or {})})

    return handler


def pieces(
    parts: list[bytes],
    *,
    headers: dict[str, str] | None = None,
    then: Callable[[web.Request, web.StreamResponse], Awaitable[None]] | None = None,
) -> Handler:
    """A handler streaming `parts` as separate writes, then running `then` (e.g. park or reset)."""

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream", **(headers or {})})
        await response.prepare(request)
        for part in parts:
            await response.write(part)
        if then is not None:
            await then(request, response)
        await response.write_eof()
        return response

    return handler
