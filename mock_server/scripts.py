"""Scripts people write for the mock server: pydantic models, and a loader that locates errors.

A script is an ordered list of steps a session consumes; each step is a logical reply (turned
into wire chunks by :mod:`dshkit.mock_server.generate`), a named fault (:mod:`dshkit.mock_server.faults`) or
raw bytes served as written. Scripts come from YAML or JSON files or are built in Python; an
invalid one fails at load with the file, line, step and field named. This module is validated
once per load; nothing here runs per chunk.
"""

from __future__ import annotations

import base64
import difflib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from dshkit.harness.llm.errors import InputError
from dshkit.harness.llm.jsonio import JsonTooDeep
from dshkit.mock_server.generate.encode import Framing, frame_jsonl
from dshkit.mock_server.generate.reply import Reply, ToolCall
from dshkit.mock_server.generate.split import FragmentPlan, SplitPlan
from dshkit.mock_server.generate.writes import WritePlan, plan_writes
from dshkit.mock_server.locate import field_path, load_yaml, parse_document, yaml_line_of

if TYPE_CHECKING:
    import yaml  # imported where a YAML text is parsed: `dshkit serve` without a script never needs it

__all__ = [
    "DEFAULT_TITLE",
    "PURPOSES",
    "CallbackStep",
    "ChunksSpec",
    "ChunksStep",
    "FaultName",
    "FaultStep",
    "Match",
    "Purpose",
    "RawSpec",
    "RawStep",
    "RawWrite",
    "ReplySpec",
    "ReplyStep",
    "Script",
    "ScriptError",
    "SplitSpec",
    "Step",
    "StreamSpec",
    "Timing",
    "ToolCallSpec",
    "WriteSpec",
    "load_script",
    "load_scripts",
    "parse_script",
    "parse_scripts_text",
    "script_json_schema",
]

#: Every fault name a `fault:` step or `--sequence` accepts (upstream's names where they overlap).
FaultName = Literal[
    "auth_error",
    "connection_reset",
    "content_filter",
    "context_overflow",
    "crlf",
    "done_missing",
    "done_unterminated",
    "empty",
    "empty_body",
    "event_error",
    "garbage_line",
    "hold_after_finish",
    "inband_error",
    "insufficient_balance",
    "insufficient_system_resource",
    "invalid_parameters",
    "invalid_request",
    "keep_alive",
    "malformed_event",
    "malformed_json",
    "max_tokens",
    "model_not_exist",
    "overloaded",
    "partial_disconnect",
    "partial_eof",
    "partial_tool_eof",
    "quota_exceeded",
    "random",
    "rate_limit",
    "reasoning_passback",
    "reasoning_stall",
    "reasoning_success",
    "server_error",
    "service_unavailable",
    "slow_drip",
    "slow_headers",
    "slow_success",
    "split_writes",
    "stall",
    "stall_after",
    "stream_disconnect",
    "stream_eof",
    "success",
    "tool_call_success",
    "wrong_content_type",
]
QuirkName = Literal[
    "usage_chunk",
    "usage_key_absent",
    "reasoning_field",
    "mixed_reasoning",
    "repeat_tool_identity",
    "whole_tool_call",
    "empty_id_continuation",
    "explicit_nulls",
    "empty_tool_calls",
    "same_index",
    "missing_index",
    "missing_id",
    "index_offset",
    "interleave_tool_calls",
    "no_role_opener",
    "finish_repeated",
    "comments",
    "data_no_space",
    # The Anthropic surface's (dshkit.mock_server.anthropic.render.ANTHROPIC_QUIRKS); each surface ignores
    # the other's names.
    "thinking_start_signature",
    "no_pings",
    "many_pings",
    "padded_data",
    "delta_output_only",
    "delta_input_differs",
    "open_block_after_max_tokens",
    "data_only",
    "anthropic_ids",
    "anthropic_envelope",
    "deepseek_envelope",
]
FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "insufficient_system_resource"]
Purpose = Literal["main", "session-title", "compaction"]
"""What a model request is for, as recognised on the wire (`dshkit.mock_server.routing.purpose_of`):
`main` (a step of the agent's turn), `session-title` (DSH's auxiliary title request) or
`compaction` (a context-compaction call, sent with `x-deepseek-harness-compact: 1`)."""
PURPOSES: tuple[str, ...] = get_args(Purpose)
DEFAULT_TITLE = "Mock session title"
"""What a script answers DSH's session-title request with when no `auxiliary` step does."""
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class _Model(BaseModel):
    # defer_build: the validators are built on first use, not at import (a server started
    # without scripts never builds them, and is ready sooner).
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class ToolCallSpec(_Model):
    """One tool call the model makes."""

    name: str = Field(description="Function name, `[a-zA-Z0-9_-]{1,64}`.")
    arguments: dict[str, Any] | list[Any] | str = Field(
        default="{}",
        description="An object (encoded as `json.dumps` with `, `/`: ` separators and raw "
        "Unicode) or the exact raw string to stream, byte for byte (it need not be valid JSON).",
    )
    id: str | None = Field(default=None, description="Call id; default `call_0i_<24 alnum>`.")

    @field_validator("name")
    @classmethod
    def _check_name(cls, v: str) -> str:
        if not _TOOL_NAME.match(v):
            raise ValueError(f"tool name {v!r} must match [a-zA-Z0-9_-]{{1,64}}")
        return v

    def arguments_text(self) -> str:
        """The arguments exactly as they go on the wire."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False)


class ReplySpec(_Model):
    """A logical assistant reply."""

    content: str = ""
    reasoning: str = Field(default="", description="Sent only when thinking mode is on.")
    tool_calls: list[ToolCallSpec] = Field(default_factory=list)
    finish_reason: FinishReason | None = Field(
        default=None, description="Default: `tool_calls` with calls, else `stop`."
    )
    usage: dict[str, Any] | None = Field(
        default=None, description="Sent as is; default computed to obey wire.md §8."
    )
    logprobs: int | None = Field(
        default=None, ge=0, le=20, description="Force logprobs with this many top_logprobs."
    )

    def to_reply(self) -> Reply:
        """The generator's view of this reply."""
        return Reply(
            content=self.content,
            reasoning=self.reasoning,
            tool_calls=tuple(
                ToolCall(name=c.name, arguments=c.arguments_text(), id=c.id)
                for c in self.tool_calls
            ),
            finish_reason=self.finish_reason,
            usage=self.usage,
        )


