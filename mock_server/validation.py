"""Request validation for `/chat/completions`, with DeepSeek's statuses and messages (S2–S12, S41).

Pure functions from the request bytes to a :class:`ChatRequest`, or a :class:`Rejection`
carrying the status and the error envelope DeepSeek would send. The messages follow the
observed patterns in `wire.md` §11 ("Failed to deserialize the JSON body into the target type:
<path>: <reason>", "Model Not Exist", the max_tokens range, the reasoning passback text).
A rejected request never reaches the router, so it never consumes a script step, except when
the step that would answer it serves a recorded exchange: :func:`recorded_request` then stands in
for the validated request (a recording is served as recorded).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from dshkit.mock_server.generate.reply import Era
from dshkit.mock_server.journal import NestingTooDeep, redact_body, redact_headers
from dshkit.mock_server.routing import RequestView

__all__ = [
    "MAX_DEPTH",
    "MODELS",
    "RULES",
    "ChatRequest",
    "Rejection",
    "ValidationCache",
    "bearer_key",
    "check_auth",
    "check_headers",
    "error_body",
    "parse_body",
    "parse_json",
    "recorded_request",
    "resolve_model",
    "validate_chat",
]

MODELS = (
    "deepseek-chat",
    "deepseek-reasoner",
    "deepseek-v4-flash",
    "deepseek-v4-pro",
    "deepseek-flash",
)
_ROLES = ("system", "user", "assistant", "tool")
_EFFORTS = frozenset({"low", "high", "max", "minimal", "medium", "xhigh", "ultra", "none"})
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_STRICT_FORMATS = frozenset({"email", "hostname", "ipv4", "ipv6", "uuid"})
_STRICT_TYPES = frozenset({"object", "string", "number", "integer", "boolean", "array", "null"})
_DESERIALIZE = "Failed to deserialize the JSON body into the target type: "
#: DeepSeek's 400 for a lost reasoning_content, with the backticks the recorded bodies carry (the
#: Anthropic route's twin quotes `content[].thinking` the same way).
PASSBACK_MESSAGE = "The `reasoning_content` in the thinking mode must be passed back to the API."
#: serde_json's default nesting limit, which DeepSeek's parser shares.
MAX_DEPTH = 128
_SURROGATE = re.compile("[\ud800-\udfff]")
# A `\uD8..`-`\uDF..` escape or a raw UTF-8-encoded surrogate: only then is the walk needed.
_MAYBE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")


def _may_hold_surrogate(raw: bytes) -> bool:
    # `in` scans at memchr speed; the regex only runs on bodies that pass this filter.
    return (b"\\ud" in raw or b"\\uD" in raw or b"\xed" in raw) and bool(_MAYBE_SURROGATE.search(raw))


def error_body(
    message: str, type: str = "invalid_request_error", code: str | None = "invalid_request_error"
) -> dict[str, Any]:
    """DeepSeek's error envelope (`wire.md` §11)."""
    return {"error": {"message": message, "type": type, "param": None, "code": code}}


@dataclass(frozen=True, slots=True)
class Rejection(Exception):
    """A request the server refuses, with what it sends back."""

    status: int
    message: str
    type: str = "invalid_request_error"
    code: str | None = "invalid_request_error"
    headers: Mapping[str, str] = field(default_factory=dict)


def _bad(path: str, reason: str) -> Rejection:
    return Rejection(400, f"{_DESERIALIZE}{path + ': ' if path else ''}{reason}")


def _invalid(message: str) -> Rejection:
    # S5: 422 "Invalid Parameters" for out-of-range values (no recording of the exact body).
    return Rejection(422, f"Invalid Parameters: {message}", code="invalid_parameters")


class _NonFinite(ValueError):
    """`NaN`, `Infinity` or `-Infinity` in a body: Python's parser takes them, JSON does not."""


def _no_constant(name: str) -> Any:
    raise _NonFinite(name)


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):  # `1e400`: serde's "number out of range"
        raise ValueError(f"{text[:40]} does not fit a 64-bit float")
    return value


_BODY_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite_float)
_fast_loads: Callable[[bytes], Any] = msgspec.json.Decoder().decode


