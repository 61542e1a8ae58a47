"""Shared configuration of the conformance tests: the catalogue runs, played once per process."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from .catalogue_runs import ANTHROPIC_SHARDS, CHAT_SHARDS, CatalogueRuns


@pytest.fixture(scope="session")
def chat_runs() -> CatalogueRuns:
    """Every chat-protocol adapter's whole-catalogue run (the real two and every broken one), by shard."""
    return CatalogueRuns("chat", CHAT_SHARDS)


@pytest.fixture(scope="session")
def anthropic_runs() -> CatalogueRuns:
    """Every anthropic-protocol adapter's whole-catalogue run (the real two and every broken one)."""
    return CatalogueRuns("anthropic", ANTHROPIC_SHARDS)


@pytest.fixture
async def black_hole() -> AsyncIterator[str]:
    """Accepts every connection, reads nothing, answers nothing, until the test ends."""
    closing = asyncio.Event()
    writers: list[asyncio.StreamWriter] = []

    async def hold(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        await closing.wait()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    closing.set()
    for w in writers:
        w.close()
    server.close()
    await server.wait_closed()
