"""Fixtures for the mock server tests: an httpx client with patient timeouts, a sync server factory."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from dshkit.mock_server import MockServer


@pytest_asyncio.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client for answers that end on their own: its timeouts only bound a hang, so
    they are patient (a loaded machine can pause a response for seconds). A test that waits on
    silence on purpose sets its own short timeout."""
    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0)) as client:
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