def _lone_surrogate(value: Any) -> str | None:
    """The first string (key or value) holding a lone UTF-16 surrogate, or None."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if _SURROGATE.search(v):
                return v
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return None


def parse_body(raw: bytes) -> tuple[Any, Any]:
    """`parse_json`, then the redacted copy the journal keeps; nesting deeper than `MAX_DEPTH`
    is a 400 (checked in the redaction pass, the one walk every request gets anyway)."""
    body = parse_json(raw)
    try:
        redacted = redact_body(body, max_depth=MAX_DEPTH)
    except NestingTooDeep:
        raise _bad("", f"recursion limit exceeded (nesting deeper than {MAX_DEPTH})") from None
    return body, redacted


def parse_json(raw: bytes) -> Any:
    """Parse a request body as DeepSeek's (serde-based) server would, or raise a 400 Rejection.

    Python's `json` is more lenient and more fragile than that parser: it takes `NaN` and
    `Infinity`, keeps lone surrogates (`"\\ud800"`) that no UTF-8 encoder can write back, raises
    `RecursionError` on deep nesting and a plain `ValueError` on integers past the int-string
    limit. Each of those is turned into the client's 400 here, so no later step (reply
    generation, journal, telemetry) meets a value it cannot handle.
    """
    try:
        # msgspec reads strict UTF-8 JSON in a fraction of the time, and refuses every form
        # `_parse_plain`'s checks exist for (NaN, numbers past a float or the int-string limit, lone
        # surrogates escaped or raw, bytes that are not UTF-8, a BOM, deep nesting): a body it
        # takes is the value the standard parser gives. Whatever it refuses, and however it
        # says so, is read again by that parser, which decides (and words the error).
        return _fast_loads(raw)
    except Exception:  # noqa: BLE001 - any refusal, whatever its class: the standard parser decides
        return _parse_plain(raw)


def _parse_plain(raw: bytes) -> Any:
    """:func:`parse_json` by the standard library's parser alone (the fallback, and the
    reference the fast read is tested against)."""
    try:
        # What json.loads(raw, ...) does, with one decoder built once instead of per call.
        body = _BODY_DECODER.decode(raw.decode(json.detect_encoding(raw), "surrogatepass"))
    except json.JSONDecodeError as e:
        raise _bad("", f"{e.msg} at line {e.lineno} column {e.colno}") from None
    except UnicodeDecodeError:
        raise _bad("", "the body is not valid UTF-8") from None
    except _NonFinite as e:
        raise _bad("", f"`{e}` is not valid JSON (numbers must be finite)") from None
    except RecursionError:
        raise _bad("", f"recursion limit exceeded (nesting deeper than {MAX_DEPTH})") from None
    except ValueError as e:  # an integer past sys.get_int_max_str_digits(), a float past 1e308
        raise _bad("", f"number out of range ({e})") from None
    if _may_hold_surrogate(raw) and _lone_surrogate(body) is not None:
        raise _bad("", "lone surrogate in a string (a \\uD800-\\uDFFF escape without its pair); "
                   "send text as valid UTF-16 pairs or plain UTF-8")
    return body


#: Headers whose value the server uses as text (`X-Mock-Session`, the harness session header).
_TEXT_HEADERS = ("X-Mock-Session", "x-deepseek-harness-session-id")
_UNDECODABLE = re.compile("[\udc80-\udcff]")


def check_headers(headers: Mapping[str, str]) -> None:
    """Headers the server reads as text must be UTF-8: 401 for `Authorization`, else 400.

    aiohttp keeps undecodable header bytes as `surrogateescape` characters; such a key can
    match no configured key, and such a session id could not be written to the journal or
    stdout as text.
    """
    auth = headers.get("Authorization")
    if auth is not None and _UNDECODABLE.search(auth):
        raise Rejection(
            401, "Authentication Fails, the Authorization header is not valid UTF-8 text "
            "(send `Authorization: Bearer <key>` with an ASCII key)", type="authentication_error")
    for name in _TEXT_HEADERS:
        value = headers.get(name)
        if value is not None and _UNDECODABLE.search(value):
            raise Rejection(400, f"the {name} header is not valid UTF-8 text; send the session "
                            "id as ASCII or UTF-8")


def bearer_key(auth: str | None) -> str | None:
    """The credential of an `Authorization: Bearer <key>` header, or None for any other form.

    RFC 7235 makes the scheme case-insensitive (`bearer`, `BEARER`) and allows more than one
    space before the credential; the key itself is compared exactly."""
    if auth is None:
        return None
    scheme, sep, rest = auth.strip().partition(" ")
    if not sep or scheme.lower() != "bearer":
        return None
    return rest.strip(" ")


def check_auth(headers: Mapping[str, str], api_key: str | None) -> None:
    """S2: with an API key configured, `Authorization` must be `Bearer <key>` (the scheme in any
    case)."""
    if api_key is None:
        return
    auth = headers.get("Authorization")
    if bearer_key(auth) == api_key:
        return
    # DeepSeek echoes the last key characters; we never echo any part of a key.
    reason = "no api key was sent" if not auth else "the api key is invalid"
    raise Rejection(
        401,
        f"Authentication Fails, {reason} (expected `Authorization: Bearer <key>` with the "
        "key the mock server was started with)",
        type="authentication_error",
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatRequest:
    """A validated chat-completion request: the body plus what the server derived from it."""

    body: dict[str, Any]
    redacted: Any
    """The body with credential-looking fields replaced, as the journal keeps it."""
    model: str
    response_model: str
    """The model id responses carry (V4 maps the old aliases to `deepseek-v4-flash`, rq01)."""
    thinking: bool
    stream: bool
    beta: bool
    max_tokens: int | None
    logprobs: int | None
    """None without `logprobs: true`, else the number of top_logprobs."""
    stop: tuple[str, ...]
    tools: tuple[Mapping[str, Any], ...]
    """The `function` objects of the request's tools."""
    forced_tool: str | None
    """The tool a `required` or named `tool_choice` forces (`required` → the first tool)."""
    json_mode: bool
    prefix: str | None
    """The content of a trailing `prefix: true` assistant message (S39)."""
    prompt_tokens: int
    view: RequestView


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return f"boolean `{str(v).lower()}`"
    if isinstance(v, (int, float)):
        return f"number `{v}`"
    if isinstance(v, str):
        return f"string {json.dumps(v)}"
    if isinstance(v, list):
        return "sequence"
    return "map"


