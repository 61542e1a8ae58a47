"""Request handlers: validate, route to a script step, dispatch to a reply, fault or raw bytes.

`chat_completions` is the only handler that consumes script steps. Its order is fixed: auth
(401), body size (413), body validation (400/422), then routing; a request rejected on the way
never consumes a step. Routing failures answer 418 (`mock_no_match`, `mock_script_exhausted`,
`mock_no_script`), a status no client retries. Every request gets a journal entry and, for the
CLI, a `request` and a `result` event.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

from aiohttp import web

from mock_server.defaults import default_reply
from mock_server.exchange import Exchange, Runtime
from mock_server.faults import FAULTS, pick_random
from mock_server.journal import JournalEntry, redact_body
from mock_server.routing import Decision, Router, session_of
from mock_server.scripts import ChunksStep, FaultStep, RawStep, ReplyStep, StreamSpec, Timing
from mock_server.validation import MODELS, Rejection, check_auth, validate_chat

__all__ = [
    "BEHAVIOR_HEADER",
    "ROUTER_KEY",
    "RUNTIME_KEY",
    "balance",
    "chat_completions",
    "list_models",
    "not_found",
]

log = logging.getLogger("mock_server")

RUNTIME_KEY = web.AppKey("dshkit_runtime", Runtime)
ROUTER_KEY = web.AppKey("dshkit_router", Router)
#: A request header naming a fault to play for this one request, bypassing the scripts.
BEHAVIOR_HEADER = "X-Mock-Behavior"
_ROUTING_CODES = {
    "no_match": "mock_no_match",
    "exhausted": "mock_script_exhausted",
    "no_script": "mock_no_script",
}


async def _read_body(request: web.Request, limit: int) -> bytes:
    if request.content_length is not None and request.content_length > limit:
        raise _too_large(request.content_length, limit)
    data = bytearray()
    async for chunk in request.content.iter_chunked(1 << 16):
        data += chunk
        if len(data) > limit:
            raise _too_large(len(data), limit)
    return bytes(data)


def _too_large(size: int, limit: int) -> Rejection:
    return Rejection(
        413,
        f"Request body too large: {size} bytes, the mock server accepts at most {limit} "
        "(raise it with --max-body-bytes or MockServer(max_body_bytes=...))",
        code="request_too_large",
    )


def _open(request: web.Request) -> tuple[Runtime, JournalEntry, Exchange]:
    rt = request.app[RUNTIME_KEY]
    entry = rt.journal.open_entry(
        t=time.monotonic(), method=request.method, path=request.path, headers=request.headers
    )
    x = Exchange(request, entry, rt)
    return rt, entry, x


def _emit_request(rt: Runtime, e: JournalEntry) -> None:
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
            "writes": len(e.writes),
            "bytes": e.bytes_sent,
        }
    )


async def _guarded(request: web.Request, serve: Any) -> web.StreamResponse:
    """Run `serve(rt, entry, x)`; record the outcome whatever happens, journal, emit."""
    rt, entry, x = _open(request)
    rt.active.add(x)
    try:
        entry.outcome = await serve(rt, entry, x)
    except asyncio.CancelledError:
        # With handler cancellation on, a client that hangs up cancels this task.
        entry.outcome = "closed" if rt.closing.is_set() else "client_closed"
        raise
    except ConnectionError:
        entry.outcome = "client_closed"
    except Exception:
        log.exception("mock server handler failed on %s %s", request.method, request.path)
        entry.outcome = "server_error"
        if x.resp is None:
            await x.error(500, "mock server internal error (see its log)", "server_error",
                          "mock_internal_error")
    finally:
        rt.active.discard(x)
        rt.journal.close_entry(entry)
        _emit_result(rt, entry)
    if x.resp is None:
        # The connection was reset before any header: nothing can be sent any more.
        return web.Response(status=499)
    return x.resp


async def _reject(rt: Runtime, entry: JournalEntry, x: Exchange, r: Rejection) -> str:
    entry.behavior = entry.script_behavior = "rejected"
    _emit_request(rt, entry)
    await x.error(r.status, r.message, r.type, r.code, r.headers)
    return "rejected"


async def chat_completions(request: web.Request) -> web.StreamResponse:
    """`POST /chat/completions` (also under `/v1` and `/beta`, S1)."""

    async def serve(rt: Runtime, entry: JournalEntry, x: Exchange) -> str:
        cfg = rt.config
        # The session is known from the headers alone: record it before validation so rejected
        # requests are attributed too (journal.for_session sees every request of a session).
        session = session_of(request.headers)
        entry.session = session
        try:
            check_auth(request.headers, cfg.api_key)
            raw = await _read_body(request, cfg.max_body_bytes)
            try:
                entry.body = redact_body(json.loads(raw))
            except ValueError:
                entry.body = None
            chat = validate_chat(raw, path=request.path, headers=request.headers, era=cfg.era)
        except Rejection as r:
            return await _reject(rt, entry, x, r)
        x.chat = chat
        override = request.headers.get(BEHAVIOR_HEADER)
        if override is not None:
            if override not in FAULTS:
                return await _reject(rt, entry, x, Rejection(
                    400, f"{BEHAVIOR_HEADER}: unknown fault {override!r}; known: "
                    f"{', '.join(sorted(FAULTS))}", code="mock_unknown_fault"))
            decision = Decision(kind="step", session=session, step=FaultStep(fault=override))  # type: ignore[arg-type]
        else:
            decision = request.app[ROUTER_KEY].route(session, chat.view)
        if decision.kind in _ROUTING_CODES:
            entry.script = decision.script.name if decision.script else None
            entry.behavior = entry.script_behavior = decision.kind
            _emit_request(rt, entry)
            await x.error(418, decision.message, "mock_error", _ROUTING_CODES[decision.kind])
            return "rejected"
        x.seed = Exchange.step_seed(cfg.seed, session, decision.index)
        entry.script = decision.script.name if decision.script else None
        entry.step = decision.index
        step = decision.step
        if step is None:
            entry.behavior = entry.script_behavior = "default"
            _emit_request(rt, entry)
            return await x.serve_reply(default_reply(chat), StreamSpec(), Timing())
        if isinstance(step, ReplyStep):
            entry.behavior = entry.script_behavior = "reply"
            _emit_request(rt, entry)
            return await x.serve_reply(
                step.reply.to_reply(), step.stream, step.timing, logprobs=step.reply.logprobs
            )
        if isinstance(step, RawStep):
            entry.behavior = entry.script_behavior = "raw"
            _emit_request(rt, entry)
            return await x.serve_raw(step.raw, step.timing)
        if isinstance(step, ChunksStep):
            entry.behavior = entry.script_behavior = "chunks"
            _emit_request(rt, entry)
            return await x.serve_chunks(step.chunks, step.timing)
        entry.script_behavior = step.fault
        name: str = step.fault
        if name == "random":
            name = pick_random(rt.random, cfg.weights)
        entry.behavior = name
        _emit_request(rt, entry)
        return await FAULTS[name].run(x, step)

    return await _guarded(request, serve)


async def list_models(request: web.Request) -> web.StreamResponse:
    """`GET /models`: the five model ids the mock accepts (S3)."""

    async def serve(rt: Runtime, entry: JournalEntry, x: Exchange) -> str:
        try:
            check_auth(request.headers, rt.config.api_key)
        except Rejection as r:
            return await _reject(rt, entry, x, r)
        entry.behavior = entry.script_behavior = "models"
        _emit_request(rt, entry)
        body = {
            "object": "list",
            "data": [{"id": m, "object": "model", "owned_by": "deepseek"} for m in MODELS],
        }
        return await x.send_json(200, body)

    return await _guarded(request, serve)


async def balance(request: web.Request) -> web.StreamResponse:
    """`GET /user/balance`: always available, so clients that check it go on."""

    async def serve(rt: Runtime, entry: JournalEntry, x: Exchange) -> str:
        try:
            check_auth(request.headers, rt.config.api_key)
        except Rejection as r:
            return await _reject(rt, entry, x, r)
        entry.behavior = entry.script_behavior = "balance"
        _emit_request(rt, entry)
        body = {
            "is_available": True,
            "balance_infos": [
                {"currency": "USD", "total_balance": "100.00", "granted_balance": "0.00",
                 "topped_up_balance": "100.00"}
            ],
        }
        return await x.send_json(200, body)

    return await _guarded(request, serve)


async def not_found(request: web.Request) -> web.StreamResponse:
    """Any other path: 404 with the error envelope, naming the paths that exist."""

    async def serve(rt: Runtime, entry: JournalEntry, x: Exchange) -> str:
        entry.behavior = entry.script_behavior = "not_found"
        _emit_request(rt, entry)
        await x.error(
            404,
            f"{request.method} {request.path} is not served by the mock; it serves POST "
            "/chat/completions (also under /v1 and /beta), GET /models and GET /user/balance",
            code="not_found",
        )
        return "rejected"

    return await _guarded(request, serve)
