"""The reply a request gets when no script says otherwise, and example values from a JSON Schema.

With no script at all the mock server still behaves like a model: it quotes the last user
message (with a line of reasoning in thinking mode), answers JSON mode with a JSON object,
continues a `prefix` message, and, when `tool_choice` forces a tool, calls it with arguments
built from the tool's own JSON Schema so a newcomer's agent loop runs end to end.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from dshkit.mock_server.generate.reply import Reply, ToolCall
from dshkit.mock_server.validation import ChatRequest

__all__ = ["apply_stop", "default_reply", "example_from_schema"]

_FORMAT_EXAMPLES = {
    "email": "user@example.com",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "date": "2026-01-01",
    "date-time": "2026-01-01T00:00:00Z",
    "uri": "https://example.com/",
}


#: Caps on sizes a schema asks for: a client's `minItems: 1e9` must not make the server build it.
_MAX_ITEMS = 16
_MAX_LENGTH = 4096


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _count(value: Any, default: int, cap: int) -> int:
    """A non-negative size keyword (`minItems`, `minLength`) read defensively and capped."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return default
    return max(0, min(int(min(value, cap)), cap))


def example_from_schema(
    schema: Any, *, defs: Mapping[str, Any] | None = None, depth: int = 0
) -> Any:
    """A small value that validates against `schema` in the common cases (not every keyword).

    Schemas are client input: a keyword of the wrong type is ignored, never a crash.
    """
    if not isinstance(schema, Mapping) or depth > 8:
        return None
    defs = {**(defs or {}), **_dict(schema.get("$defs")), **_dict(schema.get("definitions"))}
    if "const" in schema:
        return schema["const"]
    if "default" in schema:
        return schema["default"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if "$ref" in schema:
        target = str(schema["$ref"]).rsplit("/", 1)[-1]
        return example_from_schema(defs.get(target), defs=defs, depth=depth + 1)
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return example_from_schema(schema[key][0], defs=defs, depth=depth + 1)
    if isinstance(schema.get("allOf"), list) and schema["allOf"]:
        merged: dict[str, Any] = {}
        for sub in schema["allOf"]:
            value = example_from_schema(sub, defs=defs, depth=depth + 1)
            if isinstance(value, dict):
                merged.update(value)
        return merged
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "null")
    props = _dict(schema.get("properties"))
    if t is None and props:
        t = "object"
    if t == "object":
        required = schema.get("required")
        names = list(props) if not isinstance(required, list) else [n for n in props if n in required]
        return {n: example_from_schema(props[n], defs=defs, depth=depth + 1) for n in names}
    if t == "array":
        item = example_from_schema(schema.get("items", {"type": "string"}), defs=defs, depth=depth + 1)
        return [item] * max(1, _count(schema.get("minItems"), 1, _MAX_ITEMS))
    if t == "string":
        fmt = schema.get("format")
        if isinstance(fmt, str) and fmt in _FORMAT_EXAMPLES:
            return _FORMAT_EXAMPLES[fmt]
        n = _count(schema.get("minLength"), 0, _MAX_LENGTH)
        return "example" if n <= 7 else "x" * n
    if t in ("integer", "number"):
        low = schema.get("minimum")
        if isinstance(low, bool) or not isinstance(low, (int, float)) or low != low:
            return 1 if t == "integer" else 1.5
        low = max(min(low, 1 << 53), -(1 << 53))  # no overflow from a 4000-digit minimum
        return int(low) if t == "integer" else low
    if t == "boolean":
        return True
    return None


def apply_stop(text: str, stop: tuple[str, ...]) -> tuple[str, bool]:
    """S38: cut `text` before the first stop string; True when a cut happened."""
    cut = min((i for s in stop if s and (i := text.find(s)) >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def default_reply(chat: ChatRequest) -> Reply:
    """The generated answer for a request no script covers."""
    if chat.forced_tool is not None:
        fn = next(f for f in chat.tools if f["name"] == chat.forced_tool)
        args = example_from_schema(fn.get("parameters") or {"type": "object"})
        return Reply(
            tool_calls=(ToolCall(name=chat.forced_tool, arguments=json.dumps(args, ensure_ascii=False)),)
        )
    said = chat.view.last_user
    if chat.prefix is not None:
        content = " (continued by the mock server)"
    elif chat.json_mode:
        content = json.dumps({"reply": said}, ensure_ascii=False)
    else:
        content = f'You said: "{said}"'
    reasoning = (
        f"The user wrote {len(said)} characters; I will quote them back." if chat.thinking else ""
    )
    return Reply(content=content, reasoning=reasoning)