def resolve_model(model: str, era: Era) -> str:
    """The model id a response carries for a requested id."""
    if era == "v4" and model in ("deepseek-chat", "deepseek-reasoner"):
        return "deepseek-v4-flash"
    return model


def _limits(model: str, era: Era) -> tuple[int, int]:
    """(max_tokens ceiling, context window) per era and model (`wire.md` §0, S5)."""
    if era == "v4":
        return 393_216, 1_048_576
    if model == "deepseek-chat":
        return 8_192, 131_072
    return 65_536, 131_072


def _text_of(content: Any, path: str, *, allow_null: bool) -> str:
    if isinstance(content, str):
        return content
    if content is None:
        if allow_null:
            return ""
        raise _bad(path, "invalid type: null, expected a string or a sequence of content parts")
    if isinstance(content, list):
        out = []
        for j, part in enumerate(content):
            if not isinstance(part, dict):
                raise _bad(f"{path}[{j}]", f"invalid type: {_kind(part)}, expected a content part")
            t = part.get("type")
            if t != "text":
                raise _bad(path, f"unknown variant `{t}`, expected `text`")
            if not isinstance(part.get("text"), str):
                raise _bad(f"{path}[{j}]", "missing field `text`")
            out.append(part["text"])
        return "".join(out)
    raise _bad(path, f"invalid type: {_kind(content)}, expected a string")


def _number(body: Mapping[str, Any], name: str) -> float | None:
    v = body.get(name)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _bad(name, f"invalid type: {_kind(v)}, expected a number")
    try:
        return float(v)
    except OverflowError:  # an integer literal beyond any float: out of every range
        return float("inf") if v > 0 else float("-inf")


#: Optional top-level fields checked for type only: (field, accepted types, serde's wording).
_TYPED_FIELDS: tuple[tuple[str, tuple[type, ...], str], ...] = (
    ("stream", (bool,), "a boolean"),
    ("logprobs", (bool,), "a boolean"),
    ("n", (int,), "an integer"),
    ("seed", (int,), "an integer"),
    ("user", (str,), "a string"),
    ("user_id", (str,), "a string"),
    ("stream_options", (dict,), "struct StreamOptions"),
)


#: Integer fields and the range of the integer type they deserialize into (`n`: u32, `seed`:
#: i64): a value outside is serde's "invalid value" 400, never silently taken.
_INT_RANGES: tuple[tuple[str, int, int], ...] = (
    ("n", 0, 2**32 - 1),
    ("seed", -(2**63), 2**63 - 1),
)


def _check_types(body: Mapping[str, Any]) -> None:
    """Wrong JSON types for the optional scalar fields: 400 naming the field, as serde does.

    `null` stands for "not given" everywhere, as in DeepSeek's API.
    """
    for name, types, expected in _TYPED_FIELDS:
        v = body.get(name)
        if v is None:
            continue
        wrong_bool = isinstance(v, bool) and bool not in types
        if wrong_bool or not isinstance(v, types):
            raise _bad(name, f"invalid type: {_kind(v)}, expected {expected}")
    for name, lo, hi in _INT_RANGES:
        v = body.get(name)
        if isinstance(v, int) and not lo <= v <= hi:
            shown = str(v) if len(str(v)) <= 40 else f"{str(v)[:37]}..."
            raise _bad(name, f"invalid value: integer `{shown}`, expected an integer in [{lo}, {hi}]")
    options = body.get("stream_options")
    if options is not None:
        usage = options.get("include_usage")
        if usage is not None and not isinstance(usage, bool):
            raise _bad("stream_options.include_usage", f"invalid type: {_kind(usage)}, expected a boolean")