class Match(_Model):
    """Conditions a request must meet for a step to answer it; all given ones must hold."""

    user: str | None = Field(
        default=None,
        description="Regex searched in the last user message (under DSH: its `Current runtime "
        "context…` snapshot, which follows the prompt).",
    )
    prompt: str | None = Field(
        default=None,
        description="Regex searched in the turn's prompt: the first user message after the last "
        "assistant message without tool calls (the user's task under DSH, on every step of its turn).",
    )
    tool_result: str | None = Field(
        default=None, description="A `tool` message answering this call id is in the history."
    )
    model: str | None = Field(default=None, description="The requested model id, exactly.")
    headers: dict[str, str] = Field(
        default_factory=dict, description="Header name → regex searched in its value."
    )
    body: Any = Field(
        default=None,
        description="The request body must equal this JSON value; a string `{{scrubbed:...}}` "
        "in it matches any value (cassettes replayed with `match: body`).",
    )

    @field_validator("user", "prompt")
    @classmethod
    def _check_user(cls, v: str | None) -> str | None:
        if v is not None:
            _compile(v)
        return v

    @field_validator("headers")
    @classmethod
    def _check_headers(cls, v: dict[str, str]) -> dict[str, str]:
        for pattern in v.values():
            _compile(pattern)
        return {k.lower(): p for k, p in v.items()}


def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as e:
        raise ValueError(f"invalid regex {pattern!r}: {e}") from None


class Timing(_Model):
    """When bytes go out."""

    headers_delay_ms: int = Field(default=0, ge=0, description="Wait before sending headers.")
    first_byte_delay_ms: int = Field(
        default=0,
        ge=0,
        description="Wait after headers before the first chunk, sending `: keep-alive` comments "
        "(blank lines for non-streaming replies) every `keep_alive_interval_ms`.",
    )
    keep_alive_interval_ms: int = Field(default=50, ge=1)
    chunk_delay_ms: int = Field(default=0, ge=0, description="Wait after every write.")


