"""Fixtures for the mock server tests: an httpx client with short timeouts, a sync server factory."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from dshkit.mock_server import MockServer


@pytest_asyncio.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client that never waits long: every test bounds its own waits."""
    async with httpx.AsyncClient(timeout=httpx.Timeout(2.0, read=1.0)) as client:
        yield client


@pytest.fixture
def dshkit_mock_server_sync() -> Iterator[Callable[..., MockServer]]:
    """Sync factory: servers on background threads, for tests using blocking clients."""
    servers: list[MockServer] = []

    def factory(*scripts: Any, **options: Any) -> MockServer:
        server = MockServer(*scripts, **options).start_in_thread()
        servers.append(server)
        return server

    yield factory
    for server in reversed(servers):
        server.close_thread()
