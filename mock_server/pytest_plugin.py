"""The pytest plugin (entry point `dshkit_mock_server`): fixtures over :class:`MockServer`.

Thin by design, like aiohttp's plugin: the machinery lives in :mod:`dshkit.mock_server.server`.
The plugin loads with nothing but pytest installed (pytest-asyncio, from the `pytest` extra, is
optional). Every fixture serves sync and async tests: in a sync test each server serves from a
thread of its own with its own loop, so blocking clients (the sync openai SDK) reach it; in an
async test that pytest-asyncio runs, the fixtures are pytest-asyncio's and the servers serve on
the test's own loop, so a response the client has read is fully journaled. Without
pytest-asyncio the fixtures are plain ones on threads, and an async test using one is told what
to install. A factory returns a started server that can also be awaited:
`dshkit_mock_server(...)` in a sync test, `await dshkit_mock_server(...)` in an async one. The
`_sync` twins are plain fixtures whose servers stay on threads in every test.

`mock_deepseek` is one server per test, loaded from the `dshkit_script` marker (files relative to
the test file, `Script` objects, lists of steps, script mappings). After a passing test the
plugin checks, for each server it started:

* that every scripted step was used (`mock_deepseek`, `dshkit_replay`; `check_consumed=False`
  turns it off), and
* that the mock rejected no request as unscripted (a 418: no step matched, the script was used
  up, no script was left, a reply callback failed); the application may have swallowed that
  error, the test still fails, naming the request and why (`assert_all_requests_served=False`
  turns it off).

`env=True` (marker or factory keyword) points `OPENAI_BASE_URL`, `DEEPSEEK_BASE_URL` and
`ANTHROPIC_BASE_URL` (and their `*_API_KEY`s) at the server for the test, restored afterwards;
`reply=fn` adds a script whose every request `fn` answers from the request. Nothing is shared between tests or xdist workers. docs/pytest_plugin.md lists every fixture,
marker argument, ini option and flag.

Nothing but pytest is imported when the plugin loads: the server and its dependencies load with
the first fixture that needs them. Record mode (`dshkit_cassette`, `--dshkit-record`) replays a
cassette named after the test id, or records it through the recording proxy; see
`dshkit.mock_server.record_mode`.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

try:  # the `pytest` extra; without it the plugin still loads, its fixtures on threads
    import pytest_asyncio
except ImportError:
    pytest_asyncio = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from dshkit.mock_server.factories import (
        AwaitableMockServer,
        MockServerFactory,
        ReplayServerFactory,
        SyncMockServerFactory,
    )
    from dshkit.mock_server.scripts import Script
    from dshkit.mock_server.server import MockServer, ScriptSource

__all__ = [
    "CASSETTE_MARKER",
    "ENV_KEYS",
    "MARKER",
    "PLUGIN_OPTIONS",
    "MockServerFactory",
    "ReplayServerFactory",
    "SyncMockServerFactory",
    "callback_script",
    "dshkit_cassette",
    "dshkit_mock_server",
    "dshkit_mock_server_sync",
    "dshkit_replay",
    "marker_scripts",
    "mock_deepseek",
    "mock_deepseek_sync",
    "server_environment",
]

MARKER = "dshkit_script"
CASSETTE_MARKER = "dshkit_cassette"
INSTALL_HINT = "pip install 'dshkit[pytest]'"
PLUGIN_OPTIONS: dict[str, str] = {
    "check_consumed": "fail the test when a scripted step was never used (default: True for "
                      "mock_deepseek and dshkit_replay, False for dshkit_mock_server)",
    "assert_all_requests_served": "fail the test when the mock rejected a request as unscripted "
                                  "(418: no step matched, script used up, no script left; default True)",
    "env": "set OPENAI_/DEEPSEEK_/ANTHROPIC_ BASE_URL and API_KEY to this server for the test "
           "(default False)",
    "reply": "a function of the request (RequestView) whose result answers every request of one "
             "more script: reply text, a step mapping or a step model",
}
"""The keywords the plugin takes besides `MockServer`'s own, in the marker and the factories."""
DUMMY_KEY = "sk-dshkit-test"
"""The API key `env=True` sets when the server takes any key."""
_CALL_REPORT = pytest.StashKey[pytest.TestReport]()
_FACTORY_TYPES = ("AwaitableMockServer", "MockServerFactory", "ReplayServerFactory", "SyncMockServerFactory")