def _check_strict_schema(schema: Any, where: str) -> str | None:
    """The first way `schema` leaves the strict-mode subset of `wire.md` §5, or None.

    Every keyword's own type is checked before it is used: a schema is client input, and a
    `type` that is an object or an `anyOf` that is a number is a 400, never a crash.
    """
    if not isinstance(schema, dict):
        return f"{where} must be an object"
    for key in ("$defs", "definitions"):
        defs = schema.get(key)
        if defs is None:
            continue
        if not isinstance(defs, dict):
            return f"{where}.{key} must be an object"
        for name, sub in defs.items():
            problem = _check_strict_schema(sub, f"{where}.{key}.{name}")
            if problem:
                return problem
    if "$ref" in schema:
        return None if isinstance(schema["$ref"], str) else f"{where}.$ref must be a string"
    if "anyOf" in schema:
        variants = schema["anyOf"]
        if not isinstance(variants, list) or not variants:
            return f"{where}.anyOf must be a non-empty array of schemas"
        for k, sub in enumerate(variants):
            problem = _check_strict_schema(sub, f"{where}.anyOf[{k}]")
            if problem:
                return problem
        return None
    if "enum" in schema and "type" not in schema:
        return None if isinstance(schema["enum"], list) else f"{where}.enum must be an array"
    t = schema.get("type")
    types = t if isinstance(t, list) else [t]
    for one in types:
        if not isinstance(one, str) or one not in _STRICT_TYPES:
            shown = json.dumps(one) if isinstance(one, (dict, list)) else repr(one)
            return f"{where}.type {shown} is not supported in strict mode"
    fmt = schema.get("format")
    if fmt is not None and (not isinstance(fmt, str) or fmt not in _STRICT_FORMATS):
        return f"{where}.format {fmt!r} is not one of {sorted(_STRICT_FORMATS)}"
    if "object" in types:
        return _check_strict_object(schema, where)
    if "array" in types and "items" in schema:
        return _check_strict_schema(schema["items"], f"{where}.items")
    return None


def _check_strict_object(schema: dict[str, Any], where: str) -> str | None:
    # `[]` or `""` are not "absent": only a missing key (or null) means none.
    props = schema.get("properties")
    props = {} if props is None else props
    if not isinstance(props, dict):
        return f"{where}.properties must be an object"
    required = schema.get("required")
    required = [] if required is None else required
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return f"{where}.required must be an array of property names"
    missing = sorted(set(props) - set(required))
    if missing:
        return f"{where}: every property must be listed in `required` (missing {missing})"
    if schema.get("additionalProperties") is not False:
        return f"{where}: `additionalProperties: false` is required in strict mode"
    for name, sub in props.items():
        problem = _check_strict_schema(sub, f"{where}.properties.{name}")
        if problem:
            return problem
    return None


@dataclass(slots=True)
class _Draft:
    """What the rules learn about a request as they run; each rule reads and adds to it."""

    body: dict[str, Any]
    era: Era
    model: str = ""
    messages: list[Any] = field(default_factory=list)
    text_total: int = 0
    last_user: str = ""
    tool_results: set[str] = field(default_factory=set)
    reasoning_missing: int | None = None
    """The index of the first assistant turn with tool calls but no `reasoning_content`."""
    thinking: bool = False
    max_tokens: int | None = None
    top_logprobs: int | None = None
    stop: tuple[str, ...] = ()
    functions: list[Mapping[str, Any]] = field(default_factory=list)
    forced: str | None = None
    json_mode: bool = False
    prompt_tokens: int = 0


Rule = Callable[[_Draft], None]


def _rule_body_is_object(d: _Draft) -> None:
    if not isinstance(d.body, dict):
        raise _bad("", f"invalid type: {_kind(d.body)}, expected struct ChatCompletionRequest")


def _rule_model_field(d: _Draft) -> None:
    if "model" not in d.body:
        raise _bad("", "missing field `model`")
    model = d.body["model"]
    if not isinstance(model, str):
        raise _bad("model", f"invalid type: {_kind(model)}, expected a string")
    d.model = model


def _rule_messages_field(d: _Draft) -> None:
    if "messages" not in d.body:
        raise _bad("", "missing field `messages`")
    messages = d.body["messages"]
    if not isinstance(messages, list):
        raise _bad("messages", f"invalid type: {_kind(messages)}, expected a sequence")
    if not messages:
        raise _bad("messages", "invalid length 0, expected at least one message")
    d.messages = messages


def _rule_messages(d: _Draft) -> None:
    """Each message's shape, in order; a tool call must be answered before the next turn."""
    call_ids: set[str] = set()
    pending: list[str] = []
    for i, msg in enumerate(d.messages):
        where = f"messages[{i}]"
        role = _message_role(msg, where)
        if role != "tool" and pending:
            # ds17: an assistant tool call must be answered before the conversation moves on.
            raise Rejection(400, f"No tool output found for tool call {pending[0]}.")
        if role in ("system", "user", "tool"):
            if "content" not in msg:
                raise _bad(where, "missing field `content`")
            text = _text_of(msg["content"], f"{where}.content", allow_null=False)
            d.text_total += len(text)
            if role == "user":
                d.last_user = text
        if role == "tool":
            _tool_result(d, msg, where, call_ids, pending)
        if role == "assistant":
            _assistant_turn(d, msg, i, call_ids, pending)


