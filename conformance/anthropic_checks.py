"""The server direction on the Anthropic Messages surface: probe an endpoint that claims to serve
DeepSeek's `/anthropic` route and judge it against anthropic.md (AN items).

`--server URL --protocol anthropic` takes the base URL an Anthropic client is given (for DeepSeek,
`https://api.deepseek.com/anthropic`; for the dshkit mock, `<mock>/anthropic`); the checks append
`/v1/messages` themselves. Each check sends ordinary requests and reads the answers from outside,
so it works on DeepSeek itself, a gateway or our mock. Items that cannot be seen from a given
server (a key check on a server that takes any key, the official SDK when it is not installed)
are `n/a`. Results have the shape of adapter results, so the same reports print them.

As for the chat checks, a check passes only on what it saw: a 200 that holds no Message (or a
stream without a content block) fails as "could not observe", a check that only expects
rejections first sees a plain request accepted, every request has `timeout_s` (the SDK check
too) and every check a budget, so a server that accepts and never answers still gets a report.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import httpx

from dshkit.harness.providers.sse import SSEDecoder

from .checks import unified
from .runner import ScenarioResult
from .server_checks import UNOBSERVED, Verdict, na, need, unobserved

__all__ = ["ANTHROPIC_SERVER_CHECKS", "run_anthropic_checks", "select_anthropic_checks"]

U = [{"role": "user", "content": "Say hello in five words."}]
TOOL = {"name": "get_weather", "description": "Weather for a city",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
THINK_OFF: dict[str, Any] = {"thinking": {"type": "disabled"}}
_GRAMMAR_END = ("message_delta", "message_stop")


class AnthropicProbe:
    """An HTTP client for one Anthropic-format endpoint; each request gets its own session."""

    def __init__(self, base_url: str, api_key: str | None, *, timeout_s: float = 30.0) -> None:
        self.base = base_url.rstrip("/")
        self.key = api_key or "sk-dshkit-conformance"
        self.timeout_s = timeout_s
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(timeout_s, connect=min(5.0, timeout_s)))

    def headers(self, extra: dict[str, str] | None = None, *, auth: str | None = "x-api-key") -> dict[str, str]:
        h = {"content-type": "application/json", "anthropic-version": "2023-06-01",
             "x-mock-session": f"an-{uuid.uuid4().hex[:10]}"}
        if auth == "x-api-key":
            h["x-api-key"] = self.key
        elif auth == "bearer":
            h["authorization"] = f"Bearer {self.key}"
        return {**h, **(extra or {})}

    async def post(self, body: Any, *, path: str = "/v1/messages", headers: dict[str, str] | None = None,
                   auth: str | None = "x-api-key") -> httpx.Response:
        return await self.client.post(self.base + path, content=json.dumps(body).encode(),
                                      headers=self.headers(headers, auth=auth))

    async def message(self, **body: Any) -> tuple[httpx.Response, dict[str, Any]]:
        r = await self.post({"model": "deepseek-v4-flash", "max_tokens": 256, "messages": U, **body})
        return r, _json(r)

    async def events(self, **body: Any) -> tuple[httpx.Response, list[tuple[str, dict[str, Any]]]]:
        """A streamed call's `(event name, payload)` pairs, decoded the WHATWG way."""
        r = await self.post({"model": "deepseek-v4-flash", "max_tokens": 256, "messages": U, "stream": True, **body})
        decoder = SSEDecoder()
        out: list[tuple[str, dict[str, Any]]] = []
        for name, data, _ in decoder.feed_raw(r.content) + decoder.feed_raw(b"\n\n"):
            if name is None:
                continue
            try:
                payload = json.loads(data)
            except ValueError:
                payload = {"unparsed": data}
            out.append((name, payload if isinstance(payload, dict) else {"value": payload}))
        return r, out

    async def aclose(self) -> None:
        await self.client.aclose()


