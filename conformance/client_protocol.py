"""The client protocol: how `dshkit conformance --client CMD` talks to a driver, in any language.

A driver is a program that plays one scenario with a real client library. It reads one JSON
task on standard input (`clients/task.schema.json`), prints a `hello` line
(`clients/hello.schema.json`) once the library is loaded, then one `observation` line per model
call (`clients/observation.schema.json`) and exits 0; docs/client_protocol.md is the full text.
This module holds what both sides of that pipe agree on: the version, the three JSON Schemas
(the runner validates every line a driver prints against them), the task built from a scenario,
and which scenarios a client cannot be asked to play (`not_applicable`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Literal

import jsonschema

from .scenario import MessageSpec, RequestSpec, Scenario

__all__ = [
    "CLIENTS_DIR",
    "PROTOCOL_VERSION",
    "ProtocolViolation",
    "build_task",
    "describe_task",
    "features_used",
    "not_applicable",
    "parse_line",
    "schema",
    "validate_task",
]

PROTOCOL_VERSION = 1
CLIENTS_DIR = Path(__file__).resolve().parent / "clients"
"""The bundled drivers and the protocol's JSON Schemas."""

LineKind = Literal["hello", "observation"]


class ProtocolViolation(Exception):
    """A line a driver printed is not what the protocol says: where, and what is wrong."""


@cache
def schema(name: Literal["task", "hello", "observation"]) -> dict[str, Any]:
    """One of the protocol's JSON Schemas, as shipped beside the drivers."""
    loaded: dict[str, Any] = json.loads((CLIENTS_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))
    return loaded


@cache
def _validator(name: Literal["task", "hello", "observation"]) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema(name))


