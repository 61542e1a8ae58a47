"""A stand-in upstream for tests: an aiohttp server on 127.0.0.1, port 0, that answers every path
with one handler (the recorder's upstream, a server the checks judge, a provider that fails).

Handlers parked on an event are cancelled when the server closes (`handler_cancellation`), and
closing waits at most a tenth of a second for them, so a test that leaves one parked still ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from aiohttp import web

__all__ = ["Handler", "upstream"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def upstream(handler: Handler) -> AsyncIterator[str]:
    """A server answering every request on every path with `handler`; yields its base URL."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app, shutdown_timeout=0.1, handler_cancellation=True)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()
