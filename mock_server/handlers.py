"""Request handlers: validate, route to a script step, plan the answer, write it.

:func:`model_call` makes the handler of one wire's model calls (one per registered
:class:`~dshkit.mock_server.surface.Surface`); these are the only handlers that consume script
steps. The order is fixed: auth (401), body size (413), body validation (400/422), then
routing; a request rejected on the way never consumes a step. The one exception to body
validation: when the session's script serves recorded exchanges (a replayed cassette,
`Script.recorded`), a body the mock's rules reject is routed anyway, since the upstream it was
recorded against accepted it. Routing failures answer 418
(`mock_no_match`, `mock_script_exhausted`, `mock_no_script`), a status no client retries; so does a
reply callback that fails (`mock_callback_error`). Once
a step answers, the handler fixes the request's :class:`~dshkit.mock_server.surface.Call` and
hands it to a :class:`~dshkit.mock_server.respond.Responder`. Every request gets a journal entry
and, for the CLI, a `request` and a `result` event.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
import zlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from dshkit.mock_server.chat import ChatSurface
from dshkit.mock_server.defaults import default_reply
from dshkit.mock_server.exchange import AiohttpExchange, Exchange
from dshkit.mock_server.faults import FAULTS, pick_random
from dshkit.mock_server.journal import JournalEntry, NestingTooDeep, redact_body
from dshkit.mock_server.respond import Responder
from dshkit.mock_server.routing import Decision, Router, session_of
from dshkit.mock_server.runtime import Runtime
from dshkit.mock_server.scripts import (
    CallbackStep,
    ChunksStep,
    FaultStep,
    RawStep,
    ReplyStep,
    StreamSpec,
    Timing,
)
from dshkit.mock_server.surface import Call, Surface
from dshkit.mock_server.validation import (
    MAX_DEPTH,
    MODELS,
    ChatRequest,
    Rejection,
    check_headers,
    recorded_request,
)

__all__ = [
    "BEHAVIOR_HEADER",
    "ROUTER_KEY",
    "RUNTIME_KEY",
    "SURFACES_KEY",
    "Answer",
    "Incoming",
    "balance",
    "decode_body",
    "list_models",
    "metrics_page",
    "model_answer",
    "model_call",
    "not_found",
    "step_seed",
]

log = logging.getLogger("dshkit.mock_server")

RUNTIME_KEY = web.AppKey("dshkit_runtime", Runtime)
ROUTER_KEY = web.AppKey("dshkit_router", Router)
SURFACES_KEY: web.AppKey[tuple[Surface, ...]] = web.AppKey("dshkit_surfaces")
#: The surface of the endpoints every DeepSeek client shares (models, balance, unknown paths).
CHAT = ChatSurface()
#: A request header naming a fault to play for this one request, bypassing the scripts.
BEHAVIOR_HEADER = "X-Mock-Behavior"
_ROUTING_CODES = {
    "no_match": "mock_no_match",
    "exhausted": "mock_script_exhausted",
    "no_script": "mock_no_script",
}


@dataclass(frozen=True, slots=True)
class Incoming:
    """What the handlers read of a request, whoever parsed it: aiohttp, or the fast front
    (:mod:`~dshkit.mock_server.front`), which hands over only requests it read whole."""

    method: str
    path: str
    """The path without its query string."""
    headers: Mapping[str, str]
    """Case-insensitive (a `CIMultiDictProxy`), values as aiohttp decodes them."""
    read_body: Callable[[int, float], Awaitable[bytes]]
    """The body, decoded, within (limit bytes, timeout seconds); else a :class:`Rejection`."""
    router: Router


#: Opens the exchange a request is answered on, given its journal entry and the headers every
#: response of it carries.
OpenExchange = Callable[[JournalEntry, Mapping[str, str]], Exchange]
#: Answers one request: (runtime, request, how to open the exchange it is written on).
Answer = Callable[[Runtime, Incoming, OpenExchange], Awaitable[None]]


def _incoming(request: web.Request) -> Incoming:
    return Incoming(request.method, request.path, request.headers,
                    functools.partial(_read_body, request), request.app[ROUTER_KEY])


async def _read_body(request: web.Request, limit: int, timeout: float) -> bytes:
    """The request body, decompressed, within `limit` bytes and `timeout` seconds.

    aiohttp's own decompression is off (see `server.py`): a `Content-Encoding` that does not
    match the bytes must be the client's 400, and a small gzip body must not inflate past the
    size limit.
    """
    declared = request.content_length  # parsed from the header on every read
    if declared is not None and declared > limit:
        raise _too_large(declared, limit)
    content = request.content
    try:
        if content.is_eof():
            # The whole body came with the head (the usual case): take it as it is, without a timer.
            whole = content.read_nowait()
            if len(whole) > limit:
                raise _too_large(len(whole), limit)
        else:
            data = bytearray()
            async with asyncio.timeout(timeout):
                async for chunk in content.iter_chunked(1 << 16):
                    data += chunk
                    if len(data) > limit:
                        raise _too_large(len(data), limit)
            whole = bytes(data)
    except web.RequestPayloadError as e:  # broken chunked framing and the like
        # Nothing more will be read; marking the end stops aiohttp's lingering read from
        # meeting the same error again after the response (an "Unhandled exception" log).
        request.content.feed_eof()
        raise Rejection(
            400, f"the request body could not be read ({e}); check its framing "
            "(Content-Length or chunked encoding)", headers={"Connection": "close"}) from None
    except TimeoutError:
        request.content.feed_eof()
        raise Rejection(
            408, f"the request body did not arrive within {timeout:g} s (raise it with "
            "--idle-timeout or MockServer(idle_timeout=...))", code="request_timeout",
            headers={"Connection": "close"}) from None
    return decode_body(whole, request.headers.get("Content-Encoding"), limit)


_ENCODINGS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


def decode_body(data: bytes, encoding: str | None, limit: int) -> bytes:
    """Undo `Content-Encoding` (gzip or deflate), at most `limit` bytes out; else a 4xx."""
    name = (encoding or "identity").strip().lower()
    if name in ("", "identity"):
        return data
    wbits = _ENCODINGS.get(name)
    if wbits is None:
        raise Rejection(
            415, f"Content-Encoding {encoding!r} is not supported; send the body uncompressed "
            "or as gzip or deflate", code="unsupported_content_encoding")
    inflater = zlib.decompressobj(wbits)
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as e:
        raise Rejection(
            400, f"the body is not valid {name} data although Content-Encoding says {name} "
            f"({e}); compress it that way or drop the header") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise _too_large(len(out), limit, " after decompression")
    if not inflater.eof:
        raise Rejection(400, f"the {name} body is truncated (its compressed stream does not end)")
    return out


def _parsed_or_none(raw: bytes) -> Any:
    """A rejected body as the journal keeps it: parsed and redacted, or None when not JSON.

    Lenient on purpose (NaN and lone surrogates are kept: the journal writes them as valid
    JSON), except for nesting too deep to walk safely.
    """
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    try:
        return redact_body(body, max_depth=MAX_DEPTH)
    except NestingTooDeep:
        return None


def _too_large(size: int, limit: int, how: str = "") -> Rejection:
    return Rejection(
        413,
        f"Request body too large{how}: {size}+ bytes, the mock server accepts at most {limit} "
        "(raise it with --max-body-bytes or MockServer(max_body_bytes=...))",
        code="request_too_large",
    )


def _begin(rt: Runtime, e: JournalEntry, behavior: str, *, script_behavior: str | None = None) -> None:
    """Record what answers the request (`script_behavior`: what the script asked, if it differs)
    and emit the `request` event."""
    e.behavior = behavior
    e.script_behavior = script_behavior or behavior
    if rt.config.on_event is None:  # no observer: no event to build
        return
    rt.emit(
        {
            "type": "request",
            "seq": e.seq,
            "path": e.path,
            "session": e.session,
            "script": e.script,
            "step": e.step,
            "script_behavior": e.script_behavior,
            "behavior": e.behavior,
        }
    )


def _emit_result(rt: Runtime, e: JournalEntry) -> None:
    if rt.config.on_event is None:
        return
    rt.emit(
        {
            "type": "result",
            "seq": e.seq,
            "session": e.session,
            "script": e.script,
            "step": e.step,
            "behavior": e.behavior,
            "status": e.status,
            "outcome": e.outcome,
            "writes": e.write_count,
            "bytes": e.bytes_sent,
        }
    )


def _validate(rt: Runtime, surface: Surface, raw: bytes, request: Incoming, entry: JournalEntry) -> ChatRequest:
    """`surface.validate` for the request; on the fast path through the runtime's cache (which
    takes the headers the journal entry redacted already)."""
    path, headers = request.path, request.headers

    def full() -> ChatRequest:
        return surface.validate(raw, path=path, headers=headers, config=rt.config)

    cache = rt.validation
    if cache is None or not surface.validates_body_only:
        return full()
    return cache.validate(full, raw, path=path, headers=headers, redacted_headers=entry.headers)


@functools.lru_cache(maxsize=4096)
def step_seed(server_seed: int, session: str, step: int | None) -> int:
    """A seed stable per (server seed, session, step), whatever the arrival order (computed
    once per step of a session: a step answered again asks again)."""
    return zlib.crc32(f"{server_seed}:{session}:{step}".encode("utf-8", "surrogateescape"))


_Serve = Callable[[Runtime, Incoming, JournalEntry, Responder], Awaitable[str]]


@functools.cache
def _default_knobs() -> tuple[StreamSpec, Timing]:
    """The default reply's stream and timing: frozen, so made once (on first use, which builds
    their validators: a server that never serves the default reply never does)."""
    return StreamSpec(), Timing()


async def _guarded(rt: Runtime, request: Incoming, surface: Surface, serve: _Serve, open_x: OpenExchange) -> None:
    """Run `serve` for the request as it arrived; record the outcome whatever happens, journal, emit."""
    entry = rt.journal.open_entry(
        t=time.monotonic(), method=request.method, path=request.path, headers=request.headers
    )
    rt.metrics.arrived(surface.name)
    trace = f"{rt.trace_prefix}{entry.seq:024x}"  # 32 hex digits, like DeepSeek's
    call = Call(surface=surface, config=rt.config, seq=entry.seq, trace_id=trace)
    x = open_x(entry, surface.response_headers(trace))
    r = Responder(call, rt.output, x)
    rt.active.add(x)
    try:
        entry.outcome = await serve(rt, request, entry, r)
    except asyncio.CancelledError:
        # With handler cancellation on, a client that hangs up cancels this task.
        entry.outcome = "closed" if rt.closing.is_set() else "client_closed"
        raise
    except ConnectionError:
        entry.outcome = "client_closed"
    except Exception:
        log.exception("mock server handler failed on %s %s", request.method, request.path)
        entry.outcome = "server_error"
        if not x.started:
            await r.error(500, "mock server internal error (see its log)", "server_error",
                          "mock_internal_error")
    finally:
        rt.active.discard(x)
        try:
            rt.journal.close_entry(entry)
        except (OSError, ValueError) as e:  # a full disk must not cost the `result` event
            log.error("mock server could not write journal entry %d: %s", entry.seq, e)
        rt.metrics.finished(surface.name, entry)
        _emit_result(rt, entry)


async def _guarded_aiohttp(request: web.Request, surface: Surface, serve: _Serve) -> web.StreamResponse:
    """:func:`_guarded` for a request aiohttp parsed, answered through aiohttp's responses."""
    rt = request.app[RUNTIME_KEY]
    opened: list[AiohttpExchange] = []

    def open_x(entry: JournalEntry, headers: Mapping[str, str]) -> Exchange:
        opened.append(AiohttpExchange(request, entry, rt.closing, headers))
        return opened[0]

    await _guarded(rt, _incoming(request), surface, serve, open_x)
    resp = opened[0].resp
    if resp is None:
        # The connection was reset before any header: nothing can be sent any more.
        return web.Response(status=499)
    return resp


