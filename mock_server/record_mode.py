"""Record mode for pytest, as users of pytest-recording know it: replay a test's cassette if it
is there, record it through the recording proxy when asked.

`--dshkit-record MODE` picks what happens to each test's cassette (named after the test id):

| mode | cassette present | cassette absent |
| --- | --- | --- |
| `none` (default) | replay it | fail: says how to record it |
| `once` | replay it | record it |
| `new_episodes` | replay the requests it holds, record the others and add them | record it |
| `all` | record it again, from scratch | record it |

Replay is the mock server serving the cassette byte for byte (no recorded waits); recording is
:class:`~dshkit.mock_server.record.Recorder` in front of the upstream (`--dshkit-record-upstream URL`,
`$DSHKIT_RECORD_UPSTREAM` or the marker's `upstream=`), which scrubs secrets before anything is
written. For `new_episodes` a small dispatcher asks the replay server first and forwards a
request the cassette does not hold (answered 418 `mock_no_match`/`mock_script_exhausted`) to the
recorder, which starts from the cassette's exchanges so the file keeps the old ones. Everything
runs on a loop of its own thread, so sync and async tests use it alike.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import aiohttp
from aiohttp import web

from dshkit.harness.llm.errors import UsageError
from dshkit.mock_server.cassette import (
    CASSETTE_SUFFIX,
    cassette_path,
    load_cassette,
)
from dshkit.mock_server.record import Recorder
from dshkit.mock_server.replay import cassette_to_scripts
from dshkit.mock_server.server import MockServer

__all__ = [
    "RECORD_MODES",
    "CassetteMissing",
    "CassetteRun",
    "RecordMode",
    "cassette_name_for",
    "default_cassette_path",
    "start_cassette_run",
]

RecordMode = Literal["none", "once", "new_episodes", "all"]
RECORD_MODES: tuple[RecordMode, ...] = ("none", "once", "new_episodes", "all")
_MISS_CODES = frozenset({"mock_no_match", "mock_script_exhausted", "mock_no_script"})
_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "host"})
T = TypeVar("T")


def cassette_name_for(nodeid: str) -> str:
    """A file-system-safe cassette name from a test id: `test_x.py::TestA::test_b[p-1]` →
    `TestA.test_b[p-1]` (the module is the folder, see `default_cassette_path`)."""
    parts = nodeid.split("::")[1:] or [nodeid]
    name = ".".join(parts)
    return re.sub(r"[^A-Za-z0-9_.\[\]=+-]", "_", name)[:200]


@dataclass(slots=True)
class CassetteRun:
    """What a test talks to: `base_url` (give it to the client) and what is behind it."""

    base_url: str
    path: Path
    mode: RecordMode
    action: Literal["replay", "record", "replay+record"]
    server: MockServer | None = None
    """The replay server, when the cassette is replayed."""
    recorder: Recorder | None = None
    """The recording proxy, when anything may be recorded."""
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _closers: tuple[Callable[[], Awaitable[None]], ...] = ()

    def close(self) -> None:
        """Stop everything (the recorder saves exchanges still in flight first). Idempotent."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        self._loop = self._thread = None
        for closer in reversed(self._closers):
            _run(loop, closer())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        loop.close()


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


def start_cassette_run(path: Path, mode: RecordMode, *, upstream: str | None) -> CassetteRun:
    """Start what `mode` asks for `path` on a loop of its own thread and return where to point the
    client. Raises `CassetteMissing` (mode none, no file) or `ValueError` (recording without an
    upstream), each saying what to do."""
    path = cassette_path(path)
    exists = path.is_file()
    if mode == "none" and not exists:
        raise CassetteMissing(
            f"no cassette {path} to replay (record mode `none`); record it with "
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
            cassette = load_cassette(path)
            match: Any = "body" if mode == "new_episodes" else "sequence"
            run.server = MockServer(*cassette_to_scripts(cassette, speed=0.0, match=match))
            _run(loop, run.server.start())
            closers.append(run.server.close)
            run.base_url = run.server.base_url
        if record:
            assert upstream is not None
            # `all` records afresh; otherwise new exchanges are appended after the recorded
            # ones (for `new_episodes`, the episodes being replayed stay in the file).
            run.recorder = Recorder(upstream, path, overwrite=mode == "all")
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


def default_cassette_path(test_file: Path, nodeid: str, directory: str = "cassettes") -> Path:
    """`<test folder>/<directory>/<test module>/<test name>.cassette.jsonl`."""
    return test_file.parent / directory / test_file.stem / (cassette_name_for(nodeid) + CASSETTE_SUFFIX)
