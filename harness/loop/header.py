"""The request header: the part of a model request that is not history.

Each step builds a `RequestHeader` (model configuration, system text, visible tools) from the
agent's options and the prompt assembly, logs it as `request/header` when it differs from the last
one logged (reason `initial`, `resume` or `change`), and then reads it back from the log to build
the request, so nothing reaches the model without being logged first (the one rule).
`rebuild_requests` runs the same read-back over a finished log, DSH's auxiliary session-title
request (`session/title-llm-request`) included.

The log spells config keys in camelCase (`reasoningEffort`, `maxTokens`) as DSH does; that
spelling lives only in `RequestHeader.to_json`/`from_json`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dshkit.harness.llm import GenerateOptions, HarnessError, Message, ToolSchema
from dshkit.harness.llm.codec import message_from_json, tool_schema_from_json, tool_schema_to_json
from dshkit.harness.prompt.assembly import Assembly
from dshkit.harness.session import Session
from dshkit.harness.session.events import SessionEvent
from dshkit.harness.session.lossless import thaw_json

from .options import AgentOptions

__all__ = ["CALL_ENDERS", "HeaderLog", "RequestHeader", "rebuild_requests", "title_request"]

CALL_ENDERS = frozenset({
    "assistant/message", "llm/retry", "llm/retry-started", "request/header", "step/end", "step/start",
    "tool/call", "tool/result", "turn/end", "turn/start", "user/message",
})
"""Events after which a model call's chunks are over even without a `finish` chunk (a call cut by
an abort). Other events may sit between two chunks of one call: DSH logs `session/title` while
step 1 streams."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestHeader:
    """Model configuration, system text and visible tools of one request."""

    provider: str
    model: str
    reasoning_effort: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] | None = None
    system: str = ""
    tools: tuple[ToolSchema, ...] = ()

    @classmethod
    def build(cls, options: AgentOptions, assembly: Assembly) -> RequestHeader:
        return cls(
            provider=options.provider,
            model=options.model,
            reasoning_effort=options.reasoning_effort,
            temperature=options.temperature,
            max_tokens=options.max_tokens,
            stop=options.stop,
            system=assembly.system,
            tools=assembly.tools,
        )

    def to_json(self) -> dict[str, Any]:
        """The logged form: unset options and an empty system or tool list are left out."""
        config: dict[str, Any] = {"provider": self.provider, "model": self.model}
        if self.reasoning_effort is not None:
            config["reasoningEffort"] = self.reasoning_effort
        if self.temperature is not None:
            config["temperature"] = self.temperature
        if self.max_tokens is not None:
            config["maxTokens"] = self.max_tokens
        if self.stop is not None:
            config["stop"] = list(self.stop)
        header: dict[str, Any] = {"config": config}
        if self.system:
            header["system"] = self.system
        if self.tools:
            header["tools"] = [tool_schema_to_json(t) for t in self.tools]
        return header

    @classmethod
    def from_json(cls, header: Mapping[str, Any]) -> RequestHeader:
        """Read a logged header back; config keys dshkit does not use are ignored."""
        config = header["config"]
        stop = config.get("stop")
        return cls(
            provider=config["provider"],
            model=config["model"],
            reasoning_effort=config.get("reasoningEffort"),
            temperature=config.get("temperature"),
            max_tokens=config.get("maxTokens"),
            stop=tuple(stop) if stop is not None else None,
            system=header.get("system") or "",
            tools=tuple(
                tool_schema_from_json(t, f"header.tools[{i}]") for i, t in enumerate(header.get("tools", ()))
            ),
        )

    def request(
        self, messages: Sequence[Message], *, session_id: str, signal: asyncio.Event | None = None
    ) -> GenerateOptions:
        """The model request this header and `messages` make."""
        return GenerateOptions(
            provider=self.provider,
            model=self.model,
            messages=tuple(messages),
            system=self.system or None,
            tools=self.tools,
            reasoning_effort=self.reasoning_effort,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            stop=self.stop,
            signal=signal,
            session_id=session_id,
        )