async def _reject(rt: Runtime, entry: JournalEntry, r: Responder, rejection: Rejection) -> str:
    _begin(rt, entry, "rejected")
    await r.error(rejection.status, rejection.message, rejection.type, rejection.code, rejection.headers)
    return "rejected"


def _model_serve(surface: Surface) -> _Serve:
    """How one wire's model calls are answered: validate, route, plan, write.

    Only the surface's own parts differ between wires (auth, validation, and later everything
    it renders); the order, the journal and the routing are shared. :func:`model_call` runs it
    for a request aiohttp parsed, :func:`model_answer` for one the fast front
    (:mod:`~dshkit.mock_server.front`) read itself.
    """

    async def serve(rt: Runtime, request: Incoming, entry: JournalEntry, r: Responder) -> str:
        cfg = rt.config
        # The session is known from the headers alone: record it before validation so rejected
        # requests are attributed too (journal.for_session sees every request of a session).
        session = session_of(request.headers)
        entry.session = session
        # -- validate
        try:
            check_headers(request.headers)
            surface.authorize(request.headers, cfg.api_key)
            raw = await request.read_body(cfg.max_body_bytes, cfg.idle_timeout)
        except Rejection as rejection:
            return await _reject(rt, entry, r, rejection)
        entry.request_bytes = len(raw)
        override = request.headers.get(BEHAVIOR_HEADER)
        try:
            chat = _validate(rt, surface, raw, request, entry)
        except Rejection as rejection:
            if override is not None or not request.router.serves_recorded(session):
                entry.body = _parsed_or_none(raw)
                return await _reject(rt, entry, r, rejection)
            # A replayed cassette answers: the upstream it was recorded against accepted this
            # request, so the mock's own rules do not stand between it and its recording.
            log.debug("serving a recorded exchange to a request the mock would reject: %s", rejection.message)
            chat = recorded_request(raw, path=request.path, headers=request.headers)
        entry.body = chat.redacted  # parsed and redacted once, by the validator
        # -- route
        if override is not None:
            if override not in FAULTS:
                return await _reject(rt, entry, r, Rejection(
                    400, f"{BEHAVIOR_HEADER}: unknown fault {override!r}; known: "
                    f"{', '.join(sorted(FAULTS))}", code="mock_unknown_fault"))
            decision = Decision(kind="step", session=session, step=FaultStep(fault=override))  # type: ignore[arg-type]
        else:
            decision = await request.router.decide(session, chat.view)
        entry.script = decision.script.name if decision.script else None
        if decision.kind in _ROUTING_CODES:
            _begin(rt, entry, decision.kind)
            await r.error(418, decision.message, "mock_error", _ROUTING_CODES[decision.kind])
            return "rejected"
        entry.step = decision.index
        step = decision.step
        if decision.script is not None:
            rt.metrics.step(decision.script.name)
        if isinstance(step, CallbackStep):
            try:
                step = step.resolve(chat.view)
            except ValueError as e:  # the test's function failed: a 418 no client retries
                where = decision.script.step_label(decision.index or 0) if decision.script else "a step"
                _begin(rt, entry, "callback_error", script_behavior="call")
                await r.error(418, f"{where}: {e}", "mock_error", "mock_callback_error")
                return "rejected"
        # -- plan: everything the answer needs, fixed before its first byte
        call = Call(
            surface=surface,
            config=cfg,
            seq=entry.seq,
            trace_id=r.call.trace_id,
            request=chat,
            seed=step_seed(cfg.seed, session, decision.index),
            repeat=decision.repeat if decision.repeat is not None else rt.repeat_of(session, decision.index),
            quirks=frozenset(step.stream.quirks) if isinstance(step, (ReplyStep, FaultStep)) else frozenset(),
            created=int(time.time()),
        )
        answer = Responder(call, r.output, r.x)
        # -- write
        if step is None:
            _begin(rt, entry, "default")
            return await answer.reply(default_reply(chat), *_default_knobs())
        if isinstance(step, ReplyStep):
            _begin(rt, entry, "reply")
            return await answer.reply(rt.reply_of(step.reply), step.stream, step.timing, logprobs=step.reply.logprobs)
        if isinstance(step, RawStep):
            _begin(rt, entry, "raw")
            return await answer.raw(step.raw, step.timing)
        if isinstance(step, ChunksStep):
            _begin(rt, entry, "chunks")
            return await answer.chunks(step.chunks, step.timing)
        name: str = step.fault
        if name == "random":
            name = pick_random(rt.random, cfg.weights)
        _begin(rt, entry, name, script_behavior=step.fault)
        return await FAULTS[name].run(answer, step)

    return serve


