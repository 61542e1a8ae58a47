"""`dshkit record`: a recording proxy in front of any DeepSeek-compatible endpoint.

:class:`Recorder` listens on 127.0.0.1 (port 0 by default), forwards every request to the
upstream with aiohttp's client and streams the response back as it arrives: each upstream read
is written to the client at once (the client's first byte is the upstream's first byte; vcrpy,
by contrast, buffers the whole stream, peers.md). Every read is kept with its delay since the
previous one. When an exchange ends, one line is appended to the cassette and fsynced
(:class:`~dshkit.mock_server.cassette.CassetteAppender`), so a crash loses at most the exchange in
flight and never what came before. An upstream that breaks mid-body is recorded too, marked
`cut`, and the client sees the same break. Secrets are scrubbed before anything touches the
disk (:class:`~dshkit.mock_server.cassette.Scrubber`).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import errno
import json
import math
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import unquote, urlsplit

import aiohttp
from aiohttp import web

from dshkit.args import port_number
from dshkit.harness.llm import jsonio
from dshkit.harness.secrets import scrub_url
from dshkit.mock_server.cassette import (
    _HOP_HEADERS,
    Cassette,
    CassetteAppender,
    CassetteError,
    CassetteLocked,
    Read,
    RecordedExchange,
    RecordedRequest,
    Scrubber,
    cassette_path,
)

__all__ = ["Recorder", "register", "run_record"]

_UPSTREAM_DROP = _HOP_HEADERS | {"host", "accept-encoding"}


def _split_upstream(upstream: str) -> tuple[str, str, str | None, str | None]:
    """(URL to request, URL to show, Authorization value, credential) for `--upstream`.

    Credentials in the URL (`http://user:PASS@host`, or a token alone, `http://TOKEN@host`) are
    taken out of it: they go to the upstream as HTTP Basic auth, and the URL that is printed and
    recorded shows the password (or the lone token) scrubbed.
    """
    shown = scrub_url(upstream).rstrip("/")
    parsed = urlsplit(upstream)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError(
            f"--upstream {shown!r} is not an http(s) URL; give the endpoint's base URL, "
            "e.g. https://api.deepseek.com"
        )
    host = parsed.netloc.rpartition("@")[2]
    target = parsed._replace(netloc=host).geturl().rstrip("/")
    if parsed.username is None and parsed.password is None:
        return target, shown, None, None
    user, password = unquote(parsed.username or ""), unquote(parsed.password or "")
    auth = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    return target, shown, auth, (password if parsed.password is not None else user) or None


class Recorder:
    """A recording proxy; use `async with Recorder(upstream, out) as r:` then `r.base_url`.

    Args:
        upstream: the endpoint's base URL (`https://api.deepseek.com`, a mock server's base_url);
            `user:password@` (or `token@`) in it is sent as Basic auth and never shown or recorded.
        out: the cassette path (`recordings/NAME` or `…/NAME.cassette.jsonl`).
        overwrite: start a new cassette even if `out` exists; by default new exchanges are
            appended after the ones already recorded there.
        scrub: extra regexes to scrub (`LABEL=REGEX` or `REGEX`).
        scrub_secrets: scrub credential headers, fields, query parameters and key values (default on).
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
        overwrite: bool = False,
        scrub: Iterable[str] = (),
        scrub_secrets: bool = True,
        on_event: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self._target, self.upstream, self._upstream_auth, credential = _split_upstream(upstream)
        self.path = cassette_path(out)
        self.host = host
        self._requested_port = port
        self.scrubber = Scrubber(scrub, enabled=scrub_secrets)
        if credential is not None:
            self.scrubber.remember(credential, "password" if urlsplit(upstream).password is not None else "username")
        if self._upstream_auth is not None:
            self.scrubber.learn({"authorization": self._upstream_auth})
        self.on_event = on_event
        self.exchanges: list[RecordedExchange] = []
        self.meta: dict[str, Any] = {
            "upstream": self.upstream,
            "recorded_at": int(time.time()),
            "recorder": "dshkit record",
            "scrubbed": scrub_secrets,
        }
        self.appender = CassetteAppender(self.path, self.meta, overwrite=overwrite)
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
        """Listen (OSError if the port is taken), then open the cassette (CassetteError if `out`
        is not one). Nothing is left open, and no file is made, when either fails."""
        app = web.Application(client_max_size=1 << 30)
        app.router.add_route("*", "/{tail:.*}", self._proxy)
        # No handler cancellation: a client that hangs up must not stop the recording of what the
        # upstream still sends.
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self._requested_port, reuse_address=True)
        try:
            await site.start()
            await asyncio.to_thread(self.appender.open)
        except BaseException:
            await runner.cleanup()
            self.appender.close()
            raise
        self._runner = runner
        # The client session is made last: one made before a failed bind is never closed and
        # aiohttp complains "Unclosed client session" at exit.
        self._client = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=30),
            auto_decompress=False,
        )
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
        self.appender.close()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @property
    def cassette(self) -> Cassette:
        """The exchanges recorded by this recorder (not those the file held before)."""
        return Cassette(exchanges=tuple(self.exchanges), meta=self.meta, source=str(self.path))

    async def _proxy(self, request: web.Request) -> web.StreamResponse:
        task = asyncio.current_task()
        if task is not None:
            self._inflight.add(task)
            task.add_done_callback(self._inflight.discard)
        assert self._client is not None
        try:
            body = await request.read()
        except ConnectionError:
            # The client left in the middle of its request body: nothing was sent upstream and
            # there is nothing to record, nor anyone to answer.
            _warn(f"dshkit record: {request.method} {self.scrubber.path(request.path_qs)}: the client hung "
                  "up before sending its whole request; nothing forwarded or recorded")
            _break(request)
            return web.Response(status=400)
        parsed = _parse_body(body)
        self.scrubber.learn(request.headers)
        self.scrubber.learn_path(request.path_qs)
        if self.scrubber.enabled:
            self.scrubber.learn_body(parsed)
        forwarded = {k: v for k, v in request.headers.items() if k.lower() not in _UPSTREAM_DROP}
        # Plain bytes from upstream, so reads are readable text and replay needs no decoder.
        headers = {**forwarded, "Accept-Encoding": "identity"}
        if self._upstream_auth is not None and not any(k.lower() == "authorization" for k in forwarded):
            headers["Authorization"] = self._upstream_auth
        sent = time.monotonic()
        try:
            upstream = await self._client.request(
                request.method, self._target + request.path_qs, data=body or None, headers=headers
            )
        except (aiohttp.ClientError, OSError, TimeoutError) as e:
            message = self.scrubber.text(f"dshkit record: the upstream {self.upstream} is unreachable: {e}")
            _warn(message)
            return web.json_response(
                {"error": {"message": message, "type": "api_error", "param": None, "code": "upstream_unreachable"}},
                status=502,
            )
        try:
            return await self._relay(request, forwarded, parsed, upstream, sent)
        finally:
            upstream.release()

    async def _relay(
        self, request: web.Request, forwarded: dict[str, str], parsed: Any,
        upstream: aiohttp.ClientResponse, sent: float,
    ) -> web.StreamResponse:
        """Stream the upstream's answer to the client read by read, then record it. A break on
        the upstream side is recorded as `cut` and passed on to the client as a broken
        connection (a clean end would tell it the body was whole)."""
        got_headers = time.monotonic()
        resp = web.StreamResponse(status=upstream.status, reason=upstream.reason)
        for name, value in upstream.headers.items():
            if name.lower() not in _HOP_HEADERS:
                resp.headers.add(name, value)
        reads: list[Read] = []
        cut: str | None = None
        client_gone = False
        try:
            await resp.prepare(request)
        except ConnectionError:
            client_gone = True
        last = got_headers
        try:
            async for data in upstream.content.iter_any():
                now = time.monotonic()
                if not client_gone:
                    try:
                        await resp.write(data)  # forward first, then bookkeeping
                    except ConnectionError:
                        client_gone = True  # keep recording what the upstream sends
                reads.append(Read(data, round((now - last) * 1000, 3)))
                last = now
        except (aiohttp.ClientError, OSError, TimeoutError) as e:
            size = sum(len(r.data) for r in reads)
            cut = f"the upstream connection broke after {size} body bytes: {type(e).__name__}: {e}".strip()
            cut = self.scrubber.text(cut)
            _warn(f"dshkit record: {request.method} {self.scrubber.path(request.path_qs)}: {cut}; "
                  "recorded as a cut exchange")
        saved = await self._commit(request, forwarded, parsed, upstream, got_headers - sent, reads, cut)
        # Saved before the body ends: a client that has the whole response can rely on the
        # cassette holding it. A body that is not whole (cut upstream, or not saved) must not
        # end cleanly for the client either.
        if cut is not None or not saved:
            _break(request)
        elif not client_gone:
            with contextlib.suppress(ConnectionError):
                await resp.write_eof()  # a client may hang up right after `[DONE]`
        return resp

    async def _commit(
        self,
        request: web.Request,
        forwarded: dict[str, str],
        parsed: Any,
        upstream: aiohttp.ClientResponse,
        headers_s: float,
        reads: list[Read],
        cut: str | None,
    ) -> bool:
        """Scrub and append one exchange; False (with a message on stderr) if it could not be saved."""
        scrub = self.scrubber
        exchange = RecordedExchange(
            request=RecordedRequest(
                method=request.method,
                path=scrub.path(request.path_qs),
                headers=scrub.headers(forwarded),
                body=scrub.body(parsed),
            ),
            status=upstream.status,
            headers=scrub.headers({k: v for k, v in upstream.headers.items() if k.lower() not in _HOP_HEADERS}),
            headers_ms=round(headers_s * 1000, 3),
            reads=scrub.reads(reads),
            cut=cut,
        )
        async with self._lock:
            try:
                await asyncio.to_thread(self.appender.append, exchange)
            except OSError as e:
                if e.errno == errno.ESTALE:  # the file was replaced under the recorder
                    _warn(f"dshkit record: could not save {exchange.summary()}: {e.strerror}")
                else:
                    _warn(f"dshkit record: could not save {exchange.summary()} to {self.path}: {e}; "
                          "the exchanges saved before it are intact (free space or fix permissions)")
                return False
            except ValueError as e:  # an encoding problem; never expected since jsonio.dumps
                _warn(f"dshkit record: could not save {exchange.summary()} to {self.path}: {e}")
                return False
            self.exchanges.append(exchange)
            n = self.appender.existing + len(self.exchanges)
        if self.on_event is not None:
            event: dict[str, Any] = {
                "type": "exchange", "n": n, "method": request.method, "path": scrub.text(request.path),
                "status": upstream.status, "reads": len(reads), "bytes": sum(len(r.data) for r in reads),
            }
            if cut is not None:
                event["cut"] = cut
            self.on_event(event)
        return True