class SplitSpec(_Model):
    """How one kind of string is cut into delta fragments (see `SplitPlan`)."""

    mode: Literal["tokens", "fixed", "points", "random", "whole"] = "tokens"
    size: int = Field(default=4, ge=1)
    points: list[int] = Field(default_factory=list)
    min_size: int = Field(default=1, ge=1)
    max_size: int = Field(default=8, ge=1)

    def to_plan(self) -> SplitPlan:
        return SplitPlan(
            mode=self.mode,
            size=self.size,
            points=tuple(self.points),
            min_size=self.min_size,
            max_size=max(self.max_size, self.min_size),
        )


class WriteSpec(_Model):
    """How the SSE bytes are cut into network writes (see `WritePlan`)."""

    events_per_write: int = Field(default=1, ge=0)
    size: int | None = Field(default=None, ge=1)
    points: list[int] = Field(default_factory=list)
    random_max: int | None = Field(default=None, ge=1)
    inside_utf8: bool = False
    inside_escapes: bool = False

    def to_plan(self, seed: int) -> WritePlan:
        return WritePlan(
            events_per_write=self.events_per_write,
            size=self.size,
            points=tuple(self.points),
            random_max=self.random_max,
            seed=seed,
            inside_utf8=self.inside_utf8,
            inside_escapes=self.inside_escapes,
        )


#: The plans of a stream spec that names none (frozen, so one object serves every request).
_DEFAULT_FRAGMENTS = FragmentPlan.all(SplitPlan())


class StreamSpec(_Model):
    """Generator knobs for one step."""

    split: SplitSpec | None = Field(default=None, description="For text, reasoning and arguments.")
    text: SplitSpec | None = None
    reasoning: SplitSpec | None = None
    arguments: SplitSpec | None = None
    writes: WriteSpec = Field(default_factory=WriteSpec)
    framing: Framing = "lf"
    quirks: list[QuirkName] = Field(default_factory=list)
    thinking: bool | None = Field(
        default=None, description="Force thinking mode on or off; default follows the request."
    )
    seed: int | None = Field(default=None, description="Default: the server seed plus the step.")

    def fragment_plan(self) -> FragmentPlan:
        if self.split is None and self.text is None and self.reasoning is None and self.arguments is None:
            return _DEFAULT_FRAGMENTS  # most steps: built once, not on every request
        base = self.split.to_plan() if self.split else SplitPlan()
        return FragmentPlan(
            text=self.text.to_plan() if self.text else base,
            reasoning=self.reasoning.to_plan() if self.reasoning else base,
            arguments=self.arguments.to_plan() if self.arguments else base,
        )


class _StepBase(_Model):
    label: str | None = Field(default=None, description="A name for this step in messages.")
    purpose: Literal["session-title", "compaction"] | None = Field(
        default=None,
        description="Only on `auxiliary` steps (and required there): the side request this step "
        "answers.",
    )
    match: Match | None = None
    timing: Timing = Field(default_factory=Timing)


class ReplyStep(_StepBase):
    """Answer with a generated stream (or JSON body) for a logical reply."""

    reply: ReplySpec
    stream: StreamSpec = Field(default_factory=StreamSpec)


class FaultStep(_StepBase):
    """Answer with a named fault from the catalogue; the optional fields tune it."""

    fault: FaultName
    stream: StreamSpec = Field(default_factory=StreamSpec)
    text: str | None = Field(default=None, description="Answer text (success, partial_*).")
    reasoning: str | None = Field(default=None, description="Reasoning text (reasoning_*).")
    after_events: int = Field(default=2, ge=0, description="k for stall_after and mid-stream faults.")
    keep_alives: int = Field(default=3, ge=0, description="Comments sent by keep_alive.")
    status: int | None = Field(default=None, ge=100, le=599, description="HTTP error status.")
    message: str | None = Field(default=None, description="Error message.")
    type: str | None = Field(default=None, description="Error type.")
    code: str | None = Field(default=None, description="Error code.")
    retry_after: float | None = Field(default=None, ge=0, description="Seconds, for rate_limit.")
    request_id: str | None = Field(default=None, description="Sent as x-request-id on errors.")
    tool_name: str = "mock_tool"
    tool_arguments: str = '{"value": "mock"}'
    delay_ms: int | None = Field(default=None, ge=0, description="Delay used by slow faults.")


