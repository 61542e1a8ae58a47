"""Each server checklist item in `CLAIMED_S_ITEMS` (wire.md §13), checked against `serve --api-key`."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import jsonschema
import pytest

from dshkit.mock_server import CLAIMED_S_ITEMS, encode_sse, generate_chunks
from dshkit.mock_server.generate.reply import Reply

from .cli_process import ServeProcess
from .wire import parse_sse, reassemble

KEY = "sk-claims-0123"
U = [{"role": "user", "content": "hi"}]
CALL = {"id": "call_00_x", "type": "function", "function": {"name": "f", "arguments": "{}"}}
WEATHER = {"type": "function", "function": {"name": "get_weather", "strict": True, "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
    "required": ["city", "unit"], "additionalProperties": False}}}
SSE_FILE = encode_sse(generate_chunks(Reply(content="replayed"), seed=5), "crlf")
JSONL_LINES = [json.dumps(c, ensure_ascii=False) for c in generate_chunks(Reply(content="é"), seed=6)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    d = tmp_path_factory.mktemp("claims")
    (d / "body.sse").write_bytes(SSE_FILE)
    (d / "chunks.jsonl").write_text("\n".join(JSONL_LINES) + "\n", encoding="utf-8")
    tools = {"reply": {"reasoning": "two calls", "tool_calls": [
        {"name": "a", "arguments": {"x": [1, 2]}}, {"name": "b", "arguments": '{"y": "z"}'}]}}
    (d / "claims.yaml").write_text(json.dumps({"scripts": [
        {"session": "tools", "repeat_last": True, "steps": [tools]},
        {"session": "sse", "repeat_last": True, "steps": [{"raw": {"file": "body.sse"}}]},
        {"session": "jsonl", "repeat_last": True, "steps": [{"raw": {"file": "chunks.jsonl"}}]},
        {"session": "long", "repeat_last": True, "steps": [{"reply": {
            "reasoning": "one two three four five six", "content": "answer"}}]},
    ]}))
    p = ServeProcess("--api-key", KEY, "--script", str(d / "claims.yaml"), "--seed", "1",
                     "--unscripted", "default")
    yield p
    p.kill()


class Client:
    def __init__(self, base: str) -> None:
        self.http = httpx.Client(base_url=base, timeout=httpx.Timeout(2.0, read=1.0),
                                 headers={"Authorization": f"Bearer {KEY}"})

    def post(self, body: Any = None, *, path: str = "/chat/completions", session: str | None = None,
             behavior: str | None = None, **kw: Any) -> httpx.Response:
        headers = {"X-Mock-Session": session or f"c-{uuid.uuid4().hex[:8]}"}
        if behavior:
            headers["X-Mock-Behavior"] = behavior
        if body is not None:
            kw["json"] = body
        return self.http.post(path, headers=headers, **kw)

    def stream(self, **body: Any) -> tuple[httpx.Response, list[dict[str, Any]]]:
        session = body.pop("session", None)
        behavior = body.pop("behavior", None)
        r = self.post({"model": "deepseek-v4-flash", "messages": U, "stream": True, **body},
                      session=session, behavior=behavior)
        return r, parse_sse(r.content).chunks


@pytest.fixture
def c(server: ServeProcess) -> Iterator[Client]:
    client = Client(server.base_url)
    yield client
    client.http.close()


def req(**kw: Any) -> dict[str, Any]:
    return {"model": "deepseek-chat", "messages": U, **kw}


def err(r: httpx.Response, status: int, message: str = "") -> None:
    assert r.status_code == status, r.text
    e = r.json()["error"]
    assert set(e) == {"message", "type", "param", "code"} and message in e["message"]


def deltas(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [ch["choices"][0]["delta"] for ch in chunks if ch["choices"]]


def s1(c: Client) -> None:
    for path in ("/chat/completions", "/v1/chat/completions", "/beta/chat/completions"):
        assert c.post(req(), path=path).status_code == 200


def s2(c: Client) -> None:
    err(c.http.post("/chat/completions", json=req(), headers={"Authorization": ""}), 401)
    err(c.http.post("/chat/completions", json=req(), headers={"Authorization": "Bearer nope"}), 401)


def s3(c: Client) -> None:
    err(c.post(req(model="deepseek-v9")), 400, "Model Not Exist")
    for m in ("deepseek-chat", "deepseek-reasoner", "deepseek-v4-flash", "deepseek-v4-pro", "deepseek-flash"):
        assert c.post(req(model=m)).status_code == 200


def s4(c: Client) -> None:
    for bad in (b"nope", {"model": "deepseek-chat"}, req(messages=[]), req(messages=[{"content": "x"}]),
                req(messages=[{"role": "robot", "content": "x"}]),
                req(messages=[{"role": "user", "content": [{"type": "image_url"}]}])):
        r = c.post(content=bad) if isinstance(bad, bytes) else c.post(bad)
        err(r, 400, "Failed to deserialize the JSON body into the target type: ")


def s5(c: Client) -> None:
    err(c.post(req(max_tokens=0)), 400, "Invalid max_tokens value, the valid range of max_tokens is [1, 393216]")
    err(c.post(req(messages=[{"role": "user", "content": "x" * 4_300_000}])), 400, "This model's maximum context length is")
    for bad in ({"temperature": 3}, {"top_p": 1.5}, {"frequency_penalty": 2.5}, {"logprobs": True, "top_logprobs": 30},
                {"stop": ["s"] * 17}, {"tools": [{"type": "function", "function": {"name": "x y"}}]}):
        err(c.post(req(**bad)), 422, "Invalid Parameters")


def s6(c: Client) -> None:
    err(c.post(req(messages=[*U, {"role": "tool", "tool_call_id": "nope", "content": "x"}])), 400, "nope")


def s7(c: Client) -> None:
    history = [*U, {"role": "assistant", "content": None, "tool_calls": [CALL]},
               {"role": "tool", "tool_call_id": "call_00_x", "content": "ok"}]
    err(c.post(req(model="deepseek-reasoner", messages=history)), 400,
        "The `reasoning_content` in the thinking mode must be passed back to the API.")
    history[1] = {**history[1], "reasoning_content": ""}
    assert c.post(req(model="deepseek-reasoner", messages=history)).status_code == 200


def s8(c: Client) -> None:
    history = [*U, {"role": "assistant", "content": "a", "reasoning_content": "r"}, *U]
    assert c.post(req(model="deepseek-reasoner", messages=history)).status_code == 200


def s9(c: Client) -> None:
    err(c.post(req(model="deepseek-reasoner", tools=[WEATHER], tool_choice="required")), 400, "tool_choice")
    r = c.post(req(tools=[WEATHER], tool_choice={"type": "function", "function": {"name": "get_weather"}}))
    assert r.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "get_weather"


def s10(c: Client) -> None:
    assert c.post(req(model="deepseek-reasoner", temperature=9, top_p=0, presence_penalty=7)).status_code == 200


def s11(c: Client) -> None:
    def reasons(**kw: Any) -> bool:
        return "reasoning_content" in c.post(req(**kw)).json()["choices"][0]["message"]
    assert reasons(model="deepseek-reasoner") and not reasons(model="deepseek-chat")
    assert reasons(model="deepseek-v4-pro") and reasons(model="deepseek-chat", thinking={"type": "enabled"})
    assert not reasons(model="deepseek-v4-flash", thinking={"type": "disabled"})
    assert not reasons(model="deepseek-v4-flash", reasoning_effort="none")
    assert reasons(model="deepseek-v4-flash", reasoning_effort="medium")


def s12(c: Client) -> None:
    assert c.post(req(n=1, user_id="u_1", surprise={"x": 1})).status_code == 200


def s13(c: Client) -> None:
    for behavior, status in (("insufficient_balance", 402), ("rate_limit", 429), ("server_error", 500),
                             ("service_unavailable", 503)):
        err(c.post(req(), behavior=behavior), status)


def s14(c: Client) -> None:
    r = c.post(req())
    assert r.headers["content-type"].startswith("application/json")
    b = r.json()
    assert b["object"] == "chat.completion" and uuid.UUID(b["id"]) and isinstance(b["created"], int)
    assert b["model"] == "deepseek-v4-flash" and b["system_fingerprint"]
    assert len(b["choices"]) == 1 and b["choices"][0]["index"] == 0 and b["choices"][0]["logprobs"] is None


def s15(c: Client) -> None:
    assert c.post(req(model="deepseek-reasoner")).json()["choices"][0]["message"]["reasoning_content"]
    assert "reasoning_content" not in c.post(req()).json()["choices"][0]["message"]


def s16(c: Client) -> None:
    b = c.post(req(), session="tools").json()
    assert b["choices"][0]["finish_reason"] == "tool_calls"
    for i, call in enumerate(b["choices"][0]["message"]["tool_calls"]):
        assert call["index"] == i and call["type"] == "function" and call["id"].startswith(f"call_0{i}_")
        assert isinstance(call["function"]["arguments"], str) and json.loads(call["function"]["arguments"])


def s17(c: Client) -> None:
    r = c.post(req(), behavior="keep_alive")
    assert r.content.startswith(b"\n") and r.json()["object"] == "chat.completion"


def s18(c: Client) -> None:
    r, _ = c.stream()
    assert r.status_code == 200 and r.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert r.headers["cache-control"] == "no-cache"


def s19(c: Client) -> None:
    r, _ = c.stream()
    for block in r.content.split(b"\n\n")[:-1]:
        assert block.startswith(b"data: ") and b"\n" not in block and b"\r" not in block
        json.loads(block[6:]) if block != b"data: [DONE]" else None


def s20(c: Client) -> None:
    r, _ = c.stream()
    assert r.content.endswith(b"}\n\ndata: [DONE]\n\n")


def s21(c: Client) -> None:
    r, _ = c.stream(behavior="keep_alive")
    head = r.content[: r.content.index(b"data: ")]
    assert head and set(head.split(b"\n\n")[:-1]) == {b": keep-alive"}
    r, _ = c.stream(session="tools")
    assert not re.search(rb"^(event|id|retry):", r.content, re.MULTILINE)


def s21b(c: Client) -> None:
    for session in ("tools", None):
        for d in deltas(c.stream(session=session, logprobs=True)[1]):
            for value in d.values():
                if isinstance(value, list):
                    assert all("index" in x for x in value if isinstance(x, dict))


def s22(c: Client) -> None:
    _, chunks = c.stream(session="tools")
    keys = {(ch["id"], ch["created"], ch["model"], ch["system_fingerprint"], ch["object"]) for ch in chunks}
    assert len(keys) == 1 and chunks[0]["object"] == "chat.completion.chunk"


def s23(c: Client) -> None:
    assert deltas(c.stream()[1])[0] == {"role": "assistant", "content": None, "reasoning_content": ""}
    assert deltas(c.stream(model="deepseek-chat")[1])[0] == {"role": "assistant", "content": ""}


def s24(c: Client) -> None:
    ds = deltas(c.stream(session="long")[1])[1:-1]
    assert all(set(d) == {"content", "reasoning_content"} for d in ds)
    assert all(d["content"] is None for d in ds if d["reasoning_content"] is not None)
    assert any(d["content"] for d in ds) and any(d["reasoning_content"] for d in ds)
    assert all(set(d) == {"content"} for d in deltas(c.stream(model="deepseek-chat")[1])[1:])


def s25(c: Client) -> None:
    kinds = ["r" if d.get("reasoning_content") else "c" if d.get("content") else "t" if "tool_calls" in d else ""
             for d in deltas(c.stream(session="long")[1])]
    seq = "".join(kinds)
    assert re.fullmatch(r"r+c+", seq), seq


def s26(c: Client) -> None:
    tcs = [d["tool_calls"] for d in deltas(c.stream(session="tools")[1]) if "tool_calls" in d]
    openers = [t[0] for t in tcs if "id" in t[0]]
    for i, o in enumerate(openers):
        assert re.fullmatch(rf"call_0{i}_[A-Za-z0-9]{{24}}", o["id"])
        assert o["type"] == "function" and o["function"]["arguments"] == "" and o["index"] == i
    assert all(set(t[0]) == {"index", "function"} and set(t[0]["function"]) == {"arguments"}
               for t in tcs if "id" not in t[0])


def s27(c: Client) -> None:
    tcs = [d["tool_calls"] for d in deltas(c.stream(session="tools")[1]) if "tool_calls" in d]
    assert all(len(t) == 1 for t in tcs)
    idx = [t[0]["index"] for t in tcs]
    assert idx == sorted(idx) and sorted(set(idx)) == [0, 1]


def s28(c: Client) -> None:
    got = reassemble(c.stream(session="tools")[1])
    assert [json.loads(t["arguments"]) for t in got["tool_calls"]] == [{"x": [1, 2]}, {"y": "z"}]
    r = c.post(req(tools=[WEATHER], tool_choice="required"))
    args = json.loads(r.json()["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"])
    jsonschema.validate(args, WEATHER["function"]["parameters"])  # type: ignore[index]


def s29(c: Client) -> None:
    chunks = c.stream(session="long")[1]
    finishes = [ch["choices"][0]["finish_reason"] for ch in chunks]
    assert finishes[:-1] == [None] * (len(chunks) - 1) and finishes[-1] == "stop"
    assert all(ch["usage"] is None for ch in chunks[:-1]) and chunks[-1]["usage"]
    assert chunks[-1]["choices"][0]["delta"] == {"content": "", "reasoning_content": None}


def s30(c: Client) -> None:
    chunks = c.stream(stream_options=None)[1]
    assert all(ch["choices"] for ch in chunks) and chunks[-1]["usage"]["total_tokens"] > 0


def s31(c: Client) -> None:
    for kw, reasoning in (({"session": "long"}, True), ({"model": "deepseek-chat"}, False)):
        u = c.stream(**kw)[1][-1]["usage"]
        assert u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"]
        assert u["prompt_cache_hit_tokens"] + u["prompt_cache_miss_tokens"] == u["prompt_tokens"]
        assert u["prompt_tokens_details"]["cached_tokens"] == u["prompt_cache_hit_tokens"]
        assert u["prompt_cache_hit_tokens"] % 64 == 0
        assert ("completion_tokens_details" in u) is reasoning


def s32(c: Client) -> None:
    got = reassemble(c.stream(session="long", max_tokens=2)[1])
    assert got["finish_reason"] == "length" and got["content"] == "" and got["reasoning"]


def s33(c: Client) -> None:
    for reason in ("content_filter", "insufficient_system_resource"):
        assert reassemble(c.stream(behavior=reason)[1])["finish_reason"] == reason


def s34(c: Client) -> None:
    chunks = c.stream(model="deepseek-chat", logprobs=True, top_logprobs=2)[1]
    for ch in chunks:
        lp, d = ch["choices"][0]["logprobs"], ch["choices"][0]["delta"]
        if d.get("content"):
            (entry,) = lp["content"]
            assert set(entry) == {"token", "logprob", "bytes", "top_logprobs"} and len(entry["top_logprobs"]) == 2
        else:
            assert lp is None


def s35(c: Client) -> None:
    assert c.post(req(stream=True), session="sse").content == SSE_FILE
    body = c.post(req(stream=True), session="jsonl").content
    assert body == b"".join(b"data: " + line.encode() + b"\n\n" for line in JSONL_LINES) + b"data: [DONE]\n\n"


def s36(c: Client) -> None:
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):  # closed with no [DONE]
        c.post(req(stream=True), behavior="partial_disconnect")
    r, _ = c.stream(behavior="inband_error")
    assert json.loads(parse_sse(r.content).events[-1].data)["error"]
    r, _ = c.stream(behavior="keep_alive")
    assert r.content.startswith(b": keep-alive\n\n")
    r, chunks = c.stream(behavior="split_writes")
    assert "回复" in reassemble(chunks)["content"]


def s37(c: Client) -> None:
    r = c.post(req(response_format={"type": "json_object"}, messages=[{"role": "user", "content": "json please"}]))
    assert json.loads(r.json()["choices"][0]["message"]["content"]) == {"reply": "json please"}


def s38(c: Client) -> None:
    b = c.post(req(stop=["said"])).json()["choices"][0]
    assert b["message"]["content"] == "You " and b["finish_reason"] == "stop"


def s39(c: Client) -> None:
    prefix = "```python\n"
    msgs = [*U, {"role": "assistant", "content": prefix, "prefix": True}]
    content = c.post(req(messages=msgs), path="/beta/chat/completions").json()["choices"][0]["message"]["content"]
    assert content and not content.startswith(prefix)


def s41(c: Client) -> None:
    assert c.post(req(tools=[WEATHER]), path="/beta/chat/completions").status_code == 200
    loose = {"type": "function", "function": {"name": "g", "strict": True, "parameters": {
        "type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}}}
    err(c.post(req(tools=[loose]), path="/beta/chat/completions"), 400, "additionalProperties")


CHECKS: dict[str, Callable[[Client], None]] = {
    name.upper().replace("S21B", "S21b"): fn for name, fn in globals().items() if re.fullmatch(r"s\d+b?", name)
}


def test_every_claim_has_a_check() -> None:
    assert set(CLAIMED_S_ITEMS) == set(CHECKS)


@pytest.mark.parametrize("item", CLAIMED_S_ITEMS)
def test_claim(item: str, c: Client) -> None:
    CHECKS[item](c)


def test_no_secret_reaches_stdout(server: ServeProcess, c: Client) -> None:
    c.post(req())
    line = server.next_line()
    assert KEY not in json.dumps(line)

