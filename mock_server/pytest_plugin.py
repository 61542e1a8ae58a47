"""The pytest plugin (entry point `dshkit_mock_server`): fixtures over :class:`MockServer`.

Thin by design, like aiohttp's plugin: the machinery lives in :mod:`dshkit.mock_server.server`.
`dshkit_mock_server` is a factory fixture that starts servers on port 0 and closes them in
reverse at teardown; `mock_deepseek` is one server per test, loaded from the `dshkit_script`
marker. In a sync test the servers run on a background thread, so blocking clients (the sync
openai SDK) can reach them; in an async test they run on the test's loop. Apps on the sync
client can also use `mock_deepseek_sync` and `dshkit_mock_server_sync`: plain fixtures that
never touch an event loop of the test, so they behave the same under pytest-asyncio's strict and
auto modes (and without pytest-asyncio's configuration at all). Nothing is shared between tests
or xdist workers. After a passing test, `mock_deepseek` checks that every scripted step was used
(opt out with `@pytest.mark.dshkit_script(..., check_consumed=False)`).

The marker takes script files (relative to the test file) and inline scripts alike: a `Script`
(`Script.of(...)`), a list of steps, or a script mapping with `steps`.

The factories' types (`MockServerFactory`, ...) live in :mod:`dshkit.mock_server.factories`, so that
`import dshkit.mock_server` never imports pytest; pytest, pytest-asyncio and syrupy come with the
`pytest` extra (`pip install dshkit[pytest]`).

Record mode (`dshkit_cassette`, `--dshkit-record none|once|new_episodes|all`) replays a cassette
named after the test id, or records it through the recording proxy; see `dshkit.mock_server.record_mode`.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import AsyncIterator, Generator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from dshkit.mock_server.factories import (
    MockServerFactory,
    ReplayServerFactory,
    SyncMockServerFactory,
)
from dshkit.mock_server.scripts import Script, ScriptError, parse_script
from dshkit.mock_server.server import MockServer, ScriptSource

__all__ = [
    "CASSETTE_MARKER",
    "MARKER",
    "MockServerFactory",
    "ReplayServerFactory",
    "SyncMockServerFactory",
    "dshkit_cassette",
    "dshkit_mock_server",
    "dshkit_mock_server_sync",
    "dshkit_replay",
    "marker_scripts",
    "mock_deepseek",
    "mock_deepseek_sync",
]

MARKER = "dshkit_script"
CASSETTE_MARKER = "dshkit_cassette"
_CALL_REPORT = pytest.StashKey[pytest.TestReport]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dshkit", "dshkit mock server and record mode")
    group.addoption(
        "--dshkit-record", choices=["none", "once", "new_episodes", "all"], default=None,
        help="record mode of dshkit_cassette: none (replay only; the default), once (record missing "
             "cassettes), new_episodes (replay known requests, record new ones), all (record again)",
    )
    group.addoption(
        "--dshkit-record-upstream", metavar="URL", default=None,
        help="endpoint to record from (default: $DSHKIT_RECORD_UPSTREAM); the app's own API key is forwarded "
             "and scrubbed from the cassette",
    )
    parser.addini("dshkit_record_mode", "default record mode of dshkit_cassette (none)", default="none")
    parser.addini("dshkit_cassette_dir", "folder of cassettes, beside each test file (cassettes)",
                  default="cassettes")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{CASSETTE_MARKER}(name=None, *, upstream=None): the cassette of the `dshkit_cassette` "
        "fixture (default name: from the test id) and the endpoint to record it from",
    )
    config.addinivalue_line(
        "markers",
        f"{MARKER}(*scripts, **options): scripts for the `mock_deepseek` fixtures: files "
        "(relative to the test file), Script objects (Script.of(...)), lists of steps or "
        "script mappings; options are MockServer keyword arguments (sequence=, api_key=, "
        "seed=, ...) plus check_consumed=False",
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


def marker_scripts(request: pytest.FixtureRequest) -> tuple[list[ScriptSource], dict[str, Any]]:
    """The `dshkit_script` marker's scripts and MockServer options for this test.

    Positional arguments: a path (str or PathLike, relative to the test file), a `Script`, a list
    of steps, or a mapping holding a whole script (`{"steps": [...], ...}`). Anything else, or an
    invalid inline script, raises `ScriptError` naming the test and the argument.
    """
    marker = request.node.get_closest_marker(MARKER)
    if marker is None:
        return [], {}
    base = Path(str(request.node.fspath)).parent
    sources: list[ScriptSource] = []
    for number, arg in enumerate(marker.args, 1):
        where = f"@pytest.mark.{MARKER} argument {number} of {request.node.nodeid}"
        if isinstance(arg, Script):
            sources.append(arg)
        elif isinstance(arg, str | os.PathLike):
            path = Path(arg)
            sources.append(path if path.is_absolute() else base / path)
        elif isinstance(arg, Sequence | Mapping):
            sources.append(parse_script(list(arg) if isinstance(arg, Sequence) else dict(arg),
                                        source=where, default_name=f"inline-{number}"))
        else:
            raise ScriptError(
                f"{arg!r} ({type(arg).__name__}) is not a script",
                source=where,
                hint="pass a file path, Script.of(...), a list of steps or a mapping with steps",
            )
    options = dict(marker.kwargs)
    known = {*inspect.signature(MockServer.__init__).parameters} - {"self", "scripts"} | {"check_consumed"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(
            f"@pytest.mark.{MARKER} of {request.node.nodeid}: unknown option(s) {', '.join(unknown)}; "
            f"it takes scripts, check_consumed= and MockServer's options: {', '.join(sorted(known - {'check_consumed'}))}"
        )
    return sources, options


def _check_after_pass(request: pytest.FixtureRequest, server: MockServer, check: bool) -> None:
    report = request.node.stash.get(_CALL_REPORT, None)
    if check and report is not None and report.passed:
        server.assert_consumed()


@pytest_asyncio.fixture
async def mock_deepseek(
    request: pytest.FixtureRequest, dshkit_mock_server: MockServerFactory
) -> AsyncIterator[MockServer]:
    """One mock DeepSeek server for this test, with the `dshkit_script` marker's scripts."""
    scripts, options = marker_scripts(request)
    check = options.pop("check_consumed", True)
    server = await dshkit_mock_server(*scripts, **options)
    yield server
    _check_after_pass(request, server, check)


