"""The pytest plugin (entry point `dshkit_mock_server`): fixtures over :class:`MockServer`.

Thin by design, like aiohttp's plugin: the machinery lives in :mod:`mock_server.server`.
`dshkit_mock_server` is a factory fixture that starts servers on port 0 and closes them in
reverse at teardown; `mock_deepseek` is one server per test, loaded from the `dshkit_script`
marker. In a sync test the servers run on a background thread, so blocking clients (the sync
openai SDK) can reach them; in an async test they run on the test's loop. Nothing is shared
between tests or xdist workers. After a passing test, `mock_deepseek` checks that every
scripted step was used (opt out with `@pytest.mark.dshkit_script(..., check_consumed=False)`).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Generator
from pathlib import Path
from typing import Any, Protocol

import pytest
import pytest_asyncio

from mock_server.server import MockServer, ScriptSource

__all__ = [
    "MARKER",
    "MockServerFactory",
    "ReplayServerFactory",
    "dshkit_mock_server",
    "dshkit_replay",
    "mock_deepseek",
]

MARKER = "dshkit_script"
_CALL_REPORT = pytest.StashKey[pytest.TestReport]()


class MockServerFactory(Protocol):
    """Starts a :class:`MockServer` with `MockServer`'s arguments; closed at teardown."""

    async def __call__(self, *scripts: ScriptSource, **options: Any) -> MockServer: ...


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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(*paths, **options): script files (relative to the test file) for the "
        "`mock_deepseek` fixture; options are MockServer keyword arguments (sequence=, "
        "api_key=, seed=, ...) plus check_consumed=False",
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[_CALL_REPORT] = report
    return report


def _is_async_test(request: pytest.FixtureRequest) -> bool:
    fn = getattr(request.node, "obj", None)
    return inspect.iscoroutinefunction(fn)


@pytest_asyncio.fixture
async def dshkit_mock_server(request: pytest.FixtureRequest) -> AsyncIterator[MockServerFactory]:
    """Factory fixture: `server = await dshkit_mock_server(script, sequence=..., ...)`."""
    threaded = not _is_async_test(request)
    servers: list[MockServer] = []

    async def factory(*scripts: ScriptSource, **options: Any) -> MockServer:
        server = MockServer(*scripts, **options)
        if threaded:
            await asyncio.to_thread(server.start_in_thread)
        else:
            await server.start()
        servers.append(server)
        return server

    yield factory
    for server in reversed(servers):
        if threaded:
            await asyncio.to_thread(server.close_thread)
        else:
            await server.close()


@pytest_asyncio.fixture
async def mock_deepseek(
    request: pytest.FixtureRequest, dshkit_mock_server: MockServerFactory
) -> AsyncIterator[MockServer]:
    """One mock DeepSeek server for this test, with the `dshkit_script` marker's scripts."""
    marker = request.node.get_closest_marker(MARKER)
    paths: list[ScriptSource] = []
    options: dict[str, Any] = {}
    if marker is not None:
        base = Path(str(request.node.fspath)).parent
        for p in marker.args:
            path = Path(p)
            paths.append(path if path.is_absolute() else base / path)
        options = dict(marker.kwargs)
    check = options.pop("check_consumed", True)
    server = await dshkit_mock_server(*paths, **options)
    yield server
    report = request.node.stash.get(_CALL_REPORT, None)
    if check and report is not None and report.passed:
        server.assert_consumed()


@pytest_asyncio.fixture
async def dshkit_replay(
    request: pytest.FixtureRequest, dshkit_mock_server: MockServerFactory
) -> AsyncIterator[ReplayServerFactory]:
    """Factory fixture: `server = await dshkit_replay("recordings/NAME", speed=0)` serves a
    cassette byte for byte (or a session JSONL as SSE). Relative paths resolve against the test
    file's folder, then the working directory. `speed` defaults to 0 (no recorded waits) in
    tests; pass 1 for recorded timing. After a passing test every recorded exchange must have
    been used (`check_consumed=False` to opt out)."""
    from mock_server.replay import replay_scripts

    checked: list[MockServer] = []

    async def factory(
        path: str | Path,
        *,
        speed: float = 0.0,
        resplit: int | None = None,
        match: str = "sequence",
        check_consumed: bool = True,
        **options: Any,
    ) -> MockServer:
        p = Path(path)
        if not p.is_absolute():
            here = Path(str(request.node.fspath)).parent / p
            if here.exists() or here.with_name(here.name + ".cassette.jsonl").exists():
                p = here
        scripts = replay_scripts(p, speed=speed, resplit=resplit, match=match)  # type: ignore[arg-type]
        server = await dshkit_mock_server(*scripts, **options)
        if check_consumed:
            checked.append(server)
        return server

    yield factory
    report = request.node.stash.get(_CALL_REPORT, None)
    if report is not None and report.passed:
        for server in checked:
            server.assert_consumed()
