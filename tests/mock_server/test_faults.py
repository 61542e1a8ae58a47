"""Every fault gives the client-visible behaviour the catalogue documents, seen by httpx and aiohttp.

Stall faults are observed through the client's own read timeout (0.25 s); nothing here sleeps.
The faults that wait on timers by design (`WAITING`) are played all at once the first time one of
their tests runs (`waited`, `tests/together.py`); each test then judges its own exchange.
One after another, their quarter-seconds of silence idled the worker for about 4 s.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import aiohttp
import httpx
import pytest

from dshkit.mock_server import FAULTS, MockServer, MockServerFactory
from dshkit.mock_server.faults import DEFAULT_TEXT, PARTIAL_TEXT, SPLIT_TEXT

from ..together import Played, play_together
from .wire import chat, parse_sse, reassemble

READ_TIMEOUT = 0.25
"""The read timeout for the faults whose point is silence: the client gives up, quickly."""
PATIENT_READ_TIMEOUT = 30.0
"""The read timeout for every other fault: they end on their own, and a loaded machine may hold
the server past READ_TIMEOUT (slow_headers waits 200 ms by design) without it being a timeout."""
SILENT_FAULTS = {"stall", "stall_after", "reasoning_stall", "hold_after_finish"}
WAITING = SILENT_FAULTS | {"slow_headers", "slow_drip", "slow_success"}
"""The faults whose exchange mostly waits on a timer (the client's read timeout, or the pacing the
fault asks of the server): their streamed exchanges, and the non-streamed stall, are played
together (`waited`); they are mostly asleep, so playing them side by side crowds no loop."""
GROUP = "fault_waits"
"""The xdist group of the tests that judge the exchanges `waited` plays, so that one worker plays
them once."""


@dataclass
class Seen:
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    error: str | None = None  # "reset" | "timeout"

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def stream(self) -> dict[str, Any]:
        parsed = parse_sse(self.body)
        return {"parsed": parsed, **reassemble([c for c in parsed.chunks if isinstance(c, dict) and "choices" in c])}


async def via_httpx(url: str, body: dict[str, Any], read_timeout: float = READ_TIMEOUT) -> Seen:
    seen = Seen()
    try:
        async with (
            httpx.AsyncClient(timeout=httpx.Timeout(2.0, read=read_timeout)) as c,
            c.stream("POST", url, json=body) as r,
        ):
            seen.status, seen.headers = r.status_code, {k.lower(): v for k, v in r.headers.items()}
            async for b in r.aiter_raw():
                seen.body += b
    except httpx.ReadTimeout:
        seen.error = "timeout"
    except (httpx.ReadError, httpx.RemoteProtocolError):
        seen.error = "reset"
    return seen


async def via_aiohttp(url: str, body: dict[str, Any], read_timeout: float = READ_TIMEOUT) -> Seen:
    seen = Seen()
    timeout = aiohttp.ClientTimeout(total=max(3, 2 * read_timeout), sock_read=read_timeout)
    try:
        async with aiohttp.ClientSession(timeout=timeout) as s, s.post(url, json=body) as r:
            seen.status, seen.headers = r.status, {k.lower(): v for k, v in r.headers.items()}
            async for b in r.content.iter_any():
                seen.body += b
    except (TimeoutError, aiohttp.ServerTimeoutError):
        seen.error = "timeout"
    except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError, aiohttp.ClientPayloadError):
        seen.error = "reset"
    return seen


CLIENTS: dict[str, Callable[[str, dict[str, Any], float], Awaitable[Seen]]] = {"httpx": via_httpx, "aiohttp": via_aiohttp}


def _ok_stream(s: Seen, content: str = DEFAULT_TEXT, finish: str = "stop") -> dict[str, Any]:
    assert s.error is None and s.status == 200
    assert s.headers["content-type"] == "text/event-stream; charset=utf-8"
    got = s.stream
    assert got["parsed"].done and got["content"] == content and got["finish_reason"] == finish
    return got


def _http(status: int, code: str) -> Callable[[Seen, MockServer], None]:
    def check(s: Seen, server: MockServer) -> None:
        assert s.error is None and s.status == status
        err = s.json["error"]
        assert err["code"] == code and set(err) == {"message", "type", "param", "code"}
        assert s.headers["content-type"].startswith("application/json")
    return check


def _reset_before_headers(s: Seen, server: MockServer) -> None:
    assert s.error == "reset" and s.status is None


def _reset_after_headers(s: Seen, server: MockServer) -> None:
    assert s.status == 200 and s.error == "reset" and s.body == b""


def _partial_disconnect(s: Seen, server: MockServer) -> None:
    assert s.status == 200 and s.error == "reset"
    got = s.stream
    assert PARTIAL_TEXT.startswith(got["content"]) and got["finish_reason"] is None and not got["parsed"].done


def _stall(s: Seen, server: MockServer) -> None:
    assert s.status == 200 and s.error == "timeout" and s.body == b""


def _stall_after(s: Seen, server: MockServer) -> None:
    assert s.status == 200 and s.error == "timeout"
    assert len(s.stream["parsed"].events) == 2


def _reasoning_stall(s: Seen, server: MockServer) -> None:
    assert s.status == 200 and s.error == "timeout"
    got = s.stream
    assert got["reasoning"] and got["content"] == "" and len(got["parsed"].events) == 3


def _partial_tool_eof(s: Seen, server: MockServer) -> None:
    assert s.error is None and s.status == 200
    got = s.stream
    assert got["finish_reason"] is None and not got["parsed"].done
    (call,) = got["tool_calls"]
    assert call["name"] == "mock_tool" and call["arguments"] and call["arguments"] != '{"value": "mock"}'


def _done_missing(s: Seen, server: MockServer) -> None:
    assert s.error is None
    got = s.stream
    assert got["finish_reason"] == "stop" and got["usage"] and not got["parsed"].done


def _hold_after_finish(s: Seen, server: MockServer) -> None:
    assert s.error == "timeout"
    got = s.stream
    assert got["finish_reason"] == "stop" and not got["parsed"].done


def _done_unterminated(s: Seen, server: MockServer) -> None:
    assert s.error is None and s.body.endswith(b"}\n\ndata: [DONE]\n")
    assert s.stream["finish_reason"] == "stop"


def _empty_body(s: Seen, server: MockServer) -> None:
    assert s.error is None and s.status == 200 and s.body == b""


def _stream_eof(s: Seen, server: MockServer) -> None:
    events = parse_sse(s.body).events
    assert s.error is None and len(events) == 1
    assert json.loads(events[0].data)["choices"][0]["delta"]["role"] == "assistant"


def _partial_eof(s: Seen, server: MockServer) -> None:
    got = s.stream
    assert s.error is None and got["content"] == PARTIAL_TEXT and got["finish_reason"] is None
    assert not got["parsed"].done


def _malformed_json(s: Seen, server: MockServer) -> None:
    assert s.body == b"data: {not-json\n\ndata: [DONE]\n\n"


def _malformed_event(s: Seen, server: MockServer) -> None:
    events = parse_sse(s.body).events
    assert json.loads(events[0].data)["choices"] == [None] and events[1].data == "[DONE]"


def _inband_error(s: Seen, server: MockServer) -> None:
    events = parse_sse(s.body).events
    assert s.status == 200 and len(events) == 3 and not parse_sse(s.body).done
    assert json.loads(events[-1].data)["error"]["code"] == "mock_inband_error"


def _event_error(s: Seen, server: MockServer) -> None:
    parsed = parse_sse(s.body)
    assert s.error is None and s.status == 200 and len(parsed.events) == 3 and not parsed.done
    last = parsed.events[-1]
    err = json.loads(last.data)["error"]
    assert last.event == "error" and err["code"] == "mock_inband_error" and err["message"]


def _garbage_line(s: Seen, server: MockServer) -> None:
    parsed = parse_sse(s.body)
    assert s.error is None and parsed.trailing == "upstream error: read ECONNRESET\n"
    assert len(parsed.events) == 2


def _wrong_content_type(s: Seen, server: MockServer) -> None:
    assert s.headers["content-type"] == "application/json"
    assert parse_sse(s.body).done and s.stream["content"] == DEFAULT_TEXT


def _crlf(s: Seen, server: MockServer) -> None:
    _ok_stream(s)
    assert b"\r\n\r\n" in s.body and b"\n\n" not in s.body.replace(b"\r\n\r\n", b"")


def _split_writes(s: Seen, server: MockServer) -> None:
    _ok_stream(s, SPLIT_TEXT)
    writes = server.journal.last.writes
    assert len(writes) > len(parse_sse(s.body).events)
    assert any(_cuts_utf8(w.data) for w in writes)


def _cuts_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _keep_alive(s: Seen, server: MockServer) -> None:
    _ok_stream(s)
    assert s.body.startswith(b": keep-alive\n\n" * 3 + b"data: ")


def _gaps(server: MockServer) -> list[float]:
    writes = server.journal.last.writes
    return [b.t - a.t for a, b in pairwise(writes)]


# Waits never end early; 0.9 leaves room for clock rounding only.
def _slow_headers(s: Seen, server: MockServer) -> None:
    _ok_stream(s)
    entry = server.journal.last
    assert entry.writes[0].t - entry.t >= 0.9 * 0.200  # delay_ms default 200


def _slow_success(s: Seen, server: MockServer) -> None:
    _ok_stream(s)
    assert len(server.journal.last.writes) == len(parse_sse(s.body).events)  # one write per event
    assert min(_gaps(server)) >= 0.9 * 0.025  # delay_ms default 25 after every event


def _slow_drip(s: Seen, server: MockServer) -> None:
    _ok_stream(s)
    writes = server.journal.last.writes
    assert all(len(w.data) == 16 for w in writes[:-1]) and 0 < len(writes[-1].data) <= 16
    assert any(_cuts_utf8(w.data) or not w.data.endswith(b"\n\n") for w in writes)
    assert min(_gaps(server)) >= 0.9 * 0.002  # delay_ms default 2


def _finish(reason: str, text: str) -> Callable[[Seen, MockServer], None]:
    return lambda s, server: _ok_stream(s, text, reason) and None


def _reasoning_success(s: Seen, server: MockServer) -> None:
    assert _ok_stream(s)["reasoning"] == "mock reasoning"


def _tool_call_success(s: Seen, server: MockServer) -> None:
    got = _ok_stream(s, "", "tool_calls")
    assert [(c["name"], c["arguments"]) for c in got["tool_calls"]] == [("mock_tool", '{"value": "mock"}')]
    frags = [c for c in got["parsed"].chunks if c["choices"][0]["delta"].get("tool_calls")]
    assert len(frags) == 3  # the opener and two fragments


def _random(s: Seen, server: MockServer) -> None:
    entry = server.journal.last
    assert entry.script_behavior == "random" and entry.behavior in {"success", "rate_limit"}


EXPECT: dict[str, Callable[[Seen, MockServer], None]] = {
    "connection_reset": _reset_before_headers,
    "stream_disconnect": _reset_after_headers,
    "partial_disconnect": _partial_disconnect,
    "stall": _stall,
    "stall_after": _stall_after,
    "reasoning_stall": _reasoning_stall,
    "partial_tool_eof": _partial_tool_eof,
    "done_missing": _done_missing,
    "hold_after_finish": _hold_after_finish,
    "done_unterminated": _done_unterminated,
    "empty_body": _empty_body,
    "stream_eof": _stream_eof,
    "partial_eof": _partial_eof,
    "malformed_json": _malformed_json,
    "malformed_event": _malformed_event,
    "inband_error": _inband_error,
    "event_error": _event_error,
    "garbage_line": _garbage_line,
    "wrong_content_type": _wrong_content_type,
    "crlf": _crlf,
    "split_writes": _split_writes,
    "invalid_request": _http(400, "invalid_request"),
    "context_overflow": _http(400, "context_length_exceeded"),
    "reasoning_passback": _http(400, "invalid_request_error"),
    "model_not_exist": _http(400, "invalid_request_error"),
    "auth_error": _http(401, "invalid_api_key"),
    "insufficient_balance": _http(402, "invalid_request_error"),
    "invalid_parameters": _http(422, "invalid_parameters"),
    "rate_limit": _http(429, "rate_limit"),
    "quota_exceeded": _http(429, "insufficient_quota"),
    "server_error": _http(500, "server_error"),
    "service_unavailable": _http(503, "service_unavailable"),
    "overloaded": _http(529, "overloaded_error"),
    "max_tokens": _finish("length", DEFAULT_TEXT),
    "content_filter": _finish("content_filter", PARTIAL_TEXT),
    "insufficient_system_resource": _finish("insufficient_system_resource", PARTIAL_TEXT),
    "empty": _finish("stop", ""),
    "keep_alive": _keep_alive,
    "slow_headers": _slow_headers,
    "slow_success": _slow_success,
    "slow_drip": _slow_drip,
    "success": _finish("stop", DEFAULT_TEXT),
    "reasoning_success": _reasoning_success,
    "tool_call_success": _tool_call_success,
    "random": _random,
}


def test_every_fault_has_an_expectation() -> None:
    assert set(EXPECT) == set(FAULTS)


STREAMED: dict[str, Any] = {"seed": 11, "weights": {"success": 1, "rate_limit": 1}}
"""The mock's arguments for `test_fault_as_seen_by_client`, besides `sequence=[the fault]`."""
Key = tuple[str, str, bool]
"""(fault, client, streamed)."""


