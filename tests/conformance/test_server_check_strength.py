"""Each server check is strong enough to catch a server that gets its item wrong.

A small aiohttp proxy sits in front of a real MockServer and breaks one thing: it rewrites a
request before forwarding it (so the mock never sees the field that matters) or rewrites the
answer on its way back. The check for that item must fail through the proxy, while the same
proxy with no defect passes every check a client can see, so the failure is the defect's doing.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

import httpx
import pytest
from aiohttp import web

from dshkit.conformance.server_checks import run_server_checks
from dshkit.mock_server import MockServer
from dshkit.mock_server.claims import CLAIMED_S_ITEMS

KEY = "sk-strength-0123"
FORWARDED = ("authorization", "content-type", "x-mock-session", "x-mock-behavior")
KEPT = ("content-type", "cache-control")


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    content_type: str
    cache_control: str | None
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def with_json(self, value: Any) -> Answer:
        return replace(self, body=json.dumps(value).encode())


Request = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Defect:
    """One way to get an item wrong: `request` rewrites what the mock receives, `answer` what
    the client gets back (both see the request as the client sent it)."""

    item: str
    name: str
    request: Callable[[Request], Request] = lambda r: r
    answer: Callable[[Request, Answer], Answer] = lambda _r, a: a


@asynccontextmanager
async def _proxy(upstream: str, defect: Defect | None) -> AsyncIterator[str]:
    client = httpx.AsyncClient(timeout=httpx.Timeout(60.0))

    async def handle(request: web.Request) -> web.Response:
        raw = await request.read()
        try:
            sent: Any = json.loads(raw)
        except ValueError:
            sent = None
        body = raw
        if defect is not None and isinstance(sent, dict):
            body = json.dumps(defect.request(json.loads(raw))).encode()
        headers = {k: v for k, v in request.headers.items() if k.lower() in FORWARDED}
        r = await client.post(upstream + request.path, content=body, headers=headers)
        answer = Answer(r.status_code, r.headers.get("content-type", ""), r.headers.get("cache-control"), r.content)
        if defect is not None and isinstance(sent, dict):
            answer = defect.answer(sent, answer)
        out = web.Response(status=answer.status, body=answer.body)
        out.headers["Content-Type"] = answer.content_type
        if answer.cache_control is not None:
            out.headers["Cache-Control"] = answer.cache_control
        return out

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_route("POST", "/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()
        await client.aclose()


Run = Callable[[Defect | None, list[str]], Awaitable[dict[str, str]]]


@pytest.fixture
async def run() -> AsyncIterator[Run]:
    """Run the given checks through a proxy with `defect` (or none); {item: status}."""
    async with MockServer(api_key=KEY) as server:
        async def go(defect: Defect | None, ids: list[str]) -> dict[str, str]:
            async with _proxy(server.base_url, defect) as base:
                results = await run_server_checks(base, KEY, ids=ids, timeout_s=60)
            return {r.id: r.status for r in results}
        yield go


# --- defects ------------------------------------------------------------------------------------


def _errors(status: int | None, body: Callable[[dict[str, Any]], Any]) -> Callable[[Request, Answer], Answer]:
    """Rewrite error answers (of `status`, or any 4xx/5xx) with `body(error)`."""
    def rewrite(_: Request, a: Answer) -> Answer:
        if a.status < 400 or (status is not None and a.status != status):
            return a
        return a.with_json(body(a.json().get("error") or {}))
    return rewrite


def _no_type(err: dict[str, Any]) -> Any:
    return {"error": {"message": err.get("message")}}


def _message(text: str) -> Callable[[dict[str, Any]], Any]:
    return lambda err: {"error": {**err, "message": text}}


def _huge_to_short(r: Request) -> Request:
    msgs = [{**m, "content": "hi"} if len(str(m.get("content"))) > 100_000 else m for m in r.get("messages", [])]
    return {**r, "messages": msgs}


def _drop(field: str, value: Any = None) -> Callable[[Request], Request]:
    return lambda r: {k: v for k, v in r.items() if not (k == field and (value is None or v == value))}


def _rename_calls(name: str) -> Callable[[Request, Answer], Answer]:
    def rewrite(_: Request, a: Answer) -> Answer:
        if a.status != 200 or not a.content_type.startswith("application/json"):
            return a
        d = a.json()
        for c in d["choices"][0]["message"].get("tool_calls") or []:
            c["function"]["name"] = name
        return a.with_json(d)
    return rewrite


def _json_answer(fn: Callable[[Request, dict[str, Any]], None]) -> Callable[[Request, Answer], Answer]:
    """Edit a 200 JSON answer in place with `fn(request, body)`."""
    def rewrite(r: Request, a: Answer) -> Answer:
        if a.status != 200 or not a.content_type.startswith("application/json"):
            return a
        d = a.json()
        fn(r, d)
        return a.with_json(d)
    return rewrite


Edit = Callable[[Request, int, dict[str, Any], int], dict[str, Any] | None]


def _chunks(fn: Edit) -> Callable[[Request, Answer], Answer]:
    """Edit each JSON chunk of an event stream with `fn(request, i, chunk, count)`; None drops it."""
    def rewrite(r: Request, a: Answer) -> Answer:
        if not a.content_type.startswith("text/event-stream"):
            return a
        blocks = a.body.split(b"\n\n")
        count = sum(1 for b in blocks if b.startswith(b"data: {"))
        out, i = [], 0
        for b in blocks:
            if b.startswith(b"data: {"):
                edited = fn(r, i, json.loads(b[6:]), count)
                i += 1
                if edited is None:
                    continue
                b = b"data: " + json.dumps(edited, ensure_ascii=False).encode()
            out.append(b)
        return replace(a, body=b"\n\n".join(out))
    return rewrite


def _stream_body(edit: Callable[[bytes], bytes]) -> Callable[[Request, Answer], Answer]:
    def rewrite(_: Request, a: Answer) -> Answer:
        return replace(a, body=edit(a.body)) if a.content_type.startswith("text/event-stream") else a
    return rewrite


def _set(path: str, value: Any) -> Callable[[Request, dict[str, Any]], None]:
    def fn(_: Request, d: dict[str, Any]) -> None:
        *head, last = path.split(".")
        target: Any = d
        for k in head:
            target = target[int(k)] if k.isdigit() else target[k]
        target[last] = value
    return fn


def _thinking_on(r: Request) -> bool:
    return (r.get("thinking") or {}).get("type") == "enabled"


def _without_reasoning(r: Request, _i: int, c: dict[str, Any], _n: int) -> dict[str, Any] | None:
    delta = c["choices"][0]["delta"] if c.get("choices") else {}
    return None if _thinking_on(r) and delta.get("reasoning_content") else c


def _calls(fn: Callable[[dict[str, Any]], None]) -> Callable[[Request, dict[str, Any]], None]:
    def edit(_: Request, d: dict[str, Any]) -> None:
        for c in d["choices"][0]["message"].get("tool_calls") or []:
            fn(c)
    return edit


def _usage(fn: Callable[[dict[str, Any]], None]) -> Edit:
    def edit(_r: Request, _i: int, c: dict[str, Any], _n: int) -> dict[str, Any]:
        if isinstance(c.get("usage"), dict):
            fn(c["usage"])
        return c
    return edit


def _other_id_on_tool_streams(r: Request, i: int, c: dict[str, Any], _n: int) -> dict[str, Any]:
    return {**c, "id": "another-id"} if r.get("tools") and i == 1 else c


def _usage_left_out(_r: Request, i: int, c: dict[str, Any], n: int) -> dict[str, Any]:
    return {k: v for k, v in c.items() if k != "usage"} if i < n - 1 else c


def _answer_on_length(_r: Request, _i: int, c: dict[str, Any], _n: int) -> dict[str, Any]:
    if c.get("choices") and c["choices"][0].get("finish_reason") == "length":
        c["choices"][0]["delta"]["content"] = "cut"
    return c


def _one_top_logprob(_r: Request, _i: int, c: dict[str, Any], _n: int) -> dict[str, Any]:
    for e in ((c.get("choices") or [{}])[0].get("logprobs") or {}).get("content") or []:
        e["top_logprobs"] = e["top_logprobs"][:1]
    return c


def _cache_hits(hit: int) -> Callable[[dict[str, Any]], None]:
    def fn(u: dict[str, Any]) -> None:
        hit_now = min(hit, u["prompt_tokens"])
        u.update(prompt_cache_hit_tokens=hit_now, prompt_cache_miss_tokens=u["prompt_tokens"] - hit_now)
        u["prompt_tokens_details"] = {"cached_tokens": hit_now}
    return fn


def _drop_keys(*keys: str) -> Callable[[dict[str, Any]], None]:
    def fn(u: dict[str, Any]) -> None:
        for k in keys:
            u.pop(k, None)
    return fn


def _strict(r: Request) -> bool:
    return any((t.get("function") or {}).get("strict") for t in r.get("tools") or [])


def _close_schemas(r: Request) -> Request:
    """Make every strict schema closed, so the mock never sees an open one (and accepts it)."""
    tools = [{**t, "function": {**t["function"], "parameters": {**t["function"]["parameters"], "additionalProperties": False}}}
             if (t.get("function") or {}).get("strict") else t for t in r.get("tools") or []]
    return {**r, "tools": tools} if tools else r


DEFECTS = [
    Defect("S2", "401 without the envelope's type/param/code", answer=_errors(401, _no_type)),
    Defect("S4", "400 in other words than DeepSeek's", answer=_errors(400, _message("bad request"))),
    Defect("S4", "400 with no envelope", answer=_errors(400, lambda e: {"detail": "bad request"})),
    Defect("S5", "no context-length limit", request=_huge_to_short),
    Defect("S5", "max_tokens range in other words", answer=_errors(400, _message("max_tokens out of range"))),
    Defect("S5", "422 with no envelope", answer=_errors(422, lambda e: {"detail": e.get("message")})),
    Defect("S6", "orphan tool message refused with no envelope", answer=_errors(400, lambda e: "no")),
    Defect("S9", "a named tool_choice not honoured", answer=_rename_calls("get_weather")),
    Defect("S11", "reasoning_effort none ignored", request=_drop("reasoning_effort", "none")),
    Defect("S11", "deepseek-chat ignores thinking enabled",
           request=lambda r: _drop("thinking")(r) if r.get("model") == "deepseek-chat" else r),
    Defect("S13", "test-switch errors with no envelope", answer=_errors(None, _no_type)),
    Defect("S14", "an alias for the model asked for", answer=_json_answer(_set("model", "deepseek-chat"))),
    Defect("S14", "an empty system_fingerprint", answer=_json_answer(_set("system_fingerprint", ""))),
    Defect("S15", "empty reasoning with thinking on",
           answer=_json_answer(lambda r, d: _set("choices.0.message.reasoning_content", "")(r, d) if _thinking_on(r) else None)),
    Defect("S16", "arguments that are not JSON", answer=_json_answer(_calls(lambda c: c["function"].update(arguments="{city")))),
    Defect("S16", "a call index that is not its position", answer=_json_answer(_calls(lambda c: c.update(index=3)))),
    Defect("S16", "a call id not in DeepSeek's form", answer=_json_answer(_calls(lambda c: c.update(id="call_abc")))),
    Defect("S18", "no charset", answer=lambda _r, a: replace(a, content_type="text/event-stream")
           if a.content_type.startswith("text/event-stream") else a),
    Defect("S18", "no Cache-Control", answer=lambda _r, a: replace(a, cache_control=None)),
    Defect("S19", "a data line that is not JSON", answer=_stream_body(lambda b: b.replace(b"data: [DONE]", b"data: {oops\n\ndata: [DONE]"))),
    Defect("S20", "a comment between the last chunk and [DONE]",
           answer=_stream_body(lambda b: b.replace(b"data: [DONE]", b": bye\n\ndata: [DONE]"))),
    Defect("S21", "an event: line in tool-call streams", answer=lambda r, a: _stream_body(
        lambda b: b"event: tool\n" + b)(r, a) if r.get("tools") else a),
    Defect("S22", "the id changes inside a tool-call stream", answer=_chunks(_other_id_on_tool_streams)),
    Defect("S24", "thinking on without reasoning deltas", answer=_chunks(_without_reasoning)),
    Defect("S24", "a thinking-off finish delta with reasoning_content", answer=_chunks(
        lambda r, i, c, n: c if _thinking_on(r) or i < n - 1 else {**c, "choices": [{**c["choices"][0], "delta": {
            "content": "", "reasoning_content": None}}]})),
    Defect("S25", "thinking on without reasoning deltas", answer=_chunks(_without_reasoning)),
    Defect("S29", "usage left out of earlier chunks instead of null", answer=_chunks(_usage_left_out)),
    Defect("S30", "a usage of zero tokens", answer=_chunks(_usage(lambda u: u.update(total_tokens=0)))),
    Defect("S31", "no cache fields in usage", answer=_chunks(_usage(_drop_keys("prompt_cache_hit_tokens", "prompt_cache_miss_tokens")))),
    Defect("S31", "cache hits not in multiples of 64", answer=_chunks(_usage(_cache_hits(10)))),
    Defect("S32", "an answer in a stream cut by max_tokens", answer=_chunks(_answer_on_length)),
    Defect("S34", "fewer top_logprobs than asked for", answer=_chunks(_one_top_logprob)),
    Defect("S28", "strict arguments outside the schema", answer=_json_answer(
        lambda r, d: _calls(lambda c: c["function"].update(arguments='{"city": "Oslo"}'))(r, d) if _strict(r) else None)),
    Defect("S39", "an empty continuation of a prefix", answer=_json_answer(
        lambda r, d: _set("choices.0.message.content", "")(r, d) if r["messages"][-1].get("prefix") else None)),
    Defect("S41", "a strict schema without additionalProperties false accepted", request=_close_schemas),
]


async def test_the_proxy_alone_passes_every_visible_claim(run: Run) -> None:
    visible = [i for i in CLAIMED_S_ITEMS if i != "S35"]
    status = await run(None, visible)
    assert {i: s for i, s in status.items() if s != "pass"} == {}


@pytest.mark.parametrize("defect", DEFECTS, ids=[f"{d.item}-{d.name}" for d in DEFECTS])
async def test_a_wrong_server_fails_the_check(run: Run, defect: Defect) -> None:
    assert await run(defect, [defect.item]) == {defect.item: "fail"}
