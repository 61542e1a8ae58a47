"""Validation of a Messages request, in the order DeepSeek checks it; the first problem wins.

Required and typed fields are checked the way DeepSeek's strict deserializer words it
("Failed to deserialize the JSON body into the target type: <path>: …"); unsupported content
blocks, unanswered `tool_use`, a lost thinking block on a tool-use turn and bad options are
rejected with DeepSeek's messages; :func:`map_model` says which DeepSeek model serves a
(possibly `claude…`) name. A valid request becomes the same :class:`ChatRequest` the chat route
builds, so defaults, routing and the generator need no second path.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from dshkit.mock_server.generate.reply import Era
from dshkit.mock_server.journal import redact_headers
from dshkit.mock_server.routing import RequestView
from dshkit.mock_server.validation import MODELS, ChatRequest, Rejection, parse_body, resolve_model

__all__ = ["PASSBACK_MESSAGE", "map_model", "validate_messages"]

#: DeepSeek's 400 when a tool-use turn lost its thinking block (corpus `ds01`, verbatim).
PASSBACK_MESSAGE = "The `content[].thinking` in the thinking mode must be passed back to the API."

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
#: The thinking types of the Messages API; DeepSeek honours `disabled` and treats the others as on.
_THINKING_TYPES = ("enabled", "disabled", "adaptive")
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_MAX_TOKENS_CEILING = 393_216
_CONTEXT = 1_048_576
_ONE_M = "[1m]"


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
        self.tool_use_ids: set[str] = set()  # every `tool_use` id of the conversation so far
        self.waiting: frozenset[str] = frozenset()  # the previous assistant turn's `tool_use` ids
        self.answered: set[str] = set()  # the ids this user turn's `tool_result`s answered

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
            if call_id in self.tool_use_ids:
                # A result could not say which call it answers (Anthropic's wording).
                raise Rejection(400, f"{bw}: `tool_use` ids must be unique (`{call_id}` is used twice)")
            self.tool_use_ids.add(call_id)
            if role == "assistant":
                self.pending.append(call_id)
        elif t == "tool_result":
            tid = _need(block, "tool_use_id", str, bw, "a string")
            if tid not in self.waiting:
                # As the chat route rejects an orphan tool message; Anthropic's wording.
                raise Rejection(
                    400,
                    f"{bw}: unexpected `tool_use_id` found in `tool_result` blocks: {tid}. Each "
                    "`tool_result` block must have a corresponding `tool_use` block in the "
                    "previous message.",
                )
            if tid in self.answered:
                raise Rejection(
                    400,
                    f"{bw}: each `tool_use` must have a single result. Found multiple "
                    f"`tool_result` blocks with id: {tid}",
                )
            self.answered.add(tid)
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
        self.waiting = frozenset(waiting) if role == "user" else frozenset()
        self.answered = set()
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
            missing = [c for c in waiting if c not in self.answered]
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
    if th["type"] not in _THINKING_TYPES:
        raise _bad(
            "thinking.type",
            f"unknown variant `{th['type']}`, expected one of {', '.join(f'`{t}`' for t in _THINKING_TYPES)}",
        )
    return bool(th["type"] != "disabled")  # AN33: `adaptive` is accepted and keeps it on


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
        if any(t["name"] == name for t in out):
            raise Rejection(400, f"{tw}: tool names must be unique (`{name}` is defined twice)")
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
    # `[]` (two characters) without an encoder built for it: most requests bring no tools.
    prompt_tokens = max(1, history.chars // 4 + 4 * len(messages) + (len(json.dumps(tools)) if tools else 2) // 8)
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
            path=path,
        ),
    )