_BODY_DEPTH = jsonio.MAX_DEPTH - 8
"""The deepest request body kept as parsed JSON: the cassette line adds a few levels and must
stay within what `load_cassette` reads back. DeepSeek itself refuses more than 128."""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} does not fit a float")
    return value


_STRICT = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite_float)


def _parse_body(body: bytes) -> Any:
    """The request body as recorded: its JSON value when it is strict JSON nesting at most
    `_BODY_DEPTH` levels, else its text (bytes that are not UTF-8 kept as lone surrogates by
    `surrogateescape`, so nothing is lost). A body with `NaN` or `1e400` (Python's parser takes
    them, JSON does not) or nested deeper is kept as text too: the cassette stays strict JSON,
    every walk over the body stays shallow, and the bytes sent are still all there."""
    if not body:
        return None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return body.decode("utf-8", "surrogateescape")
    if jsonio.nesting_depth(text, at_least=_BODY_DEPTH) > _BODY_DEPTH:
        return text
    try:
        return _STRICT.decode(text)
    except (ValueError, RecursionError):
        return text


def _break(request: web.Request) -> None:
    """Drop the client connection without ending the body, as the upstream did."""
    if request.transport is not None:
        request.transport.abort()


def _warn(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


# --- the command -----------------------------------------------------------------------------


def _print(obj: dict[str, Any]) -> None:
    sys.stdout.write(jsonio.dumps(obj, compact=False) + "\n")
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
        "--upstream, every response streams back as it arrives, and each exchange is appended to "
        "OUT.cassette.jsonl as it ends (after what the file already holds, unless --overwrite). "
        "Secrets are scrubbed.",
        epilog=_RECORD_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--upstream", required=True, help="upstream base URL, e.g. https://api.deepseek.com")
    p.add_argument("--out", required=True, metavar="recordings/NAME", help="cassette path (.cassette.jsonl added)")
    p.add_argument("--overwrite", action="store_true",
                   help="start a new cassette even if OUT exists (default: append to it)")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    p.add_argument("--port", type=port_number, default=0, help="port (default 0: any free port)")
    p.add_argument("--scrub", action="append", default=[], metavar="[LABEL=]REGEX",
                   help="also replace matches with {{scrubbed:LABEL}} in requests and responses (repeatable)")
    p.add_argument("--no-scrub-secrets", action="store_true",
                   help="keep credential headers and fields (never do this for a committed cassette)")
    p.set_defaults(func=run_record)


def run_record(args: argparse.Namespace) -> int:
    """Record until SIGINT (130) or SIGTERM (143); 1 if the port cannot be bound; 2 for bad
    options or an `--out` that is not a cassette."""
    try:
        recorder = Recorder(
            args.upstream, args.out, host=args.host, port=args.port, overwrite=args.overwrite,
            scrub=args.scrub, scrub_secrets=not args.no_scrub_secrets, on_event=_print,
        )
    except ValueError as e:
        _warn(f"dshkit record: {e}")
        return 2
    return asyncio.run(_record(recorder))


async def _record(recorder: Recorder) -> int:
    from dshkit.mock_server.cli import exit_on_signals  # the CLI module imports this one

    stop = exit_on_signals()
    try:
        await recorder.start()
    except CassetteLocked as e:
        _warn(f"dshkit record: --out {e}")
        return 2
    except CassetteError as e:
        _warn(f"dshkit record: --out {recorder.path} exists and is not a cassette this dshkit can append "
              f"to ({e}); pass --overwrite to replace it, or choose another --out")
        return 2
    except OSError as e:
        if e.filename is not None:  # the cassette (or its folder), not the port
            _warn(f"dshkit record: --out {recorder.path}: cannot create or open it for writing "
                  f"({e.filename}: {e.strerror or e}); give a writable path")
            return 2
        _warn(_bind_error(recorder, e))
        return 1
    if recorder.appender.set_aside is not None:
        _warn(f"dshkit record: the last line of {recorder.path} was torn (a crash while writing it); "
              f"moved it to {recorder.appender.set_aside}")
    _print({"type": "ready", "base_url": recorder.base_url, "port": recorder.port,
            "upstream": recorder.upstream, "out": str(recorder.path),
            "appending_to": recorder.appender.existing})
    try:
        return await stop
    finally:
        await recorder.close()


def _bind_error(recorder: Recorder, e: OSError) -> str:
    where = f"{recorder.host}:{recorder._requested_port}"
    if e.errno == errno.EADDRINUSE:
        return (f"dshkit record: cannot listen on {where}: the port is already in use; "
                "pick another --port, or --port 0 for any free one")
    return f"dshkit record: cannot listen on {where}: {e.strerror or e}"
