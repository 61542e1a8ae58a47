"""DeepSeek's second wire: the Anthropic Messages surface (`/anthropic/v1/messages`).

DeepSeek serves Anthropic's Messages API next to Chat Completions (Claude Code and apps built on
the `anthropic` SDK point at `https://api.deepseek.com/anthropic`). This module holds everything
that differs between the two surfaces; the server's scripts, faults, routing and journal are
shared. The contract, for clients of the mock and for the rest of `mock_server`:

**Paths.** `POST /anthropic/v1/messages` (what the SDK calls, given `base_url=<mock>/anthropic`)
and `POST /anthropic/messages` (DeepSeek's alias for direct HTTP callers). A query string such
as `?beta=true` is ignored. Other `/anthropic/...` paths answer 404.

**Auth.** With an API key configured, `Authorization: Bearer <key>` or `x-api-key: <key>`; when
both are sent, `Authorization` decides. `anthropic-version` and `anthropic-beta` are ignored.

**Models** (DeepSeek's newest page): the DeepSeek names of `validation.MODELS` are served as on
the chat route; names starting `claude-opus` → `deepseek-v4-pro`, any other `claude…` →
`deepseek-flash`; a `[1m]` suffix (Claude Code's 1M-context marker) is stripped first; any
other name → 400. The response's `model` is the DeepSeek name.

**Validation** (:func:`validate_messages`, first problem wins, nothing consumes a step):
`model`, `max_tokens` and `messages` are required; known fields are type-checked (DeepSeek's
strict deserializer: "Failed to deserialize the JSON body into the target type: <path>: …");
ignored fields (`top_k`, `service_tier`, `container`, `mcp_servers`, `cache_control`, the
`anthropic-*` headers) and unknown top-level fields are accepted silently. Content blocks DeepSeek
does not support (`document`, `search_result`, `redacted_thinking`, `mcp_*`, …) → 400. Every
`tool_use` must be answered by a `tool_result` in the next user turn → 400. With thinking on
(the default; only `{"type": "disabled"}` turns it off), an assistant turn with `tool_use` and no
`thinking` block → 400 with DeepSeek's real message, and `tool_choice: {"type": "tool"}` → 400;
a `thinking` block needs a `signature` key (any string). `temperature` must lie in [0, 2] when
thinking is off. `output_config.effort` takes DeepSeek's effort words.

**Errors.** By default DeepSeek's envelope as recorded on this route (the OpenAI-style
`{"error": {"message", "type", "param", "code"}}`, no `request_id`); the server option
`anthropic_envelope="anthropic"` (or a step's `anthropic_envelope` quirk) switches to Anthropic's
`{"type": "error", "error": {"type", "message"}, "request_id"}`. On this surface `error.type`
follows the status the way Anthropic names them (:func:`error_type`: 429 `rate_limit_error`,
500 `api_error`, 529 `overloaded_error`, …) unless a fault step sets `type`.

**Script steps** are logical replies rendered by the surface the request came to:
- `reply`: `reasoning` → one `thinking` block (only when thinking is on; its signature is the
  message id, as DeepSeek does), `content` → one `text` block, each of `tool_calls` → one
  `tool_use` block (`arguments` streamed byte for byte as `input_json_delta.partial_json`, parsed
  into `input` for non-streaming bodies). `stream.split`/`text`/`reasoning`/`arguments` cut the
  deltas, `stream.writes` cuts the bytes, `stream.framing` picks LF or CRLF, `timing` applies as
  on the chat route, and `stream.quirks` takes the names of :data:`ANTHROPIC_QUIRKS` (chat quirk
  names are ignored here, and these are ignored on the chat route). `finish_reason` maps to
  `stop_reason`: stop → `end_turn` (`stop_sequence` when one of the request's
  `stop_sequences` cut the text), length → `max_tokens`, tool_calls → `tool_use`,
  content_filter → `refusal`, insufficient_system_resource → an in-band `error` event
  (`overloaded_error`) instead of `message_delta`. A script `usage` in Chat Completions shape is
  converted (input = prompt − cache hits, `cache_read_input_tokens` = hits); one that already
  has `input_tokens` is sent as is.
- `fault`: every fault works; HTTP faults use this surface's envelope and types, stream faults
  cut the Anthropic events where they cut the chat events (the `[DONE]` of the chat route is
  `message_stop` here), `inband_error`/`event_error` send `event: error` with an
  `overloaded_error` unless `type`/`message` say otherwise, `overloaded` answers 529.
- `raw`: the bytes as scripted (cassette replay uses this).
- `chunks` (session-log replay): served as a reply built from the chunks' text, reasoning and
  tool calls, cut where the logged deltas were cut (:func:`chunk_replay`); a logged failure
  becomes an HTTP error before any content, an in-band `error` event after it, a plain EOF for
  a closed stream or a reset for a transport failure.

**Stream shape** (:func:`encode_events`): `event: <type>` + `data: <json>` + blank line, in the
order `message_start` (UUID id, input-side usage, `output_tokens: 1`), the blocks with contiguous
indices (`content_block_start`, one `ping` after the first start, the deltas, a
`signature_delta` before a thinking block's stop, `content_block_stop`), `message_delta`
(`stop_reason`, `stop_sequence`, cumulative usage repeating the input counters),
`message_stop`. The journal keeps every request (`Journal.messages()` lists this surface's).
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mock_server.defaults import apply_stop
from mock_server.generate.encode import Framing
from mock_server.generate.reply import Era, Reply, ToolCall, compute_usage
from mock_server.generate.split import FragmentPlan, ReplyPieces, SplitPlan, cut_reply
from mock_server.journal import redact_headers
from mock_server.routing import RequestView
from mock_server.validation import (
    MODELS,
    ChatRequest,
    Rejection,
    error_body,
    parse_body,
    resolve_model,
)

__all__ = [
    "ANTHROPIC_PATHS",
    "ANTHROPIC_QUIRKS",
    "PASSBACK_MESSAGE",
    "ChunkReplay",
    "Envelope",
    "anthropic_usage",
    "build_message",
    "check_anthropic_auth",
    "chunk_replay",
    "encode_events",
    "error_body_for",
    "error_event",
    "error_type",
    "map_model",
    "message_id",
    "stop_reason",
    "validate_messages",
]

ANTHROPIC_PATHS = ("/anthropic/v1/messages", "/anthropic/messages")
Envelope = Literal["deepseek", "anthropic"]
#: DeepSeek's 400 when a tool-use turn lost its thinking block (corpus `ds01`, verbatim).
PASSBACK_MESSAGE = "The `content[].thinking` in the thinking mode must be passed back to the API."

#: Shapes other servers (or other DeepSeek days) send on this surface, by name; off by default.
ANTHROPIC_QUIRKS: Mapping[str, str] = {
    "thinking_start_signature": "the thinking `content_block_start` carries `\"signature\": \"\"` "
    "(Anthropic's shape; DeepSeek was seen leaving the key out)",
    "no_pings": "no `ping` event (the default sends one after the first content_block_start)",
    "many_pings": "a `ping` before every content_block_start and before message_delta",
    "padded_data": "data lines padded with spaces after the JSON, and the ping written "
    "`{\"type\": \"ping\"}`, as Anthropic does to hide token lengths",
    "delta_output_only": "message_delta's usage carries only `output_tokens` (older streams)",
    "delta_input_differs": "message_delta reports a larger `input_tokens` than message_start "
    "(a third-party server, corpus cp01); the later value wins",
    "open_block_after_max_tokens": "after a max_tokens stop the last block gets no "
    "content_block_stop (corpus an14)",
    "data_only": "no `event:` lines (data-only records; the anthropic SDK drops such events)",
    "anthropic_ids": "`msg_01…` message ids and base64 signatures instead of DeepSeek's UUID "
    "used as both",
    "anthropic_envelope": "HTTP errors in Anthropic's envelope `{\"type\": \"error\", \"error\": "
    "{…}, \"request_id\"}` instead of DeepSeek's OpenAI-style one",
}

_STATUS_TYPES: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    422: "invalid_request_error",
    429: "rate_limit_error",
    500: "api_error",
    503: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_STOP_REASONS: Mapping[str, str] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
}
_DESERIALIZE = "Failed to deserialize the JSON body into the target type: "
_SUPPORTED_BLOCKS = (
    "text",
    "image",
    "thinking",
    "tool_use",
    "tool_result",
    "server_tool_use",
    "web_search_tool_result",
)
_BLOCK_LIST = ", ".join(f"`{b}`" for b in _SUPPORTED_BLOCKS)
_EFFORTS = ("minimal", "low", "medium", "high", "xhigh", "max", "ultra")
_TOOL_CHOICES = ("auto", "any", "none", "tool")
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_ONE_M = "[1m]"
_MAX_TOKENS_CEILING = 393_216
_CONTEXT = 1_048_576
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


# -- auth, models, errors ----------------------------------------------------------------------


def check_anthropic_auth(headers: Mapping[str, str], api_key: str | None) -> None:
    """`Authorization: Bearer <key>` or `x-api-key: <key>`; `Authorization` wins when both come."""
    if api_key is None:
        return
    auth = headers.get("Authorization")
    if auth is not None:
        if auth == f"Bearer {api_key}":
            return
        reason = "the api key in `Authorization` is invalid"
    else:
        key = headers.get("x-api-key")
        if key == api_key:
            return
        reason = "the api key in `x-api-key` is invalid" if key else "no api key was sent"
    # As on the chat route, no part of any key is echoed back.
    raise Rejection(
        401,
        f"Authentication Fails, {reason} (send `x-api-key: <key>` or `Authorization: Bearer "
        "<key>` with the key the mock server was started with)",
        type="authentication_error",
    )


def map_model(name: str, era: Era = "v4", *, unknown: Literal["reject", "flash"] = "reject") -> str:
    """The DeepSeek model that serves a requested name; :class:`Rejection` (400) for others,
    or the flash model when `unknown="flash"` (what DeepSeek's older pages said)."""
    base = name.removesuffix(_ONE_M)
    if base in MODELS:
        return resolve_model(base, era)
    if base.startswith("claude-opus"):
        return "deepseek-v4-pro"
    if base.startswith("claude") or unknown == "flash":
        return "deepseek-flash"
    raise Rejection(
        400,
        f"Model Not Exist: {name!r} is neither a DeepSeek model ({', '.join(MODELS)}) nor a "
        "`claude…` name (claude-opus* is served by deepseek-v4-pro, other claude* by "
        "deepseek-flash)",
    )


def error_type(status: int) -> str:
    """Anthropic's `error.type` for an HTTP status (`api_error` for statuses it does not name)."""
    return _STATUS_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")


def error_body_for(
    status: int,
    message: str,
    type: str | None = None,
    code: str | None = None,
    *,
    envelope: Envelope = "deepseek",
    request_id: str | None = None,
) -> dict[str, Any]:
    """The error body this surface sends: DeepSeek's envelope, or Anthropic's."""
    kind = type or error_type(status)
    if envelope == "anthropic":
        body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
        body["request_id"] = request_id or "req_mock"
        return body
    return error_body(message, kind, code if code is not None else kind)


def error_event(type: str, message: str, framing: Framing = "lf", *, data_only: bool = False) -> bytes:
    """An in-band `error` event: what a failure after the first byte looks like (AN69)."""
    data = {"type": "error", "error": {"type": type, "message": message}}
    return _frame("error", _dumps(data), framing, data_only=data_only)


# -- validation --------------------------------------------------------------------------------


def _bad(path: str, reason: str) -> Rejection:
    return Rejection(400, f"{_DESERIALIZE}{path + ': ' if path else ''}{reason}")


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return f"boolean `{str(v).lower()}`"
    if isinstance(v, (int, float)):
        return f"number `{v}`"
    if isinstance(v, str):
        return f"string {json.dumps(v)}"
    return "sequence" if isinstance(v, list) else "map"


def _need(obj: Mapping[str, Any], key: str, types: type | tuple[type, ...], where: str, what: str) -> Any:
    if key not in obj:
        raise _bad(where, f"missing field `{key}`")
    v = obj[key]
    if not isinstance(v, types) or (isinstance(v, bool) and types is not bool):
        raise _bad(f"{where}.{key}" if where else key, f"invalid type: {_kind(v)}, expected {what}")
    return v


def _text_blocks(value: Any, where: str) -> str:
    """`system`, or a tool_result's `content`: a string or an array of text (and image) blocks."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise _bad(where, f"invalid type: {_kind(value)}, expected a string or a sequence of blocks")
    out: list[str] = []
    for j, block in enumerate(value):
        bw = f"{where}[{j}]"
        if not isinstance(block, dict):
            raise _bad(bw, f"invalid type: {_kind(block)}, expected a content block")
        t = block.get("type")
        if t == "text":
            out.append(_need(block, "text", str, bw, "a string"))
        elif t != "image":
            raise _bad(bw, f"unknown variant `{t}`, expected `text` or `image`")
    return "".join(out)


class _History:
    """What a walk over `messages` learns: text size, the last user text, tool ids, problems."""

    def __init__(self) -> None:
        self.chars = 0
        self.last_user = ""
        self.tool_results: set[str] = set()
        self.pending: list[str] = []
        self.pending_at = ""
        self.passback_missing = False

    def block(self, block: Mapping[str, Any], role: str, bw: str) -> str:
        """Check one content block; return its type."""
        t = block.get("type")
        if t not in _SUPPORTED_BLOCKS:
            raise _bad(bw, f"unknown variant `{t}`, expected one of {_BLOCK_LIST}")
        if t == "text":
            self.chars += len(_need(block, "text", str, bw, "a string"))
        elif t == "thinking":
            self.chars += len(_need(block, "thinking", str, bw, "a string"))
            # AN28: the key must be there; any string passes (DeepSeek's value is the msg id).
            _need(block, "signature", str, bw, "a string")
        elif t == "tool_use":
            call_id = _need(block, "id", str, bw, "a string")
            _need(block, "name", str, bw, "a string")
            self.chars += len(json.dumps(_need(block, "input", dict, bw, "a map")))
            if role == "assistant":
                self.pending.append(call_id)
        elif t == "tool_result":
            tid = _need(block, "tool_use_id", str, bw, "a string")
            if "content" in block and block["content"] is not None:
                self.chars += len(_text_blocks(block["content"], f"{bw}.content"))
            self.tool_results.add(tid)
        elif t == "image":
            _need(block, "source", dict, bw, "a map")
        return str(t)

    def message(self, msg: Any, i: int) -> None:
        where = f"messages[{i}]"
        if not isinstance(msg, dict):
            raise _bad(where, f"invalid type: {_kind(msg)}, expected a message object")
        role = _need(msg, "role", str, where, "a string")
        if role not in ("user", "assistant"):
            raise _bad(f"{where}.role", f"unknown variant `{role}`, expected `user` or `assistant`")
        content = msg.get("content")
        if "content" not in msg:
            raise _bad(where, "missing field `content`")
        waiting = self.pending
        self.pending = []
        if isinstance(content, str):
            self.chars += len(content)
            types = ["text"]
            texts = [content]
        elif isinstance(content, list):
            types, texts = [], []
            for j, block in enumerate(content):
                bw = f"{where}.content[{j}]"
                if not isinstance(block, dict):
                    raise _bad(bw, f"invalid type: {_kind(block)}, expected a content block")
                types.append(self.block(block, role, bw))
                if block.get("type") == "text":
                    texts.append(block["text"])
        else:
            raise _bad(f"{where}.content", f"invalid type: {_kind(content)}, expected a string or a sequence of blocks")
        if waiting:
            answered = self.tool_results if role == "user" else set()
            missing = [c for c in waiting if c not in answered]
            if missing:
                # Anthropic's wording for the same rule (corpus er02).
                raise Rejection(
                    400,
                    f"{where}: `tool_use` ids were found without `tool_result` blocks immediately "
                    f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding "
                    "`tool_result` block in the next message.",
                )
        if role == "assistant" and "tool_use" in types and "thinking" not in types:
            self.passback_missing = True
        if role == "user" and texts:
            self.last_user = "".join(texts)


def _number(body: Mapping[str, Any], name: str) -> float | None:
    v = body.get(name)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _bad(name, f"invalid type: {_kind(v)}, expected a number")
    return float(v)


def _thinking_on(body: Mapping[str, Any]) -> bool:
    th = body.get("thinking")
    if th is None:
        return True  # AN32: on by default
    if not isinstance(th, dict) or not isinstance(th.get("type"), str):
        raise _bad("thinking", f"invalid type: {_kind(th)}, expected a map with a string `type`")
    return bool(th["type"] != "disabled")  # AN33: `adaptive` and the like keep it on


def _check_options(body: Mapping[str, Any], thinking: bool) -> None:
    oc = body.get("output_config")
    if oc is not None:
        if not isinstance(oc, dict):
            raise _bad("output_config", f"invalid type: {_kind(oc)}, expected a map")
        effort = oc.get("effort")
        if effort is not None and effort not in _EFFORTS:
            raise _bad(
                "output_config.effort",
                f"unknown variant `{effort}`, expected one of {', '.join(f'`{e}`' for e in _EFFORTS)}",
            )
    temperature = _number(body, "temperature")
    top_p = _number(body, "top_p")
    if not thinking:  # in thinking mode both are accepted and have no effect (AN35)
        if temperature is not None and not 0.0 <= temperature <= 2.0:
            raise Rejection(400, f"`temperature` must be in [0, 2], got {temperature:g}")
        if top_p is not None and not 0.0 < top_p <= 1.0:
            raise Rejection(400, f"`top_p` must be in (0, 1], got {top_p:g}")
    md = body.get("metadata")
    if md is not None:
        if not isinstance(md, dict):
            raise _bad("metadata", f"invalid type: {_kind(md)}, expected a map")
        uid = md.get("user_id")
        if uid is not None and not isinstance(uid, str):
            raise _bad("metadata.user_id", f"invalid type: {_kind(uid)}, expected a string")
    if "stream" in body and not isinstance(body["stream"], bool):
        raise _bad("stream", f"invalid type: {_kind(body['stream'])}, expected a boolean")


def _stops(body: Mapping[str, Any]) -> tuple[str, ...]:
    raw = body.get("stop_sequences")
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(s, str) for s in raw):
        raise _bad("stop_sequences", f"invalid type: {_kind(raw)}, expected a sequence of strings")
    return tuple(raw)


def _tools(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Custom tools as the `{name, description, parameters}` objects the generator uses;
    server tools (those with a `type` other than `custom`) are accepted and left out."""
    raw = body.get("tools")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise _bad("tools", f"invalid type: {_kind(raw)}, expected a sequence")
    out: list[dict[str, Any]] = []
    for j, tool in enumerate(raw):
        tw = f"tools[{j}]"
        if not isinstance(tool, dict):
            raise _bad(tw, f"invalid type: {_kind(tool)}, expected a tool")
        if tool.get("type") not in (None, "custom"):
            continue
        name = _need(tool, "name", str, tw, "a string")
        if not _TOOL_NAME.match(name):
            raise Rejection(400, f"{tw}.name {name!r} must match [a-zA-Z0-9_-]{{1,64}}")
        schema = _need(tool, "input_schema", dict, tw, "a map")
        out.append({"name": name, "description": tool.get("description", ""), "parameters": schema})
    return out


def _forced_tool(body: Mapping[str, Any], tools: Sequence[Mapping[str, Any]], thinking: bool) -> str | None:
    choice = body.get("tool_choice")
    if choice is None:
        return None
    if not isinstance(choice, dict) or choice.get("type") not in _TOOL_CHOICES:
        got = choice.get("type") if isinstance(choice, dict) else choice
        raise _bad(
            "tool_choice.type",
            f"unknown variant `{got}`, expected one of {', '.join(f'`{c}`' for c in _TOOL_CHOICES)}",
        )
    if choice["type"] != "tool":
        return None  # `any` was observed to force nothing (AN38); `auto`/`none` force nothing
    name = _need(choice, "name", str, "tool_choice", "a string")
    if thinking:
        raise Rejection(400, "Thinking mode does not support this tool_choice")  # AN36
    if name not in {t["name"] for t in tools}:
        raise Rejection(400, f"tool_choice names tool `{name}`, which is not in `tools`")
    return str(name)


def validate_messages(
    raw: bytes,
    *,
    path: str,
    headers: Mapping[str, str],
    era: Era = "v4",
    unknown_model: Literal["reject", "flash"] = "reject",
) -> ChatRequest:
    """Validate a Messages request; raise :class:`Rejection` on the first problem.

    The result is the same :class:`ChatRequest` the chat route builds (tools as function
    objects, `stop` from `stop_sequences`), so defaults, routing and the generator need no
    second path; `body` is the Anthropic body as sent.
    """
    body, redacted = parse_body(raw)  # the same hardened parser as the chat route
    if not isinstance(body, dict):
        raise _bad("", f"invalid type: {_kind(body)}, expected struct MessagesRequest")
    model = _need(body, "model", str, "", "a string")
    max_tokens = _need(body, "max_tokens", int, "", "an integer")
    messages = _need(body, "messages", list, "", "a sequence")
    if not messages:
        raise _bad("messages", "invalid length 0, expected at least one message")
    history = _History()
    for i, msg in enumerate(messages):
        history.message(msg, i)
    if history.pending:
        # The last assistant turn called tools: the conversation cannot continue without results.
        raise Rejection(
            400,
            f"messages[{len(messages) - 1}]: `tool_use` ids were found without `tool_result` "
            f"blocks immediately after: {', '.join(history.pending)}. Each `tool_use` block must "
            "have a corresponding `tool_result` block in the next message.",
        )
    system = body.get("system")
    if system is not None:
        history.chars += len(_text_blocks(system, "system"))
    response_model = map_model(model, era, unknown=unknown_model)
    if not 1 <= max_tokens <= _MAX_TOKENS_CEILING:
        raise Rejection(
            400, f"Invalid max_tokens value, the valid range of max_tokens is [1, {_MAX_TOKENS_CEILING}]"
        )
    thinking = _thinking_on(body)
    _check_options(body, thinking)
    stop = _stops(body)
    tools = _tools(body)
    forced = _forced_tool(body, tools, thinking)
    if thinking and history.passback_missing:
        raise Rejection(400, PASSBACK_MESSAGE)  # AN27, corpus ds01
    prompt_tokens = max(1, history.chars // 4 + 4 * len(messages) + len(json.dumps(tools)) // 8)
    if prompt_tokens + max_tokens > _CONTEXT:
        raise Rejection(
            400,
            f"This model's maximum context length is {_CONTEXT} tokens. However, you requested "
            f"{prompt_tokens + max_tokens} tokens ({prompt_tokens} in the messages, {max_tokens} "
            "in the completion). Please reduce the length of the messages or completion.",
        )
    return ChatRequest(
        body=body,
        redacted=redacted,
        model=model,
        response_model=response_model,
        thinking=thinking,
        stream=body.get("stream") is True,
        beta=False,
        max_tokens=max_tokens,
        logprobs=None,
        stop=stop,
        tools=tuple(tools),
        forced_tool=forced,
        json_mode=False,
        prefix=None,
        prompt_tokens=prompt_tokens,
        view=RequestView(
            last_user=history.last_user,
            tool_results=frozenset(history.tool_results),
            model=model,
            headers=redact_headers(headers),
            body=body,
        ),
    )


# -- rendering ---------------------------------------------------------------------------------


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _frame(name: str, data: str, framing: Framing, *, data_only: bool = False, pad: str = "") -> bytes:
    eol = "\r\n" if framing == "crlf" else "\n"
    head = "" if data_only else f"event: {name}{eol}"
    return f"{head}data: {data}{pad}{eol}{eol}".encode()


def message_id(seed: int, *, anthropic: bool = False) -> str:
    """The message id for a step: a UUID as DeepSeek sends, or Anthropic's `msg_01…` shape."""
    rng = random.Random(f"meta:{seed}")
    if anthropic:
        return "msg_01" + "".join(rng.choice(_ALNUM) for _ in range(22))
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _signature(msg_id: str, seed: int, anthropic: bool) -> str:
    if not anthropic:
        return msg_id  # DeepSeek's signature is the message id (AN41)
    rng = random.Random(f"signature:{seed}")
    return "Eq" + "".join(rng.choice(_ALNUM) for _ in range(86)) + "=="


def anthropic_usage(usage: Mapping[str, Any]) -> dict[str, Any]:
    """Anthropic usage from a Chat Completions usage object (AN64 backwards); an object that
    already has `input_tokens` is returned as is."""
    if "input_tokens" in usage:
        return dict(usage)
    prompt = int(usage.get("prompt_tokens") or 0)
    hit = usage.get("prompt_cache_hit_tokens")
    if hit is None:
        hit = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    return {
        "input_tokens": prompt - int(hit),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": int(hit),
        "output_tokens": int(usage.get("completion_tokens") or 0),
    }


def stop_reason(finish: str, stop_sequence: str | None) -> str | None:
    """The `stop_reason` for a Chat Completions finish reason; None when it has none
    (`insufficient_system_resource` becomes an in-band error instead)."""
    if finish == "stop" and stop_sequence is not None:
        return "stop_sequence"
    return _STOP_REASONS.get(finish)


def _input_object(arguments: str) -> Any:
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}  # truncated by max_tokens: the non-streaming body cannot carry half an object
    return value if isinstance(value, dict) else {}


def _pieces_usage(reply: Reply, pieces: ReplyPieces, prompt_tokens: int) -> dict[str, Any]:
    if reply.usage is not None:
        return anthropic_usage(reply.usage)
    return anthropic_usage(
        compute_usage(
            prompt_tokens=prompt_tokens,
            completion_tokens=pieces.completion_tokens,
            reasoning_tokens=len(pieces.reasoning),
        )
    )


def _cut_stop(reply: Reply, stops: Sequence[str]) -> tuple[Reply, str | None]:
    """Cut the text at the first stop sequence; return the reply and the sequence that matched."""
    if not stops or not reply.content:
        return reply, None
    content, cut = apply_stop(reply.content, tuple(stops))
    if not cut:
        return reply, None
    matched = min(
        (s for s in stops if s and s in reply.content), key=lambda s: reply.content.find(s)
    )
    return dataclasses.replace(reply, content=content, finish_reason="stop"), matched


def encode_events(
    reply: Reply,
    *,
    model: str = "deepseek-flash",
    thinking: bool = True,
    split: FragmentPlan | None = None,
    seed: int = 0,
    prompt_tokens: int = 16,
    max_tokens: int | None = None,
    stop: Sequence[str] = (),
    quirks: Sequence[str] = (),
    framing: Framing = "lf",
    done: bool = True,
) -> list[bytes]:
    """The Messages SSE events of a reply, one bytes object per event.

    `done=False` leaves out `message_stop` (the counterpart of the chat route's `[DONE]`).
    Pure: the same arguments give the same bytes.
    """
    q = frozenset(quirks)
    reply, matched = _cut_stop(reply, stop)
    pieces = cut_reply(reply, thinking=thinking, split=split, seed=seed, max_tokens=max_tokens)
    anthropic = "anthropic_ids" in q
    msg_id = message_id(seed, anthropic=anthropic)
    usage = _pieces_usage(reply, pieces, prompt_tokens)
    data_only = "data_only" in q
    pad = " " * 7 if "padded_data" in q else ""
    out: list[bytes] = []

    def emit(obj: Mapping[str, Any]) -> None:
        out.append(_frame(str(obj["type"]), _dumps(obj), framing, data_only=data_only, pad=pad))

    def ping() -> None:
        data = '{"type": "ping"}' if pad else '{"type":"ping"}'
        out.append(_frame("ping", data, framing, data_only=data_only))

    start_usage = {k: usage[k] for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens") if k in usage}
    emit({
        "type": "message_start",
        "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {**start_usage, "output_tokens": 1},
        },
    })
    blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    if pieces.reasoning:
        start: dict[str, Any] = {"type": "thinking", "thinking": ""}
        if "thinking_start_signature" in q:
            start["signature"] = ""
        deltas = [{"type": "thinking_delta", "thinking": f} for f in pieces.reasoning]
        if pieces.finish_reason != "length" or pieces.content or pieces.calls:
            deltas.append({"type": "signature_delta", "signature": _signature(msg_id, seed, anthropic)})
        blocks.append((start, deltas))
    if pieces.content:
        blocks.append(({"type": "text", "text": ""}, [{"type": "text_delta", "text": f} for f in pieces.content]))
    for call_id, name, frags in pieces.calls:
        # AN56: a call without arguments still gets one empty fragment.
        blocks.append((
            {"type": "tool_use", "id": call_id, "name": name, "input": {}},
            [{"type": "input_json_delta", "partial_json": f} for f in (frags or [""])],
        ))
    for index, (block, deltas) in enumerate(blocks):
        if "many_pings" in q:
            ping()
        emit({"type": "content_block_start", "index": index, "content_block": block})
        if index == 0 and not q & {"no_pings", "many_pings"}:
            ping()
        for d in deltas:
            emit({"type": "content_block_delta", "index": index, "delta": d})
        last = index == len(blocks) - 1
        if not (last and pieces.finish_reason == "length" and "open_block_after_max_tokens" in q):
            emit({"type": "content_block_stop", "index": index})
    reason = stop_reason(pieces.finish_reason, matched)
    if reason is None:
        out.append(error_event("overloaded_error", "Overloaded", framing, data_only=data_only))
        return out
    if "many_pings" in q:
        ping()
    if "delta_output_only" in q:
        delta_usage: dict[str, Any] = {"output_tokens": usage["output_tokens"]}
    else:
        delta_usage = dict(usage)
        if "delta_input_differs" in q and "input_tokens" in delta_usage:
            delta_usage["input_tokens"] = int(delta_usage["input_tokens"]) + 18
    emit({
        "type": "message_delta",
        "delta": {"stop_reason": reason, "stop_sequence": matched},
        "usage": delta_usage,
    })
    if done:
        emit({"type": "message_stop"})
    return out


def build_message(
    reply: Reply,
    *,
    model: str = "deepseek-flash",
    thinking: bool = True,
    split: FragmentPlan | None = None,
    seed: int = 0,
    prompt_tokens: int = 16,
    max_tokens: int | None = None,
    stop: Sequence[str] = (),
    quirks: Sequence[str] = (),
) -> dict[str, Any]:
    """The non-streaming Messages body for a reply (AN40); counts match :func:`encode_events`."""
    reply, matched = _cut_stop(reply, stop)
    pieces = cut_reply(reply, thinking=thinking, split=split, seed=seed, max_tokens=max_tokens)
    anthropic = "anthropic_ids" in quirks
    msg_id = message_id(seed, anthropic=anthropic)
    content: list[dict[str, Any]] = []
    if pieces.reasoning:
        content.append({
            "type": "thinking", "thinking": "".join(pieces.reasoning),
            "signature": _signature(msg_id, seed, anthropic),
        })
    if pieces.content:
        content.append({"type": "text", "text": "".join(pieces.content)})
    for call_id, name, frags in pieces.calls:
        content.append({"type": "tool_use", "id": call_id, "name": name, "input": _input_object("".join(frags))})
    return {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        # A resource failure has no stop reason; a whole body can only say it ended early.
        "stop_reason": stop_reason(pieces.finish_reason, matched) or "max_tokens",
        "stop_sequence": matched,
        "usage": _pieces_usage(reply, pieces, prompt_tokens),
    }


# -- session-log replay: logged StreamChunks as a reply ------------------------------------------

#: Failure code → the status that tells an Anthropic-protocol client the same class again.
_STATUS_OF_CODE: Mapping[str, int] = {
    "AUTH": 401,
    "QUOTA": 402,
    "RATE_LIMIT": 429,
    "CONTEXT_WINDOW_EXCEEDED": 400,
    "INVALID_REQUEST": 400,
    "SERVER": 500,
    "INSUFFICIENT_SYSTEM_RESOURCE": 529,
}
_FINISH_OF_KIND: Mapping[str, str] = {"stop": "stop", "tool-calls": "tool_calls", "max-tokens": "length"}


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkReplay:
    """One logged call, ready for this surface: the reply, its fragment plan, and how it ends."""

    reply: Reply
    split: FragmentPlan
    """Cut points that give back the logged text and reasoning deltas (and the first call's)."""
    end: Literal["close", "hold", "eof", "reset", "error_event", "http"] = "close"
    """`hold`: an aborted call (the client gave up); `eof`: STREAM_CLOSED, no message_delta;
    `reset`: a transport failure; `error_event`: an in-band error after content; `http`: an
    error status before any content."""
    status: int = 200
    error_type: str | None = None
    message: str = ""


def _points(fragments: Sequence[str]) -> SplitPlan:
    cuts, pos = [], 0
    for f in fragments[:-1]:
        pos += len(f)
        cuts.append(pos)
    return SplitPlan(mode="points", points=tuple(cuts))


def chunk_replay(chunks: Sequence[Any], failure: Any = None, *, hang: bool = False) -> ChunkReplay:
    """A logged call's `StreamChunk`s (see :mod:`mock_server.chunk_wire` for the chat route's
    form) as a reply for this surface; `failure` (an `LlmFailure`) overrides how it ends."""
    from harness.llm import (
        BlockEnd,
        Finish,
        ReasoningBlock,
        ReasoningDelta,
        TextBlock,
        TextDelta,
        ToolCallBlock,
        ToolCallDelta,
        Usage,
    )

    texts: dict[int, list[str]] = {}
    thoughts: dict[int, list[str]] = {}
    calls: dict[int, list[Any]] = {}  # index -> [id, name, fragments]
    usage: Any = None
    finish: Any = None
    for c in chunks:
        if isinstance(c, TextDelta):
            texts.setdefault(c.index, []).append(c.text)
        elif isinstance(c, ReasoningDelta):
            thoughts.setdefault(c.index, []).append(c.text)
        elif isinstance(c, ToolCallDelta):
            slot = calls.setdefault(c.index, [c.id, c.name or "", []])
            slot[2].append(c.arguments_delta)
        elif isinstance(c, BlockEnd):
            # A block whose deltas do not add up to it (a compaction call logs none): the rest.
            b = c.block
            if isinstance(b, ToolCallBlock) and c.index not in calls:
                calls[c.index] = [b.id, b.name, [b.arguments]]
            elif isinstance(b, TextBlock | ReasoningBlock):
                into = texts if isinstance(b, TextBlock) else thoughts
                sent = "".join(into.get(c.index, ()))
                if b.text.startswith(sent) and len(b.text) > len(sent):
                    into.setdefault(c.index, []).append(b.text[len(sent):])
        elif isinstance(c, Usage):
            usage = c.usage
        elif isinstance(c, Finish):
            finish = c
    text = [f for i in sorted(texts) for f in texts[i] if f]
    reasoning = [f for i in sorted(thoughts) for f in thoughts[i] if f]
    tool_calls = tuple(
        ToolCall(id=calls[i][0], name=calls[i][1], arguments="".join(calls[i][2])) for i in sorted(calls)
    )
    first_args = [f for f in calls[min(calls)][2] if f] if calls else []
    split = FragmentPlan(text=_points(text), reasoning=_points(reasoning), arguments=_points(first_args))
    wire_usage = None
    if usage is not None:
        wire_usage = {
            "input_tokens": usage.input_tokens,
            "cache_creation_input_tokens": usage.cache_write_tokens or 0,
            "cache_read_input_tokens": usage.cache_read_tokens or 0,
            "output_tokens": usage.output_tokens,
        }
    if failure is None and finish is not None and not finish.reason.ok:
        failure = finish.reason.failure
        hang = hang or finish.reason.kind == "aborted"
    kind = finish.reason.kind if finish is not None else "stop"
    reply = Reply(content="".join(text), reasoning="".join(reasoning), tool_calls=tool_calls,
                  finish_reason=_FINISH_OF_KIND.get(kind, "stop"), usage=wire_usage)
    if hang:
        return ChunkReplay(reply=reply, split=split, end="hold")
    if failure is None:
        return ChunkReplay(reply=reply, split=split)
    code = str(failure.code)
    content = bool(text or reasoning or tool_calls)
    if code == "STREAM_CLOSED":
        return ChunkReplay(reply=reply, split=split, end="eof")
    if code in ("TRANSPORT", "TIMEOUT"):
        return ChunkReplay(reply=reply, split=split, end="reset")
    if code == "EMPTY_RESPONSE" and not content:
        return ChunkReplay(reply=reply, split=split)
    if code == "CONTENT_FILTER":
        return ChunkReplay(reply=dataclasses.replace(reply, finish_reason="content_filter"), split=split)
    pe = failure.provider_error
    status = failure.status or _STATUS_OF_CODE.get(code)
    etype = pe.type if pe is not None and pe.type else None
    if not content and status is not None and status >= 400:
        return ChunkReplay(reply=reply, split=split, end="http", status=status, error_type=etype,
                           message=failure.message)
    return ChunkReplay(reply=reply, split=split, end="error_event", error_type=etype or "api_error",
                       message=failure.message)
