"""Record mode for pytest, as users of pytest-recording know it: replay a test's cassette if it
is there, record it through the recording proxy when asked.

`--dshkit-record MODE` picks what happens to each test's cassette (named after the test id):

| mode | cassette present | cassette absent |
| --- | --- | --- |
| `none` (default) | replay it | fail: says how to record it |
| `once` | replay it | record it |
| `new_episodes` | replay the requests it holds, record the others and add them | record it |
| `all` | record it again, from scratch | record it |

Replay is the mock server serving the cassette byte for byte (no recorded waits), each request
answered by the recorded exchange it matches (:mod:`dshkit.mock_server.cassette_match`; the
marker's `match_on=`), so a test that no longer sends what was recorded fails at teardown with a
diff instead of getting a stale answer. Recording is
:class:`~dshkit.mock_server.record.Recorder` in front of the upstream (`--dshkit-record-upstream URL`,
`$DSHKIT_RECORD_UPSTREAM` or the marker's `upstream=`), which scrubs secrets before anything is
written. For `new_episodes` a small dispatcher asks the replay server first and forwards a
request no recorded exchange matches (answered 418 `mock_no_match`) to the
recorder, which starts from the cassette's exchanges so the file keeps the old ones. Everything
runs on a loop of its own thread, so sync and async tests use it alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import secrets
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web

from dshkit.harness.llm.errors import InputError, UsageError
from dshkit.harness.secrets import scrub_url
from dshkit.mock_server.cassette import (
    _TMP_INFIX,
    CASSETTE_SUFFIX,
    Scrubber,
    _remove_orphan_temps,
    cassette_path,
    load_cassette,
)
from dshkit.mock_server.cassette_match import CassetteRouter, MatchRule, resolve_match_on
from dshkit.mock_server.record import Recorder
from dshkit.mock_server.server import MockServer

__all__ = [
    "RECORD_MODES",
    "CassetteMissing",
    "CassetteOptions",
    "CassetteRun",
    "RecordMode",
    "UpstreamUnreachable",
    "cassette_name_for",
    "cassette_options",
    "default_cassette_path",
    "run_for_test",
    "start_cassette_run",
]

RecordMode = Literal["none", "once", "new_episodes", "all"]
RECORD_MODES: tuple[RecordMode, ...] = ("none", "once", "new_episodes", "all")
_MISS_CODES = frozenset({"mock_no_match", "mock_script_exhausted", "mock_no_script"})
_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "host"})
T = TypeVar("T")


_NAME_SAFE = re.compile(r"[^A-Za-z0-9_.\[\]=+-]")
_NAME_MAX = 200


def cassette_name_for(nodeid: str) -> str:
    """A file-system-safe cassette name from a test id, unique per id and readable:
    `test_x.py::TestA::test_b[p-1]` → `TestA.test_b[p-1]` (the module is the folder, see
    `default_cassette_path`).

    An id made only of letters, digits and `_ . [ ] = + -` (and at most 200 characters) keeps
    its name as it is. Any other id gets its other characters as `_` and, so that ids differing
    only there (`[a b]`, `[a/b]`, `[a_b]`) or after the 200th character stay apart, `~` and 12 hex
    digits of the id's SHA-256: `test_x[a_b]~5d41402abc4b`. No plain name holds a `~`, so a
    hashed name never equals a plain one.
    """
    head, bracket, params = nodeid.partition("[")
    parts = head.split("::")[1:] or [head]  # `::` inside the parameters is not a separator
    name = ".".join(parts) + bracket + params
    safe = _NAME_SAFE.sub("_", name)
    if safe == name and len(name) <= _NAME_MAX:
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{safe[:_NAME_MAX - 13]}~{digest}"


@dataclass(slots=True)
class CassetteRun:
    """What a test talks to: `base_url` (give it to the client) and what is behind it."""

    base_url: str
    path: Path
    mode: RecordMode
    action: Literal["replay", "record", "replay+record"]
    server: MockServer | None = None
    """The replay server, when the cassette is replayed."""
    router: CassetteRouter | None = None
    """What matches requests to the replayed exchanges (its `misses`: requests none matched)."""
    recorder: Recorder | None = None
    """The recording proxy, when anything may be recorded."""
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _closers: tuple[Callable[[], Awaitable[None]], ...] = ()
    _created: bool = False
    """The recorder started the cassette file (it was absent or held no exchange)."""
    _staging: Path | None = None
    """Mode `all`: the file being recorded, which replaces the cassette once it holds an exchange."""

    def close(self) -> None:
        """Stop everything (the recorder saves exchanges still in flight first), then keep the
        recording only if it saved an exchange. Idempotent."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        self._loop = self._thread = None
        try:
            for closer in reversed(self._closers):
                _run(loop, closer())
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=30)
            loop.close()
            self._settle()

    def _settle(self) -> None:
        saved = bool(self.recorder.exchanges) if self.recorder is not None else False
        staging, self._staging = self._staging, None
        if staging is not None:
            if saved:
                os.replace(staging, self.path)
            else:
                with contextlib.suppress(FileNotFoundError):
                    staging.unlink()
        elif self._created and not saved:
            # Nothing recorded (an upstream that failed, a test stopped before its first
            # request): an empty cassette would only stand in the way of the next run.
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()

    def problems(self, *, all_played: bool = False) -> list[str]:
        """What should fail the test: requests no recorded exchange matched (unless they were
        recorded as new episodes) and, with `all_played`, recorded exchanges never requested."""
        out: list[str] = []
        if self.router is not None and self.action == "replay":
            out += [miss.message for miss in self.router.misses]
        if self.router is not None and self.recorder is not None and self.action == "replay+record":
            # every miss went to the recorder; one it did not save got the upstream's failure
            lost = len(self.router.misses) - len(self.recorder.exchanges)
            if lost > 0:
                out.append(
                    f"{lost} of {len(self.router.misses)} new request(s) could not be recorded (the "
                    f"upstream {self.recorder.upstream} did not answer them; see the recorder's message "
                    "above) and got an error instead: " + "; ".join(m.request for m in self.router.misses)
                )
        if self.router is not None and all_played:
            out += [f"{self.path}: {label}" for label in self.router.pending()]
        return out


