"""The fault catalogue: each fault name maps to one small function that misbehaves on purpose.

A `fault:` step (or `--sequence` entry) names one of these. Each function gets the request's
:class:`~dshkit.mock_server.respond.Responder` and the step's tuning fields and returns the
outcome it produced. Upstream's 24 behaviours keep their names (`dsh-testing.md` §1.3); the rest cover
§6.1.3 and §6.2 (stall after event k, finish without `[DONE]`, in-band errors, garbage lines,
DeepSeek's real error bodies). Stream faults on a non-streaming request act on the JSON body
instead: a cut is made at its middle.

The functions know no wire: what differs between wires comes from the request's
:class:`~dshkit.mock_server.surface.Surface`, which renders the events and bodies, words and
types the HTTP errors, supplies the in-band error, the malformed payloads and the unterminated
end marker, and says where a stream is cut (:class:`~dshkit.mock_server.surface.Cuts`). On the
Anthropic Messages surface, for example, `message_stop` plays the part of `[DONE]`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from dshkit.mock_server.exchange import JSON_HEADERS
from dshkit.mock_server.generate.reply import Reply, ToolCall
from dshkit.mock_server.generate.writes import WritePlan, plan_writes
from dshkit.mock_server.respond import Responder
from dshkit.mock_server.scripts import FaultStep, SplitSpec, StreamSpec
from dshkit.mock_server.validation import PASSBACK_MESSAGE

__all__ = ["FAULTS", "HTTP_FAULTS", "Fault", "FaultInfo", "HttpFault", "pick_random"]

Fault = Callable[[Responder, FaultStep], Awaitable[str]]

DEFAULT_TEXT = "mock response recovered"
PARTIAL_TEXT = "partial response before the failure"
DEFAULT_REASONING = "mock reasoning"
SPLIT_TEXT = 'Mock 回复 with "quotes", a tab\t, a newline\n and emoji 🎉✓'


@dataclass(frozen=True, slots=True)
class FaultInfo:
    """A catalogue entry: the function and what a client sees."""

    name: str
    run: Fault
    kind: Literal["connection", "stream", "http", "finish", "timing", "success", "meta"]
    client_sees: str


FAULTS: dict[str, FaultInfo] = {}


def _fault(
    kind: Literal["connection", "stream", "http", "finish", "timing", "success", "meta"],
    client_sees: str,
) -> Callable[[Fault], Fault]:
    def register(fn: Fault) -> Fault:
        name = fn.__name__.removeprefix("_f_")
        FAULTS[name] = FaultInfo(name, fn, kind, client_sees)
        return fn

    return register


def _success(p: FaultStep) -> Reply:
    return Reply(content=p.text or DEFAULT_TEXT)


def _delay_ms(p: FaultStep, default_ms: int) -> int:
    return p.delay_ms if p.delay_ms is not None else default_ms


async def _start_as_asked(r: Responder) -> None:
    """200 with the headers the request asked for: SSE, or JSON for a non-streaming request."""
    await r.x.start(200, r.call.surface.stream_headers if r.call.streaming else JSON_HEADERS)


async def _malformed(r: Responder, what: Literal["json", "event"]) -> str:
    """A payload that is not JSON, or of an invalid shape: the whole JSON body, or one event of
    a stream that then ends as this wire ends streams."""
    data, events = r.call.surface.malformed(r.call, what)
    await _start_as_asked(r)
    if r.call.streaming:
        await r.write_all(events)
    else:
        await r.x.write(data)
    return await r.x.end()


async def _cut(
    r: Responder,
    p: FaultStep,
    reply: Reply,
    *,
    keep: int | None,
    tail: bytes = b"",
    then: Literal["eof", "reset", "hold"],
    spec: StreamSpec | None = None,
    delay: float = 0.0,
) -> str:
    """Send the first `keep` events of `reply` (None: all but the end marker; negative: from
    the end, as in slicing), then `tail`, then end cleanly, reset, or hold the connection."""
    spec = spec or p.stream
    if r.call.streaming:
        events = r.events(reply, spec, done=False)
        head = events if keep is None else events[:keep]
        return await r.stream(head, p.timing, delay=delay, tail=tail, end=then)
    body = r.body(reply, spec).data
    await r.x.start(200, JSON_HEADERS)
    await r.x.write(body if keep is None else body[: len(body) // 2])
    if tail:
        await r.x.write(tail)
    return await r.finish(then)


async def _http(
    r: Responder,
    p: FaultStep,
    fault: str,
    status: int,
    message: str,
    type: str,
    code: str | None,
    headers: Mapping[str, str] | None = None,
) -> str:
    h = dict(headers or {})
    if p.request_id:
        h["x-request-id"] = p.request_id
    status = p.status or status
    surface = r.call.surface
    message = p.message or surface.fault_message(fault, message)
    return await r.error(status, message, p.type or surface.fault_type(status, type), p.code or code, h)


# -- connection ------------------------------------------------------------------------------


@_fault("connection", "TCP reset before any header: httpx ReadError/RemoteProtocolError, "
        "aiohttp ServerDisconnectedError/ClientOSError, openai APIConnectionError")
async def _f_connection_reset(r: Responder, p: FaultStep) -> str:
    return r.x.reset()


@_fault("connection", "200 + SSE headers, then a TCP reset after `delay_ms` (10) with no event")
async def _f_stream_disconnect(r: Responder, p: FaultStep) -> str:
    await _start_as_asked(r)
    await r.x.wait(_delay_ms(p, 10) / 1000)
    return r.x.reset()


@_fault("connection", "role opener and `text` as content deltas (`delay_ms` 10 apart), then a "
        "TCP reset: no finish chunk, no [DONE]")
async def _f_partial_disconnect(r: Responder, p: FaultStep) -> str:
    reply = Reply(content=p.text or PARTIAL_TEXT)
    return await _cut(r, p, reply, keep=-1, then="reset", delay=_delay_ms(p, 10) / 1000)


# -- stream shape ----------------------------------------------------------------------------


@_fault("stream", "200 + SSE headers, then nothing until the client gives up (read timeout) "
        "or the server closes")
async def _f_stall(r: Responder, p: FaultStep) -> str:
    await _start_as_asked(r)
    return await r.x.hold()


@_fault("stream", "the first `after_events` (2) events of a normal reply, then silence with the "
        "connection open (read timeout)")
async def _f_stall_after(r: Responder, p: FaultStep) -> str:
    return await _cut(r, p, _success(p), keep=p.after_events, then="hold")


@_fault("stream", "role opener and `after_events` (2) reasoning deltas, then silence mid-"
        "reasoning (DeepSeek-V3#1608); thinking is forced on")
async def _f_reasoning_stall(r: Responder, p: FaultStep) -> str:
    reasoning = p.reasoning or "Let me think about this step by step before answering the user."
    spec = p.stream.model_copy(update={"thinking": True})
    reply = Reply(reasoning=reasoning, content=p.text or DEFAULT_TEXT)
    keep = r.call.surface.cuts.reasoning + p.after_events
    return await _cut(r, p, reply, keep=keep, then="hold", spec=spec)


@_fault("stream", "a tool call opener and its first argument fragment, then a clean EOF "
        "(agenc-core#2492): the arguments are incomplete JSON")
async def _f_partial_tool_eof(r: Responder, p: FaultStep) -> str:
    reply = Reply(tool_calls=(ToolCall(name=p.tool_name, arguments=p.tool_arguments),))
    return await _cut(r, p, reply, keep=r.call.surface.cuts.first_argument, then="eof")


@_fault("stream", "a complete reply with its finish chunk, then a clean EOF without [DONE]")
async def _f_done_missing(r: Responder, p: FaultStep) -> str:
    return await _cut(r, p, _success(p), keep=None, then="eof")


@_fault("stream", "a complete reply with its finish chunk, no [DONE], connection held open "
        "(OmniRoute#6777): read timeout unless the client stops at finish_reason")
async def _f_hold_after_finish(r: Responder, p: FaultStep) -> str:
    return await _cut(r, p, _success(p), keep=None, then="hold")


@_fault("stream", "a complete reply, then `data: [DONE]` and one newline but no blank line, "
        "then EOF")
async def _f_done_unterminated(r: Responder, p: FaultStep) -> str:
    tail = r.call.surface.done_unterminated(p.stream.framing)
    return await _cut(r, p, _success(p), keep=None, tail=tail, then="eof")


@_fault("stream", "200 + SSE headers, then a clean end with zero events")
async def _f_empty_body(r: Responder, p: FaultStep) -> str:
    await _start_as_asked(r)
    return await r.x.end()


@_fault("stream", "only the role opener chunk, then a clean EOF (no finish, no [DONE])")
async def _f_stream_eof(r: Responder, p: FaultStep) -> str:
    return await _cut(r, p, _success(p), keep=1, then="eof")


@_fault("stream", "role opener and `text` as content deltas, then a clean EOF: no finish "
        "chunk, no [DONE]")
async def _f_partial_eof(r: Responder, p: FaultStep) -> str:
    return await _cut(r, p, Reply(content=p.text or PARTIAL_TEXT), keep=-1, then="eof")


@_fault("stream", "`data: {not-json` then `data: [DONE]`: the openai SDK raises "
        "JSONDecodeError")
async def _f_malformed_json(r: Responder, p: FaultStep) -> str:
    return await _malformed(r, "json")


@_fault("stream", "valid JSON of an invalid shape (`choices: [null]`), then `data: [DONE]`")
async def _f_malformed_event(r: Responder, p: FaultStep) -> str:
    return await _malformed(r, "event")


@_fault("stream", "`after_events` (2) events, then `data: {\"error\": {...}}` and EOF: the "
        "openai SDK raises APIError with the message")
async def _f_inband_error(r: Responder, p: FaultStep) -> str:
    tail = r.call.surface.inband_error(r.call, p, event_line=False)
    return await _cut(r, p, _success(p), keep=p.after_events, tail=tail, then="eof")


@_fault("stream", "`after_events` (2) events, then `event: error` + `data: {\"error\": ...}` "
        "(oc04) and EOF")
async def _f_event_error(r: Responder, p: FaultStep) -> str:
    tail = r.call.surface.inband_error(r.call, p, event_line=True)
    return await _cut(r, p, _success(p), keep=p.after_events, tail=tail, then="eof")


@_fault("stream", "`after_events` (2) events, then the plain-text line `upstream error: read "
        "ECONNRESET` and a clean close (a proxy's leak, agenc-core#2492)")
async def _f_garbage_line(r: Responder, p: FaultStep) -> str:
    line = (p.message or "upstream error: read ECONNRESET").encode() + b"\n"
    return await _cut(r, p, _success(p), keep=p.after_events, tail=line, then="eof")


@_fault("stream", "a complete, valid SSE success body served as `Content-Type: "
        "application/json`")
async def _f_wrong_content_type(r: Responder, p: FaultStep) -> str:
    events = r.events(_success(p), p.stream)
    await r.x.start(200, JSON_HEADERS)
    await r.write_all(events if r.call.streaming else [b"".join(events)])
    return await r.x.end()


@_fault("stream", "a normal reply framed with CRLF line endings")
async def _f_crlf(r: Responder, p: FaultStep) -> str:
    spec = p.stream.model_copy(update={"framing": "crlf"})
    return await r.reply(_success(p), spec, p.timing)


@_fault("stream", "a normal reply whose bytes are cut inside multi-byte UTF-8 characters, "
        "inside JSON escapes and at seeded random points (S36)")
async def _f_split_writes(r: Responder, p: FaultStep) -> str:
    reply = Reply(content=p.text or SPLIT_TEXT)
    if not r.call.streaming:
        return await r.reply(reply, p.stream, p.timing)
    data = b"".join(r.events(reply, p.stream))
    plan = WritePlan(
        events_per_write=1, random_max=7, seed=r.call.seed, inside_utf8=True, inside_escapes=True
    )
    await r.x.start(200, r.call.surface.stream_headers)
    await r.write_all(plan_writes(data, plan), p.timing.chunk_delay_ms / 1000)
    return await r.x.end()


# -- HTTP errors with DeepSeek's envelope ----------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpFault:
    """One row of the HTTP-error table: what the response carries before a step overrides it.

    A step's `status`, `message`, `type`, `code` and `request_id` fields win over the row.
    """

    status: int
    type: str
    code: str | None
    message: str
    client_sees: str
    headers: Mapping[str, str] = field(default_factory=dict)
    retry_after: bool = False
    """Send `Retry-After`: the step's `retry_after` rounded up to whole seconds (1 by default)."""


