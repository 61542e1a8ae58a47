"""`dshkit record`: a recording proxy in front of any DeepSeek-compatible endpoint.

:class:`Recorder` listens on 127.0.0.1 (port 0 by default), forwards every request to the
upstream with aiohttp's client and streams the response back as it arrives: each upstream read
is written to the client at once (the client's first byte is the upstream's first byte; vcrpy,
by contrast, buffers the whole stream, peers.md). Every read is kept with its delay since the
previous one. When an exchange completes, the whole cassette is rewritten to a temporary file
and moved into place (`save_cassette`), so a crash loses at most the exchange in flight.
Secrets are scrubbed before anything touches the disk (:class:`~mock_server.cassette.Scrubber`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web

from mock_server.cassette import (
    _HOP_HEADERS,
    Cassette,
    Read,
    RecordedExchange,
    RecordedRequest,
    Scrubber,
    cassette_path,
    save_cassette,
)

__all__ = ["Recorder", "register", "run_record"]

_UPSTREAM_DROP = _HOP_HEADERS | {"host", "accept-encoding"}


class Recorder:
    """A recording proxy; use `async with Recorder(upstream, out) as r:` then `r.base_url`.

    Args:
        upstream: the endpoint's base URL (`https://api.deepseek.com`, a mock server's base_url).
        out: the cassette path (`recordings/NAME` or `…/NAME.cassette.jsonl`).
        scrub: extra regexes to scrub (`LABEL=REGEX` or `REGEX`).
        scrub_secrets: scrub credential headers, body fields and key values (default on).
        on_event: called with an `exchange` telemetry dict after each saved exchange.
    """

    __test__ = False

    def __init__(
        self,
        upstream: str,
        out: str | Path,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        scrub: Iterable[str] = (),
        scrub_secrets: bool = True,
        on_event: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        parsed = urlsplit(upstream)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(
                f"--upstream {upstream!r} is not an http(s) URL; give the endpoint's base URL, "
                "e.g. https://api.deepseek.com"
            )
        self.upstream = upstream.rstrip("/")
        self.path = cassette_path(out)
        self.host = host
        self._requested_port = port
        self.scrubber = Scrubber(scrub, enabled=scrub_secrets)
        self.on_event = on_event
        self.exchanges: list[RecordedExchange] = []
        self.meta: dict[str, Any] = {
            "upstream": self.upstream,
            "recorded_at": int(time.time()),
            "recorder": "dshkit record",
            "scrubbed": scrub_secrets,
        }
        self._lock = asyncio.Lock()
        self._inflight: set[asyncio.Task[Any]] = set()
        self._runner: web.AppRunner | None = None
        self._client: aiohttp.ClientSession | None = None
        self._port: int | None = None

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the recorder is not started")
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> Recorder:
        self._client = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=30),
            auto_decompress=False,
        )
        app = web.Application(client_max_size=1 << 30)
        app.router.add_route("*", "/{tail:.*}", self._proxy)
        # No handler cancellation: a client that hangs up must not stop the recording of what the
        # upstream still sends.
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self._requested_port, reuse_address=True)
        await site.start()
        self._runner = runner
        sockets = getattr(site._server, "sockets", None) or []
        self._port = int(sockets[0].getsockname()[1]) if sockets else self._requested_port
        return self

    async def close(self) -> None:
        """Wait for exchanges in flight to be saved, then stop. Safe to call twice."""
        if self._inflight:
            await asyncio.gather(*self._inflight, return_exceptions=True)
        runner, client = self._runner, self._client
        self._runner = self._client = None
        if runner is not None:
            await runner.cleanup()
        if client is not None:
            await client.close()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @property
    def cassette(self) -> Cassette:
        return Cassette(exchanges=tuple(self.exchanges), meta=self.meta, source=str(self.path))

    def save(self) -> Path:
        """Write the cassette as it stands (atomically)."""
        return save_cassette(self.cassette, self.path)

    async def _proxy(self, request: web.Request) -> web.StreamResponse:
        task = asyncio.current_task()
        if task is not None:
            self._inflight.add(task)
            task.add_done_callback(self._inflight.discard)
        assert self._client is not None
        body = await request.read()
        self.scrubber.learn(request.headers)
        forwarded = {k: v for k, v in request.headers.items() if k.lower() not in _UPSTREAM_DROP}
        # Plain bytes from upstream, so reads are readable text and replay needs no decoder.
        headers = {**forwarded, "Accept-Encoding": "identity"}
        url = self.upstream + request.path_qs
        sent = time.monotonic()
        try:
            upstream = await self._client.request(request.method, url, data=body or None, headers=headers)
        except (aiohttp.ClientError, OSError) as e:
            message = f"dshkit record: the upstream {self.upstream} is unreachable: {e}"
            sys.stderr.write(message + "\n")
            return web.json_response(
                {"error": {"message": message, "type": "api_error", "param": None, "code": "upstream_unreachable"}},
                status=502,
            )
        reads: list[Read] = []
        try:
            got_headers = time.monotonic()
            resp = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for name, value in upstream.headers.items():
                if name.lower() not in _HOP_HEADERS:
                    resp.headers.add(name, value)
            await resp.prepare(request)
            last = got_headers
            client_gone = False
            async for data in upstream.content.iter_any():
                now = time.monotonic()
                if not client_gone:
                    try:
                        await resp.write(data)  # forward first, then bookkeeping
                    except ConnectionError:
                        client_gone = True  # keep recording what the upstream sends
                reads.append(Read(self.scrubber.data(data), round((now - last) * 1000, 3)))
                last = now
            # Saved before the body ends: a client that has the whole response can rely on the
            # cassette holding it.
            await self._commit(request, forwarded, body, upstream, got_headers - sent, reads)
            if not client_gone:
                with contextlib.suppress(ConnectionError):
                    await resp.write_eof()  # a client may hang up right after `[DONE]`
        finally:
            upstream.release()
        return resp

    async def _commit(
        self,
        request: web.Request,
        forwarded: dict[str, str],
        body: bytes,
        upstream: aiohttp.ClientResponse,
        headers_s: float,
        reads: list[Read],
    ) -> None:
        try:
            parsed: Any = json.loads(body) if body else None
        except ValueError:
            parsed = body.decode("utf-8", "replace")
        exchange = RecordedExchange(
            request=RecordedRequest(
                method=request.method,
                path=request.path_qs,
                headers=self.scrubber.headers(forwarded),
                body=self.scrubber.body(parsed),
            ),
            status=upstream.status,
            headers=self.scrubber.headers(
                {k: v for k, v in upstream.headers.items() if k.lower() not in _HOP_HEADERS}
            ),
            headers_ms=round(headers_s * 1000, 3),
            reads=tuple(reads),
        )
        async with self._lock:
            self.exchanges.append(exchange)
            await asyncio.to_thread(self.save)
        if self.on_event is not None:
            self.on_event(
                {"type": "exchange", "n": len(self.exchanges), "method": request.method,
                 "path": request.path, "status": upstream.status, "reads": len(reads),
                 "bytes": sum(len(r.data) for r in reads)}
            )


# --- the command -----------------------------------------------------------------------------


def _print(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


_RECORD_EPILOG = """\
examples:
  dshkit record --upstream https://api.deepseek.com --out recordings/my-walk
      then, in another shell, point the app at the printed base_url (e.g. OPENAI_BASE_URL)
  dshkit record --upstream http://127.0.0.1:8000 --out recordings/local --scrub 'ORG=org-[a-z0-9]+'
  dshkit serve --replay recordings/my-walk           serve what was recorded, byte for byte
  dshkit view recordings/my-walk.cassette.jsonl      look at every read over time