def _waiting_exchanges() -> list[Key]:
    return [*((n, c, True) for n in sorted(WAITING) for c in sorted(CLIENTS)), ("stall", "httpx", False)]


async def _exchange(name: str, client: str, streamed: bool) -> tuple[Seen, MockServer]:
    """What the client saw of the fault, and the (closed) server that played it, journal kept."""
    async with MockServer(sequence=[name], **(STREAMED if streamed else {})) as server:
        timeout = READ_TIMEOUT if name in SILENT_FAULTS else PATIENT_READ_TIMEOUT
        body = chat("hi", model="deepseek-chat") if streamed else chat(stream=False)
        return await CLIENTS[client](server.url, body, timeout), server


@pytest.fixture(scope="module")
def waited() -> Played[Key, tuple[Seen, MockServer]]:
    """The waiting exchanges (`WAITING`), played together once for the tests that judge them."""
    return play_together({key: functools.partial(_exchange, *key) for key in _waiting_exchanges()})


def _judged(played: Played[Key, tuple[Seen, MockServer]], key: Key) -> tuple[Seen, MockServer]:
    """One exchange `waited` played, after the checks the plugin's fixture makes after a test:
    the mock answered no request with its 418 (nothing scripted), and played its whole script."""
    seen, server = played[key]
    assert [e.status for e in server.journal.entries if e.status == 418] == [], "the mock rejected a request"
    server.assert_consumed()
    return seen, server