def _message_role(msg: Any, where: str) -> str:
    if not isinstance(msg, dict):
        raise _bad(where, f"invalid type: {_kind(msg)}, expected a message object")
    if "role" not in msg:
        raise _bad(where, "missing field `role`")
    role = msg["role"]
    if role not in _ROLES:
        raise _bad(
            where,
            f"unknown variant `{role}`, expected one of `system`, `user`, `assistant`, `tool`",
        )
    return str(role)


def _tool_result(
    d: _Draft, msg: dict[str, Any], where: str, call_ids: set[str], pending: list[str]
) -> None:
    tcid = msg.get("tool_call_id")
    if not isinstance(tcid, str):
        raise _bad(where, "missing field `tool_call_id`")
    if tcid not in call_ids:
        raise Rejection(
            400,
            f"{where}: tool_call_id `{tcid}` does not answer any tool call of an "
            "earlier assistant message",
        )
    if tcid in pending:
        pending.remove(tcid)
    d.tool_results.add(tcid)


def _assistant_turn(
    d: _Draft, msg: dict[str, Any], i: int, call_ids: set[str], pending: list[str]
) -> None:
    where = f"messages[{i}]"
    calls = msg.get("tool_calls")
    # `content` may be null (or absent) only beside tool calls: a turn with neither text nor
    # tool calls must carry a string, as DeepSeek answers 400 to `null` there.
    if not calls and "content" not in msg:
        raise _bad(where, "missing field `content` (an assistant turn without tool calls needs its text)")
    d.text_total += len(_text_of(msg.get("content"), f"{where}.content", allow_null=bool(calls)))
    reasoning = msg.get("reasoning_content")
    if reasoning is not None and not isinstance(reasoning, str):
        raise _bad(f"{where}.reasoning_content", f"invalid type: {_kind(reasoning)}, expected a string")
    if calls is None:
        return
    if not isinstance(calls, list):
        raise _bad(f"{where}.tool_calls", f"invalid type: {_kind(calls)}, expected a sequence")
    for j, call in enumerate(calls):
        cw = f"{where}.tool_calls[{j}]"
        if not isinstance(call, dict):
            raise _bad(cw, f"invalid type: {_kind(call)}, expected a tool call")
        if not isinstance(call.get("id"), str):
            raise _bad(cw, "missing field `id`")
        fn = call.get("function")
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise _bad(cw, "missing field `function.name`")
        args = fn.get("arguments")
        if not isinstance(args, str):
            raise _bad(f"{cw}.function.arguments", f"invalid type: {_kind(args)}, expected a string")
        d.text_total += len(args)
        call_ids.add(call["id"])
        pending.append(call["id"])
    if calls and msg.get("reasoning_content") is None and d.reasoning_missing is None:
        d.reasoning_missing = i


def _rule_model_exists(d: _Draft) -> None:
    if d.model not in MODELS:
        raise Rejection(400, "Model Not Exist")
    d.thinking = d.model != "deepseek-chat"


def _rule_field_types(d: _Draft) -> None:
    _check_types(d.body)


def _rule_reasoning_effort(d: _Draft) -> None:
    effort = d.body.get("reasoning_effort")
    if effort is None:
        return
    if not isinstance(effort, str):
        raise _bad("reasoning_effort", f"invalid type: {_kind(effort)}, expected a string")
    if effort not in _EFFORTS:
        raise _bad(
            "reasoning_effort",
            f"unknown variant `{effort}`, expected one of `low`, `high`, `max`",
        )
    if effort == "none":
        d.thinking = False  # observed in rq02


def _rule_thinking(d: _Draft) -> None:
    th = d.body.get("thinking")
    if th is None:
        return
    if not isinstance(th, dict) or th.get("type") not in ("enabled", "disabled"):
        got = th.get("type") if isinstance(th, dict) else th
        raise _bad("thinking.type", f"unknown variant `{got}`, expected `enabled` or `disabled`")
    d.thinking = th["type"] == "enabled"


def _rule_max_tokens(d: _Draft) -> None:
    max_tokens = d.body.get("max_tokens")
    if max_tokens is None:
        return
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        raise _bad("max_tokens", f"invalid type: {_kind(max_tokens)}, expected an integer")
    ceiling, _ = _limits(d.model, d.era)
    if not 1 <= max_tokens <= ceiling:
        raise Rejection(
            400, f"Invalid max_tokens value, the valid range of max_tokens is [1, {ceiling}]"
        )
    d.max_tokens = max_tokens


#: Sampling fields with their range: (field, low, high, low end open).
_SAMPLING_RANGES = (
    ("temperature", 0.0, 2.0, False),
    ("top_p", 0.0, 1.0, True),
    ("presence_penalty", -2.0, 2.0, False),
    ("frequency_penalty", -2.0, 2.0, False),
)