_CONTEXT_MESSAGE = (
    "This model's maximum context length is 1048576 tokens. However, you requested 1056768 "
    "tokens (1048576 in the messages, 8192 in the completion). Please reduce the length of the "
    "messages or completion."
)

#: The HTTP faults, in catalogue order: name → what the error response carries.
HTTP_FAULTS: dict[str, HttpFault] = {
    "invalid_request": HttpFault(
        status=400, type="invalid_request_error", code="invalid_request",
        message="Invalid request (mock fault)",
        client_sees="400 invalid_request_error, code `invalid_request`"),
    "context_overflow": HttpFault(
        status=400, type="invalid_request_error", code="context_length_exceeded",
        message=_CONTEXT_MESSAGE,
        client_sees="400 `This model's maximum context length is …`, code `context_length_exceeded`"),
    "reasoning_passback": HttpFault(
        status=400, type="invalid_request_error", code="invalid_request_error",
        message=PASSBACK_MESSAGE,
        client_sees="400 \"The `reasoning_content` in the thinking mode must be passed back to the "
        "API.\" (the real S7 body, as the recorded DeepSeek errors quote it)"),
    "model_not_exist": HttpFault(
        status=400, type="invalid_request_error", code="invalid_request_error",
        message="Model Not Exist", client_sees="400 `Model Not Exist` (ds18)"),
    "auth_error": HttpFault(
        status=401, type="authentication_error", code="invalid_api_key",
        message="Authentication Fails, Your api key is invalid",
        client_sees="401 authentication_error, code `invalid_api_key`"),
    "insufficient_balance": HttpFault(
        status=402, type="unknown_error", code="invalid_request_error",
        message="Insufficient Balance",
        client_sees="402 `Insufficient Balance` (openai: plain APIStatusError)"),
    "invalid_parameters": HttpFault(
        status=422, type="invalid_request_error", code="invalid_parameters",
        message="Invalid Parameters", client_sees="422 `Invalid Parameters`"),
    "rate_limit": HttpFault(
        status=429, type="rate_limit_error", code="rate_limit",
        message="Rate limit reached for requests", retry_after=True,
        client_sees="429 code `rate_limit` with `Retry-After: <retry_after, 1> s`"),
    "quota_exceeded": HttpFault(
        status=429, type="insufficient_quota", code="insufficient_quota",
        message="You exceeded your current quota",
        client_sees="429 code `insufficient_quota`, no Retry-After"),
    "server_error": HttpFault(
        status=500, type="server_error", code="server_error",
        message="Internal server error (mock fault)", client_sees="500 code `server_error`"),
    "service_unavailable": HttpFault(
        status=503, type="service_unavailable", code="service_unavailable",
        message="Server overloaded, please try again later",
        client_sees="503 code `service_unavailable`"),
    "overloaded": HttpFault(
        status=529, type="overloaded_error", code="overloaded_error", message="Overloaded",
        client_sees="529 `overloaded_error` (Anthropic's overloaded status; the anthropic SDK "
        "retries it)"),
}