In pytest, record mode does the same per test: pytest --dshkit-record=once --dshkit-record-upstream URL
"""


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add `dshkit record`."""
    p = sub.add_parser(
        "record",
        help="record exchanges with a DeepSeek-compatible endpoint into a cassette",
        description="A local proxy: point a client at the printed base_url; every request goes to "
        "--upstream, every response streams back as it arrives, and the cassette "
        "OUT.cassette.jsonl is rewritten atomically after each exchange. Secrets are scrubbed.",
        epilog=_RECORD_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--upstream", required=True, help="upstream base URL, e.g. https://api.deepseek.com")
    p.add_argument("--out", required=True, metavar="recordings/NAME", help="cassette path (.cassette.jsonl added)")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port (default 0: any free port)")
    p.add_argument("--scrub", action="append", default=[], metavar="[LABEL=]REGEX",
                   help="also replace matches with {{scrubbed:LABEL}} in requests and responses (repeatable)")
    p.add_argument("--no-scrub-secrets", action="store_true",
                   help="keep credential headers and fields (never do this for a committed cassette)")
    p.set_defaults(func=run_record)


def run_record(args: argparse.Namespace) -> int:
    """Record until SIGINT (130) or SIGTERM (143); 2 for bad options."""
    try:
        recorder = Recorder(
            args.upstream, args.out, host=args.host, port=args.port, scrub=args.scrub,
            scrub_secrets=not args.no_scrub_secrets, on_event=_print,
        )
    except ValueError as e:
        sys.stderr.write(f"dshkit record: {e}\n")
        return 2
    return asyncio.run(_record(recorder))


async def _record(recorder: Recorder) -> int:
    from mock_server.cli import exit_on_signals  # the CLI module imports this one

    stop = exit_on_signals()
    try:
        await recorder.start()
    except OSError as e:
        sys.stderr.write(f"dshkit record: cannot bind {recorder.host}: {e}\n")
        return 1
    if not recorder.path.exists():
        recorder.save()  # an empty cassette, so a session with no request still leaves a file
    _print({"type": "ready", "base_url": recorder.base_url, "port": recorder.port,
            "upstream": recorder.upstream, "out": str(recorder.path)})
    try:
        return await stop
    finally:
        await recorder.close()
