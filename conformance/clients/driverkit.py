"""The client protocol's plumbing for the Python drivers beside this file (standard library only).

A driver runs as a script with its library's interpreter (`.venv-clients` under `make clients`),
so it cannot import dshkit: this module is imported as a sibling. It keeps the real standard
output for protocol lines and points `sys.stdout` at standard error (libraries that print would
otherwise corrupt the protocol), reads the task, prints `hello` and observations, checks client
options, and describes an exception the way the observation schema wants. docs/client_protocol.md
is the protocol itself.
"""

from __future__ import annotations

import json
import platform
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TextIO

__all__ = ["Driver", "Observation", "chat_messages", "chat_tools", "describe_error", "result_for"]

PROTOCOL_VERSION = 1


def _versions(packages: Iterable[str]) -> dict[str, str]:
    out = {}
    for name in packages:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


@dataclass
class Observation:
    """What the library surfaced for one model call (the observation schema's fields)."""

    content: str = ""
    reasoning: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish: str | None = None
    usage: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    retries: int | None = None
    notes: list[str] = field(default_factory=list)

    def to_json(self, step: int) -> dict[str, Any]:
        return {"type": "observation", "step": step, "content": self.content, "reasoning": self.reasoning,
                "tool_calls": self.tool_calls, "finish": self.finish, "usage": self.usage, "error": self.error,
                "retries": self.retries, "notes": self.notes}


def describe_error(exc: BaseException, own: tuple[type[BaseException], ...]) -> dict[str, Any]:
    """The observation's `error` for `exc`: its class, message, the HTTP status and provider
    error object when the library attached them, and whether it is one of `own` types."""
    cls = type(exc)
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        status = getattr(exc, "status", None)
    provider = None
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error") if isinstance(body.get("error"), Mapping) else body
        provider = {k: inner.get(k) for k in ("type", "code", "message", "param") if k in inner}
        provider = {k: (v if v is None or isinstance(v, (str, int)) else str(v)) for k, v in provider.items()}
    return {"class": f"{cls.__module__.split('.')[0]}.{cls.__qualname__}", "message": str(exc),
            "status": status if isinstance(status, int) else None, "own": isinstance(exc, own),
            "provider": provider or None}


def chat_messages(task: Mapping[str, Any]) -> list[Any]:
    """The task's history as Chat Completions message dicts (for the drivers of that wire)."""
    out: list[Any] = [{"role": "system", "content": task["system"]}] if task["system"] is not None else []
    for m in task["messages"]:
        msg: dict[str, Any] = {"role": m["role"], "content": m["content"]}
        if m["role"] == "assistant":
            if m["reasoning"] is not None:
                msg["reasoning_content"] = m["reasoning"]
            if m["tool_calls"]:
                msg["tool_calls"] = [{"id": c["id"], "type": "function",
                                      "function": {"name": c["name"], "arguments": c["arguments"]}}
                                     for c in m["tool_calls"]]
        elif m["role"] == "tool":
            msg["tool_call_id"] = m["tool_call_id"]
        out.append(msg)
    return out


def chat_tools(task: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The task's tools as Chat Completions `tools` entries."""
    return [{"type": "function", "function": {
        "name": t["name"], "description": t["description"], "parameters": t["parameters"],
        **({"strict": t["strict"]} if t["strict"] is not None else {})}} for t in task["tools"]]


def chat_options(task: Mapping[str, Any]) -> dict[str, Any]:
    """The task's sampling options and `tool_choice` that are set, as Chat Completions request
    fields (a named function choice in its wire form); `thinking` is each library's own matter."""
    opts = task["options"]
    out = {name: opts[name] for name in ("reasoning_effort", "max_tokens", "temperature", "stop")
           if opts[name] is not None}
    choice = opts["tool_choice"]
    if choice is not None:
        out["tool_choice"] = choice if isinstance(choice, str) else {"type": "function", "function": choice}
    return out


def result_for(step: Mapping[str, Any], k: int) -> str:
    """The tool result to send for the k-th tool call of a step (`ok` past the given ones)."""
    results = step.get("tool_results") or []
    return str(results[k]) if k < len(results) else "ok"


class Driver:
    """One driver run: `task` is read at construction; `hello()` prints the hello line."""

    def __init__(self, client: str, *, protocols: list[str], packages: Iterable[str],
                 options: Mapping[str, str] | None = None, tries: list[dict[str, str]] | None = None,
                 unsupported: Iterable[str] = (), known: Mapping[str, str] | None = None) -> None:
        self._out: TextIO = sys.stdout
        sys.stdout = sys.stderr  # whatever the library prints goes to stderr
        self.task: dict[str, Any] = json.loads(sys.stdin.read())
        self.client = client
        self.protocols = protocols
        self.packages = list(packages)
        self.options_doc = dict(options or {})
        self.tries = tries or []
        self.unsupported = sorted(set(unsupported))
        self.known = dict(known or {})

    def _print(self, obj: Mapping[str, Any]) -> None:
        self._out.write(json.dumps(obj, ensure_ascii=False) + "\n")
        self._out.flush()

    def hello(self) -> bool:
        """Print `hello`; False when the task only asked for it (the driver then exits 0)."""
        self._print(self._hello(_versions(self.packages)))
        return not self.task.get("describe")

    def _hello(self, libraries: Mapping[str, str]) -> dict[str, Any]:
        return {"type": "hello", "protocol_version": PROTOCOL_VERSION, "client": self.client,
                "protocols": self.protocols, "libraries": dict(libraries),
                "runtime": f"python {platform.python_version()}", "options": self.options_doc,
                "tries": self.tries, "unsupported": self.unsupported, "known": self.known}

    def answer_describe(self) -> None:
        """Answer a describe request and exit 0, before the driver imports its library.

        Everything `hello` says is known without the import (versions come from the installed
        packages' metadata), and importing a client library is most of a driver's start-up CPU,
        so a describe run that never plays a scenario does not pay for it. A package that is not
        installed ends the describe with status 1, as the failed import would have: the runner
        then says the driver did not describe itself instead of failing every scenario later.
        A scenario run returns here and imports the library before its `hello`, inside the
        start-up time rather than the scenario's budget.
        """
        if not self.task.get("describe"):
            return
        libraries = _versions(self.packages)
        missing = [name for name, v in libraries.items() if v == "not installed"]
        if missing:
            sys.stderr.write(f"{self.client}: not installed: {', '.join(missing)}\n")
            raise SystemExit(1)
        self._print(self._hello(libraries))
        raise SystemExit(0)

    def options(self) -> dict[str, str]:
        """The task's client options; an undocumented one ends the run with status 2."""
        given = dict(self.task.get("client_options") or {})
        unknown = sorted(set(given) - set(self.options_doc))
        if unknown:
            known = ", ".join(self.options_doc) or "none"
            sys.stderr.write(f"{self.client}: unknown client option(s) {', '.join(unknown)}; known: {known}\n")
            raise SystemExit(2)
        return given

    def emit(self, step: int, obs: Observation) -> None:
        """Print the observation of call `step`."""
        self._print(obs.to_json(step))

    def play(self, call: Callable[[int, Mapping[str, Any]], Observation]) -> None:
        """Make each step's call in order and print its observation; stop after one that
        ended in an error. `call(k, step)` makes call k and extends the driver's history."""
        steps = self.task["steps"]
        for k, step in enumerate(steps):
            obs = call(k, step)
            self.emit(k, obs)
            if obs.error is not None:
                return