def _http_fault(name: str, row: HttpFault) -> Fault:
    """The fault function serving one table row."""

    async def run(r: Responder, p: FaultStep) -> str:
        headers = dict(row.headers)
        if row.retry_after:
            after = p.retry_after if p.retry_after is not None else 1.0
            headers["Retry-After"] = str(math.ceil(after))
        return await _http(r, p, name, row.status, row.message, row.type, row.code, headers)

    return run


for _name, _row in HTTP_FAULTS.items():
    FAULTS[_name] = FaultInfo(_name, _http_fault(_name, _row), "http", _row.client_sees)


# -- finish reasons --------------------------------------------------------------------------


@_fault("finish", "`text` then `finish_reason: \"length\"` (upstream `max_tokens`)")
async def _f_max_tokens(r: Responder, p: FaultStep) -> str:
    reply = Reply(content=p.text or DEFAULT_TEXT, finish_reason="length")
    return await r.reply(reply, p.stream, p.timing)


@_fault("finish", "`text` then `finish_reason: \"content_filter\"`")
async def _f_content_filter(r: Responder, p: FaultStep) -> str:
    reply = Reply(content=p.text or PARTIAL_TEXT, finish_reason="content_filter")
    return await r.reply(reply, p.stream, p.timing)


@_fault("finish", "`text` then `finish_reason: \"insufficient_system_resource\"` (retryable)")
async def _f_insufficient_system_resource(r: Responder, p: FaultStep) -> str:
    reply = Reply(content=p.text or PARTIAL_TEXT, finish_reason="insufficient_system_resource")
    return await r.reply(reply, p.stream, p.timing)