def _rule_sampling(d: _Draft) -> None:
    for name, lo, hi, lo_open in _SAMPLING_RANGES:
        # The type is checked always (deserialization comes first); the range only with
        # thinking off (S10: ignored, not even range-checked, in thinking mode).
        v = _number(d.body, name)
        if not d.thinking and v is not None and (v > hi or v < lo or (lo_open and v == lo)):
            rng = f"({lo:g}, {hi:g}]" if lo_open else f"[{lo:g}, {hi:g}]"
            raise _invalid(f"`{name}` must be in {rng}, got {v:g}")


def _rule_logprobs(d: _Draft) -> None:
    top = d.body.get("top_logprobs")
    if top is None:
        return
    if isinstance(top, bool) or not isinstance(top, int) or not 0 <= top <= 20:
        raise _invalid(f"`top_logprobs` must be an integer in [0, 20], got {top!r}")
    if d.body.get("logprobs") is not True:
        raise _invalid("`top_logprobs` needs `logprobs: true`")
    d.top_logprobs = top


def _rule_stop(d: _Draft) -> None:
    stop_raw = d.body.get("stop")
    if isinstance(stop_raw, str):
        d.stop = (stop_raw,)
    elif isinstance(stop_raw, list):
        if len(stop_raw) > 16:
            raise _invalid(f"`stop` takes at most 16 strings, got {len(stop_raw)}")
        if not all(isinstance(s, str) for s in stop_raw):
            raise _bad("stop", "invalid type, expected a string or a sequence of strings")
        d.stop = tuple(stop_raw)
    elif stop_raw is not None:
        raise _bad("stop", f"invalid type: {_kind(stop_raw)}, expected a string or a sequence")


_EMPTY_PARAMETERS = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}


def _rule_tools(d: _Draft) -> None:
    tools_raw = d.body.get("tools")
    if tools_raw is None:
        return
    if not isinstance(tools_raw, list):
        raise _bad("tools", f"invalid type: {_kind(tools_raw)}, expected a sequence")
    if len(tools_raw) > 128:
        raise _invalid(f"at most 128 tools are allowed, got {len(tools_raw)}")
    for j, tool in enumerate(tools_raw):
        tw = f"tools[{j}]"
        if not isinstance(tool, dict) or not isinstance(tool.get("function"), dict):
            raise _bad(tw, "missing field `function`")
        fn = tool["function"]
        name = fn.get("name")
        if not isinstance(name, str):
            raise _bad(f"{tw}.function", "missing field `name`")
        if not _TOOL_NAME.match(name):
            raise _invalid(f"{tw}.function.name {name!r} must match [a-zA-Z0-9_-]{{1,64}}")
        if fn.get("strict") is True:
            problem = _check_strict_schema(fn.get("parameters", _EMPTY_PARAMETERS), "parameters")
            if problem:
                raise Rejection(400, f"Invalid schema for function '{name}': {problem}")
        d.functions.append(fn)


def _rule_tool_choice(d: _Draft) -> None:
    choice = d.body.get("tool_choice")
    if choice is None:
        return
    if choice == "required":
        if not d.functions:
            raise Rejection(400, "tool_choice `required` needs at least one tool in `tools`")
        d.forced = str(d.functions[0]["name"])
    elif isinstance(choice, dict):
        chosen = choice.get("function")
        choice_name = chosen.get("name") if isinstance(chosen, dict) else None
        if choice.get("type") != "function" or not isinstance(choice_name, str):
            raise _bad("tool_choice", "expected `{\"type\": \"function\", \"function\": {\"name\": ...}}`")
        if choice_name not in {f["name"] for f in d.functions}:
            raise Rejection(400, f"tool_choice names function `{choice_name}`, which is not in `tools`")
        d.forced = choice_name
    elif choice not in ("none", "auto"):
        raise _bad(
            "tool_choice",
            f"unknown variant `{choice}`, expected `none`, `auto`, `required` or an object",
        )


def _rule_forced_tool_without_thinking(d: _Draft) -> None:
    if d.forced is not None and d.thinking:
        raise Rejection(400, "Thinking mode does not support tool_choice")  # S9


def _rule_reasoning_passback(d: _Draft) -> None:
    if d.reasoning_missing is not None and d.thinking:
        raise Rejection(400, PASSBACK_MESSAGE)  # S7; "" counts as present