def _json(r: httpx.Response) -> dict[str, Any]:
    try:
        data = r.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _error(r: httpx.Response) -> dict[str, Any]:
    err = _json(r).get("error")
    return err if isinstance(err, dict) else {}


def answered(r: httpx.Response, label: str) -> dict[str, Any]:
    """The Message a request that must succeed got: another status is a failure the check saw,
    a 200 that holds no Message (empty, `{}`, not JSON) is nothing to judge."""
    need(r.status_code == 200, {label: 200}, {label: r.status_code})
    body = _json(r)
    if body.get("type") != "message" or not isinstance(body.get("content"), list):
        got = "an empty body" if not r.content.strip() else f"{len(r.content)} bytes that are no Message"
        unobserved(f"a Message for {label}", f"HTTP 200 with {got}")
    return body


_PLAIN = {"model": "deepseek-v4-flash", "max_tokens": 64, "messages": U, **THINK_OFF}


async def control(p: AnthropicProbe) -> None:
    """Before a check that only expects rejections: a plain request is accepted (a server that
    refuses everything proves nothing by refusing these)."""
    r = await p.post(_PLAIN)
    if r.status_code != 200:
        unobserved("a rejection that means something", f"a plain request got HTTP {r.status_code} too")
    answered(r, "a plain request")


# --- the checks ----------------------------------------------------------------------------------


async def an1(p: AnthropicProbe) -> None:
    """AN1–AN3: `/v1/messages`, the `/messages` alias, and a query string ignored."""
    answers = {path: await p.post(_PLAIN, path=path) for path in ("/v1/messages", "/messages", "/v1/messages?beta=true")}
    got = {path: r.status_code for path, r in answers.items()}
    need(all(v == 200 for v in got.values()), {k: 200 for k in got}, got)
    for path, r in answers.items():  # a Message on every path, not just a status
        answered(r, path)


async def an9(p: AnthropicProbe) -> None:
    """AN9–AN11: `x-api-key` and `Authorization: Bearer` both work."""
    body = {"model": "deepseek-v4-flash", "max_tokens": 64, "messages": U, **THINK_OFF}
    a = await p.post(body, auth="x-api-key")
    b = await p.post(body, auth="bearer")
    need(a.status_code == b.status_code == 200, {"x-api-key": 200, "bearer": 200},
         {"x-api-key": a.status_code, "bearer": b.status_code})
    answered(a, "x-api-key")
    answered(b, "bearer")


async def an14(p: AnthropicProbe) -> None:
    """AN14: no key, or a wrong one, is 401."""
    body = {"model": "deepseek-v4-flash", "max_tokens": 64, "messages": U, **THINK_OFF}
    await control(p)  # the right key is accepted
    wrong = await p.post(body, headers={"x-api-key": "sk-dshkit-surely-wrong-0000"})
    none = await p.post(body, auth=None)
    if wrong.status_code == 200 and none.status_code == 200:
        na("the server accepts any key, or none (start `dshkit serve --api-key K` and pass the same "
           "--api-key to check this)")
    need(none.status_code == 401, {"no key": 401}, {"no key": none.status_code})


async def an12(p: AnthropicProbe) -> None:
    """AN12/AN13: any `anthropic-version` and `anthropic-beta` are ignored."""
    body = {"model": "deepseek-v4-flash", "max_tokens": 64, "messages": U, **THINK_OFF}
    r = await p.post(body, headers={"anthropic-version": "1999-01-01",
                                    "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14"})
    answered(r, "odd anthropic-version and anthropic-beta")