def __getattr__(name: str) -> Any:
    # The factory types stay importable from here without loading the server with the plugin.
    if name in _FACTORY_TYPES:
        from dshkit.mock_server import factories

        return getattr(factories, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
        f"{CASSETTE_MARKER}(name=None, *, upstream=None, record_mode=None, match_on=None, scrub=(), "
        "all_played=False): the cassette of the `dshkit_cassette` fixture (default name: from the "
        "test id), the endpoint to record it from, this test's record mode, how requests match "
        "recorded exchanges (names: method, path, model, messages, tools, body; or callables), "
        "extra regexes to scrub, and whether every recorded exchange must be requested",
    )
    config.addinivalue_line(
        "markers",
        f"{MARKER}(*scripts, **options): scripts for the `mock_deepseek` fixtures: files "
        "(relative to the test file), Script objects (Script.of(...)), lists of steps or "
        "script mappings; options are MockServer keyword arguments (sequence=, api_key=, "
        "seed=, ...) plus check_consumed=False, assert_all_requests_served=False, env=True and "
        "reply=FUNCTION (see docs/pytest_plugin.md)",
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[_CALL_REPORT] = report
    return report


# -- the test's kind -------------------------------------------------------------------------


def _is_async_test(request: pytest.FixtureRequest) -> bool:
    fn = getattr(request.node, "obj", None)
    return inspect.iscoroutinefunction(fn)


def _require_async_runner(request: pytest.FixtureRequest) -> None:
    """An async test needs a plugin that runs it; say which to install before pytest's own,
    vaguer "async def functions are not natively supported" message."""
    if not _is_async_test(request):
        return
    config = request.config
    if config.pluginmanager.hasplugin("asyncio"):
        return
    if request.node.get_closest_marker("anyio") or request.node.get_closest_marker("trio"):
        return
    pytest.fail(
        f"{request.node.nodeid} is an async test using {request.fixturename}, and no plugin runs "
        f"async tests here: install pytest-asyncio ({INSTALL_HINT}), or make the test a plain "
        "`def` (every dshkit fixture serves sync tests too)",
        pytrace=False,
    )


def _passed(request: pytest.FixtureRequest) -> bool:
    report = request.node.stash.get(_CALL_REPORT, None)
    return report is not None and report.passed


# -- the plugin's own options (marker keywords and factory keywords) --------------------------


@dataclass(frozen=True, slots=True)
class _Checks:
    """What the plugin does around one server, from the keywords in `PLUGIN_OPTIONS`."""

    check_consumed: bool
    assert_all_requests_served: bool = True
    env: bool = False
    reply: Callable[[Any], Any] | None = None


def _split_options(options: dict[str, Any], *, check_consumed: bool, where: str) -> tuple[dict[str, Any], _Checks]:
    """`MockServer`'s keywords, and the plugin's own (`PLUGIN_OPTIONS`) as :class:`_Checks`.

    The one place that reads the plugin's keywords, for the marker and for the factories alike.
    """
    server_options = dict(options)
    own: dict[str, Any] = {"check_consumed": check_consumed}
    for name in PLUGIN_OPTIONS:
        if name not in server_options:
            continue
        value = server_options.pop(name)
        if name == "reply":
            if not callable(value):
                raise TypeError(f"{where}: reply must be a function of the request, got {value!r}")
        elif not isinstance(value, bool):
            raise TypeError(f"{where}: {name} must be True or False, got {value!r}")
        own[name] = value
    return server_options, _Checks(**own)


def callback_script(fn: Callable[[Any], Any]) -> Script:
    """A script answering every request of its session with what `fn` computes from it (reply
    text, a step mapping or a step model; see `CallbackStep`): what the plugin's `reply=fn`
    keyword adds to a server."""
    from dshkit.mock_server.scripts import Script

    return Script.of({"call": fn}, repeat_last=True, name=getattr(fn, "__name__", "callback"))


def marker_scripts(request: pytest.FixtureRequest) -> tuple[list[ScriptSource], dict[str, Any]]:
    """The `dshkit_script` marker's scripts and MockServer options for this test.

    Positional arguments: a path (str or PathLike, relative to the test file), a `Script`, a list
    of steps, or a mapping holding a whole script (`{"steps": [...], ...}`). Anything else, or an
    invalid inline script, raises `ScriptError` naming the test and the argument. The options
    include the plugin's own keywords (`PLUGIN_OPTIONS`).
    """
    from dshkit.mock_server.server import MockServer, _script_of

    marker = request.node.get_closest_marker(MARKER)
    if marker is None:
        return [], {}
    base = Path(str(request.node.fspath)).parent
    sources: list[ScriptSource] = []
    for number, arg in enumerate(marker.args, 1):
        if isinstance(arg, str | os.PathLike):  # loaded by the server, relative to the test file
            path = Path(arg)
            sources.append(path if path.is_absolute() else base / path)
        else:
            where = f"@pytest.mark.{MARKER} argument {number} of {request.node.nodeid}"
            sources.extend(_script_of(arg, where, f"inline-{number}"))

    options = dict(marker.kwargs)
    known = {*inspect.signature(MockServer.__init__).parameters} - {"self", "scripts"} | {"check_consumed", *PLUGIN_OPTIONS}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(
            f"@pytest.mark.{MARKER} of {request.node.nodeid}: unknown option(s) {', '.join(unknown)}; "
            f"it takes scripts, check_consumed= and MockServer's options: {', '.join(sorted(known - {'check_consumed'}))}"
        )
    return sources, options


# -- the environment an app builds its own client from ----------------------------------------

ENV_KEYS = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "DEEPSEEK_BASE_URL", "DEEPSEEK_API_KEY",
            "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")