def _run(loop: asyncio.AbstractEventLoop, coro: Awaitable[T]) -> T:
    async def wrap() -> T:
        return await coro

    return asyncio.run_coroutine_threadsafe(wrap(), loop).result(timeout=30)


class _Dispatcher:
    """new_episodes: the replay server first; what it does not hold goes to the recorder."""

    def __init__(self, replay_url: str, record_url: str) -> None:
        self.replay_url, self.record_url = replay_url, record_url
        self._client: aiohttp.ClientSession | None = None
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    async def start(self) -> None:
        self._client = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None), auto_decompress=False)
        app = web.Application(client_max_size=1 << 30)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        sockets = getattr(site._server, "sockets", None) or []
        self.base_url = f"http://127.0.0.1:{int(sockets[0].getsockname()[1])}"

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        assert self._client is not None
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        upstream = await self._client.request(request.method, self.replay_url + request.path_qs,
                                              data=body or None, headers=headers)
        if upstream.status == 418:
            raw = await upstream.read()
            upstream.release()
            try:
                code = json.loads(raw).get("error", {}).get("code")
            except (ValueError, AttributeError):
                code = None
            if code not in _MISS_CODES:
                return web.Response(status=418, body=raw, content_type="application/json")
            upstream = await self._client.request(request.method, self.record_url + request.path_qs,
                                                  data=body or None, headers=headers)
        try:
            resp = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for name, value in upstream.headers.items():
                if name.lower() not in _HOP:
                    resp.headers.add(name, value)
            await resp.prepare(request)
            async for data in upstream.content.iter_any():
                await resp.write(data)
            await resp.write_eof()
        finally:
            upstream.release()
        return resp


class CassetteMissing(UsageError, LookupError):
    """Mode `none` and no cassette: nothing to replay and recording is off."""


class UpstreamUnreachable(UsageError, ConnectionError):
    """A recording run whose upstream does not accept connections: nothing was recorded."""


