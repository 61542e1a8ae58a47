"""The types of the pytest plugin's factory fixtures, apart from the plugin so that annotating
a test (`dshkit_mock_server: MockServerFactory`) or importing `mock_server` does not import
pytest: the fixtures themselves are in :mod:`dshkit.mock_server.pytest_plugin`.

Every factory returns a server that is already serving (on a thread of its own) and that can
also be awaited, so one fixture serves sync tests (`server = dshkit_mock_server()`) and async
tests (`server = await dshkit_mock_server()`) alike.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any, Protocol, Self

from dshkit.mock_server.server import MockServer, ScriptSource

__all__ = ["AwaitableMockServer", "MockServerFactory", "ReplayServerFactory", "SyncMockServerFactory"]


class AwaitableMockServer(MockServer):
    """A :class:`MockServer` the plugin's factories return, started or about to be.

    In a sync test it is already serving, from a thread of its own; in an async test the
    factory's `await` starts it on the test's event loop. Either way `await server` gives the
    server itself, so `dshkit_mock_server(...)` (sync) and `await dshkit_mock_server(...)`
    (async) both hand over a serving server.
    """

    __test__ = False
    on_started: Callable[[MockServer], None] | None = None
    """Called once the server is bound (the plugin sets the test's environment there)."""

    def __await__(self) -> Generator[Any, None, Self]:
        if self._port is None and self._thread is None:
            yield from self.start().__await__()
            if self.on_started is not None:
                self.on_started(self)
        return self

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError(
                "the server is not started: in an async test, await the fixture's factory "
                "(`server = await dshkit_mock_server(...)`); in a sync test, call it without await"
            )
        return self._port


class MockServerFactory(Protocol):
    """Starts a :class:`MockServer` with `MockServer`'s arguments; closed at teardown.

    Call it in a sync test (`server = dshkit_mock_server(...)`) or await it in an async test
    (`server = await dshkit_mock_server(...)`). Besides `MockServer`'s arguments it takes
    `check_consumed` (default False), `assert_all_requests_served` (default True) and `env`
    (default False); see docs/pytest_plugin.md.
    """

    def __call__(self, *scripts: ScriptSource, **options: Any) -> AwaitableMockServer: ...


class SyncMockServerFactory(Protocol):
    """Starts a :class:`MockServer` on its own thread, with `MockServer`'s arguments; closed at
    teardown. For sync tests: `server = dshkit_mock_server_sync(script)` (no `await`)."""

    def __call__(self, *scripts: ScriptSource, **options: Any) -> AwaitableMockServer: ...


class ReplayServerFactory(Protocol):
    """Starts a :class:`MockServer` replaying a cassette or session log; closed at teardown.
    Called in a sync test, or awaited in an async test."""

    def __call__(
        self,
        path: str | Path,
        *,
        speed: float = 0.0,
        resplit: int | None = None,
        match: str = "sequence",
        check_consumed: bool = True,
        **options: Any,
    ) -> AwaitableMockServer: ...