@_fault("finish", "role opener, an empty finish chunk (`stop`, 0 completion tokens), [DONE]: "
        "a valid but empty completion")
async def _f_empty(r: Responder, p: FaultStep) -> str:
    return await r.reply(Reply(content=""), p.stream, p.timing)


# -- timing ----------------------------------------------------------------------------------


@_fault("timing", "`keep_alives` (3) `: keep-alive` comments `delay_ms` (20) apart before the "
        "first chunk (blank lines for non-streaming), then a normal reply")
async def _f_keep_alive(r: Responder, p: FaultStep) -> str:
    interval = _delay_ms(p, 20)
    timing = p.timing.model_copy(
        update={"first_byte_delay_ms": p.keep_alives * interval, "keep_alive_interval_ms": max(1, interval)}
    )
    return await r.reply(_success(p), p.stream, timing)


@_fault("timing", "headers only after `delay_ms` (200): a connect-phase or first-byte timeout")
async def _f_slow_headers(r: Responder, p: FaultStep) -> str:
    timing = p.timing.model_copy(update={"headers_delay_ms": _delay_ms(p, 200)})
    return await r.reply(_success(p), p.stream, timing)


@_fault("timing", "a normal reply with `delay_ms` (25) after every event")
async def _f_slow_success(r: Responder, p: FaultStep) -> str:
    timing = p.timing.model_copy(update={"chunk_delay_ms": _delay_ms(p, 25)})
    return await r.reply(_success(p), p.stream, timing)