def _fault_params() -> list[Any]:
    """(fault, client) pairs; the waiting ones carry `GROUP`, the others run anywhere."""
    return [pytest.param(n, c, id=f"{n}-{c}", marks=[pytest.mark.xdist_group(GROUP)] if n in WAITING else [])
            for n in sorted(FAULTS) for c in sorted(CLIENTS)]


def test_the_waiting_exchanges_are_the_waiting_faults() -> None:
    # Every waiting fault is played by `waited` on both clients; a fault added to WAITING or to
    # the catalogue can not fall between the two paths of test_fault_as_seen_by_client.
    assert set(FAULTS) >= WAITING
    assert {(n, c) for n, c, streamed in _waiting_exchanges() if streamed} == {(n, c) for n in WAITING for c in CLIENTS}


@pytest.mark.parametrize(("name", "client"), _fault_params())
async def test_fault_as_seen_by_client(dshkit_mock_server: MockServerFactory, request: pytest.FixtureRequest,
                                       name: str, client: str) -> None:
    if name in WAITING:
        seen, server = _judged(request.getfixturevalue("waited"), (name, client, True))
    else:
        server = await dshkit_mock_server(sequence=[name], **STREAMED)
        seen = await CLIENTS[client](server.url, chat("hi", model="deepseek-chat"), PATIENT_READ_TIMEOUT)
    EXPECT[name](seen, server)
    server.assert_consumed()