def model_answer(surface: Surface) -> Answer:
    """One wire's model calls answered for any parser: the fast front's entry point."""
    serve = _model_serve(surface)

    async def answer(rt: Runtime, request: Incoming, open_x: OpenExchange) -> None:
        await _guarded(rt, request, surface, serve, open_x)

    return answer


def model_call(surface: Surface) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """The aiohttp handler of one wire's model calls."""
    serve = _model_serve(surface)

    async def handler(request: web.Request) -> web.StreamResponse:
        return await _guarded_aiohttp(request, surface, serve)

    handler.__name__ = f"{surface.name}_model_call"
    return handler


def _static_json(behavior: str, body: Mapping[str, Any]) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """A handler that checks auth, then answers `body` (a fixed JSON document) with 200."""

    async def handler(request: web.Request) -> web.StreamResponse:
        async def serve(rt: Runtime, request: Incoming, entry: JournalEntry, r: Responder) -> str:
            try:
                check_headers(request.headers)
                CHAT.authorize(request.headers, rt.config.api_key)
            except Rejection as rejection:
                return await _reject(rt, entry, r, rejection)
            _begin(rt, entry, behavior)
            return await r.json(200, body)

        return await _guarded_aiohttp(request, CHAT, serve)

    handler.__name__ = behavior
    return handler