def start_cassette_run(
    path: Path,
    mode: RecordMode,
    *,
    upstream: str | None,
    match_on: Iterable[MatchRule] | None = None,
    scrub: Iterable[str] = (),
) -> CassetteRun:
    """Start what `mode` asks for `path` on a loop of its own thread and return where to point the
    client. Requests are matched to recorded exchanges on `match_on`
    (:mod:`dshkit.mock_server.cassette_match`); `scrub` adds regexes the recorder replaces.

    Raises `CassetteMissing` (mode none, no cassette), `UpstreamUnreachable` (recording needed and
    the upstream refuses connections), `CassetteError` (a file that is not a cassette) or
    `ValueError` (recording without an upstream, a bad `match_on` or `scrub`), each saying what to
    do. Mode `none` never contacts the upstream; a recording that saves no exchange leaves no
    file behind (and `all` keeps the cassette it would have replaced)."""
    path = cassette_path(path)
    rules = None if match_on is None else (match_on,) if isinstance(match_on, str) else tuple(match_on)
    resolve_match_on(rules)  # a bad rule fails before anything starts
    scrub = tuple(scrub)
    Scrubber(scrub)  # a bad pattern too
    cassette = load_cassette(path) if path.is_file() else None
    exists = cassette is not None and bool(cassette.exchanges)
    if mode == "none" and not exists:
        what = f"cassette {path} holds no exchange" if cassette is not None else f"no cassette {path}"
        raise CassetteMissing(
            f"{what} to replay (record mode `none`); record it with "
            "`pytest --dshkit-record=once --dshkit-record-upstream URL` (or $DSHKIT_RECORD_UPSTREAM)"
        )
    replay = exists and mode in ("none", "once", "new_episodes")
    record = mode == "all" or not exists or mode == "new_episodes"
    if record and not upstream:
        raise ValueError(
            f"record mode `{mode}` needs to record {path} but no upstream is set; pass "
            "--dshkit-record-upstream URL, set $DSHKIT_RECORD_UPSTREAM or "
            "@pytest.mark.dshkit_cassette(upstream=URL)"
        )
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="dshkit-cassette", daemon=True)
    thread.start()
    run = CassetteRun(base_url="", path=path, mode=mode, action="replay", _loop=loop, _thread=thread)
    closers: list[Callable[[], Awaitable[None]]] = []
    try:
        if replay:
            assert cassette is not None
            run.router = CassetteRouter.for_cassette(cassette, match_on=rules)
            run.server = MockServer(router=run.router)
            _run(loop, run.server.start())
            closers.append(run.server.close)
            run.base_url = run.server.base_url
        if record:
            assert upstream is not None
            if not replay:  # every request will go upstream: say so now if it cannot
                _run(loop, _probe(upstream, path, mode))
            if not (mode == "all" and exists):
                # New exchanges go after the recorded ones (for `new_episodes`, the episodes being
                # replayed stay in the file); a missing or empty cassette is started afresh.
                out, run._created = path, not exists
            else:
                # `all` records into a file of its own and replaces the cassette only once an
                # exchange is saved: a recording that fails keeps the old one.
                _remove_orphan_temps(path)
                out = path.with_name(f".{path.name}{_TMP_INFIX}{os.getpid()}-{secrets.token_hex(4)}.jsonl")
                run._staging = out
            # A cassette with no exchange is started afresh, unless it ends in a torn line: the
            # recorder then moves that line to NAME.cassette.jsonl.torn before appending.
            fresh = cassette is None or (not exists and cassette.torn_line is None)
            run.recorder = Recorder(upstream, out, overwrite=fresh, scrub=scrub)
            _run(loop, run.recorder.start())
            closers.append(run.recorder.close)
            run.base_url, run.action = run.recorder.base_url, "record"
        if replay and record and run.server is not None and run.recorder is not None:
            dispatcher = _Dispatcher(run.server.base_url, run.recorder.base_url)
            _run(loop, dispatcher.start())
            closers.append(dispatcher.close)
            run.base_url, run.action = dispatcher.base_url, "replay+record"
    except BaseException:
        run._closers = tuple(closers)
        run.close()
        raise
    run._closers = tuple(closers)
    return run


async def _probe(upstream: str, path: Path, mode: str) -> None:
    """Connect to the upstream once (and hang up), so an upstream that is down fails the test
    before it runs, once, instead of once per request and retry."""
    parts = urlsplit(upstream)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        async with asyncio.timeout(30):
            _, writer = await asyncio.open_connection(host, port)
    except (OSError, TimeoutError) as e:
        shown = scrub_url(upstream)
        why = "no answer within 30 s" if isinstance(e, TimeoutError) else (e.strerror or str(e))
        raise UpstreamUnreachable(
            f"record mode `{mode}` cannot record {path}: the upstream {shown} is unreachable "
            f"({why}); start it, or fix --dshkit-record-upstream / $DSHKIT_RECORD_UPSTREAM / the "
            "marker's upstream=. Nothing was recorded."
        ) from None
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


def default_cassette_path(test_file: Path, nodeid: str, directory: str = "cassettes") -> Path:
    """`<test folder>/<directory>/<test module>/<test name>.cassette.jsonl`."""
    return test_file.parent / directory / test_file.stem / (cassette_name_for(nodeid) + CASSETTE_SUFFIX)


@dataclass(frozen=True, slots=True, kw_only=True)
class CassetteOptions:
    """The arguments of `@pytest.mark.dshkit_cassette(name=None, *, upstream=None,
    record_mode=None, match_on=None, scrub=(), all_played=False)`."""

    name: str | None = None
    """The cassette's path relative to the test file (default: from the test id)."""
    upstream: str | None = None
    """The endpoint to record from (beats --dshkit-record-upstream and $DSHKIT_RECORD_UPSTREAM)."""
    record_mode: RecordMode | None = None
    """This test's record mode (beats --dshkit-record and the ini's dshkit_record_mode)."""
    match_on: tuple[MatchRule, ...] | None = None
    """How requests find their recorded exchange (default: method, path, model, messages, tools)."""
    scrub: tuple[str, ...] = ()
    """More regexes (`LABEL=REGEX` or `REGEX`) the recorder replaces, beside the credentials."""
    all_played: bool = False
    """Fail the test when a recorded exchange was never requested."""


