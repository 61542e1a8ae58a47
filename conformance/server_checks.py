"""The server direction: probe any DeepSeek-compatible endpoint and judge it against S1–S41.

Each check sends ordinary requests and reads the answers from outside, so it works on DeepSeek
itself, a gateway or our mock server. Items that need a server-side switch (S13, S33, S36) use
the dshkit mock's `X-Mock-Behavior` header; a server that ignores it gets `n/a`, as do items that
cannot be seen from outside at all (S35 needs a recording on the server). Results have the same
shape as adapter results, so the same reports print them.

A check passes only on what it saw: when the server gives it nothing to judge (an error status, a
connection that breaks or never answers, a stream without chunks), it fails with a reason that
starts "could not observe", never passes on an empty list. Every request has a timeout and every
check a budget, so a server that accepts and never answers still gets a finished report.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import httpx
import jsonschema

from dshkit.harness.providers.sse import SSEComment, SSEDecoder, SSEField

from .checks import unified
from .runner import ScenarioResult, Status

__all__ = ["SERVER_CHECKS", "run_server_checks", "select_checks"]

U = [{"role": "user", "content": "Say hello in five words."}]
TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
OTHER_TOOL = {"type": "function", "function": {"name": "get_time", "description": "The time in a city",
              "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
STRICT_TOOL: dict[str, Any] = {"type": "function", "function": {"name": "get_weather", "strict": True, "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
    "required": ["city", "unit"], "additionalProperties": False}}}
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_CALL_ID = re.compile(r"^call_\d{2}_[A-Za-z0-9]{24}$")
DESERIALIZE = "Failed to deserialize the JSON body into the target type: "
MAX_TOKENS_RANGE = "Invalid max_tokens value, the valid range of max_tokens is [1, "
CONTEXT_LENGTH = "This model's maximum context length is"
PASSBACK = "The `reasoning_content` in the thinking mode must be passed back to the API."


class Verdict(Exception):
    """Raised by a check to give its status and what it saw."""

    def __init__(self, status: Status, expected: Any = None, actual: Any = None, note: str = "") -> None:
        super().__init__(note)
        self.status = status
        self.expected = expected
        self.actual = actual
        self.note = note


def need(cond: bool, expected: Any, actual: Any) -> None:
    if not cond:
        raise Verdict("fail", expected, actual)


def na(reason: str) -> None:
    raise Verdict("n/a", note=reason)


UNOBSERVED = "could not observe"


def unobserved(what: str, got: str) -> NoReturn:
    """Fail a check that got nothing to judge (an empty answer must not pass vacuously)."""
    raise Verdict("fail", {what: "an answer to judge"}, {what: got}, note=f"{UNOBSERVED} {what}: {got}")


@dataclass(slots=True)
class Streamed:
    status: int
    headers: httpx.Headers
    raw: bytes
    events: list[tuple[str, str]]
    """(kind, text): kind is `data`, `comment` or `field` (an event:/id:/retry: line)."""
    chunks: list[dict[str, Any]]
    done: bool


def parse_sse(raw: bytes) -> tuple[list[tuple[str, str]], list[dict[str, Any]], bool]:
    """The body as a WHATWG client reads it (the harness's one SSE decoder): what it holds in
    order as `Streamed.events` (`data` per dispatched event, `comment` and `field` per line, in
    their line form), the JSON-object chunks, and whether `[DONE]` was dispatched."""
    events: list[tuple[str, str]] = []
    chunks: list[dict[str, Any]] = []
    done = False
    decoder = SSEDecoder(fields=True)
    for item in decoder.feed(raw) + decoder.close():
        if isinstance(item, SSEComment):
            events.append(("comment", f": {item.text}"))
        elif isinstance(item, SSEField):
            events.append(("field", f"{item.name}: {item.value}"))
        else:
            events.append(("data", item.data))
            if item.data == "[DONE]":
                done = True
                continue
            try:
                value = json.loads(item.data)
            except ValueError:
                continue
            if isinstance(value, dict):
                chunks.append(value)
    return events, chunks, done


class Probe:
    """An HTTP client for one endpoint; every request gets its own session header."""

    def __init__(self, base_url: str, api_key: str | None, *, timeout_s: float = 30.0) -> None:
        self.base = base_url.rstrip("/")
        self.key = api_key
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(timeout_s, connect=min(5.0, timeout_s)))

    def headers(self, extra: dict[str, str] | None = None, *, auth: bool = True) -> dict[str, str]:
        h = {"Content-Type": "application/json", "X-Mock-Session": f"srv-{uuid.uuid4().hex[:10]}"}
        if auth:
            h["Authorization"] = f"Bearer {self.key or 'sk-dshkit-conformance'}"
        return {**h, **(extra or {})}

    async def post(self, body: Any, *, path: str = "/chat/completions", raw: bytes | None = None,
                   headers: dict[str, str] | None = None, auth: bool = True) -> httpx.Response:
        content = raw if raw is not None else json.dumps(body).encode()
        return await self.client.post(self.base + path, content=content, headers=self.headers(headers, auth=auth))

    async def chat(self, **body: Any) -> tuple[httpx.Response, dict[str, Any]]:
        r = await self.post({"model": "deepseek-v4-flash", "messages": U, **body})
        try:
            data = json.loads(r.content) if r.content.strip() else {}
        except ValueError:
            data = {}
        return r, data if isinstance(data, dict) else {}

    async def stream(self, *, behavior: str | None = None, observe: bool = True, **body: Any) -> Streamed:
        """A streamed answer. With `observe` (checks that judge its content), anything but a 200
        with at least one chunk carrying `choices` fails the check as unobserved."""
        headers = {"X-Mock-Behavior": behavior} if behavior else None
        payload = {"model": "deepseek-v4-flash", "messages": U, "stream": True, **body}
        try:
            r = await self.post(payload, headers=headers)
        except httpx.TransportError as exc:
            if observe:
                unobserved("a streamed answer", f"{type(exc).__name__}: {exc}")
            return Streamed(0, httpx.Headers(), str(exc).encode(), [], [], False)
        events, chunks, done = parse_sse(r.content)
        if observe and r.status_code != 200:
            unobserved("a streamed answer", f"HTTP {r.status_code}")
        if observe and not any(c.get("choices") for c in chunks):
            unobserved("a streamed answer", _describe(r) if not r.content.strip() else "no chunk with choices in the body")
        return Streamed(r.status_code, r.headers, r.content, events, chunks, done)

    async def aclose(self) -> None:
        await self.client.aclose()


def _describe(r: httpx.Response) -> str:
    """What a 200 without a usable answer held, for the "could not observe" reason."""
    body = r.content.strip()
    if not body:
        return f"HTTP {r.status_code} with an empty body"
    return f"HTTP {r.status_code} with {len(r.content)} bytes that are no chat completion"


def answered(r: httpx.Response, label: str) -> dict[str, Any]:
    """The completion a request that must succeed got. Another status is a failure the check
    saw; a 200 without a completion (an empty body, `{}`, an event stream where JSON was asked
    for) is nothing to judge, so it fails as unobserved instead of passing on the status alone."""
    need(r.status_code == 200, {label: 200}, {label: r.status_code})
    try:
        data = json.loads(r.content.lstrip(b"\n")) if r.content.strip() else None
    except ValueError:
        data = None
    choices = data.get("choices") if isinstance(data, dict) else None
    if not (isinstance(choices, list) and choices and all(isinstance(c, dict) for c in choices)):
        unobserved(f"a chat completion for {label}", _describe(r))
    assert isinstance(data, dict)
    return data


async def control(p: Probe) -> None:
    """A check that only expects rejections first sees the server accept a plain request: a
    server that refuses everything (always 400, 401 or 500) proves nothing by refusing these."""
    r = await p.post({"model": "deepseek-v4-flash", "messages": U, **THINK_OFF})
    if r.status_code != 200:
        unobserved("a rejection that means something", f"a plain request got HTTP {r.status_code} too")
    answered(r, "a plain request")


def _err(r: httpx.Response) -> dict[str, Any]:
    try:
        body = r.json()
    except ValueError:
        return {}
    err = body.get("error") if isinstance(body, dict) else None
    return err if isinstance(err, dict) else {}


ENVELOPE_KEYS = {"message", "type", "param", "code"}


def _enveloped(r: httpx.Response) -> bool:
    """The DeepSeek error envelope: `{"error": {"message": "…", "type", "param", "code"}}`."""
    e = _err(r)
    return set(e) >= ENVELOPE_KEYS and isinstance(e.get("message"), str) and bool(e["message"])


def _deltas(s: Streamed) -> list[dict[str, Any]]:
    return [c["choices"][0].get("delta") or {} for c in s.chunks if c.get("choices")]


def _finish(s: Streamed) -> str | None:
    reasons = [c["choices"][0].get("finish_reason") for c in s.chunks if c.get("choices")]
    return next((r for r in reversed(reasons) if r), None)


def _usage(s: Streamed) -> dict[str, Any] | None:
    return next((c["usage"] for c in reversed(s.chunks) if isinstance(c.get("usage"), dict)), None)


THINK_OFF: dict[str, Any] = {"thinking": {"type": "disabled"}}

# --- request handling (S1–S13) -------------------------------------------------------------------


async def s1(p: Probe) -> None:
    for path in ("/chat/completions", "/v1/chat/completions", "/beta/chat/completions"):
        r = await p.post({"model": "deepseek-v4-flash", "messages": U, **THINK_OFF}, path=path)
        answered(r, path)


async def s2(p: Probe) -> None:
    if not p.key:
        na("needs --api-key to tell a wrong key from the right one")
    await control(p)  # the right key is accepted
    none = await p.post({"model": "deepseek-v4-flash", "messages": U}, auth=False)
    wrong = await p.post({"model": "deepseek-v4-flash", "messages": U}, headers={"Authorization": "Bearer sk-wrong-0000"})
    if none.status_code == 200 and wrong.status_code == 200:
        # A server that requires no key at all (a default `dshkit serve`): nothing to judge.
        na("the server accepts any key, or none (start `dshkit serve --api-key K` and pass the same "
           "--api-key to check this)")
    need(none.status_code == 401 and _enveloped(none), {"no key": "401 + error envelope"},
         {"no key": [none.status_code, _err(none)]})
    need(wrong.status_code == 401 and _enveloped(wrong), {"wrong key": "401 + error envelope"},
         {"wrong key": [wrong.status_code, _err(wrong)]})


async def s3(p: Probe) -> None:
    r, _ = await p.chat(model="deepseek-no-such-model")
    need(r.status_code == 400 and _err(r).get("message") == "Model Not Exist",
         {"status": 400, "message": "Model Not Exist"}, {"status": r.status_code, "message": _err(r).get("message")})
    for model in ("deepseek-chat", "deepseek-reasoner", "deepseek-v4-flash", "deepseek-v4-pro", "deepseek-flash"):
        r, _ = await p.chat(model=model, max_tokens=16)
        answered(r, model)


async def s4(p: Probe) -> None:
    cases: dict[str, Any] = {
        "not json": b"{nope",
        "no messages": {"model": "deepseek-v4-flash"},
        "empty messages": {"model": "deepseek-v4-flash", "messages": []},
        "no role": {"model": "deepseek-v4-flash", "messages": [{"content": "hi"}]},
        "unknown role": {"model": "deepseek-v4-flash", "messages": [{"role": "robot", "content": "hi"}]},
        "unknown part": {"model": "deepseek-v4-flash", "messages": [{"role": "user", "content": [{"type": "video_url", "video_url": {}}]}]},
    }
    await control(p)
    for name, body in cases.items():
        r = await p.post(body, raw=body if isinstance(body, bytes) else None)
        need(r.status_code == 400 and _enveloped(r), {name: "400 + error envelope"}, {name: [r.status_code, _err(r)]})
        msg = str(_err(r).get("message"))
        if not isinstance(body, bytes):  # the observed wording for a body of the wrong shape
            need(msg.startswith(DESERIALIZE), {name: DESERIALIZE + "<path>: <reason>"}, {name: msg})


async def s5(p: Probe) -> None:
    await control(p)
    r, _ = await p.chat(max_tokens=0)
    msg = _err(r).get("message") or ""
    need(r.status_code == 400 and msg.startswith(MAX_TOKENS_RANGE), {"max_tokens 0": MAX_TOKENS_RANGE + "N]"},
         {"max_tokens 0": [r.status_code, msg]})
    # Over 1M tokens of prompt by any tokenizer (distinct numbers do not merge), plus the V4 output limit.
    huge = " ".join(str(i) for i in range(600_000))
    r, _ = await p.chat(messages=[{"role": "user", "content": huge}], max_tokens=393216)
    msg = _err(r).get("message") or ""
    need(r.status_code == 400 and msg.startswith(CONTEXT_LENGTH), {"prompt over the context": CONTEXT_LENGTH + " …"},
         {"prompt over the context": [r.status_code, msg[:120]]})
    for name, bad in (("temperature 5", {"temperature": 5}), ("top_p 1.5", {"top_p": 1.5}),
                      ("frequency_penalty 2.5", {"frequency_penalty": 2.5}),
                      ("top_logprobs 30", {"logprobs": True, "top_logprobs": 30}),
                      ("17 stop strings", {"stop": ["s"] * 17}),
                      ("tool name with a space", {"tools": [{"type": "function", "function": {"name": "x y"}}]})):
        r, _ = await p.chat(model="deepseek-chat", **bad)
        need(r.status_code in (400, 422) and _enveloped(r), {name: "422 (or 400) + error envelope"},
             {name: [r.status_code, _err(r)]})


async def s6(p: Probe) -> None:
    await control(p)
    r, _ = await p.chat(messages=[*U, {"role": "tool", "tool_call_id": "call_nowhere", "content": "x"}], **THINK_OFF)
    need(r.status_code == 400 and _enveloped(r), {"orphan tool message": "400 + error envelope"},
         {"orphan tool message": [r.status_code, _err(r)]})


def _tool_history(reasoning: str | None) -> list[dict[str, Any]]:
    call = {"id": "call_00_abcdefghijklmnopqrstuvwx", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
    assistant: dict[str, Any] = {"role": "assistant", "content": "", "tool_calls": [call]}
    if reasoning is not None:
        assistant["reasoning_content"] = reasoning
    return [*U, assistant, {"role": "tool", "tool_call_id": call["id"], "content": "cold"}]


async def s7(p: Probe) -> None:
    r, _ = await p.chat(messages=_tool_history(None), tools=[TOOL])
    need(r.status_code == 400 and _err(r).get("message") == PASSBACK,
         {"missing passback": [400, PASSBACK]}, {"missing passback": [r.status_code, _err(r).get("message")]})
    r, _ = await p.chat(messages=_tool_history(""), tools=[TOOL])
    answered(r, 'reasoning_content ""')


async def s8(p: Probe) -> None:
    msgs = [*U, {"role": "assistant", "content": "Hello there friend, hi!", "reasoning_content": "greet"}, {"role": "user", "content": "again"}]
    r, _ = await p.chat(messages=msgs)
    answered(r, "reasoning on plain turn")


async def s9(p: Probe) -> None:
    r, _ = await p.chat(tools=[TOOL], tool_choice="required", **THINK_OFF)
    calls = _message(answered(r, "required, thinking off")).get("tool_calls")
    need(bool(calls), {"required, thinking off": "200 with tool_calls"}, {"required, thinking off": r.status_code})
    r, _ = await p.chat(tools=[TOOL], tool_choice="required", thinking={"type": "enabled"})
    need(r.status_code == 400, {"required, thinking on": 400}, {"required, thinking on": r.status_code})
    named = {"type": "function", "function": {"name": "get_time"}}
    r, d = await p.chat(tools=[TOOL, OTHER_TOOL], tool_choice=named, **THINK_OFF)
    names = [(c.get("function") or {}).get("name") for c in _message(d).get("tool_calls") or [] if isinstance(c, dict)]
    need(r.status_code == 200 and names == ["get_time"], {"named get_time, thinking off": ["get_time"]},
         {"named get_time, thinking off": [r.status_code, names]})


async def s10(p: Probe) -> None:
    r, _ = await p.chat(thinking={"type": "enabled"}, temperature=9, top_p=0, presence_penalty=7, frequency_penalty=-9)
    answered(r, "ignored sampling params")


def _message(data: dict[str, Any]) -> dict[str, Any]:
    choices = data.get("choices") or [{}]
    msg = choices[0].get("message") if isinstance(choices[0], dict) else None
    return msg if isinstance(msg, dict) else {}


async def s11(p: Probe) -> None:
    seen = {}
    for label, body in (("deepseek-reasoner", {"model": "deepseek-reasoner"}), ("deepseek-chat", {"model": "deepseek-chat"}),
                        ("v4 default", {}), ("v4 disabled", THINK_OFF), ("v4-pro default", {"model": "deepseek-v4-pro"}),
                        ("deepseek-chat enabled", {"model": "deepseek-chat", "thinking": {"type": "enabled"}}),
                        ("effort none", {"reasoning_effort": "none"}), ("effort medium", {"reasoning_effort": "medium"})):
        _, data = await p.chat(**body)
        seen[label] = "reasoning_content" in _message(data)
    want = {"deepseek-reasoner": True, "deepseek-chat": False, "v4 default": True, "v4 disabled": False,
            "v4-pro default": True, "deepseek-chat enabled": True, "effort none": False, "effort medium": True}
    need(seen == want, want, seen)


async def s12(p: Probe) -> None:
    r, _ = await p.chat(user_id="user_123", n=1, some_future_field={"x": 1})
    answered(r, "unknown fields")


async def _switch(p: Probe, behavior: str) -> httpx.Response:
    r = await p.post({"model": "deepseek-v4-flash", "messages": U}, headers={"X-Mock-Behavior": behavior})
    if r.status_code == 200:
        na(f"the server has no test switch for {behavior} (X-Mock-Behavior is a dshkit mock header)")
    return r


async def s13(p: Probe) -> None:
    for behavior, status in (("insufficient_balance", 402), ("rate_limit", 429), ("server_error", 500), ("service_unavailable", 503)):
        r = await _switch(p, behavior)
        need(r.status_code == status and _enveloped(r), {behavior: f"{status} + error envelope"},
             {behavior: [r.status_code, _err(r)]})


# --- non-streaming (S14–S17) --------------------------------------------------------------------


async def s14(p: Probe) -> None:
    r, d = await p.chat(**THINK_OFF)
    ct = r.headers.get("content-type", "")
    choices = d.get("choices") or []
    shape = {
        "content-type json": ct.startswith("application/json"),
        "object": d.get("object"),
        "uuid id": bool(_UUID.match(str(d.get("id", "")))),
        "int created": isinstance(d.get("created"), int),
        "model": d.get("model") == "deepseek-v4-flash",  # asked for by its own id, not an alias
        "fingerprint": isinstance(d.get("system_fingerprint"), str) and bool(d.get("system_fingerprint")),
        "one choice index 0": len(choices) == 1 and choices[0].get("index") == 0,
        "logprobs null": bool(choices) and choices[0].get("logprobs") is None,
    }
    want = {**{k: True for k in shape}, "object": "chat.completion"}
    need(shape == want, want, shape)


async def s15(p: Probe) -> None:
    _, on = await p.chat(thinking={"type": "enabled"})
    _, off = await p.chat(**THINK_OFF)
    reasoning = _message(on).get("reasoning_content")
    got = {"thinking on has reasoning": isinstance(reasoning, str) and bool(reasoning),
           "thinking off has the key": "reasoning_content" in _message(off)}
    want = {"thinking on has reasoning": True, "thinking off has the key": False}
    need(got == want, want, got)


def _json_text(value: Any) -> bool:
    """A string that parses as JSON."""
    if not isinstance(value, str):
        return False
    try:
        json.loads(value)
    except ValueError:
        return False
    return True


async def s16(p: Probe) -> None:
    _, d = await p.chat(tools=[TOOL], tool_choice={"type": "function", "function": {"name": "get_weather"}}, **THINK_OFF)
    choice = (d.get("choices") or [{}])[0]
    calls = _message(d).get("tool_calls") or []
    ok = (choice.get("finish_reason") == "tool_calls" and bool(calls) and all(
        isinstance(c, dict) and c.get("index") == i and bool(_CALL_ID.match(str(c.get("id")))) and c.get("type") == "function"
        and isinstance((c.get("function") or {}).get("name"), str) and _json_text((c.get("function") or {}).get("arguments"))
        for i, c in enumerate(calls)))
    need(ok, {"finish_reason": "tool_calls", "tool_calls": "index, id, type function, name, arguments string"},
         {"finish_reason": choice.get("finish_reason"), "tool_calls": calls})


async def s17(p: Probe) -> None:
    r, _ = await p.chat(**THINK_OFF)
    if r.status_code != 200:
        unobserved("a JSON answer", f"HTTP {r.status_code}")  # an error envelope is JSON too
    if not r.content.strip():
        unobserved("a JSON answer", _describe(r))
    try:
        data = json.loads(r.content.lstrip(b"\n"))
    except ValueError:
        need(False, {"body": "JSON after optional blank lines"}, {"body": r.content[:80].decode("utf-8", "replace")})
    if not (isinstance(data, dict) and data.get("choices")):
        unobserved("a JSON answer", _describe(r))


# --- streaming (S18–S36) ------------------------------------------------------------------------


async def s18(p: Probe) -> None:
    s = await p.stream()  # a 200 without a chunk is nothing to judge the content type of
    ct = s.headers.get("content-type", "")
    cache = s.headers.get("cache-control", "")
    need(s.status == 200 and ct.replace(" ", "").lower() == "text/event-stream;charset=utf-8" and cache == "no-cache",
         {"status": 200, "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"},
         {"status": s.status, "content-type": ct, "cache-control": cache})


async def s19(p: Probe) -> None:
    s = await p.stream()
    text = s.raw.decode("utf-8", "replace")
    blocks = [b for b in text.split("\n\n") if b.strip()]
    bad = [b[:60] for b in blocks if not b.startswith(":") and (
        b.count("\n") != 0 or "\r" in b or not b.startswith("data: ") or not (b == "data: [DONE]" or _json_text(b[6:])))]
    need(not bad and text.endswith("\n\n"), {"events": "one `data: <json>` line each"}, {"odd events": bad})


async def s20(p: Probe) -> None:
    s = await p.stream()
    need(s.raw.endswith(b"}\n\ndata: [DONE]\n\n"), {"last bytes": "…}\\n\\ndata: [DONE]\\n\\n"}, {"last bytes": s.raw[-24:].decode("utf-8", "replace")})


async def s21(p: Probe) -> None:
    for body in ({}, {"tools": [TOOL], "tool_choice": "required", **THINK_OFF}):  # a text and a tool-call stream
        s = await p.stream(**body)
        fields = [t for k, t in s.events if k == "field"]
        comments = [t for k, t in s.events if k == "comment" and t.strip() != ": keep-alive"]
        need(not fields and not comments, {"filler": "only `: keep-alive`"}, {"fields": fields, "comments": comments})


async def s21b(p: Probe) -> None:
    s = await p.stream(tools=[TOOL], tool_choice="required", **THINK_OFF)
    bad = [k for d in _deltas(s) for k, v in d.items()
           if isinstance(v, list) and any(isinstance(e, dict) and "index" not in e for e in v)]
    need(not bad, {"index-less object lists in delta": []}, {"index-less object lists in delta": bad})


async def s22(p: Probe) -> None:
    for body in ({}, {"tools": [TOOL], "tool_choice": "required", **THINK_OFF}):
        s = await p.stream(**body)
        keys = ("id", "created", "model", "system_fingerprint", "object")
        seen = {k: sorted({json.dumps(c.get(k)) for c in s.chunks}) for k in keys}
        ok = all(len(v) == 1 for v in seen.values()) and seen["object"] == ['"chat.completion.chunk"']
        need(ok, {k: "one value" for k in keys}, seen)


async def s23(p: Probe) -> None:
    off = _deltas(await p.stream(**THINK_OFF))
    on = _deltas(await p.stream(thinking={"type": "enabled"}))
    got = {"thinking off": off[0] if off else None, "thinking on": on[0] if on else None}
    want = {"thinking off": {"role": "assistant", "content": ""},
            "thinking on": {"role": "assistant", "content": None, "reasoning_content": ""}}
    need(got == want, want, got)


async def s24(p: Probe) -> None:
    on = _deltas(await p.stream(thinking={"type": "enabled"}))[1:]
    off = _deltas(await p.stream(**THINK_OFF))[1:]
    bad = [d for d in on if (d.get("reasoning_content") and set(d) != {"content", "reasoning_content"}) or
           (d.get("reasoning_content") and d.get("content") is not None)]
    bad += [d for d in on if d.get("content") and d.get("reasoning_content", "missing") is not None]
    bad += [d for d in off if set(d) != {"content"}]
    need(not bad, {"odd deltas": []}, {"odd deltas": bad[:5]})
    kinds = {"reasoning": any(d.get("reasoning_content") for d in on), "answer": any(d.get("content") for d in on)}
    need(all(kinds.values()), {"thinking on streams": {"reasoning": True, "answer": True}}, {"thinking on streams": kinds})


async def s25(p: Probe) -> None:
    deltas = _deltas(await p.stream(thinking={"type": "enabled"}))
    answer_started = False
    bad: list[Any] = []
    for d in deltas:
        if d.get("reasoning_content") and (answer_started or d.get("content")):
            bad.append(d)
        if d.get("content") or d.get("tool_calls"):
            answer_started = True
    if not any(d.get("reasoning_content") for d in deltas):
        unobserved("reasoning deltas", "a thinking-on stream with none")
    need(not bad, {"reasoning after or mixed with the answer": []}, {"reasoning after or mixed with the answer": bad[:5]})


def _tool_deltas(s: Streamed) -> list[dict[str, Any]]:
    return [e for d in _deltas(s) for e in (d.get("tool_calls") or [])]


async def s26(p: Probe) -> None:
    entries = _tool_deltas(await p.stream(tools=[TOOL], tool_choice="required", **THINK_OFF))
    seen: set[Any] = set()
    bad: list[Any] = []
    for e in entries:
        i = e.get("index")
        if i not in seen:
            seen.add(i)
            fn = e.get("function") or {}
            if not (_CALL_ID.match(str(e.get("id"))) and e.get("type") == "function" and fn.get("name") and fn.get("arguments") == ""):
                bad.append(e)
        elif set(e) != {"index", "function"} or set(e["function"]) != {"arguments"}:
            bad.append(e)
    need(bool(entries) and not bad, {"openers and fragments": "as in S26"}, {"odd entries": bad[:4] or "no tool call"})


async def s27(p: Probe) -> None:
    s = await p.stream(tools=[TOOL], tool_choice="required", **THINK_OFF)
    per_delta = [len(d.get("tool_calls") or []) for d in _deltas(s) if d.get("tool_calls")]
    order = [int(e.get("index", -1)) for e in _tool_deltas(s)]
    firsts = list(dict.fromkeys(order))
    ok = all(n == 1 for n in per_delta) and firsts == list(range(len(firsts))) and order == sorted(order)
    need(bool(order) and ok, {"indexes": "0.. consecutive, one per delta, finished in turn"}, {"indexes": order, "per delta": per_delta})


async def s28(p: Probe) -> None:
    entries = _tool_deltas(await p.stream(tools=[TOOL], tool_choice="required", **THINK_OFF))
    args: dict[int, str] = {}
    for e in entries:
        args[e.get("index", 0)] = args.get(e.get("index", 0), "") + ((e.get("function") or {}).get("arguments") or "")
    bad = {}
    for i, a in args.items():
        try:
            json.loads(a)
        except ValueError:
            bad[i] = a
    need(bool(args) and not bad, {"arguments": "valid JSON"}, {"arguments": bad or "no tool call"})
    # strict mode (the /beta path): the arguments also match the schema
    r = await p.post({"model": "deepseek-v4-flash", "messages": U, "tools": [STRICT_TOOL], "tool_choice": "required",
                      **THINK_OFF}, path="/beta/chat/completions")
    calls = _message(r.json() if r.status_code == 200 else {}).get("tool_calls") or []
    if not calls:
        unobserved("a strict tool call", f"HTTP {r.status_code}" if r.status_code != 200 else "no tool_calls")
    schema = STRICT_TOOL["function"]["parameters"]
    off = []
    for c in calls:
        text = (c.get("function") or {}).get("arguments") if isinstance(c, dict) else None
        try:
            jsonschema.validate(json.loads(text) if isinstance(text, str) else text, schema)
        except (ValueError, jsonschema.ValidationError) as exc:
            off.append(f"{text!r}: {str(exc).splitlines()[0]}")
    need(not off, {"strict arguments": "match the schema"}, {"strict arguments": off})


async def s29(p: Probe) -> None:
    for body in ({"thinking": {"type": "enabled"}}, THINK_OFF):
        s = await p.stream(**body)
        finishes = [i for i, c in enumerate(s.chunks) if c.get("choices") and c["choices"][0].get("finish_reason")]
        early_usage = [i for i, c in enumerate(s.chunks[:-1]) if c.get("usage", "missing") is not None]
        # "usage": null and "finish_reason": null are sent, not left out
        early_usage += [i for i, c in enumerate(s.chunks[:-1])
                        if c.get("choices") and "finish_reason" not in c["choices"][0]]
        last = s.chunks[-1] if s.chunks else {}
        delta = (last.get("choices") or [{}])[0].get("delta")
        want_delta = {"content": "", "reasoning_content": None} if body.get("thinking", {}).get("type") == "enabled" else {"content": ""}
        got = {"finish chunks": finishes, "earlier usage or no finish_reason": sorted(set(early_usage)), "finish delta": delta, "usage on it": isinstance(last.get("usage"), dict)}
        want = {"finish chunks": [len(s.chunks) - 1], "earlier usage or no finish_reason": [], "finish delta": want_delta, "usage on it": True}
        need(got == want, want, got)


async def s30(p: Probe) -> None:
    s = await p.stream(stream_options=None)
    empty = [c for c in s.chunks if c.get("choices") == []]
    total = (_usage(s) or {}).get("total_tokens")
    need(not empty and isinstance(total, int) and total > 0, {"usage chunk": "none; usage on the finish chunk"}, {"choices [] chunks": len(empty), "usage": _usage(s)})


async def s31(p: Probe) -> None:
    problems: list[str] = []
    for body in ({"thinking": {"type": "enabled"}}, THINK_OFF):
        u = _usage(await p.stream(**body)) or {}
        pt, ct = u.get("prompt_tokens", -1), u.get("completion_tokens", -1)
        hit, miss = u.get("prompt_cache_hit_tokens"), u.get("prompt_cache_miss_tokens")
        if not isinstance(hit, int) or not isinstance(miss, int):
            problems.append("prompt_cache_hit_tokens / prompt_cache_miss_tokens missing")
            hit, miss = hit if isinstance(hit, int) else 0, miss if isinstance(miss, int) else pt
        if hit % 64:
            problems.append("cache hits not a multiple of 64")
        if u.get("total_tokens") != pt + ct:
            problems.append("total != prompt + completion")
        if hit + miss != pt:
            problems.append("hit + miss != prompt")
        cached = (u.get("prompt_tokens_details") or {}).get("cached_tokens", hit)
        if cached != hit:
            problems.append("cached_tokens != hit")
        reasoning = (u.get("completion_tokens_details") or {}).get("reasoning_tokens")
        thinking = body.get("thinking", {}).get("type") == "enabled"
        if thinking and (reasoning is None or reasoning > ct):
            problems.append("reasoning_tokens missing or above completion")
        if not thinking and reasoning is not None:
            problems.append("reasoning_tokens without reasoning")
    need(not problems, {"usage invariants": []}, {"usage invariants": problems})


async def s32(p: Probe) -> None:
    s = await p.stream(thinking={"type": "enabled"}, max_tokens=2)
    ds = _deltas(s)
    got = {"finish_reason": _finish(s), "reasoning": any(d.get("reasoning_content") for d in ds),
           "answer": any(d.get("content") for d in ds)}
    want = {"finish_reason": "length", "reasoning": True, "answer": False}  # cut inside the reasoning
    need(got == want, want, got)


async def s33(p: Probe) -> None:
    for behavior, reason in (("content_filter", "content_filter"), ("insufficient_system_resource", "insufficient_system_resource")):
        s = await p.stream(behavior=behavior, observe=False, **THINK_OFF)
        if _finish(s) == "stop":
            na(f"the server has no test switch for {behavior}")
        need(_finish(s) == reason, {behavior: reason}, {behavior: _finish(s)})


async def s34(p: Probe) -> None:
    s = await p.stream(logprobs=True, top_logprobs=2, **THINK_OFF)
    bad: list[Any] = []
    for c in s.chunks:
        choice = (c.get("choices") or [{}])[0]
        lp = choice.get("logprobs")
        content = (choice.get("delta") or {}).get("content")
        if content:
            entries = (lp or {}).get("content") or []
            if not entries or not all({"token", "logprob", "bytes", "top_logprobs"} <= set(e)
                                      and len(e["top_logprobs"] or []) == 2 for e in entries):
                bad.append(lp)
        elif lp is not None:
            bad.append(lp)
    need(not bad, {"logprobs": "entries on content chunks, null elsewhere"}, {"odd logprobs": bad[:3]})


async def s35(p: Probe) -> None:
    na("replay serves a recording placed on the server; it cannot be checked from outside")


async def s36(p: Probe) -> None:
    s = await p.stream(behavior="partial_disconnect", observe=False, **THINK_OFF)
    if s.done:
        na("the server has no fault switches (X-Mock-Behavior is a dshkit mock header)")
    s = await p.stream(behavior="inband_error", observe=False, **THINK_OFF)
    need(any("error" in c for c in s.chunks), {"inband_error": "a data: {error} event"}, {"inband_error": len(s.chunks)})
    s = await p.stream(behavior="keep_alive", **THINK_OFF)
    need(any(k == "comment" for k, _ in s.events) and s.done, {"keep_alive": "comments then a reply"}, {"keep_alive": s.events[:2]})
    s = await p.stream(behavior="split_writes", **THINK_OFF)
    need(s.done and bool(s.chunks), {"split_writes": "a complete reply"}, {"split_writes": s.done})


# --- JSON mode, prefix, FIM, strict (S37–S41) ----------------------------------------------------


async def s37(p: Probe) -> None:
    msgs = [{"role": "system", "content": "Answer in json."}, {"role": "user", "content": 'Give {"a": 1} as json.'}]
    r, d = await p.chat(messages=msgs, response_format={"type": "json_object"}, **THINK_OFF)
    content = _message(d).get("content") or ""
    try:
        json.loads(content)
        ok = r.status_code == 200
    except ValueError:
        ok = False
    need(ok, {"content": "valid JSON"}, {"status": r.status_code, "content": content[:80]})


async def s38(p: Probe) -> None:
    msgs = [{"role": "user", "content": "Repeat exactly: alpha beta STOP gamma"}]
    r, d = await p.chat(messages=msgs, stop=["STOP"], **THINK_OFF)
    content = _message(d).get("content") or ""
    reason = (d.get("choices") or [{}])[0].get("finish_reason")
    need(r.status_code == 200 and "STOP" not in content and reason == "stop", {"stop honoured": True},
         {"status": r.status_code, "content": content[:80], "finish_reason": reason})


async def s39(p: Probe) -> None:
    msgs = [*U, {"role": "assistant", "content": "Hello", "prefix": True}]
    r = await p.post({"model": "deepseek-v4-flash", "messages": msgs, **THINK_OFF}, path="/beta/chat/completions")
    content = _message(answered(r, "prefix")).get("content")
    if not isinstance(content, str) or not content:
        unobserved("a continued prefix", "a completion without content")
    need(not content.startswith("Hello"), {"prefix": "continued, not repeated"},
         {"status": r.status_code, "content": content[:80]})


async def s40(p: Probe) -> None:
    r = await p.post({"model": "deepseek-v4-flash", "prompt": "def add(a, b):", "suffix": "    return c", "max_tokens": 16}, path="/beta/completions")
    if r.status_code == 404:
        na("no FIM endpoint (S40 is a MAY)")
    text = ((r.json().get("choices") or [{}])[0]).get("text") if r.status_code == 200 else None
    need(isinstance(text, str), {"choices[0].text": "a string"}, {"status": r.status_code})


async def s41(p: Probe) -> None:
    good = {"type": "function", "function": {"name": "get_weather", "strict": True, "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": False}}}
    bad = {"type": "function", "function": {"name": "get_weather", "strict": True, "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}, "required": ["city"]}}}
    open_ = {"type": "function", "function": {"name": "get_weather", "strict": True, "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
    r1, _ = await p.chat(tools=[good], **THINK_OFF)
    answered(r1, "valid strict")
    r2, _ = await p.chat(tools=[bad], **THINK_OFF)
    r3, _ = await p.chat(tools=[open_], **THINK_OFF)
    need(r2.status_code == 400 and r3.status_code == 400 and _enveloped(r3),
         {"valid strict": 200, "a property not required": 400, "no additionalProperties false": "400 + error envelope"},
         {"valid strict": r1.status_code, "a property not required": r2.status_code,
          "no additionalProperties false": [r3.status_code, _err(r3)]})


Check = Callable[[Probe], Awaitable[None]]
SERVER_CHECKS: dict[str, Check] = {
    **{f"S{i}": fn for i, fn in enumerate(
        [s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15, s16, s17, s18, s19, s20, s21], start=1)},
    "S21b": s21b,
    **{f"S{i}": fn for i, fn in enumerate(
        [s22, s23, s24, s25, s26, s27, s28, s29, s30, s31, s32, s33, s34, s35, s36, s37, s38, s39, s40, s41], start=22)},
}
_AREAS = {**{f"S{i}": "server-requests" for i in range(1, 14)}, **{f"S{i}": "server-json" for i in range(14, 18)},
          **{f"S{i}": "server-stream" for i in range(18, 37)}, "S21b": "server-stream",
          **{f"S{i}": "server-beta" for i in range(37, 42)}}


def select_checks(only: Sequence[str]) -> list[str]:
    """Check ids for `--only` (S-item ids or `area:server-…`); ValueError for unknown ones."""
    if not only:
        return list(SERVER_CHECKS)
    out: list[str] = []
    for sel in only:
        hits = [k for k in SERVER_CHECKS if sel == k or sel == f"area:{_AREAS[k]}" or sel == _AREAS[k]]
        if not hits:
            raise ValueError(f"--only {sel!r} names no server check; use S1…S41, S21b or an area "
                             f"({', '.join(sorted(set(_AREAS.values())))})")
        out += [h for h in hits if h not in out]
    return [k for k in SERVER_CHECKS if k in out]


async def _one(p: Probe, item: str, budget_s: float) -> ScenarioResult:
    started = time.monotonic()
    tags = [item, f"area:{_AREAS[item]}"]
    try:
        async with asyncio.timeout(budget_s):
            await SERVER_CHECKS[item](p)
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
    except (httpx.HTTPError, ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        res = ScenarioResult(id=item, tags=tags, status="fail", reason=f"{type(exc).__name__}: {exc}",
                             diff=unified({item: "a readable answer"}, {item: f"{type(exc).__name__}: {exc}"}, item))
    res.seconds = time.monotonic() - started
    return res


async def run_server_checks(
    base_url: str, api_key: str | None = None, *, ids: Sequence[str] | None = None,
    on_result: Callable[[ScenarioResult, int, int], None] | None = None,
    timeout_s: float = 30.0, budget_s: float | None = None,
) -> list[ScenarioResult]:
    """Run the server checks (all, or `ids`) against `base_url`, up to six at a time.

    `timeout_s` bounds each request (connect, each read); `budget_s` (default 4 × `timeout_s`)
    bounds each check, so a server that trickles bytes for ever cannot hold the run either."""
    key = api_key if api_key is not None else os.environ.get("DEEPSEEK_API_KEY")
    probe = Probe(base_url, key, timeout_s=timeout_s)
    budget = budget_s if budget_s is not None else 4 * timeout_s
    items = list(ids or SERVER_CHECKS)
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