def _where(path: Sequence[Any]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "the line"


def _first_error(name: Literal["task", "hello", "observation"], value: Any) -> str | None:
    errors = sorted(_validator(name).iter_errors(value), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if not errors:
        return None
    err = errors[0]
    return f"`{_where(err.absolute_path)}`: {err.message}"


def parse_line(raw: bytes, lineno: int, *, expect: LineKind) -> dict[str, Any]:
    """One stdout line of a driver as a validated protocol message; `ProtocolViolation` names
    the line and what is wrong with it."""
    shown = raw[:200].decode("utf-8", "replace").rstrip("\r\n")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolViolation(f"stdout line {lineno} is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ProtocolViolation(f"stdout line {lineno} is not JSON ({exc}): {shown!r}") from None
    if not isinstance(value, dict):
        raise ProtocolViolation(f"stdout line {lineno} is JSON but not an object: {shown!r}")
    kind = value.get("type")
    if kind != expect:
        raise ProtocolViolation(
            f"stdout line {lineno} is a {kind!r} message where the protocol expects {expect!r}: {shown!r}"
        )
    problem = _first_error(expect, value)
    if problem is not None:
        raise ProtocolViolation(f"stdout line {lineno} ({expect}) violates the protocol schema at {problem}")
    return value


def validate_task(task: Mapping[str, Any]) -> None:
    """Raise ValueError if `task` is not a valid task (the runner checks its own output)."""
    problem = _first_error("task", task)
    if problem is not None:
        raise ValueError(f"invalid client task at {problem}")


def describe_task() -> dict[str, Any]:
    """The task that asks a driver only for its `hello` line."""
    return {"protocol_version": PROTOCOL_VERSION, "describe": True}


# --- the task of one scenario --------------------------------------------------------------------


def _content(m: MessageSpec) -> str | list[dict[str, str]]:
    if isinstance(m.content, str):
        return m.content
    return [{"type": "text", "text": b.text or ""} for b in m.content]


def _message(m: MessageSpec, thinking: bool | None) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "content": _content(m)}
    if m.role == "assistant":
        # DeepSeek wants the reasoning of every tool-call turn back in thinking mode; a user who
        # holds none sends "" (accepted, rq01), as dshkit's adapter does.
        missing = m.reasoning is None and m.tool_calls and thinking is not False
        out["reasoning"] = "" if missing else m.reasoning
        out["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in m.tool_calls]
    if m.role == "tool":
        out["tool_call_id"] = m.tool_call_id
        out["is_error"] = m.is_error
    return out


def _thinking(req: RequestSpec) -> tuple[bool | None, str | None]:
    """(thinking, reasoning_effort) as a user of a client would ask: `off` is thinking off;
    `none` is DeepSeek's own spelling of the same and is sent as given; any other effort asks
    for thinking at that effort; no effort leaves both to the server."""
    effort = req.reasoning_effort
    if effort is None:
        return None, None
    if effort == "off":
        return False, None
    if effort == "none":
        return False, "none"
    return True, effort


def _called_tools(sc: Scenario) -> list[str]:
    """Tools the scenario's model calls but its request does not offer: a client library may
    refuse a call of a tool it was never given, while a model only calls offered ones."""
    offered = {t.name for t in sc.request.tools}
    names: list[str] = []
    for step in sc.steps:
        reply = step.wire.reply
        called = [c.name for c in (reply.tool_calls if reply is not None else [])]
        called += [b.name for b in step.expect.message or () if b.type == "tool-call" and b.name]
        for n in called:  # the reply's call and the expected block name the same tool: once each
            if n not in offered and n not in names:
                names.append(n)
    return names


def build_task(
    sc: Scenario, *, protocol: str, base_url: str, api_key: str, client_options: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The task that asks a driver to play `sc` against `base_url`."""
    req = sc.request
    thinking, effort = _thinking(req)
    choice: Any = req.tool_choice
    if choice is not None and choice not in ("auto", "none", "required"):
        choice = {"name": choice}
    return {
        "protocol_version": PROTOCOL_VERSION,
        "scenario": sc.id,
        "protocol": protocol,
        "base_url": base_url,
        "api_key": api_key,
        "model": req.model,
        "system": req.system,
        "messages": [_message(m, thinking) for m in req.messages],
        "tools": [
            {"name": t.name, "description": t.description, "parameters": t.parameters, "strict": t.strict}
            for t in req.tools
        ] + [
            {"name": n, "description": "", "parameters": {"type": "object", "properties": {}}, "strict": None}
            for n in _called_tools(sc)
        ],
        "options": {
            "thinking": thinking,
            "reasoning_effort": effort,
            "max_tokens": req.max_tokens,
            "temperature": req.temperature,
            "stop": req.stop,
            "tool_choice": choice,
        },
        "timeouts": {"connect_s": sc.connect_timeout_s, "read_s": sc.idle_timeout_s},
        "steps": [
            {"tool_results": list(s.tool_results or []), "then_user": s.then_user} for s in sc.steps
        ],
        "client_options": dict(client_options or {}),
    }


def features_used(sc: Scenario) -> set[str]:
    """The optional task fields `sc` relies on (the names a driver may list as `unsupported`)."""
    req = sc.request
    thinking, effort = _thinking(req)
    used: set[str] = set()
    if req.system is not None:
        used.add("system")
    if thinking is not None:
        used.add("thinking")
    if effort is not None:
        used.add("reasoning_effort")
    for name in ("max_tokens", "temperature", "stop", "tool_choice"):
        if getattr(req, name) is not None:
            used.add(name)
    if any(t.strict is not None for t in req.tools):
        used.add("strict_tools")
    for m in req.messages:
        if m.role == "user" and not isinstance(m.content, str):
            used.add("user_parts")
        if m.role == "system":
            used.add("system_in_history")
        if m.role == "assistant" and m.reasoning is not None:
            used.add("history_reasoning")
    return used


def _text(content: Any) -> Any:
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) if isinstance(p, Mapping) else str(p) for p in content)
    return content


def _rewritten(sc: Scenario) -> str | None:
    """Where the first request must differ from the history the task hands over: a rewrite
    dshkit's adapters make (an empty tool result sent as "(no output)", say)."""
    want = sc.steps[0].expect.request
    if want is None or want.messages is None:
        return None
    given: list[dict[str, Any]] = [{"role": "system", "content": sc.request.system}] if sc.request.system is not None else []
    given += [{"role": m.role, "content": _content(m)} for m in sc.request.messages]
    for i, (w, g) in enumerate(zip(want.messages, given, strict=False)):
        if "content" in w and w.get("role") != "assistant" and _text(w["content"]) != _text(g["content"]):
            return (f"dshkit's adapters rewrite messages[{i}] of the history ({json.dumps(_text(g['content']))} "
                    f"is sent as {json.dumps(_text(w['content']))}); a client library sends what it is given")
    return None


def not_applicable(sc: Scenario, hello: Mapping[str, Any] | None = None) -> str | None:
    """Why a client cannot be judged on `sc` (None when it can): the scenario is about a
    harness notion a client library does not have, about a decision dshkit's own adapters make
    before any request, or about a task field the driver says its library cannot send."""
    if any(s.abort is not None or s.cancel is not None for s in sc.steps):
        return "abort signals and task cancellation are harness notions, not part of the client protocol"
    if sc.request.purpose is not None:
        return f"the call purpose ({sc.request.purpose}) is a harness notion"
    if any(not isinstance(m.content, str) and any(b.text is None for b in m.content) for m in sc.request.messages):
        return "the history holds harness-only blocks (images, tool results or opaque blocks inside a message)"
    if "done_marker" in sc.requires:
        return "a client observation cannot tell `data: [DONE]` from EOF"
    for step in sc.steps:
        finish = step.expect.finish
        if finish is not None and finish.code is not None and finish.code.startswith("UNSUPPORTED_"):
            return f"dshkit's adapters refuse this request before sending it ({finish.code}); a client library sends what it is given"
        if step.expect.request is not None and not step.expect.request.sent:
            return "the scenario expects no request at all, a decision of dshkit's adapters"
    rewrite = _rewritten(sc)
    if rewrite is not None:
        return rewrite
    req = sc.request
    forced = req.tool_choice is not None and req.tool_choice not in ("auto", "none")
    if forced and req.reasoning_effort is None:
        return "turning thinking off for a forced tool choice is a decision of dshkit's adapters"
    unsupported = set((hello or {}).get("unsupported", ()))
    missing = sorted(features_used(sc) & unsupported)
    if missing:
        return "the library offers no way to send " + ", ".join(missing)
    return None