def _rule_response_format(d: _Draft) -> None:
    fmt = d.body.get("response_format")
    if fmt is None:
        return
    if not isinstance(fmt, dict) or fmt.get("type") not in ("text", "json_object"):
        got = fmt.get("type") if isinstance(fmt, dict) else fmt
        raise _bad("response_format.type", f"unknown variant `{got}`, expected `text` or `json_object`")
    d.json_mode = fmt["type"] == "json_object"
    if not d.json_mode:
        return
    prompt_text = " ".join(
        _text_of(m.get("content"), "", allow_null=True)
        for m in d.messages
        if m.get("role") in ("system", "user")
    )
    if "json" not in prompt_text.lower():
        # S37 MAY: DeepSeek's docs say the prompt must contain the word "json".
        raise Rejection(
            400,
            "Prompt must contain the word 'json' in some form to use 'response_format' "
            "of type 'json_object'.",
        )


def _rule_context_length(d: _Draft) -> None:
    d.prompt_tokens = max(
        1, d.text_total // 4 + 4 * len(d.messages) + (len(json.dumps(d.functions)) // 8 if d.functions else 0)
    )
    _, context = _limits(d.model, d.era)
    completion = d.max_tokens or 0
    if d.prompt_tokens + completion > context:
        raise Rejection(
            400,
            f"This model's maximum context length is {context} tokens. However, you requested "
            f"{d.prompt_tokens + completion} tokens ({d.prompt_tokens} in the messages, "
            f"{completion} in the completion). Please reduce the length of the messages or "
            "completion.",
        )


#: The checks, in the order DeepSeek makes them: the first rule that fails is the answer.
#: Deserialization (shape and types) comes first, then the model, then value ranges, then the
#: rules that relate fields to each other, and the context length last.
RULES: tuple[Rule, ...] = (
    _rule_body_is_object,
    _rule_model_field,
    _rule_messages_field,
    _rule_messages,
    _rule_model_exists,
    _rule_field_types,
    _rule_reasoning_effort,
    _rule_thinking,
    _rule_max_tokens,
    _rule_sampling,
    _rule_logprobs,
    _rule_stop,
    _rule_tools,
    _rule_tool_choice,
    _rule_forced_tool_without_thinking,
    _rule_reasoning_passback,
    _rule_response_format,
    _rule_context_length,
)


def validate_chat(
    raw: bytes,
    *,
    path: str,
    headers: Mapping[str, str],
    era: Era = "v4",
) -> ChatRequest:
    """Validate a chat-completion request body; raise :class:`Rejection` on the first problem.

    The body is parsed, then :data:`RULES` run in order over one draft of what is known so far.
    """
    body, redacted = parse_body(raw)
    d = _Draft(body=body, era=era)
    for rule in RULES:
        rule(d)
    return _chat_request(d, redacted, path, headers)


def _chat_request(
    d: _Draft, redacted: Any, path: str, headers: Mapping[str, str]
) -> ChatRequest:
    last = d.messages[-1]
    prefix = None
    if last.get("role") == "assistant" and last.get("prefix") is True:
        prefix = _text_of(last.get("content"), "", allow_null=True)
    logprobs_on = d.body.get("logprobs") is True
    return ChatRequest(
        body=d.body,
        redacted=redacted,
        model=d.model,
        response_model=resolve_model(d.model, d.era),
        thinking=d.thinking,
        stream=d.body.get("stream") is True,
        beta=path.startswith("/beta/"),
        max_tokens=d.max_tokens,
        logprobs=(d.top_logprobs or 0) if logprobs_on else None,
        stop=d.stop,
        tools=tuple(d.functions),
        forced_tool=d.forced,
        json_mode=d.json_mode,
        prefix=prefix,
        prompt_tokens=d.prompt_tokens,
        view=RequestView(
            last_user=d.last_user,
            tool_results=frozenset(d.tool_results),
            model=d.model,
            headers=redact_headers(headers),
            body=d.body,
            path=path,
        ),
    )


def _loose_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content
                       if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def recorded_request(raw: bytes, *, path: str, headers: Mapping[str, str]) -> ChatRequest:
    """A request the mock's own rules reject, as far as routing to a recorded exchange needs it.

    A cassette holds what the upstream it was recorded against accepted (a newer model name, a
    larger `max_tokens`); serving it must not apply the mock's idea of DeepSeek's rules. Whatever
    parses is kept (the body for `match.body`, the model, the last user text, the answered tool
    calls); what does not parse becomes empty. Never raises.
    """
    try:
        body: Any = json.loads(raw.decode(json.detect_encoding(raw), "surrogatepass"))
    except (ValueError, RecursionError):
        body = None
    try:
        redacted = redact_body(body, max_depth=MAX_DEPTH)
    except NestingTooDeep:
        body = redacted = None
    obj: dict[str, Any] = body if isinstance(body, dict) else {}
    model = obj.get("model") if isinstance(obj.get("model"), str) else ""
    messages = [m for m in obj.get("messages") or [] if isinstance(m, dict)] \
        if isinstance(obj.get("messages"), list) else []
    last_user = ""
    answered: set[str] = set()
    for m in messages:
        content = m.get("content")
        if m.get("role") == "tool" and isinstance(m.get("tool_call_id"), str):
            answered.add(m["tool_call_id"])
        blocks = content if isinstance(content, list) else []
        ids = {b["tool_use_id"] for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"
               and isinstance(b.get("tool_use_id"), str)}
        answered |= ids
        if m.get("role") == "user" and not ids:
            last_user = _loose_text(content)
    max_tokens = obj.get("max_tokens")
    return ChatRequest(
        body=obj,
        redacted=redacted,
        model=str(model),
        response_model=str(model),
        thinking=False,
        stream=obj.get("stream") is True,
        beta=path.startswith("/beta/"),
        max_tokens=max_tokens if isinstance(max_tokens, int) and not isinstance(max_tokens, bool) else None,
        logprobs=None,
        stop=(),
        tools=(),
        forced_tool=None,
        json_mode=False,
        prefix=None,
        prompt_tokens=1,
        view=RequestView(
            last_user=last_user,
            tool_results=frozenset(answered),
            model=str(model),
            headers=redact_headers(headers),
            body=body,
            path=path,
        ),
    )