class RawWrite(_Model):
    """One network write: UTF-8 `text` or base64 `b64`, then an optional delay."""

    text: str | None = None
    b64: str | None = None
    delay_ms: float = Field(default=0, ge=0, description="Wait after this write (fractions allowed).")

    @model_validator(mode="after")
    def _one_payload(self) -> RawWrite:
        if (self.text is None) == (self.b64 is None):
            raise ValueError("a write needs exactly one of `text` or `b64`")
        if self.b64 is not None:
            try:
                base64.b64decode(self.b64, validate=True)
            except ValueError as e:
                raise ValueError(f"`b64` is not valid base64: {e}") from None
        return self

    def data(self) -> bytes:
        if self.text is not None:
            return self.text.encode("utf-8")
        return base64.b64decode(self.b64 or "")


class RawSpec(_Model):
    """Bytes served exactly as written: explicit writes, or a file of SSE bytes or JSONL chunks."""

    status: int = Field(default=200, ge=100, le=599)
    headers: dict[str, str] = Field(
        default_factory=lambda: {
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-cache",
        }
    )
    writes: list[RawWrite] = Field(default_factory=list)
    file: str | None = Field(
        default=None,
        description="A `.sse` file served byte for byte, or a `.jsonl` file of chunk lines "
        "framed as `data:` events plus `[DONE]` (wire.md S35); relative to the script file.",
    )
    framing: Framing = "lf"
    write_plan: WriteSpec | None = Field(
        default=None, description="How `file` bytes are cut into writes; default one per event."
    )
    first_write_delay_ms: float = Field(
        default=0,
        ge=0,
        description="Wait after the headers before the first write, sending nothing (unlike "
        "timing.first_byte_delay_ms, which sends keep-alive comments); replayed cassettes use it.",
    )
    end: Literal["eof", "reset"] = Field(
        default="eof",
        description="After the last write: `eof` ends the body cleanly; `reset` breaks the "
        "connection (a replayed cassette exchange whose upstream was cut mid-body).",
    )
    _file_bytes: bytes | None = PrivateAttr(default=None)
    _planned: dict[int, list[tuple[bytes, float]]] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _writes_or_file(self) -> RawSpec:
        if self.writes and self.file:
            raise ValueError("give either `writes` or `file`, not both")
        return self

    def load_file(self, base: Path | None) -> None:
        """Read `file` (relative to `base`) once, so serving it never touches the disk."""
        if self.file is None:
            return
        path = Path(self.file)
        if not path.is_absolute() and base is not None:
            path = base / path
        data = path.read_bytes()
        if path.suffix == ".jsonl":
            data = frame_jsonl(data, self.framing)
        self._file_bytes = data

    def file_data(self) -> bytes:
        """The bytes `file` serves (framed as SSE for a `.jsonl` file), read once; every write
        plan cuts exactly these."""
        if self._file_bytes is None:
            self.load_file(None)
        return self._file_bytes or b""

    def writes_with_delays(self, seed: int = 0) -> list[tuple[bytes, float]]:
        """The writes to send, each with the delay after it in seconds."""
        if self.file is not None:
            if self._file_bytes is None:
                self.load_file(None)
            spec = self.write_plan or WriteSpec()
            key = seed if spec.random_max else 0  # only random cuts depend on the seed
            cached = self._planned.get(key)
            if cached is None:
                cached = [(w, 0.0) for w in plan_writes(self._file_bytes or b"", spec.to_plan(seed))]
                self._planned[key] = cached
            return cached
        cached = self._planned.get(0)
        if cached is None:  # decoded once, not per request (a replayed cassette has many writes)
            cached = self._planned[0] = [(w.data(), w.delay_ms / 1000) for w in self.writes]
        return cached


class RawStep(_StepBase):
    """Answer with raw bytes."""

    raw: RawSpec


