"""A server that accepts every connection and never answers, for the checks that must end anyway."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

__all__ = ["black_hole"]


@contextlib.asynccontextmanager
async def black_hole() -> AsyncIterator[str]:
    """A server on the running loop that accepts every connection, reads nothing and answers
    nothing, until the block ends; yields its URL."""
    closing = asyncio.Event()
    writers: list[asyncio.StreamWriter] = []

    async def hold(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        await closing.wait()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        closing.set()
        for w in writers:
            w.close()
        server.close()
        await server.wait_closed()