async def an16(p: AnthropicProbe) -> None:
    """AN16/AN19: `claude-opus*` is served by the pro model, other `claude*` by flash; the
    response names the DeepSeek model."""
    _, opus = await p.message(model="claude-opus-4-1", **THINK_OFF)
    _, sonnet = await p.message(model="claude-sonnet-4-5", **THINK_OFF)
    got = {"claude-opus-4-1": opus.get("model"), "claude-sonnet-4-5": sonnet.get("model")}
    ok = got["claude-opus-4-1"] == "deepseek-v4-pro" and str(got["claude-sonnet-4-5"]) in ("deepseek-flash", "deepseek-v4-flash")
    need(ok, {"claude-opus-4-1": "deepseek-v4-pro", "claude-sonnet-4-5": "deepseek-flash (or deepseek-v4-flash)"}, got)


async def an17(p: AnthropicProbe) -> None:
    """AN17: a name that is neither DeepSeek's nor `claude*` is 400."""
    await control(p)
    r, _ = await p.message(model="gpt-4o")
    need(r.status_code == 400, 400, r.status_code)


async def an6(p: AnthropicProbe) -> None:
    """AN6: `max_tokens` is required."""
    await control(p)
    r = await p.post({"model": "deepseek-v4-flash", "messages": U})
    need(r.status_code == 400, {"status": 400}, {"status": r.status_code})


async def an20(p: AnthropicProbe) -> None:
    """AN20/AN21: ignored and unknown fields are accepted."""
    r, _ = await p.message(top_k=5, service_tier="auto", metadata={"user_id": "u_1"},
                           x_dshkit_unknown_field=True, **THINK_OFF)
    answered(r, "ignored and unknown fields")


async def an40(p: AnthropicProbe) -> None:
    """AN40/AN41: the non-streaming Message shape."""
    r, body = await p.message(**THINK_OFF)
    shape = {k: type(body.get(k)).__name__ for k in ("id", "type", "role", "model", "content", "usage")}
    want = {"id": "str", "type": "str", "role": "str", "model": "str", "content": "list", "usage": "dict"}
    need(r.status_code == 200 and shape == want and body.get("type") == "message" and bool(body.get("stop_reason")),
         {"status": 200, "shape": want, "type": "message", "stop_reason": "set"},
         {"status": r.status_code, "shape": shape, "type": body.get("type"), "stop_reason": body.get("stop_reason") or "missing"})


async def an43(p: AnthropicProbe) -> None:
    """AN5/AN43/AN47/AN52/AN53: `text/event-stream`, every event named after its type,
    `message_start` first, `message_delta` (with usage) then `message_stop` last."""
    r, events = await p.events(**THINK_OFF)
    names = [n for n, _ in events if n != "ping"]
    mismatched = [n for n, e in events if e.get("type") != n]
    deltas = [e for n, e in events if n == "message_delta"]
    usage_ok = bool(deltas) and isinstance(deltas[-1].get("usage"), dict) and "output_tokens" in deltas[-1]["usage"]
    got = {"content-type": r.headers.get("content-type", "").split(";")[0], "first": names[:1],
           "last two": names[-2:], "event name = type": not mismatched, "message_delta.usage.output_tokens": usage_ok}
    want = {"content-type": "text/event-stream", "first": ["message_start"], "last two": list(_GRAMMAR_END),
            "event name = type": True, "message_delta.usage.output_tokens": True}
    need(got == want, want, got)


async def an48(p: AnthropicProbe) -> None:
    """AN48/AN58: block indices start at 0, rise by one, never interleave; a thinking block
    ends with a signature."""
    r, events = await p.events()
    if r.status_code != 200:
        unobserved("a streamed answer", f"HTTP {r.status_code}")
    if not any(n == "content_block_start" for n, _ in events):
        unobserved("a streamed answer", "no content_block_start in the stream" if r.content.strip() else "an empty body")
    order: list[int] = []
    current: int | None = None
    interleaved = False
    signature = None
    for name, e in events:
        if name == "content_block_start":
            order.append(e.get("index", -1))
            current = e.get("index")
        elif name == "content_block_delta":
            interleaved |= e.get("index") != current
            if (e.get("delta") or {}).get("type") == "signature_delta":
                signature = e["delta"].get("signature")
    thinking = any(n == "content_block_start" and (e.get("content_block") or {}).get("type") == "thinking" for n, e in events)
    got = {"indices": order, "interleaved": interleaved, "thinking signature": bool(signature) if thinking else "no thinking"}
    want = {"indices": list(range(len(order))), "interleaved": False, "thinking signature": True if thinking else "no thinking"}
    need(got == want, want, got)