class HeaderLog:
    """Logs each step's header when it changed and reads back the one in force."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._logged = False

    def log(self, header: RequestHeader) -> None:
        data = header.to_json()
        last = self._session.last_of("request/header")
        if not self._logged:
            reason = "initial" if last is None else "resume"
        elif last is not None and _canonical(thaw_json(last.data)["header"]) == _canonical(data):
            return
        else:
            reason = "change"
        self._session.append("request/header", {"header": data, "reason": reason})
        self._logged = True

    def read_back(self) -> RequestHeader:
        last = self._session.last_of("request/header")
        if last is None:
            raise HarnessError("no request/header has been logged", "REBUILD_FAILED")
        return RequestHeader.from_json(thaw_json(last.data)["header"])


def _canonical(header: Mapping[str, Any]) -> str:
    return json.dumps(header, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def rebuild_requests(events: Sequence[SessionEvent | Mapping[str, Any]], *, session_id: str) -> list[GenerateOptions]:
    """Rebuild, from a log alone, the `GenerateOptions` of every model call it records.

    For each attempt (a run of `assistant/chunk` events ending in a `finish`), the request is
    the last `request/header` before it plus `derive_messages()` over the events before its
    first chunk. Serialize the result with the same adapter configuration to get the bytes the
    adapter sent; a request that differs means something reached the model without being
    logged first.

    A `session/title-llm-request` (DSH asks a model for the session's title beside step 1) is a
    request of its own at its place in the log: its logged route, system text, messages and
    `maxTokens`, `purpose="session-title"` (thinking off) and no tools. Its answer is not
    logged as chunks, so it has no call of its own in the log.
    """
    replay = Session(end_seed=False)
    requests: list[GenerateOptions] = []
    header: Mapping[str, Any] | None = None
    in_call = False
    for raw in events:
        event = raw if isinstance(raw, SessionEvent) else None
        type_ = event.type if event is not None else raw["type"]  # type: ignore[index]
        data = thaw_json(event.data) if event is not None else raw["data"]  # type: ignore[index]
        if type_ == "request/header":
            header = data["header"]
        if type_ == "session/title-llm-request":
            seq = event.seq if event is not None else raw.get("seq")  # type: ignore[union-attr]
            requests.append(title_request(data, session_id=session_id, where=f"session/title-llm-request seq {seq}"))
        if type_ == "assistant/chunk":
            if not in_call:
                if header is None:
                    raise HarnessError("an assistant/chunk precedes any request/header", "REBUILD_FAILED")
                requests.append(
                    RequestHeader.from_json(header).request(replay.derive_messages(), session_id=session_id)
                )
                in_call = True
            if data["chunk"].get("type") == "finish":
                in_call = False
        elif type_ in CALL_ENDERS:
            in_call = False
        if event is not None:
            replay.append(
                event.type, event.data, surface_op=event.surface_op,
                source_event_seqs=event.source_event_seqs, ignorable=event.ignorable, time=event.time,
            )
        else:
            replay.append(
                type_, data, surface_op=raw.get("surfaceOp"),  # type: ignore[union-attr]
                source_event_seqs=raw.get("sourceEventSeqs"),  # type: ignore[union-attr]
                ignorable=bool(raw.get("ignorable")), time=raw.get("time"),  # type: ignore[union-attr]
            )
    return requests


def title_request(data: Mapping[str, Any], *, session_id: str, where: str = "session/title-llm-request") -> GenerateOptions:
    """The request a logged `session/title-llm-request` stands for (dsh-core.md §3.3: a
    session-title call has thinking off and no reasoning effort, whatever is configured)."""
    try:
        route = data["route"]
        if not isinstance(data["messages"], list):
            raise TypeError("messages must be a list")
        messages = tuple(message_from_json(m, f"{where}.messages[{i}]") for i, m in enumerate(data["messages"]))
        max_tokens = data.get("maxTokens")
        if not isinstance(route["provider"], str) or not isinstance(route["model"], str):
            raise TypeError("route.provider and route.model must be strings")
        if max_tokens is not None and (type(max_tokens) is not int or max_tokens <= 0):
            raise TypeError(f"maxTokens must be a positive integer, got {max_tokens!r}")
        system = data.get("system")
        if system is not None and not isinstance(system, str):
            raise TypeError("system must be a string")
    except (KeyError, TypeError, ValueError) as exc:
        raise HarnessError(f"{where}: cannot rebuild the title request ({type(exc).__name__}: {exc})",
                           "REBUILD_FAILED") from None
    return GenerateOptions(
        provider=route["provider"], model=route["model"], messages=messages, system=system or None,
        max_tokens=max_tokens, session_id=session_id, purpose="session-title",
    )
