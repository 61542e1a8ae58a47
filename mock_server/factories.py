"""The types of the pytest plugin's factory fixtures, apart from the plugin so that annotating
a test (`dshkit_mock_server: MockServerFactory`) or importing `mock_server` does not import
pytest: the fixtures themselves are in :mod:`dshkit.mock_server.pytest_plugin`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from dshkit.mock_server.server import MockServer, ScriptSource

__all__ = ["MockServerFactory", "ReplayServerFactory", "SyncMockServerFactory"]


class MockServerFactory(Protocol):
    """Starts a :class:`MockServer` with `MockServer`'s arguments; closed at teardown."""

    async def __call__(self, *scripts: ScriptSource, **options: Any) -> MockServer: ...


class SyncMockServerFactory(Protocol):
    """Starts a :class:`MockServer` on its own thread, with `MockServer`'s arguments; closed at
    teardown. For sync tests: `server = dshkit_mock_server_sync(script)` (no `await`)."""

    def __call__(self, *scripts: ScriptSource, **options: Any) -> MockServer: ...


class ReplayServerFactory(Protocol):
    """Starts a :class:`MockServer` replaying a cassette or session log; closed at teardown."""

    async def __call__(
        self,
        path: str | Path,
        *,
        speed: float = 0.0,
        resplit: int | None = None,
        match: str = "sequence",
        check_consumed: bool = True,
        **options: Any,
    ) -> MockServer: ...