@_fault("timing", "a normal reply dripped 16 bytes per write, `delay_ms` (2) apart, cuts "
        "landing inside events and characters")
async def _f_slow_drip(r: Responder, p: FaultStep) -> str:
    if not r.call.streaming:
        return await r.reply(_success(p), p.stream, p.timing)
    data = b"".join(r.events(_success(p), p.stream))
    await r.x.start(200, r.call.surface.stream_headers)
    await r.write_all(plan_writes(data, WritePlan(events_per_write=0, size=16)), _delay_ms(p, 2) / 1000)
    return await r.x.end()


# -- successes -------------------------------------------------------------------------------


@_fault("success", "`text` (\"mock response recovered\") as content deltas, `stop`, [DONE]")
async def _f_success(r: Responder, p: FaultStep) -> str:
    return await r.reply(_success(p), p.stream, p.timing)


@_fault("success", "`reasoning` as reasoning deltas, then the success reply; thinking is forced "
        "on")
async def _f_reasoning_success(r: Responder, p: FaultStep) -> str:
    spec = p.stream.model_copy(update={"thinking": True})
    reply = Reply(reasoning=p.reasoning or DEFAULT_REASONING, content=p.text or DEFAULT_TEXT)
    return await r.reply(reply, spec, p.timing)


@_fault("success", "one call of `tool_name` (mock_tool) with `tool_arguments` split in two "
        "fragments, `finish_reason: \"tool_calls\"`, [DONE]")
async def _f_tool_call_success(r: Responder, p: FaultStep) -> str:
    args = p.tool_arguments
    half = max(1, len(args) // 2)
    spec = p.stream
    if spec.arguments is None and spec.split is None:
        spec = spec.model_copy(update={"arguments": SplitSpec(mode="points", points=[half])})
    reply = Reply(tool_calls=(ToolCall(name=p.tool_name, arguments=args),))
    return await r.reply(reply, spec, p.timing)


@_fault("meta", "picks one behaviour per request from seeded weights (the server's seed)")
async def _f_random(r: Responder, p: FaultStep) -> str:  # pragma: no cover - resolved by handler
    raise RuntimeError("`random` is resolved to a concrete fault before it runs")


def pick_random(rng: random.Random, weights: Mapping[str, float]) -> str:
    """One concrete fault name, drawn by weight, walking positive weights in insertion order."""
    items = [(n, w) for n, w in weights.items() if w > 0]
    total = sum(w for _, w in items)
    r = rng.random() * total
    for name, w in items:
        r -= w
        if r < 0:
            return name
    return items[-1][0]