async def test_rate_limit_headers_and_request_id(dshkit_mock_server: MockServerFactory) -> None:
    from dshkit.mock_server import Script

    server = await dshkit_mock_server(Script.of({"fault": "rate_limit", "retry_after": 2.5, "request_id": "req-1"}))
    seen = await via_httpx(server.url, chat())
    assert seen.headers["retry-after"] == "3" and seen.headers["x-request-id"] == "req-1"


@pytest.mark.parametrize(
    ("name", "check"),
    [
        ("connection_reset", lambda s: s.error == "reset" and s.status is None),
        pytest.param("stall", lambda s: s.status == 200 and s.error == "timeout", marks=pytest.mark.xdist_group(GROUP)),
        ("partial_disconnect", lambda s: s.error == "reset" and len(s.body) > 0),
        ("partial_eof", lambda s: s.error is None and not _parses(s.body)),
        ("rate_limit", lambda s: s.status == 429),
        ("max_tokens", lambda s: json.loads(s.body)["choices"][0]["finish_reason"] == "length"),
        ("malformed_json", lambda s: s.body == b"{not-json"),
        ("keep_alive", lambda s: s.body.startswith(b"\n\n\n{") and json.loads(s.body)["object"] == "chat.completion"),
    ],
)
async def test_faults_on_non_streaming_requests(dshkit_mock_server: MockServerFactory, request: pytest.FixtureRequest,
                                               name: str, check: Any) -> None:
    if name in WAITING:
        seen, _ = _judged(request.getfixturevalue("waited"), (name, "httpx", False))
    else:
        server = await dshkit_mock_server(sequence=[name])
        seen = await via_httpx(server.url, chat(stream=False))
    assert check(seen), seen


def _parses(body: bytes) -> bool:
    try:
        json.loads(body)
    except ValueError:
        return False
    return True


async def test_random_mode_is_reproducible_from_the_seed(dshkit_mock_server: MockServerFactory) -> None:
    picks = []
    for _ in range(2):
        server = await dshkit_mock_server(sequence=["random"], repeat_last=True, seed=99,
                                          weights={"success": 3, "rate_limit": 1, "server_error": 1})
        async with httpx.AsyncClient(timeout=1) as c:
            for _ in range(12):
                await c.post(server.url, json=chat(stream=False))
        picks.append([e.behavior for e in server.journal])
    assert picks[0] == picks[1] and len(set(picks[0])) > 1