_OPTION_NAMES = ("name", "upstream", "record_mode", "match_on", "scrub", "all_played")


def cassette_options(args: tuple[object, ...], kwargs: dict[str, object], *, where: str) -> CassetteOptions:
    """The marker's arguments checked; `UsageError` naming `where` and the argument otherwise."""

    def bad(message: str) -> UsageError:
        return UsageError(f"@pytest.mark.dshkit_cassette of {where}: {message}")

    unknown = sorted(set(kwargs) - set(_OPTION_NAMES))
    if unknown:
        raise bad(f"unknown argument(s) {', '.join(unknown)}; it takes {', '.join(_OPTION_NAMES)}")
    if len(args) > 1:
        raise bad(f"takes one positional argument (the cassette name), got {len(args)}")
    if args and "name" in kwargs:
        raise bad("the name is given twice (positionally and as name=)")
    name = args[0] if args else kwargs.get("name")
    if name is not None and not isinstance(name, str | os.PathLike):
        raise bad(f"name must be a path (str), got {type(name).__name__}")
    upstream = kwargs.get("upstream")
    if upstream is not None and not isinstance(upstream, str):
        raise bad(f"upstream must be a URL (str), got {type(upstream).__name__}")
    mode = kwargs.get("record_mode")
    if mode is not None and mode not in RECORD_MODES:
        raise bad(f"record_mode={mode!r} is not one of {', '.join(RECORD_MODES)}")
    match_on = kwargs.get("match_on")
    rules: tuple[MatchRule, ...] | None = None
    if match_on is not None:
        items = (match_on,) if isinstance(match_on, str) or callable(match_on) else match_on
        if not isinstance(items, list | tuple):
            raise bad(f"match_on must be a list of matcher names or callables, got {type(match_on).__name__}")
        try:
            resolve_match_on(items)
        except ValueError as e:
            raise bad(str(e)) from None
        rules = tuple(items)
    scrub = kwargs.get("scrub", ())
    patterns = (scrub,) if isinstance(scrub, str) else scrub
    if not isinstance(patterns, list | tuple) or not all(isinstance(p, str) for p in patterns):
        raise bad("scrub must be a regex or a list of them (`LABEL=REGEX` or `REGEX`)")
    try:
        Scrubber(patterns)
    except ValueError as e:
        raise bad(str(e)) from None
    all_played = kwargs.get("all_played", False)
    if not isinstance(all_played, bool):
        raise bad(f"all_played must be True or False, got {all_played!r}")
    return CassetteOptions(
        name=os.fspath(name) if name is not None else None, upstream=upstream,
        record_mode=mode,  # checked against RECORD_MODES above
        match_on=rules, scrub=tuple(patterns), all_played=all_played,
    )


def run_for_test(request: Any, marker_name: str) -> Iterator[CassetteRun]:
    """The `dshkit_cassette` fixture's body (the plugin stays thin): read the marker and the
    options, start the run, and at teardown stop it and fail the test for requests no recorded
    exchange matched (and, with `all_played`, exchanges never requested)."""
    import pytest

    config = request.config
    marker = request.node.get_closest_marker(marker_name)
    # pytest.fail is called outside `except`: inside, the report would show the error twice,
    # joined by "During handling of the above exception, another exception occurred".
    error: str | None = None
    try:
        opts = cassette_options(tuple(marker.args), dict(marker.kwargs), where=request.node.nodeid) \
            if marker is not None else CassetteOptions()
    except UsageError as e:
        error = str(e)
    if error is not None:
        pytest.fail(error, pytrace=False)
    mode = opts.record_mode or config.getoption("--dshkit-record") or config.getini("dshkit_record_mode") or "none"
    if mode not in RECORD_MODES:
        pytest.fail(f"dshkit_record_mode = {mode!r} is not one of {', '.join(RECORD_MODES)}", pytrace=False)
    test_file = Path(str(request.node.fspath))
    path = (test_file.parent / opts.name if opts.name else
            default_cassette_path(test_file, request.node.nodeid, str(config.getini("dshkit_cassette_dir"))))
    upstream = (opts.upstream or config.getoption("--dshkit-record-upstream")
                or os.environ.get("DSHKIT_RECORD_UPSTREAM"))
    try:
        run = start_cassette_run(path, mode, upstream=upstream, match_on=opts.match_on, scrub=opts.scrub)
    except (UsageError, InputError, ValueError) as exc:
        error = str(exc)
    if error is not None:
        pytest.fail(error, pytrace=False)
    try:
        yield run
    finally:
        run.close()
    problems = run.problems(all_played=opts.all_played)
    if problems:
        pytest.fail(f"dshkit_cassette {run.path}:\n" + "\n\n".join(problems), pytrace=False)