class ChunksSpec(_Model):
    """One logged model call replayed as SSE: `StreamChunk`s (DSH JSON shapes) re-encoded as
    DeepSeek wire chunks (:mod:`dshkit.mock_server.chunk_wire`), like an upstream replay entry
    (dsh-testing.md §2.4–2.6). String leaves may hold `{{fromRequest:REGEX}}` placeholders (§2.7),
    filled from the live request's messages when the step is served."""

    kind: Literal["chunks", "throw", "hang"] = Field(
        default="chunks",
        description="`chunks` plays the chunks; `throw` plays them, then fails with `message` and "
        "`code`; `hang` plays them, then holds the stream open until the client leaves.",
    )
    chunks: list[dict[str, Any]] = Field(default_factory=list)
    message: str | None = Field(default=None, description="The failure message (`throw`).")
    code: str | None = Field(default=None, description="The failure code, e.g. AUTH (`throw`).")
    status: int | None = Field(default=None, ge=400, le=599, description="HTTP status (`throw`).")
    ready_file: str | None = Field(
        default=None, description="`hang`: an empty file created once the prefix is sent."
    )
    writes: WriteSpec = Field(default_factory=WriteSpec)
    framing: Framing = "lf"

    @model_validator(mode="after")
    def _check(self) -> ChunksSpec:
        from dshkit.harness.llm.codec import CodecError, chunk_from_json

        for i, chunk in enumerate(self.chunks):
            try:
                chunk_from_json(chunk, f"chunks[{i}]")
            except (CodecError, ValueError, TypeError, KeyError) as e:
                raise ValueError(f"chunks[{i}] is not a StreamChunk: {e}") from None
        if self.kind == "throw" and not (self.message and self.code):
            raise ValueError("a `throw` entry needs a non-empty `message` and `code`")
        return self


class ChunksStep(_StepBase):
    """Answer with a logged call's chunks, re-encoded as DeepSeek SSE."""

    chunks: ChunksSpec


class CallbackStep(_StepBase):
    """Answer with a step a Python function computes from the live request (Python scripts only:
    a file cannot hold one, and the script schema leaves it out).

    `call` takes the request's :class:`~dshkit.mock_server.routing.RequestView` (`body`, the
    parsed body as sent; `last_user`, `model`, `tool_results`, `headers` with credentials
    scrubbed) and returns reply text, a step mapping (`{"reply": {...}}`, `{"fault": "rate_limit"}`,
    ...) or a step model. A function that raises or returns anything else gets the client a 418
    `mock_callback_error` naming it, never a retryable 500.
    """

    call: Callable[[Any], Any]

    def resolve(self, request: Any) -> ReplyStep | FaultStep | RawStep | ChunksStep:
        """The concrete step `call` computes for `request`; ValueError naming what went wrong."""
        name = getattr(self.call, "__qualname__", repr(self.call))
        try:
            result = self.call(request)
        except Exception as e:  # the test's own function: reported to the client
            raise ValueError(f"the reply callback {name} raised {type(e).__name__}: {e}") from e
        if isinstance(result, str):
            return ReplyStep(reply=ReplySpec(content=result))
        if isinstance(result, ReplyStep | FaultStep | RawStep | ChunksStep):
            return result
        if isinstance(result, Mapping) and _step_kind(result) not in (None, "call"):
            try:
                step = _CONCRETE_STEP.validate_python(dict(result))
            except ValidationError as e:
                raise ValueError(f"the reply callback {name} returned an invalid step: "
                                 f"{_message_for(_first_error(e.errors()))}") from None
            return step
        raise ValueError(
            f"the reply callback {name} returned {type(result).__name__} {result!r:.80}; return "
            "reply text, a step mapping ({'reply': {...}}, {'fault': ...}) or a step model")


def _step_kind(v: Any) -> str | None:
    if isinstance(v, Mapping):
        kinds = [k for k in ("reply", "fault", "raw", "chunks", "call") if k in v]
        return kinds[0] if len(kinds) == 1 else None
    for cls, kind in (
        (ReplyStep, "reply"), (FaultStep, "fault"), (RawStep, "raw"), (ChunksStep, "chunks"),
        (CallbackStep, "call"),
    ):
        if isinstance(v, cls):
            return kind
    return None