#: `GET /models`: the five model ids the mock accepts (S3).
list_models = _static_json(
    "models",
    {
        "object": "list",
        "data": [{"id": m, "object": "model", "owned_by": "deepseek"} for m in MODELS],
    },
)
#: `GET /user/balance`: always available, so clients that check it go on.
balance = _static_json(
    "balance",
    {
        "is_available": True,
        "balance_infos": [
            {"currency": "USD", "total_balance": "100.00", "granted_balance": "0.00",
             "topped_up_balance": "100.00"}
        ],
    },
)


async def metrics_page(request: web.Request) -> web.StreamResponse:
    """`GET /metrics`: the server's counts in the Prometheus text format (not journaled)."""
    from dshkit.mock_server.metrics import render_counts

    counts = await request.app[ROUTER_KEY].gather(request.app[RUNTIME_KEY].metrics)
    body, content_type = render_counts(counts)
    return web.Response(body=body, headers={"Content-Type": content_type})


async def not_found(request: web.Request) -> web.StreamResponse:
    """Any other path: 404 with the error envelope, naming the paths that exist."""

    async def serve(rt: Runtime, incoming: Incoming, entry: JournalEntry, r: Responder) -> str:
        _begin(rt, entry, "not_found")
        paths = ", ".join(p for surface in request.app[SURFACES_KEY] for p in surface.paths)
        await r.error(
            404,
            f"{request.method} {request.path} is not served by the mock; it serves POST {paths}, "
            "and GET /models and /user/balance (also under /v1)",
            code="not_found",
        )
        return "rejected"

    return await _guarded_aiohttp(request, CHAT, serve)
