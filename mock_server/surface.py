"""The contract of one wire the mock server speaks, and the immutable context of one model call.

A :class:`Surface` owns everything that differs between wires: the paths it serves, how a key
is checked, how a body is validated (into the :class:`ChatRequest` every wire shares, so
routing, default replies and scripts need no second path), the headers every response
carries, its error envelope, how a reply, a logged call and the pieces of each fault are
rendered, and where faults cut its streams. A request's handler validates with its surface,
routes, fixes a :class:`Call`, and :mod:`~dshkit.mock_server.respond` writes what the surface
rendered. The Chat Completions wire is :mod:`~dshkit.mock_server.chat`, the Anthropic Messages
wire :mod:`~dshkit.mock_server.anthropic.surface`; a third is one more module like them and one
entry in `app.SURFACES` (docs/mock_server.md, "Adding a wire").
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from dshkit.mock_server.exchange import JSON_HEADERS, SSE_HEADERS
from dshkit.mock_server.generate.encode import Framing
from dshkit.mock_server.generate.reply import Reply
from dshkit.mock_server.output import Rendering
from dshkit.mock_server.scripts import ChunksSpec, FaultStep, StreamSpec
from dshkit.mock_server.validation import ChatRequest

if TYPE_CHECKING:
    from dshkit.harness.llm import LlmFailure, StreamChunk
    from dshkit.mock_server.runtime import ServerConfig

__all__ = ["Body", "Call", "Cuts", "Replay", "Surface", "json_body"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """One request as it is answered: fixed before the first byte, never changed after.

    The handler makes one when the request arrives (`request` None until it is validated) and
    a new one, with the routing fields, once a step answers it.
    """

    surface: Surface
    config: ServerConfig
    seq: int
    """The journal's sequence number of this request."""
    trace_id: str
    """This response's trace id (DeepSeek's `x-ds-trace-id`)."""
    request: ChatRequest | None = None
    seed: int = 0
    """The step's seed: ids, split plans and write plans derive from it."""
    repeat: int = 0
    """How many earlier requests of this session the same step (or the default reply)
    answered. Mixed into the completion id and generated tool-call ids so that each response
    has its own, as DeepSeek's do; split and write plans stay the step's."""
    quirks: frozenset[str] = frozenset()
    """The answering step's quirks."""
    created: int = 0
    """The response's `created` time (Unix seconds)."""

    @property
    def chat(self) -> ChatRequest:
        """The validated request (replies and faults are only served after validation)."""
        assert self.request is not None, "replies need a validated request"
        return self.request

    @property
    def streaming(self) -> bool:
        """Whether the answer is SSE: the request asked to stream (or was never validated)."""
        return self.request is None or self.request.stream


@dataclass(frozen=True, slots=True, kw_only=True)
class Body:
    """A whole response: status, headers and body bytes."""

    status: int
    data: bytes
    headers: Mapping[str, str] = field(default_factory=lambda: dict(JSON_HEADERS))
    error: dict[str, Any] | None = None
    """The error object the journal records (`entry.error`), for error bodies."""