Step = Annotated[
    Annotated[ReplyStep, Tag("reply")]
    | Annotated[FaultStep, Tag("fault")]
    | Annotated[RawStep, Tag("raw")]
    | Annotated[ChunksStep, Tag("chunks")]
    | Annotated[SkipJsonSchema[CallbackStep], Tag("call")],
    Discriminator(
        _step_kind,
        custom_error_type="step_kind",
        custom_error_message="a step needs exactly one of the keys `reply`, `fault`, `raw` or "
        "`chunks` "
        "(or is a bare fault name)",
    ),
]


_CONCRETE_STEP: TypeAdapter[ReplyStep | FaultStep | RawStep | ChunksStep] = TypeAdapter(
    Annotated[
        Annotated[ReplyStep, Tag("reply")]
        | Annotated[FaultStep, Tag("fault")]
        | Annotated[RawStep, Tag("raw")]
        | Annotated[ChunksStep, Tag("chunks")],
        Discriminator(_step_kind),
    ],
    config=ConfigDict(defer_build=True),  # built on first use, not while `dshkit serve` starts
)


class Script(_Model):
    """An ordered list of steps one session consumes."""

    name: str = Field(default="script", description="Named in errors and the journal.")
    session: str | None = Field(
        default=None, description="Reserve this script for one session id instead of the next "
        "new session."
    )
    repeat_last: bool = Field(default=False, description="Reuse the last step once all are used.")
    steps: list[Step] = Field(min_length=1)
    auxiliary: list[Step] = Field(
        default_factory=list,
        description="Steps answering auxiliary requests (each names its `purpose`) without "
        "consuming `steps`: the first unused one of the request's purpose answers, and the last "
        "one of a purpose repeats once all of them are used. Never reported as unused.",
    )
    title: str | None = Field(
        default=DEFAULT_TITLE,
        description="The reply to a `session-title` request no auxiliary step answers; null "
        "lets such a request consume `steps` like any other.",
    )
    recorded: bool = Field(
        default=False,
        description="The steps serve recorded exchanges (a replayed cassette sets it): a request "
        "for this script's session is served even when the mock's own validation would reject "
        "it, since the upstream it was recorded against accepted it.",
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        # A bare fault name is a fault step: `steps: [rate_limit, success]`.
        if isinstance(data, Mapping):
            data = dict(data)
            for key in ("steps", "auxiliary"):
                if isinstance(data.get(key), list):
                    data[key] = [{"fault": s} if isinstance(s, str) else {"call": s} if callable(s)
                                 and not isinstance(s, BaseModel) else s for s in data[key]]
        return data

    @field_validator("steps")
    @classmethod
    def _main_steps(cls, steps: list[Step]) -> list[Step]:
        for i, step in enumerate(steps):
            if step.purpose is not None:
                raise ValueError(
                    f"steps[{i}] sets `purpose`: move it to `auxiliary`, whose steps answer side "
                    "requests without consuming `steps`"
                )
        return steps

    @field_validator("auxiliary")
    @classmethod
    def _auxiliary_steps(cls, steps: list[Step]) -> list[Step]:
        for i, step in enumerate(steps):
            if step.purpose is None:
                raise ValueError(f"auxiliary[{i}] needs a `purpose`: session-title or compaction")
        return steps

    @classmethod
    def of(
        cls,
        *steps: str | Mapping[str, Any] | ReplyStep | FaultStep | RawStep | ChunksStep | CallbackStep
        | Callable[[Any], Any],
        **kw: Any,
    ) -> Script:
        """Build a script from fault names, step dicts, step models or reply callbacks (a
        function of the request: see :class:`CallbackStep`)."""
        return cls.model_validate({**kw, "steps": list(steps)})

    @classmethod
    def replies(cls, *contents: str, **kw: Any) -> Script:
        """A script of plain text replies, one per step."""
        return cls.of(*({"reply": {"content": c}} for c in contents), **kw)

    def step_label(self, index: int, *, auxiliary: bool = False) -> str:
        step = (self.auxiliary if auxiliary else self.steps)[index]
        kind = _step_kind(step) or "step"
        detail = step.label or (step.fault if isinstance(step, FaultStep) else
                                getattr(step.call, "__name__", kind) if isinstance(step, CallbackStep) else kind)
        where = f"auxiliary[{index}]" if auxiliary else f"[{index}]"
        return f"{self.name}{where} ({detail})"


class ScriptError(InputError):
    """An invalid script: what was wrong, where (file, line, step, field) and what to do."""

    default_source = "<script>"


_TAGS = frozenset({"reply", "fault", "raw", "chunks"})


def _strip_tag(loc: Sequence[int | str]) -> tuple[int | str, ...]:
    # pydantic puts the union tag right after the step index (`steps.0.reply.match.user`,
    # where `reply` is the tag, not the key); drop it so the path follows the document.
    if len(loc) > 2 and loc[0] in ("steps", "auxiliary") and isinstance(loc[1], int) and loc[2] in _TAGS:
        return (*loc[:2], *loc[3:])
    return tuple(loc)


def _hint_for(err: Mapping[str, Any]) -> str | None:
    t = err.get("type")
    if t == "extra_forbidden":
        return "remove the key, or check its spelling against mock_server/script.schema.json"
    if t == "literal_error" and err["loc"] and err["loc"][-1] == "fault":
        return "`dshkit serve --help` and the fault catalogue in docs/cli.md list every fault"
    if t == "step_kind":
        return "write `- reply: {content: ...}`, `- fault: rate_limit` or `- raw: {...}`"
    return None


def _fault_names() -> tuple[str, ...]:
    return get_args(FaultName)


def _known_keys() -> set[str]:
    """Every key a script may hold, at any depth (for "did you mean")."""
    keys: set[str] = set()
    pending: list[type[BaseModel]] = [_Model]
    while pending:
        model = pending.pop()
        pending.extend(model.__subclasses__())
        for name, info in model.model_fields.items():
            keys.add(info.alias or name)
    return keys


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    """` (did you mean `X`?)` for the closest choice, or "" when none is close."""
    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    return f" (did you mean `{close[0]}`?)" if close else ""


def _message_for(err: Mapping[str, Any]) -> str:
    """pydantic's message, made specific for the mistakes people make most: a misspelt key, a
    misspelt fault name, a step whose only key is a misspelt kind."""
    t = err.get("type")
    loc = err.get("loc") or ()
    if t == "extra_forbidden" and loc:
        key = str(loc[-1])
        return f"unknown key `{key}`" + _did_you_mean(key, _known_keys())
    if t == "literal_error" and loc and loc[-1] == "fault":
        name = str(err.get("input"))
        return f"unknown fault `{name}`" + _did_you_mean(name, _fault_names())
    if t == "step_kind" and isinstance(err.get("input"), Mapping):
        for key in err["input"]:
            hint = _did_you_mean(str(key), _TAGS)
            if hint and key not in _TAGS:
                return f"unknown step kind `{key}`{hint}"
    return str(err["msg"])


def _first_error(errors: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The error to report: an unknown key before a missing one (`stpes:` explains the missing
    `steps`), otherwise pydantic's first."""
    if any(err.get("type") == "missing" for err in errors):
        for err in errors:
            if err.get("type") == "extra_forbidden":
                return err
    return errors[0]


def parse_script(
    data: Any,
    *,
    source: str | None = None,
    text: str | None = None,
    base: Path | None = None,
    default_name: str | None = None,
    node: yaml.Node | None = None,
) -> Script:
    """Validate a parsed script (a mapping, or a bare list of steps) into a :class:`Script`.

    `text` is the original file text, used to find line numbers (or `node`, the script's own
    composed YAML node when it sits inside a larger file); `base` resolves raw files.
    Raises :class:`ScriptError` naming the first problem.
    """
    if isinstance(data, list):
        data = {"steps": data}
    if isinstance(data, Mapping) and default_name and "name" not in data:
        data = {**data, "name": default_name}
    if not isinstance(data, Mapping):
        raise ScriptError(
            f"a script must be a mapping with `steps` or a list of steps, got {type(data).__name__}",
            source=source,
            line=1,
        )
    try:
        script = Script.model_validate(data)
    except ValidationError as e:
        err = _first_error(e.errors())
        loc = _strip_tag(err["loc"])
        if node is None and text is not None:
            node = _compose(text)
        more = len(e.errors()) - 1
        message = _message_for(err) + (f" (and {more} more problem{'s' * (more > 1)})" if more else "")
        raise ScriptError(
            message,
            source=source,
            line=yaml_line_of(node, loc),
            field=field_path(loc) or None,
            hint=_hint_for(err),
        ) from None
    for key, steps in (("steps", script.steps), ("auxiliary", script.auxiliary)):
        for i, step in enumerate(steps):
            if isinstance(step, RawStep) and step.raw.file is not None:
                try:
                    step.raw.load_file(base)
                except OSError as e:
                    raise ScriptError(
                        f"cannot read raw file {step.raw.file!r}: {e.strerror}",
                        source=source,
                        field=f"{key}[{i}].raw.file",
                        hint="paths are relative to the script file",
                    ) from None
    return script


def _compose(text: str) -> yaml.Node | None:
    """The YAML node tree of a file (JSON is YAML too), for line numbers; None if unparsable."""
    import yaml

    try:
        return load_yaml(text)[1]
    except yaml.YAMLError:
        return None


def load_scripts(path: str | Path) -> list[Script]:
    """Load a YAML or JSON file holding one script, a list of steps, or `scripts: [...]`."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ScriptError(f"cannot read script file: {e.strerror}", source=str(p)) from None
    except UnicodeDecodeError as e:
        raise ScriptError(f"not UTF-8 text (byte {e.start}: {e.reason}); save the script as UTF-8",
                          source=str(p)) from None
    return parse_scripts_text(text, source=str(p), is_json=p.suffix == ".json", base=p.parent, stem=p.stem)


def parse_scripts_text(
    text: str, *, source: str, is_json: bool = False, base: Path | None = None, stem: str = "script"
) -> list[Script]:
    """The scripts of a file's text (see `load_scripts`), with the same located errors: JSON
    when `is_json`, else YAML; raw files resolve against `base`; unnamed scripts are named
    after `stem`."""
    import yaml

    root: yaml.Node | None = None
    try:
        # The depth guard first (jsonio's limit); YAML gives its data and node tree in one parse.
        parsed = parse_document(text, is_json=is_json, load_yaml=load_yaml)
        data, root = (parsed, None) if is_json else parsed
    except JsonTooDeep as e:
        raise ScriptError(e.problem, source=source, line=e.line) from None
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        line = getattr(e, "lineno", None)
        mark = getattr(e, "problem_mark", None)
        if mark is not None:
            line = mark.line + 1
        raise ScriptError(
            f"not valid {'JSON' if is_json else 'YAML'}: {e}", source=source, line=line
        ) from None
    if isinstance(data, Mapping) and "scripts" in data:
        items = data["scripts"]
        if not isinstance(items, list) or not items:
            raise ScriptError("`scripts` must be a non-empty list", source=source, field="scripts")
        if root is None:
            root = _compose(text)
        nodes: list[yaml.Node] = []
        if isinstance(root, yaml.MappingNode):
            for key, value in root.value:
                if isinstance(key, yaml.ScalarNode) and key.value == "scripts" and isinstance(value, yaml.SequenceNode):
                    nodes = value.value
        out = []
        for i, item in enumerate(items):
            try:
                out.append(
                    parse_script(
                        item, source=source, base=base, default_name=f"{stem}#{i}",
                        node=nodes[i] if i < len(nodes) else None,
                    )
                )
            except ScriptError as e:
                raise ScriptError(
                    e.message, source=source, line=e.line,
                    field=f"scripts[{i}].{e.field or ''}".rstrip("."), hint=e.hint,
                ) from None
        return out
    return [parse_script(data, source=source, text=text, base=base, default_name=stem, node=root)]


def load_script(path: str | Path) -> Script:
    """Load a file holding exactly one script."""
    scripts = load_scripts(path)
    if len(scripts) != 1:
        raise ScriptError(
            f"expected one script, found {len(scripts)}",
            source=str(path),
            hint="use load_scripts() for a file with `scripts: [...]`",
        )
    return scripts[0]


def script_json_schema() -> dict[str, Any]:
    """The JSON Schema of a script file, as committed in `mock_server/script.schema.json`."""
    schema = Script.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "dshkit mock server script"
    return schema

