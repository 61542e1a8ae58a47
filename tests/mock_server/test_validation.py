"""Request validation (S2–S12, S41): each case with its status and DeepSeek-style message."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from dshkit.mock_server import MockServerFactory, Script

D = "Failed to deserialize the JSON body into the target type: "
U = [{"role": "user", "content": "hi"}]
CALL = {"id": "call_00_x", "type": "function", "function": {"name": "f", "arguments": "{}"}}
TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}


def body(**kw: Any) -> dict[str, Any]:
    return {"model": "deepseek-chat", "messages": U, **kw}


CASES: list[tuple[str, Any, int, str]] = [
    ("not json", b"{nope", 400, D + "Expecting property name enclosed in double quotes at line 1 column 2"),
    ("empty body", b"", 400, D + "Expecting value at line 1 column 1"),
    ("array", [], 400, D + "invalid type: sequence, expected struct ChatCompletionRequest"),
    ("no model", {"messages": U}, 400, D + "missing field `model`"),
    ("no messages", {"model": "deepseek-chat"}, 400, D + "missing field `messages`"),
    ("empty messages", body(messages=[]), 400, D + "messages: invalid length 0, expected at least one message"),
    ("no role", body(messages=[{"content": "x"}]), 400, D + "messages[0]: missing field `role`"),
    ("bad role", body(messages=[{"role": "bot", "content": "x"}]), 400,
     D + "messages[0]: unknown variant `bot`, expected one of `system`, `user`, `assistant`, `tool`"),
    ("image part", body(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]), 400,
     D + "messages[0].content: unknown variant `image_url`, expected `text`"),
    ("user without content", body(messages=[{"role": "user"}]), 400, D + "messages[0]: missing field `content`"),
    ("unknown model", body(model="gpt-4o"), 400, "Model Not Exist"),
    ("max_tokens 0", body(max_tokens=0), 400, "Invalid max_tokens value, the valid range of max_tokens is [1, 393216]"),
    ("max_tokens huge", body(max_tokens=393217), 400, "Invalid max_tokens value, the valid range of max_tokens is [1, 393216]"),
    ("context", body(messages=[{"role": "user", "content": "x" * 4_300_000}], max_tokens=10), 400,
     "This model's maximum context length is 1048576 tokens."),
    ("unanswered tool id", body(messages=[*U, {"role": "tool", "tool_call_id": "call_9", "content": "r"}]), 400,
     "messages[1]: tool_call_id `call_9` does not answer any tool call of an earlier assistant message"),
    ("no tool output", body(messages=[*U, {"role": "assistant", "content": None, "tool_calls": [CALL]}, *U]), 400,
     "No tool output found for tool call call_00_x."),
    ("passback missing", {"model": "deepseek-reasoner", "messages": [
        *U, {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_00_x", "content": "ok"}]}, 400,
     "The `reasoning_content` in the thinking mode must be passed back to the API."),
    ("forced tool while thinking", {"model": "deepseek-v4-pro", "messages": U, "tools": [TOOL], "tool_choice": "required"},
     400, "Thinking mode does not support tool_choice"),
    ("bad thinking", body(thinking={"type": "sometimes"}), 400,
     D + "thinking.type: unknown variant `sometimes`, expected `enabled` or `disabled`"),
    ("temperature", body(temperature=2.5), 422, "Invalid Parameters: `temperature` must be in [0, 2], got 2.5"),
    ("top_p", body(top_p=0), 422, "Invalid Parameters: `top_p` must be in (0, 1], got 0"),
    ("penalty", body(presence_penalty=-3), 422, "Invalid Parameters: `presence_penalty` must be in [-2, 2], got -3"),
    ("top_logprobs", body(logprobs=True, top_logprobs=21), 422, "Invalid Parameters: `top_logprobs` must be an integer in [0, 20], got 21"),
    ("top_logprobs alone", body(top_logprobs=2), 422, "Invalid Parameters: `top_logprobs` needs `logprobs: true`"),
    ("17 stops", body(stop=["x"] * 17), 422, "Invalid Parameters: `stop` takes at most 16 strings, got 17"),
    ("129 tools", body(tools=[{"type": "function", "function": {"name": f"t{i}"}} for i in range(129)]), 422,
     "Invalid Parameters: at most 128 tools are allowed, got 129"),
    ("tool name", body(tools=[{"type": "function", "function": {"name": "a b"}}]), 422,
     "Invalid Parameters: tools[0].function.name 'a b' must match [a-zA-Z0-9_-]{1,64}"),
    ("strict schema", body(tools=[{"type": "function", "function": {"name": "f", "strict": True, "parameters": {
        "type": "object", "properties": {"a": {"type": "string"}}, "required": []}}}]), 400,
     "Invalid schema for function 'f': parameters: every property must be listed in `required` (missing ['a'])"),
    ("json without the word", body(response_format={"type": "json_object"}), 400,
     "Prompt must contain the word 'json' in some form to use 'response_format' of type 'json_object'."),
]


async def test_validation_cases(dshkit_mock_server: MockServerFactory) -> None:
    server = await dshkit_mock_server(Script.replies("never used"))
    failures = []
    async with httpx.AsyncClient(timeout=2) as c:
        for name, payload, status, message in CASES:
            kw: dict[str, Any] = {"content": payload} if isinstance(payload, bytes) else {"json": payload}
            r = await c.post(server.url, **kw)
            if r.status_code == 200:
                failures.append(f"{name}: accepted")
                continue
            err = r.json()["error"]
            if (r.status_code, err["message"][: len(message)]) != (status, message):
                failures.append(f"{name}: {r.status_code} {err['message']!r}")
            assert err["type"] == "invalid_request_error" and err["param"] is None
    assert not failures, "\n".join(failures)
    # S-list: "A rejected request never consumes a script step."
    assert all(e.outcome == "rejected" for e in server.journal)
    assert server.journal.unused_steps() == ["script 'script': never claimed by any session (1 steps)"]


@pytest.mark.parametrize(
    "payload",
    [
        body(temperature=9, model="deepseek-reasoner"),  # S10: ignored in thinking mode
        body(n=1, user_id="u-1", some_future_field={"x": 1}),  # S12
        {"model": "deepseek-reasoner", "messages": [*U, {"role": "assistant", "content": "a", "reasoning_content": "r"}, *U]},  # S8
        {"model": "deepseek-v4-flash", "messages": [  # S7: "" counts as present
            *U, {"role": "assistant", "content": None, "tool_calls": [CALL], "reasoning_content": ""},
            {"role": "tool", "tool_call_id": "call_00_x", "content": "ok"}]},
        body(tools=[TOOL], tool_choice="required"),  # S9: honoured with thinking off
        body(tools=[TOOL], tool_choice={"type": "function", "function": {"name": "f"}}, reasoning_effort="none",
             model="deepseek-v4-flash"),
        body(response_format={"type": "json_object"}, messages=[{"role": "user", "content": "answer in JSON"}]),
        body(max_tokens=393216, model="deepseek-v4-pro"),
    ],
)
async def test_accepted_requests(dshkit_mock_server: MockServerFactory, payload: dict[str, Any]) -> None:
    server = await dshkit_mock_server()
    async with httpx.AsyncClient(timeout=2) as c:
        r = await c.post(server.url, json=payload)
    assert r.status_code == 200, r.text


async def test_auth_body_limit_paths(dshkit_mock_server: MockServerFactory) -> None:
    server = await dshkit_mock_server(api_key="sk-right", max_body_bytes=1000)
    ok = {"Authorization": "Bearer sk-right"}
    async with httpx.AsyncClient(timeout=2) as c:
        r = await c.post(server.url, json=body())
        assert r.status_code == 401 and r.json()["error"]["type"] == "authentication_error"
        r = await c.post(server.url, json=body(), headers={"Authorization": "Bearer sk-wrong"})
        assert r.status_code == 401 and "sk-wrong" not in r.text and "wrong" not in r.text
        r = await c.post(server.url, json=body(messages=[{"role": "user", "content": "x" * 2000}]), headers=ok)
        assert r.status_code == 413 and "at most 1000" in r.json()["error"]["message"]
        for path in ("/chat/completions", "/v1/chat/completions", "/beta/chat/completions"):
            r = await c.post(server.make_url(path), json=body(), headers=ok)
            assert r.status_code == 200, path
        for path in ("/models", "/v1/models"):
            r = await c.get(server.make_url(path), headers=ok)
            assert {m["id"] for m in r.json()["data"]} >= {"deepseek-chat", "deepseek-v4-flash"}
        r = await c.get(server.make_url("/nope"), headers=ok)
        assert r.status_code == 404 and "POST /chat/completions" in r.json()["error"]["message"]
    text = str([e.to_json() for e in server.journal])
    assert "sk-right" not in text and "sk-wrong" not in text