class ValidationCache:
    """Validation once per distinct request body, for the fast path (`MockServer(fast_path=)`).

    A body seen a second time (same bytes, same path) is validated in full once more and the
    result kept as a template no request ever receives; from the third time on the request gets
    the template's derived fields with a body parsed afresh from its own bytes (and redacted
    afresh when the template's redaction changed anything), its own headers and path, so no two
    requests share an object a test or a callback could change (the tools' function objects,
    which only the server reads, are the template's). A body that fails validation is
    never kept: it is validated in full every time and gets the same error. The first sight only
    records the key, so bodies that are new every time cost one full validation and a lookup.

    Only for wires whose `validates_body_only` is set (the built-in ones): their result depends
    on nothing but the body bytes, the path and the server's settings.
    Bodies over `max_body` bytes are not kept (they are rarely repeated and costly to hash); at
    most `entries` bodies of at most `budget` bytes in all are, the oldest dropped first.
    """

    def __init__(self, *, entries: int = 256, max_body: int = 64 * 1024, budget: int = 2 * 1024 * 1024) -> None:
        self.entries = entries
        self.max_body = max_body
        self.budget = budget
        self._kept: dict[tuple[str, bytes], _Template | None] = {}
        self._bytes = 0

    def validate(
        self, validate: Callable[[], ChatRequest], raw: bytes, *, path: str, headers: Mapping[str, str],
        redacted_headers: Mapping[str, str] | None = None,
    ) -> ChatRequest:
        """`validate()`'s result for this request, from the template when there is one.

        `redacted_headers`: `redact_headers(headers)` when the caller made it already (the
        journal entry's); the view gets its own copy."""
        if len(raw) > self.max_body:
            return validate()
        key = (path, raw)
        kept = self._kept
        if key not in kept:  # the first sight
            chat = validate()
            kept[key] = None
            self._bytes += len(raw)
            while len(kept) > self.entries or self._bytes > self.budget:
                oldest = next(iter(kept))
                del kept[oldest]
                self._bytes -= len(oldest[1])
            return chat
        template = kept[key]
        if template is None:  # the second: a template, kept apart from this request's result
            chat = validate()
            kept[key] = _Template(validate())
            return chat
        return template.renew(raw, path, headers, redacted_headers)


class _Template:
    """A validated request whose body, redacted body and view are renewed for each request."""

    __slots__ = ("fields", "redacts", "view")

    def __init__(self, chat: ChatRequest) -> None:
        self.fields = {name: getattr(chat, name) for name in ChatRequest.__slots__
                       if name not in ("body", "redacted", "view")}
        """Everything derived from the body: immutable values, and the tools' function objects,
        which the server only reads (a callback gets the request's own view and body)."""
        self.redacts = chat.redacted != chat.body
        """Whether redaction changes this body (else the redacted copy is a second parse)."""
        self.view = chat.view

    def renew(
        self, raw: bytes, path: str, headers: Mapping[str, str], redacted_headers: Mapping[str, str] | None = None
    ) -> ChatRequest:
        """The request of these bytes, with its own body, redacted body, headers and path."""
        try:
            body = _fast_loads(raw)
            redacted = redact_body(body, max_depth=MAX_DEPTH) if self.redacts else _fast_loads(raw)
        except msgspec.DecodeError:  # a form msgspec does not read (a BOM, UTF-16): the plain parser
            body = parse_json(raw)
            redacted = redact_body(body, max_depth=MAX_DEPTH) if self.redacts else parse_json(raw)
        view = self.view
        return ChatRequest(
            body=body, redacted=redacted,
            view=RequestView(last_user=view.last_user, tool_results=view.tool_results, model=view.model,
                             headers=redact_headers(headers) if redacted_headers is None else dict(redacted_headers),
                             body=body, path=path),
            **self.fields,
        )