@pytest.fixture
def dshkit_mock_server_sync() -> Iterator[SyncMockServerFactory]:
    """Factory fixture for sync tests: `server = dshkit_mock_server_sync(script, ...)` starts a
    server on its own thread (its own loop), so the sync openai client can call it."""
    servers: list[MockServer] = []

    def factory(*scripts: ScriptSource, **options: Any) -> MockServer:
        server = MockServer(*scripts, **options).start_in_thread()
        servers.append(server)
        return server

    yield factory
    for server in reversed(servers):
        server.close_thread()


@pytest.fixture
def mock_deepseek_sync(
    request: pytest.FixtureRequest, dshkit_mock_server_sync: SyncMockServerFactory
) -> Iterator[MockServer]:
    """`mock_deepseek` for sync tests, as a plain fixture: the server runs on its own thread and
    no event loop of the test is involved (any pytest-asyncio mode, or none)."""
    scripts, options = marker_scripts(request)
    check = options.pop("check_consumed", True)
    server = dshkit_mock_server_sync(*scripts, **options)
    yield server
    _check_after_pass(request, server, check)


@pytest_asyncio.fixture
async def dshkit_replay(
    request: pytest.FixtureRequest, dshkit_mock_server: MockServerFactory
) -> AsyncIterator[ReplayServerFactory]:
    """Factory fixture: `server = await dshkit_replay("recordings/NAME", speed=0)` serves a
    cassette byte for byte (or a session log as SSE, plain or zstd-compressed, told by its bytes:
    DSH's `session.jsonl.zstd` as it is). Relative paths resolve against the test
    file's folder, then the working directory. `speed` defaults to 0 (no recorded waits) in
    tests; pass 1 for recorded timing. After a passing test every recorded exchange must have
    been used (`check_consumed=False` to opt out)."""
    from dshkit.mock_server.replay import replay_scripts

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
    for server in checked:
        _check_after_pass(request, server, True)


@pytest.fixture
def dshkit_cassette(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Record mode, as in pytest-recording: point the app's client at `dshkit_cassette.base_url`.

    The cassette is `<test folder>/cassettes/<module>/<test name>.cassette.jsonl` (or the marker's
    name, relative to the test file); `--dshkit-record` decides whether it is replayed or recorded
    (`dshkit.mock_server.record_mode`). After a passing test every replayed exchange must have been used
    in modes none and once.
    """
    import os

    from dshkit.mock_server.record_mode import (
        RECORD_MODES,
        CassetteMissing,
        default_cassette_path,
        start_cassette_run,
    )

    config = request.config
    mode = config.getoption("--dshkit-record") or config.getini("dshkit_record_mode") or "none"
    if mode not in RECORD_MODES:
        pytest.fail(f"dshkit_record_mode = {mode!r} is not one of {', '.join(RECORD_MODES)}", pytrace=False)
    marker = request.node.get_closest_marker(CASSETTE_MARKER)
    test_file = Path(str(request.node.fspath))
    name = (marker.args[0] if marker and marker.args else None) or (marker.kwargs.get("name") if marker else None)
    if name is not None and not isinstance(name, str | os.PathLike):
        raise TypeError(
            f"@pytest.mark.{CASSETTE_MARKER} of {request.node.nodeid}: the cassette name must be a str or "
            f"path relative to the test file, got {name!r} ({type(name).__name__})"
        )
    path = (test_file.parent / name if name else
            default_cassette_path(test_file, request.node.nodeid, str(config.getini("dshkit_cassette_dir"))))
    upstream = ((marker.kwargs.get("upstream") if marker else None)
                or config.getoption("--dshkit-record-upstream") or os.environ.get("DSHKIT_RECORD_UPSTREAM"))
    try:
        run = start_cassette_run(path, mode, upstream=upstream)
    except (CassetteMissing, ValueError) as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield run
    finally:
        run.close()
    if run.server is not None and mode in ("none", "once"):
        _check_after_pass(request, run.server, True)