def json_body(status: int, obj: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> Body:
    """A JSON response (raw non-ASCII text, as DeepSeek sends); its `error` object, if any, is
    what the journal records."""
    err = obj.get("error")
    return Body(
        status=status,
        data=json.dumps(obj, ensure_ascii=False).encode("utf-8"),
        headers={**JSON_HEADERS, **(headers or {})},
        error=dict(err) if isinstance(err, Mapping) else None,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Replay:
    """A logged call as this wire sends it: a whole body, or events and how the stream ends."""

    body: Body | None = None
    """Sent instead of a stream (an HTTP error, or a non-streaming body)."""
    events: Sequence[bytes] = ()
    headers: Mapping[str, str] = field(default_factory=dict)
    end: Literal["close", "eof", "hold", "reset"] = "close"
    """`close`/`eof` end the body cleanly (`eof`: the call did not finish); `hold` keeps the
    connection open until the client leaves; `reset` drops it (before the headers when there
    are no events)."""


@dataclass(frozen=True, slots=True)
class Cuts:
    """Where this wire's streams are cut by the faults that stop in the middle of a reply."""

    reasoning: int
    """Events before the first reasoning delta (`reasoning_stall` sends these, then
    `after_events` reasoning deltas)."""
    first_argument: int
    """Events up to and including a tool call's first argument fragment (`partial_tool_eof`)."""


class Surface(ABC):
    """One wire: its requests, its rendering, its errors and its faults' pieces."""

    name: ClassVar[str]
    """A short name for messages and cache keys (`chat`, `anthropic`)."""
    paths: ClassVar[tuple[str, ...]]
    """The POST paths of this wire's model calls (a query string is ignored)."""
    cuts: ClassVar[Cuts]
    stream_headers: ClassVar[Mapping[str, str]] = SSE_HEADERS
    """The headers of a 200 streamed response (an event stream, unless the wire says otherwise)."""
    validates_body_only: ClassVar[bool] = False
    """Whether `validate`'s result depends on nothing but the body bytes, the path and the
    server's settings (the headers reaching only `view.headers`), so the fast path may validate
    each distinct body once (`ValidationCache`). A wire that reads its headers leaves it False; a
    subclass of a built-in wire whose `validate` reads them sets it False."""

    # -- requests ------------------------------------------------------------------------

    @abstractmethod
    def authorize(self, headers: Mapping[str, str], api_key: str | None) -> None:
        """Raise a 401 :class:`~dshkit.mock_server.validation.Rejection` unless the request
        carries `api_key` (None: the server takes any key)."""

    @abstractmethod
    def validate(
        self, raw: bytes, *, path: str, headers: Mapping[str, str], config: ServerConfig
    ) -> ChatRequest:
        """The request body as a :class:`ChatRequest`, or a Rejection naming the first problem."""

    @abstractmethod
    def response_headers(self, trace_id: str) -> Mapping[str, str]:
        """Headers every response on this wire carries (sent with errors and raw steps too)."""

    # -- errors --------------------------------------------------------------------------

    @abstractmethod
    def error(
        self, call: Call, status: int, message: str, type: str, code: str | None, headers: Mapping[str, str] | None
    ) -> Body:
        """An HTTP error in this wire's envelope (`type`/`code` as the chat route names them;
        `headers`: extra response headers such as `Retry-After`)."""

    def fault_type(self, status: int, type: str) -> str:
        """The `type` an HTTP fault with this status carries unless its step names one."""
        return type

    def fault_message(self, fault: str, message: str) -> str:
        """The wording of an HTTP fault on this wire (each wire words some errors its own way)."""
        return message

    # -- replies -------------------------------------------------------------------------

    @abstractmethod
    def stream(
        self, call: Call, reply: Reply, spec: StreamSpec, *, done: bool = True, logprobs: int | None = None
    ) -> Rendering[Any]:
        """A reply's SSE stream; `done=False` leaves out the end marker (`[DONE]`, `message_stop`)."""

    @abstractmethod
    def body(self, call: Call, reply: Reply, spec: StreamSpec, *, logprobs: int | None = None) -> Body:
        """A reply as the non-streaming response (normally 200 with the JSON body)."""

    @abstractmethod
    def replay(
        self, call: Call, chunks: Sequence[StreamChunk], failure: LlmFailure | None, spec: ChunksSpec
    ) -> Replay:
        """A logged call's chunks (and the failure that ends it) as this wire sends them."""

    # -- the pieces faults send ----------------------------------------------------------

    @abstractmethod
    def inband_error(self, call: Call, step: FaultStep, *, event_line: bool) -> bytes:
        """The error a stream carries after it started (`event_line`: the `event: error` form
        of `event_error`, where the wire has more than one)."""

    @abstractmethod
    def malformed(self, call: Call, what: Literal["json", "event"]) -> tuple[bytes, list[bytes]]:
        """A payload that is not JSON (`json`) or valid JSON of an invalid shape (`event`): as
        a whole body, and as the events of a stream that carries it and then ends."""

    @abstractmethod
    def done_unterminated(self, framing: Framing) -> bytes:
        """The stream's end marker missing its blank line, so a conforming parser never
        dispatches it."""