"""The variables `env=True` sets for a test (and restores after it)."""


def server_environment(server: MockServer) -> dict[str, str]:
    """The variables that point the openai, DeepSeek and anthropic clients at `server`.

    `OPENAI_BASE_URL` ends in `/v1` (as the openai SDK's default does; the mock serves both),
    `DEEPSEEK_BASE_URL` is the bare base URL (as DeepSeek documents it), `ANTHROPIC_BASE_URL` is
    the Anthropic surface (`/anthropic`; the SDK appends `/v1/messages`). The keys are the
    server's `api_key`, or a dummy when it takes any key.
    """
    key = server.config.api_key or DUMMY_KEY
    return {
        "OPENAI_BASE_URL": server.base_url + "/v1",
        "OPENAI_API_KEY": key,
        "DEEPSEEK_BASE_URL": server.base_url,
        "DEEPSEEK_API_KEY": key,
        "ANTHROPIC_BASE_URL": server.anthropic_base_url,
        "ANTHROPIC_API_KEY": key,
    }


# -- the servers one test started ------------------------------------------------------------


def _rejections(server: MockServer) -> list[str]:
    """Each request the server answered with its 418 (nothing scripted could answer it)."""
    out = []
    for entry in server.journal.entries:
        if entry.status != 418:
            continue
        error = entry.error or {}
        why = str(error.get("message") or entry.behavior or "rejected")
        prompt = ""
        body = entry.body
        if isinstance(body, dict) and isinstance(body.get("messages"), list):
            users = [m for m in body["messages"] if isinstance(m, dict) and m.get("role") == "user"]
            if users:
                content = users[-1].get("content")
                text = content if isinstance(content, str) else repr(content)
                prompt = f", last user message {text[:80]!r}"
        out.append(f"request {entry.seq}: {entry.method} {entry.path} (session {entry.session!r}"
                   f"{prompt}) got 418 {error.get('code', '')}: {why}")
    return out


