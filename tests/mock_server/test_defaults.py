"""The reply a request gets when no script covers it, and the example values it builds from a
tool's JSON Schema (`dshkit.mock_server.defaults`)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from dshkit.mock_server import MockServer
from dshkit.mock_server.defaults import apply_stop, default_reply, example_from_schema
from dshkit.mock_server.validation import ChatRequest, validate_chat

USER = [{"role": "user", "content": "Say it in json"}]


def _request(path: str = "/chat/completions", **fields: Any) -> ChatRequest:
    body = {"model": "deepseek-chat", "messages": USER, **fields}
    return validate_chat(json.dumps(body).encode(), path=path, headers={})


def _tool(parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": "f", "parameters": parameters}}


#: Schemas of the shapes agents' tools use; each example must validate against its schema.
SCHEMAS: list[dict[str, Any]] = [
    {"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer", "minimum": 3}},
     "required": ["path", "limit"], "additionalProperties": False},
    {"type": "object", "properties": {"when": {"type": "string", "format": "date-time"},
                                      "to": {"type": "string", "format": "email"},
                                      "id": {"type": "string", "format": "uuid"}}},
    {"type": "object", "properties": {"mode": {"enum": ["fast", "slow"]}, "kind": {"const": 7},
                                      "level": {"type": "integer", "default": 4}}},
    {"$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
     "type": "object", "properties": {"at": {"$ref": "#/$defs/Point"}}, "required": ["at"]},
    {"definitions": {"Tag": {"type": "string", "minLength": 12}},
     "type": "array", "items": {"$ref": "#/definitions/Tag"}, "minItems": 3},
    {"anyOf": [{"type": "boolean"}, {"type": "string"}]},
    {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
               {"type": "object", "properties": {"b": {"type": "number", "minimum": -2.5}}, "required": ["b"]}]},
    {"type": ["null", "integer"], "minimum": -3},
    {"properties": {"nested": {"properties": {"deep": {"type": "boolean"}}}}},
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=range(len(SCHEMAS)))
def test_an_example_validates_against_its_schema(schema: dict[str, Any]) -> None:
    import jsonschema  # on first use: collecting this module stays cheap

    jsonschema.validate(example_from_schema(schema), schema)


def test_an_example_holds_only_the_required_properties_when_some_are_named() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["b"]}
    assert example_from_schema(schema) == {"b": "example"}
    assert example_from_schema({**schema, "required": None}) == {"a": "example", "b": "example"}


def test_forced_tool_with_a_hostile_schema_does_not_crash() -> None:
    """The default reply builds arguments from the tool's schema: sizes are capped, bad
    keywords ignored (a `minItems` of a billion must not allocate a billion items)."""
    assert example_from_schema({"type": "array", "minItems": 10**9}) == ["example"] * 16
    assert len(example_from_schema({"type": "string", "minLength": 10**12})) == 4096
    assert example_from_schema({"$defs": [1], "anyOf": 3, "type": "integer", "minimum": "x"}) == 1
    assert example_from_schema({"type": "object", "properties": [1], "required": 5}) == {}
    assert example_from_schema({"type": "integer", "minimum": 10**400}) == 1 << 53
    loop: dict[str, Any] = {"$defs": {"Loop": {"$ref": "#/$defs/Loop"}}, "$ref": "#/$defs/Loop"}
    assert example_from_schema(loop) is None  # a reference cycle ends at the depth limit


async def test_forced_tool_hostile_schema_over_http() -> None:
    tool = _tool({"type": "object", "properties": {"xs": {"type": "array", "minItems": 10**9}}})
    async with MockServer(unscripted="default") as server, httpx.AsyncClient(timeout=5) as c:
        r = await c.post(server.url, json={"model": "deepseek-chat", "messages": USER, "tools": [tool],
                                           "tool_choice": "required"})
    assert r.status_code == 200, r.text
    args = json.loads(r.json()["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"])
    assert args == {"xs": ["example"] * 16}


def test_a_stop_string_cuts_at_the_earliest_place_any_of_them_occurs() -> None:
    assert apply_stop("one two three", ("three", "two")) == ("one ", True)
    assert apply_stop("one two", ("", "zzz")) == ("one two", False)  # an empty stop string never cuts
    assert apply_stop("stop here", ("stop",)) == ("", True)


def test_the_default_reply_answers_each_kind_of_request_as_a_model_would() -> None:
    said = default_reply(_request())
    assert said.content == 'You said: "Say it in json"' and said.reasoning == ""
    thought = default_reply(_request(model="deepseek-reasoner"))
    assert thought.content == said.content and "14 characters" in thought.reasoning
    as_json = default_reply(_request(response_format={"type": "json_object"}))
    assert json.loads(as_json.content) == {"reply": "Say it in json"}
    prefix = [*USER, {"role": "assistant", "content": "Once upon", "prefix": True}]
    continued = default_reply(_request("/beta/chat/completions", messages=prefix))
    assert continued.content == " (continued by the mock server)"


def test_a_forced_tool_is_called_with_arguments_from_its_own_schema() -> None:
    schema = SCHEMAS[0]
    reply = default_reply(_request(tools=[_tool(schema), {**_tool({}), "function": {"name": "g"}}],
                                   tool_choice={"type": "function", "function": {"name": "f"}}))
    (call,) = reply.tool_calls
    assert call.name == "f" and json.loads(call.arguments) == {"path": "example", "limit": 3}
    unschemed = default_reply(_request(tools=[{"type": "function", "function": {"name": "g"}}],
                                       tool_choice={"type": "function", "function": {"name": "g"}}))
    assert json.loads(unschemed.tool_calls[0].arguments) == {}