def _tool_turn(thinking: bool) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "tool_use", "id": "toolu_an27", "name": "get_weather", "input": {"city": "Paris"}}]
    if thinking:
        blocks.insert(0, {"type": "thinking", "thinking": "Look it up.", "signature": "an27-signature"})
    return [{"role": "user", "content": "Weather in Paris?"}, {"role": "assistant", "content": blocks},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_an27", "content": "sunny"}]}]


async def an27(p: AnthropicProbe) -> None:
    """AN27/AN28: with thinking on, a tool-use turn without its thinking block is 400; with it, 200."""
    without, _ = await p.message(messages=_tool_turn(False), tools=[TOOL])
    with_, _ = await p.message(messages=_tool_turn(True), tools=[TOOL])
    if with_.status_code == 200:
        answered(with_, "with thinking")
    need(without.status_code == 400 and with_.status_code == 200, {"without thinking": 400, "with thinking": 200},
         {"without thinking": without.status_code, "with thinking": with_.status_code})


async def an36(p: AnthropicProbe) -> None:
    """AN36: a forced `tool_choice` with thinking on is 400."""
    await control(p)
    r, _ = await p.message(tools=[TOOL], tool_choice={"type": "tool", "name": "get_weather"})
    need(r.status_code == 400, 400, r.status_code)


async def an65(p: AnthropicProbe) -> None:
    """AN65/AN66: an error body keeps `type` and `message` under a top-level `error` object."""
    r, _ = await p.message(model="gpt-4o")
    err = _error(r)
    got = {"status": r.status_code, "error.type": err.get("type"), "error.message": bool(err.get("message"))}
    need(got == {"status": 400, "error.type": "invalid_request_error", "error.message": True},
         {"status": 400, "error.type": "invalid_request_error", "error.message": True}, got)


async def an75(p: AnthropicProbe) -> None:
    """AN75: the official `anthropic` SDK's streaming helper assembles a final message."""
    try:
        import anthropic
    except ImportError:
        na("the anthropic SDK is not installed (pip install 'dshkit[anthropic]')")
    client = anthropic.AsyncAnthropic(base_url=p.base, api_key=p.key, max_retries=0, timeout=p.timeout_s,
                                      default_headers={"x-mock-session": f"an-{uuid.uuid4().hex[:10]}"})
    try:
        async with client.messages.stream(model="deepseek-v4-flash", max_tokens=256, messages=U) as stream:  # type: ignore[arg-type]
            final = await stream.get_final_message()
    finally:
        await client.close()
    kinds = [b.type for b in final.content]
    need(final.stop_reason == "end_turn" and "text" in kinds, {"stop_reason": "end_turn", "has text": True},
         {"stop_reason": final.stop_reason, "has text": "text" in kinds})


Check = Callable[[AnthropicProbe], Awaitable[None]]
ANTHROPIC_SERVER_CHECKS: dict[str, Check] = {
    "AN1": an1, "AN6": an6, "AN9": an9, "AN12": an12, "AN14": an14, "AN16": an16, "AN17": an17,
    "AN20": an20, "AN27": an27, "AN36": an36, "AN40": an40, "AN43": an43, "AN48": an48, "AN65": an65,
    "AN75": an75,
}
_AREAS = {"AN1": "an-requests", "AN6": "an-requests", "AN9": "an-requests", "AN12": "an-requests",
          "AN14": "an-requests", "AN16": "an-requests", "AN17": "an-requests", "AN20": "an-requests",
          "AN27": "an-requests", "AN36": "an-requests", "AN40": "an-json", "AN43": "an-stream",
          "AN48": "an-stream", "AN65": "an-json", "AN75": "an-stream"}


def select_anthropic_checks(only: Sequence[str]) -> list[str]:
    """Check ids for `--only` (AN ids or `area:an-…`); ValueError for unknown ones."""
    if not only:
        return list(ANTHROPIC_SERVER_CHECKS)
    out: list[str] = []
    for sel in only:
        hits = [k for k in ANTHROPIC_SERVER_CHECKS if sel == k or sel in (f"area:{_AREAS[k]}", _AREAS[k])]
        if not hits:
            raise ValueError(f"--only {sel!r} names no Anthropic server check; use "
                             f"{', '.join(ANTHROPIC_SERVER_CHECKS)} or an area ({', '.join(sorted(set(_AREAS.values())))})")
        out += [h for h in hits if h not in out]
    return [k for k in ANTHROPIC_SERVER_CHECKS if k in out]


async def _one(p: AnthropicProbe, item: str, budget_s: float) -> ScenarioResult:
    started = time.monotonic()
    tags = [item, f"area:{_AREAS[item]}"]
    try:
        async with asyncio.timeout(budget_s):
            await ANTHROPIC_SERVER_CHECKS[item](p)
        res = ScenarioResult(id=item, tags=tags, status="pass")
    except TimeoutError:
        note = f"{UNOBSERVED} an answer: the check took longer than its {budget_s:g} s budget"
        res = ScenarioResult(id=item, tags=tags, status="fail", reason=note,
                             diff=unified({item: f"answers within {budget_s:g} s"}, {item: "timeout"}, item))
    except httpx.TransportError as exc:  # refused, reset, timed out: no answer to judge
        note = f"{UNOBSERVED} an answer: {type(exc).__name__}: {exc}".rstrip(": ")
        res = ScenarioResult(id=item, tags=tags, status="fail", reason=note,
                             diff=unified({item: "an answer"}, {item: f"{type(exc).__name__}: {exc}"}, item))
    except Verdict as v:
        res = ScenarioResult(id=item, tags=tags, status=v.status, reason=v.note)
        if v.status == "fail":
            res.reason = v.note or "response differs"
            res.diff = unified(v.expected, v.actual, item)
    except Exception as exc:  # noqa: BLE001 - any surprise from the server is this check's failure
        res = ScenarioResult(id=item, tags=tags, status="fail", reason=f"{type(exc).__name__}: {exc}",
                             diff=unified({item: "a readable answer"}, {item: f"{type(exc).__name__}: {exc}"}, item))
    res.seconds = time.monotonic() - started
    return res


async def run_anthropic_checks(
    base_url: str, api_key: str | None = None, *, ids: Sequence[str] | None = None,
    on_result: Callable[[ScenarioResult, int, int], None] | None = None,
    timeout_s: float = 30.0, budget_s: float | None = None,
) -> list[ScenarioResult]:
    """Run the Anthropic server checks (all, or `ids`) against `base_url`, up to six at a time.

    `timeout_s` bounds each request (connect, each read; the SDK check's too); `budget_s`
    (default 4 × `timeout_s`) bounds each check."""
    probe = AnthropicProbe(base_url, api_key if api_key is not None else os.environ.get("DEEPSEEK_API_KEY"),
                           timeout_s=timeout_s)
    budget = budget_s if budget_s is not None else 4 * timeout_s
    items = list(ids or ANTHROPIC_SERVER_CHECKS)
    done = 0
    gate = asyncio.Semaphore(6)

    async def one(item: str) -> ScenarioResult:
        nonlocal done
        async with gate:
            res = await _one(probe, item, budget)
        done += 1
        if on_result is not None:
            on_result(res, done, len(items))
        return res

    try:
        return list(await asyncio.gather(*(one(i) for i in items)))
    finally:
        await probe.aclose()