class _Servers:
    """The servers one test started, with what to check after it; closed in reverse order.

    In an async test run by pytest-asyncio the servers serve on the test's own loop (started
    when the factory is awaited), so a response the client has read is fully journaled; in a
    sync test each serves from a thread of its own.
    """

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self.request = request
        self.on_loop = _runs_on_pytest_asyncio(request)
        self.started: list[tuple[MockServer, _Checks]] = []
        self.saved_env: list[dict[str, str | None]] = []

    def start(self, scripts: Sequence[ScriptSource], options: dict[str, Any], checks: _Checks) -> AwaitableMockServer:
        from dshkit.mock_server.factories import AwaitableMockServer

        sources = [*scripts, callback_script(checks.reply)] if checks.reply is not None else list(scripts)
        server = AwaitableMockServer(*sources, **options)
        self.started.append((server, checks))
        if checks.env:
            server.on_started = self._set_env
        if not self.on_loop:
            server.start_in_thread()
            if checks.env:
                self._set_env(server)
        return server

    def _set_env(self, server: MockServer) -> None:
        values = server_environment(server)
        self.saved_env.append({k: os.environ.get(k) for k in values})
        os.environ.update(values)

    def _restore_env(self) -> None:
        for saved in reversed(self.saved_env):
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        self.saved_env.clear()

    def close(self) -> None:
        """Close the servers on threads (a sync test's)."""
        self._restore_env()
        for server, _ in reversed(self.started):
            server.close_thread()

    async def aclose(self) -> None:
        """Close every server: those on the test's loop here, those on threads off the loop."""
        import asyncio

        self._restore_env()
        for server, _ in reversed(self.started):
            if server._thread is not None:
                await asyncio.to_thread(server.close_thread)
            else:
                await server.close()

    def check(self) -> None:
        """After a passing test: fail naming every rejected request and every unused step."""
        if not _passed(self.request):
            return
        problems: list[str] = []
        for server, checks in self.started:
            if server._port is None:
                continue  # never started (an async test that did not await the factory)
            if checks.assert_all_requests_served:
                rejected = _rejections(server)
                if rejected:
                    problems.append(
                        f"the mock server at {server.base_url} rejected {len(rejected)} request(s) "
                        "that no script step could answer (the application may have swallowed "
                        "the error):\n  " + "\n  ".join(rejected)
                        + "\n(add steps for them, or pass assert_all_requests_served=False to "
                        "the dshkit_script marker or the factory if the test expects them)"
                    )
            if checks.check_consumed:
                try:
                    server.assert_consumed()
                except AssertionError as exc:
                    problems.append(str(exc))
        if problems:
            pytest.fail("\n".join(problems), pytrace=False)


def _runs_on_pytest_asyncio(request: pytest.FixtureRequest) -> bool:
    """True for an async test pytest-asyncio runs (not one marked for anyio or trio)."""
    return (
        pytest_asyncio is not None
        and _is_async_test(request)
        and request.node.get_closest_marker("anyio") is None
        and request.node.get_closest_marker("trio") is None
    )


def _factory(request: pytest.FixtureRequest, servers: _Servers) -> MockServerFactory:
    def factory(*scripts: ScriptSource, **options: Any) -> AwaitableMockServer:
        server_options, checks = _split_options(options, check_consumed=False, where="dshkit_mock_server")
        return servers.start(scripts, server_options, checks)

    return factory


def _marker_server(request: pytest.FixtureRequest, servers: _Servers) -> AwaitableMockServer:
    scripts, options = marker_scripts(request)
    server_options, checks = _split_options(
        options, check_consumed=True, where=f"@pytest.mark.{MARKER} of {request.node.nodeid}")
    return servers.start(scripts, server_options, checks)


def _replay_factory(request: pytest.FixtureRequest, servers: _Servers) -> ReplayServerFactory:
    def factory(
        path: str | Path,
        *,
        speed: float = 0.0,
        resplit: int | None = None,
        match: str = "sequence",
        check_consumed: bool = True,
        **options: Any,
    ) -> AwaitableMockServer:
        from dshkit.mock_server.replay import replay_scripts

        p = Path(path)
        if not p.is_absolute():
            here = Path(str(request.node.fspath)).parent / p
            if here.exists() or here.with_name(here.name + ".cassette.jsonl").exists():
                p = here
        scripts = replay_scripts(p, speed=speed, resplit=resplit, match=match)  # type: ignore[arg-type]
        server_options, checks = _split_options(
            {**options, "check_consumed": check_consumed}, check_consumed=True, where="dshkit_replay")
        return servers.start(scripts, server_options, checks)

    return factory


F = TypeVar("F", bound=Callable[..., Any])


def _doc(text: str) -> Callable[[F], F]:
    """Give a fixture function its docstring (shared by the two definitions below)."""

    def give(fn: F) -> F:
        fn.__doc__ = text
        return fn

    return give


_FACTORY_DOC = """Factory fixture: `server = dshkit_mock_server(script, sequence=..., ...)` in a sync
    test, `server = await dshkit_mock_server(...)` in an async one. Takes `MockServer`'s
    arguments and the plugin's `check_consumed` (False here), `assert_all_requests_served`
    (True), `env` (False) and `reply` (a function of the request); every server is closed at
    teardown."""
_MOCK_DOC = """One mock DeepSeek server for this test, loaded from the `dshkit_script` marker, for
    sync and async tests alike; after a passing test every scripted step must have been used
    and no request rejected (the marker's `check_consumed=False` and
    `assert_all_requests_served=False` turn these off)."""
