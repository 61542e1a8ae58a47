"""Chat validation edges: values of the right JSON type that DeepSeek still refuses, shapes that
only look absent, and the `Authorization` scheme in any case (RFC 7235) on both surfaces."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from dshkit.mock_server import MockServerFactory, Script

D = "Failed to deserialize the JSON body into the target type: "
U = [{"role": "user", "content": "hi"}]
CALL = {"id": "call_00_x", "type": "function", "function": {"name": "f", "arguments": "{}"}}


def body(**kw: Any) -> dict[str, Any]:
    return {"model": "deepseek-chat", "messages": U, **kw}


def strict(parameters: dict[str, Any]) -> dict[str, Any]:
    return body(tools=[{"type": "function", "function": {"name": "f", "strict": True, "parameters": parameters}}])


def assistant(**fields: Any) -> dict[str, Any]:
    return body(messages=[*U, {"role": "assistant", **fields}, *U])


REJECTED: list[tuple[str, Any, str]] = [
    ("strict properties []", strict({"type": "object", "properties": [], "additionalProperties": False}),
     "Invalid schema for function 'f': parameters.properties must be an object"),
    ("strict required ''", strict({"type": "object", "properties": {}, "required": "", "additionalProperties": False}),
     "Invalid schema for function 'f': parameters.required must be an array of property names"),
    ("reasoning_content 5", assistant(content="a", reasoning_content=5),
     D + "messages[1].reasoning_content: invalid type: number `5`, expected a string"),
    ("reasoning_content list", assistant(content="a", reasoning_content=["r"]),
     D + "messages[1].reasoning_content: invalid type: sequence, expected a string"),
    ("n 10**30", body(n=10**30), D + "n: invalid value: integer `1000000000000000000000000000000`, expected"),
    ("n -1", body(n=-1), D + "n: invalid value: integer `-1`, expected an integer in [0, 4294967295]"),
    ("seed 20 digits", body(seed=12345678901234567890), D + "seed: invalid value: integer `12345678901234567890`"),
    ("seed below i64", body(seed=-(2**63) - 1), D + "seed: invalid value: integer"),
    ("assistant content null", assistant(content=None), D + "messages[1].content: invalid type: null, expected a string"),
    ("assistant content absent", assistant(), D + "messages[1]: missing field `content`"),
    ("assistant null, empty tool_calls", assistant(content=None, tool_calls=[]),
     D + "messages[1].content: invalid type: null, expected a string"),
    ("assistant null, reasoning only", {**assistant(content=None, reasoning_content="r"), "model": "deepseek-v4-flash"},
     D + "messages[1].content: invalid type: null, expected a string"),
]


@pytest.mark.parametrize(("payload", "message"), [c[1:] for c in REJECTED], ids=[c[0] for c in REJECTED])
async def test_rejected(dshkit_mock_server: MockServerFactory, payload: Any, message: str) -> None:
    server = await dshkit_mock_server(Script.replies("never used"))
    async with httpx.AsyncClient(timeout=5) as c:
        r = await c.post(server.url, json=payload)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["message"].startswith(message)
    assert server.journal.last.outcome == "rejected"


ACCEPTED: list[tuple[str, Any]] = [
    ("seed at the i64 ends", body(seed=2**63 - 1)),
    ("negative seed", body(seed=-(2**63))),
    ("n 1", body(n=1)),
    ("assistant content ''", assistant(content="")),
    ("assistant text parts", assistant(content=[{"type": "text", "text": "a"}])),
    ("reasoning_content null", assistant(content="a", reasoning_content=None)),
    ("content null beside tool calls", body(messages=[
        *U, {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_00_x", "content": "ok"}])),
    ("content absent beside tool calls", body(messages=[
        *U, {"role": "assistant", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_00_x", "content": "ok"}])),
    ("strict with properties and required absent", strict({"type": "object", "additionalProperties": False})),
]


@pytest.mark.parametrize("payload", [c[1] for c in ACCEPTED], ids=[c[0] for c in ACCEPTED])
async def test_accepted(dshkit_mock_server: MockServerFactory, payload: Any) -> None:
    server = await dshkit_mock_server()
    async with httpx.AsyncClient(timeout=5) as c:
        r = await c.post(server.url, json=payload)
    assert r.status_code == 200, r.text


ANTHROPIC = {"model": "deepseek-v4-flash", "max_tokens": 16, "messages": U}


@pytest.mark.parametrize("auth", ["bearer sk-right", "BEARER sk-right", "Bearer  sk-right", "bEaReR sk-right"])
async def test_bearer_scheme_in_any_case(dshkit_mock_server: MockServerFactory, auth: str) -> None:
    server = await dshkit_mock_server(api_key="sk-right")
    async with httpx.AsyncClient(timeout=5) as c:
        r = await c.post(server.url, json=body(), headers={"Authorization": auth})
        assert r.status_code == 200, r.text
        r = await c.post(server.anthropic_base_url + "/v1/messages", json=ANTHROPIC, headers={"Authorization": auth})
        assert r.status_code == 200, r.text


@pytest.mark.parametrize("auth", ["Basic sk-right", "bearersk-right", "bearer sk-RIGHT", "sk-right", "bearer"])
async def test_other_authorization_forms_stay_refused(dshkit_mock_server: MockServerFactory, auth: str) -> None:
    server = await dshkit_mock_server(api_key="sk-right")
    async with httpx.AsyncClient(timeout=5) as c:
        r = await c.post(server.url, json=body(), headers={"Authorization": auth})
        assert r.status_code == 401
        r = await c.post(server.anthropic_base_url + "/v1/messages", json=ANTHROPIC, headers={"Authorization": auth})
        assert r.status_code == 401