_REPLAY_DOC = """Factory fixture: `server = dshkit_replay("recordings/NAME", speed=0)` (awaited in
    an async test) serves a cassette byte for byte (or a session log as SSE, plain or
    zstd-compressed, told by its bytes: DSH's `session.jsonl.zstd` as it is). Relative paths
    resolve against the test file's folder, then the working directory. `speed` defaults to 0
    (no recorded waits) in tests; pass 1 for recorded timing. After a passing test every
    recorded exchange must have been used (`check_consumed=False` to opt out)."""


if pytest_asyncio is not None:
    # Async fixtures, so that an async test's servers serve on its own loop; pytest-asyncio
    # runs them for sync tests too (their servers then serve from threads).

    @pytest_asyncio.fixture
    @_doc(_FACTORY_DOC)
    async def dshkit_mock_server(request: pytest.FixtureRequest) -> AsyncIterator[MockServerFactory]:
        servers = _Servers(request)
        yield _factory(request, servers)
        await servers.aclose()
        servers.check()

    @pytest_asyncio.fixture
    @_doc(_MOCK_DOC)
    async def mock_deepseek(request: pytest.FixtureRequest) -> AsyncIterator[MockServer]:
        servers = _Servers(request)
        yield await _marker_server(request, servers)
        await servers.aclose()
        servers.check()

    @pytest_asyncio.fixture
    @_doc(_REPLAY_DOC)
    async def dshkit_replay(request: pytest.FixtureRequest) -> AsyncIterator[ReplayServerFactory]:
        servers = _Servers(request)
        yield _replay_factory(request, servers)
        await servers.aclose()
        servers.check()

else:
    # Only pytest is installed: plain fixtures, every server on a thread of its own.

    @pytest.fixture
    @_doc(_FACTORY_DOC)
    def dshkit_mock_server(request: pytest.FixtureRequest) -> Iterator[MockServerFactory]:
        _require_async_runner(request)
        servers = _Servers(request)
        yield _factory(request, servers)
        servers.close()
        servers.check()

    @pytest.fixture
    @_doc(_MOCK_DOC)
    def mock_deepseek(request: pytest.FixtureRequest) -> Iterator[MockServer]:
        _require_async_runner(request)
        servers = _Servers(request)
        yield _marker_server(request, servers)
        servers.close()
        servers.check()

    @pytest.fixture
    @_doc(_REPLAY_DOC)
    def dshkit_replay(request: pytest.FixtureRequest) -> Iterator[ReplayServerFactory]:
        _require_async_runner(request)
        servers = _Servers(request)
        yield _replay_factory(request, servers)
        servers.close()
        servers.check()




@pytest.fixture
def dshkit_mock_server_sync(request: pytest.FixtureRequest) -> Iterator[SyncMockServerFactory]:
    """`dshkit_mock_server` as a plain fixture that never touches an event loop of the test:
    each server serves from a thread of its own (any pytest-asyncio mode, or none)."""
    servers = _Servers(request)
    servers.on_loop = False
    yield _factory(request, servers)
    servers.close()
    servers.check()


@pytest.fixture
def mock_deepseek_sync(request: pytest.FixtureRequest) -> Iterator[MockServer]:
    """`mock_deepseek` as a plain fixture that never touches an event loop of the test: the
    server serves from a thread of its own (any pytest-asyncio mode, or none)."""
    servers = _Servers(request)
    servers.on_loop = False
    yield _marker_server(request, servers)
    servers.close()
    servers.check()


def _check_after_pass(request: pytest.FixtureRequest, server: MockServer, check: bool) -> None:
    if check and _passed(request):
        server.assert_consumed()


@pytest.fixture
def dshkit_cassette(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Record mode, as in pytest-recording: point the app's client at `dshkit_cassette.base_url`.

    The cassette is `<test folder>/cassettes/<module>/<test name>.cassette.jsonl` (or the marker's
    name, relative to the test file); `--dshkit-record` (or the marker's `record_mode=`) decides
    whether it is replayed or recorded (`dshkit.mock_server.record_mode`). Requests are matched to
    recorded exchanges (the marker's `match_on=`); one that matches none fails the test at
    teardown with the difference from the nearest recorded request.
    """
    from dshkit.mock_server.record_mode import run_for_test

    yield from run_for_test(request, CASSETTE_MARKER)
