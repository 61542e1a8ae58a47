"""Scenario files: the pydantic models of the catalogue and the loader that locates errors.

A scenario is one wire situation an adapter must survive, written as data: the request the
harness makes, what the mock server answers (a generated reply with fragmentation and dialect
quirks, a named fault, SSE events written by hand, an HTTP error, or a recording), and what the
adapter must make of it, stated as hand-written facts: the assembled blocks, the finish kind and
failure code, the usage, and for multi-step scenarios the next request body. Files hold a list of
scenarios; an invalid file fails at load with its path, line and field.

A scenario names the wire protocols it is written for (`protocols`: `chat`, DeepSeek's Chat
Completions, and/or `anthropic`, its Anthropic Messages surface). A generated `reply` or a named
`fault` is protocol-neutral (the mock renders it for the surface the request came to); where the
bytes or the request body differ, a step's `anthropic` block gives that protocol's own `wire`
and the `expect` fields that replace the neutral ones.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from dshkit.harness.llm.errors import InputError
from dshkit.harness.llm.jsonio import JsonTooDeep
from dshkit.mock_server.locate import field_path, load_yaml, parse_document, yaml_line_of
from dshkit.mock_server.scripts import FaultName, ReplySpec, StreamSpec, Timing, WriteSpec

__all__ = [
    "CAPABILITIES",
    "CAPABILITY_NOTES",
    "PROTOCOLS",
    "SCENARIO_DIR",
    "AbortSpec",
    "BlockExpect",
    "CancelSpec",
    "FieldCheck",
    "FinishExpect",
    "HttpSpec",
    "MessageSpec",
    "MetaExpect",
    "RecordingSpec",
    "RequestExpect",
    "RequestSpec",
    "Scenario",
    "ScenarioError",
    "ScenarioFile",
    "SseSpec",
    "Step",
    "StepExpect",
    "StepOverride",
    "ToolSpec",
    "Wire",
    "area_of",
    "checklist_ids",
    "load_catalogue",
    "load_scenario_file",
]

SCENARIO_DIR = Path(__file__).resolve().parent / "scenarios"

#: Capabilities a scenario may require; an adapter declares them on its `capabilities` object (a
#: missing attribute counts as supported). Beyond `AdapterCapabilities`: `done_marker`, the
#: adapter can tell `data: [DONE]` from EOF (so it can set `meta.doneMissing`); `strict_sse`, its
#: SSE decoder follows WHATWG on data-less blocks and a byte order mark; `error_usage`, it can
#: read the usage on the chunk that carries an in-band error.
Capability = Literal[
    "reasoning", "tool_calls", "parallel_tool_calls", "in_band_errors", "done_marker", "strict_sse",
    "error_usage",
]
CAPABILITIES: tuple[str, ...] = get_args(Capability)
#: What each capability means, quoted in the reason of an `n/a` verdict.
CAPABILITY_NOTES: dict[str, str] = {
    "reasoning": "streams reasoning as its own block",
    "tool_calls": "streams tool calls",
    "parallel_tool_calls": "streams several tool calls in one response",
    "in_band_errors": "turns an in-band error object or `event: error` into an error finish",
    "done_marker": "tells `data: [DONE]` from EOF",
    "strict_sse": "decodes SSE strictly (data-less blocks, byte order mark)",
    "error_usage": "reads the usage on the chunk that carries an in-band error",
}

#: The wire protocols a scenario can be written for: `chat` (Chat Completions, wire.md) and
#: `anthropic` (the Anthropic Messages surface, anthropic.md AN1–AN78).
Protocol = Literal["chat", "anthropic"]
PROTOCOLS: tuple[str, ...] = get_args(Protocol)
_CHAT_ONLY: list[Protocol] = ["chat"]

_TAG_RE = re.compile(
    r"^(A([1-9]|1[0-9]|2[0-4])|S([1-9]|[1-3][0-9]|4[01])|S21b|AN([1-9]|[1-6][0-9]|7[0-8])"
    r"|dsh-exact|by-design|area:[a-z][a-z0-9-]*|dsh:4\.[1-4]|quirk:[a-z0-9_-]+)$"
)
_CHECKLIST_RE = re.compile(r"^(A\d+|S\d+b?|AN\d+)$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --- the request side ----------------------------------------------------------------------


class ToolSpec(_Model):
    """A tool offered to the model."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    strict: bool | None = Field(default=None, description="DeepSeek strict mode; false is sent too.")


class ToolCallIn(_Model):
    """A tool call inside a history assistant message."""

    id: str
    name: str
    arguments: str = Field(description="The raw argument string, sent byte for byte.")


class BlockIn(_Model):
    """One content block of a history message, for the shapes a plain string cannot say."""

    text: str | None = None
    image: dict[str, Any] | None = Field(default=None, description="An image attachment.")
    opaque: dict[str, Any] | None = Field(default=None, description="A block of unknown type.")
    tool_result: dict[str, Any] | None = Field(
        default=None, description="`{tool_call_id, content}` inside a user message."
    )

    @model_validator(mode="after")
    def _one(self) -> BlockIn:
        given = [k for k in ("text", "image", "opaque", "tool_result") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("a block needs exactly one of `text`, `image`, `opaque`, `tool_result`")
        return self


class MessageSpec(_Model):
    """A history message the harness holds before the first request."""

    role: Literal["user", "system", "assistant", "tool"]
    content: str | list[BlockIn] = ""
    reasoning: str | None = Field(default=None, description="assistant: the reasoning text.")
    tool_calls: list[ToolCallIn] = Field(default_factory=list)
    tool_call_id: str | None = Field(default=None, description="tool: the call it answers.")
    is_error: bool = False

    @model_validator(mode="after")
    def _shape(self) -> MessageSpec:
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a `tool` message needs `tool_call_id`")
        if self.role != "tool" and self.tool_call_id is not None:
            raise ValueError("only `tool` messages take `tool_call_id`")
        if self.role != "assistant" and (self.reasoning is not None or self.tool_calls):
            raise ValueError("only `assistant` messages take `reasoning` and `tool_calls`")
        return self


class RequestSpec(_Model):
    """What the harness asks for in the first step (later steps extend the history)."""

    model: str = "deepseek-v4-flash"
    system: str | None = None
    messages: list[MessageSpec] = Field(
        default_factory=lambda: [MessageSpec(role="user", content="hi")]
    )
    tools: list[ToolSpec] = Field(default_factory=list)
    reasoning_effort: str | None = None
    tool_choice: str | None = Field(
        default=None, description="`auto`, `none`, `required`, or the name of an offered tool."
    )
    temperature: float | None = None
    max_tokens: int | None = None
    stop: list[str] | None = None
    purpose: Literal["compaction", "session-title"] | None = None


# --- the wire side -------------------------------------------------------------------------


class SseSpec(_Model):
    """SSE written by hand. Each event is a chunk mapping (framed as `data: <json>` plus a blank
    line) or a string written exactly as given. A mapping with a `delta` or `finish_reason` key
    but no `choices` is short for a full DeepSeek chunk with that delta. On the `anthropic`
    protocol a mapping is an Anthropic event, framed as `event: <its type>` + `data: <json>`."""

    events: list[dict[str, Any] | str]
    done: bool | None = Field(
        default=None,
        description="Append `data: [DONE]` and its blank line (default: on chat, off on anthropic).",
    )
    framing: Literal["lf", "crlf", "cr"] = "lf"
    writes: WriteSpec = Field(default_factory=WriteSpec, description="How bytes become writes.")
    write_delay_ms: int = Field(default=0, ge=0)
    status: int = Field(default=200, ge=100, le=599)
    headers: dict[str, str] | None = None
    model: str = "deepseek-v4-flash"
    id: str = "conf-0001"
    system_fingerprint: str = "fp_conformance"
    created: int = 1786000000


class HttpSpec(_Model):
    """A plain HTTP response (usually an error): status, headers and a JSON or text body."""

    status: int = Field(ge=100, le=599)
    headers: dict[str, str] = Field(default_factory=dict)
    body: dict[str, Any] | str = ""


class RecordingSpec(_Model):
    """A recorded body: `.sse` bytes served as is, or `.jsonl` chunk lines framed with `[DONE]`."""

    file: str = Field(description="Relative to the scenario file.")
    writes: WriteSpec | None = None


class Wire(_Model):
    """What the mock server answers with: exactly one of `reply`, `fault`, `sse`, `http`,
    `recording`."""

    reply: ReplySpec | None = None
    fault: FaultName | None = None
    fault_options: dict[str, Any] = Field(
        default_factory=dict, description="Tuning fields of a `fault` step (text, after_events…)."
    )
    sse: SseSpec | None = None
    http: HttpSpec | None = None
    recording: RecordingSpec | None = None
    stream: StreamSpec = Field(default_factory=StreamSpec)
    timing: Timing = Field(default_factory=Timing)

    @model_validator(mode="after")
    def _one_kind(self) -> Wire:
        given = [k for k in ("reply", "fault", "sse", "http", "recording") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                "a wire input needs exactly one of `reply`, `fault`, `sse`, `http`, `recording`"
                + (f" (got {', '.join(given)})" if given else "")
            )
        if self.fault_options and self.fault is None:
            raise ValueError("`fault_options` only goes with `fault`")
        return self


# --- expectations --------------------------------------------------------------------------


class BlockExpect(_Model):
    """One assembled block. Omitted `id`/`name` are not compared (e.g. a server sent no id)."""

    type: Literal["text", "reasoning", "tool-call"]
    text: str | None = None
    id: str | None = None
    name: str | None = None
    arguments: str | None = None

    @model_validator(mode="after")
    def _fields(self) -> BlockExpect:
        if self.type == "tool-call":
            if self.text is not None:
                raise ValueError("a tool-call block has `arguments`, not `text`")
            if self.arguments is None:
                raise ValueError("a tool-call block needs `arguments` (the raw string)")
        else:
            if self.text is None:
                raise ValueError(f"a {self.type} block needs `text`")
            if any(v is not None for v in (self.id, self.name, self.arguments)):
                raise ValueError(f"a {self.type} block takes only `text`")
        return self


class FinishExpect(_Model):
    """The finish: kind always; the failure fields that are given."""

    kind: Literal["stop", "tool-calls", "max-tokens", "error", "aborted"]
    code: str | None = None
    status: int | None = None
    message: str | None = None
    provider_error: dict[str, str | None] | None = None
    retry_after_ms: float | None = None
    no_retry_after: bool = False
    request_id: str | None = None
    retryable: bool | None = Field(
        default=None, description="Whether dshkit.harness.llm.is_retryable() says so for the failure."
    )


class MetaExpect(_Model):
    """Fields of the finish chunk's `meta` (dshkit extension); only given ones are compared."""

    id: str | None = None
    model: str | None = None
    system_fingerprint: str | None = None
    done_missing: bool | None = None


class FieldCheck(_Model):
    """A fact about one JSON path of a request body, e.g. `messages[1].content`."""

    path: str
    equals: Any = None
    one_of: list[Any] | None = None
    absent: bool = False

    @model_validator(mode="before")
    @classmethod
    def _remember_equals(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "equals" in data:
            data = {**data, "has_equals": True}
        return data

    has_equals: bool = False

    @model_validator(mode="after")
    def _one_op(self) -> FieldCheck:
        ops = [self.has_equals, self.one_of is not None, self.absent]
        if sum(ops) != 1:
            raise ValueError("a field check needs exactly one of `equals`, `one_of`, `absent: true`")
        return self


class RequestExpect(_Model):
    """The request body this step's call sent (read from the mock server's journal).

    `messages` are wire messages; they are compared on roles and order, assistant `content`
    (null and "" are the same), the `content` of other messages where the expectation writes it
    (a list of text parts counts as their joined text), `tool_calls` id/name/arguments byte for
    byte, `reasoning_content` of tool-call turns, and `tool_call_id`. Other differences are
    reported as information.
    """

    sent: bool = Field(default=True, description="False: no request may reach the server.")
    messages: list[dict[str, Any]] | None = None
    fields: list[FieldCheck] = Field(default_factory=list)
    headers_absent: list[str] = Field(default_factory=list)
    headers_present: list[str] = Field(
        default_factory=list,
        description="Headers the request must carry; `a|b` is satisfied by either name (values are "
        "not compared: the journal keeps credentials scrubbed, and a mock started with "
        "`api_key: required` checks the key itself).",
    )


class StepExpect(_Model):
    chunks: list[dict[str, Any]] | None = Field(
        default=None, description="The exact StreamChunk JSON sequence (only for `dsh-exact`)."
    )
    message: list[BlockExpect] | None = None
    finish: FinishExpect | None = None
    usage: dict[str, int] | None = Field(default=None, description="camelCase TokenUsage JSON.")
    no_usage: bool = False
    meta: MetaExpect | None = None
    request: RequestExpect | None = None
    cancelled: bool = Field(
        default=False, description="The consuming task was cancelled: CancelledError must escape."
    )

    @model_validator(mode="after")
    def _consistent(self) -> StepExpect:
        if self.no_usage and self.usage is not None:
            raise ValueError("`usage` and `no_usage` exclude each other")
        if self.cancelled and self.finish is not None:
            raise ValueError("a cancelled step has no finish to expect")
        if not self.cancelled and self.finish is None:
            raise ValueError("every step expects a `finish` (or `cancelled: true`)")
        return self


class AbortSpec(_Model):
    """Set `GenerateOptions.signal`: before the call, or after N chunks were received."""

    before: bool = False
    after_chunks: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _one(self) -> AbortSpec:
        if self.before == (self.after_chunks is not None):
            raise ValueError("an abort needs exactly one of `before: true` or `after_chunks`")
        return self


class CancelSpec(_Model):
    """Cancel the task consuming the stream after N chunks were received.

    `at: read` cancels while the adapter waits for the network (the CancelledError lands inside
    it); `at: chunk` cancels the consumer while it holds chunk N, between two chunks, so the
    adapter's generator is closed at its `yield` (GeneratorExit) and must still close the
    response."""

    after_chunks: int = Field(default=1, ge=1)
    at: Literal["read", "chunk"] = "read"


class StepOverride(_Model):
    """A step as one protocol sees it: its own wire input and the expectation fields that
    replace the neutral step's (given fields replace whole; the others stay)."""

    wire: Wire | None = None
    expect: dict[str, Any] = Field(default_factory=dict)


class Step(_Model):
    """One model call: what the server answers and what the adapter must make of it."""

    wire: Wire
    expect: StepExpect
    anthropic: StepOverride | None = Field(
        default=None, description="What differs on the `anthropic` protocol (wire, expectations)."
    )
    abort: AbortSpec | None = None
    cancel: CancelSpec | None = None
    tool_results: list[str] | None = Field(
        default=None,
        description="Results for this step's tool calls, in call order, sent in the next step "
        "(default: `ok` for each).",
    )
    then_user: str | None = Field(default=None, description="A user message after the results.")

    @model_validator(mode="after")
    def _cancel(self) -> Step:
        if self.cancel is not None and not self.expect.cancelled:
            raise ValueError("a step with `cancel` must expect `cancelled: true`")
        if self.abort is not None and self.cancel is not None:
            raise ValueError("`abort` and `cancel` exclude each other")
        if self.anthropic is not None:
            self.for_protocol("anthropic")  # an invalid merged expectation fails at load
        return self

    def for_protocol(self, protocol: str) -> Step:
        """This step as played on `protocol`: the override's wire and expectations applied."""
        over = self.anthropic if protocol == "anthropic" else None
        if over is None:
            return self
        expect = self.expect
        if over.expect:
            merged = {**self.expect.model_dump(exclude_unset=True), **over.expect}
            expect = StepExpect.model_validate(merged)
        return self.model_copy(update={"wire": over.wire or self.wire, "expect": expect, "anthropic": None})


class Scenario(_Model):
    """One catalogue entry."""

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    title: str
    tags: list[str]
    requires: list[Capability] = Field(default_factory=list)
    by_design: str | None = Field(
        default=None, description="Why dshkit departs from the checklist item here (reported)."
    )
    protocols: list[Protocol] = Field(
        default_factory=lambda: _CHAT_ONLY.copy(), min_length=1, description="The wire protocols it is written for."
    )
    endpoint: Literal["mock", "refused"] = "mock"
    api_key: Literal["any", "required"] = Field(
        default="any",
        description="`required`: the scenario's mock is started with the scenario's API key, so a "
        "request without it (or with another) gets the surface's 401.",
    )
    idle_timeout_s: float = Field(
        default=10.0, gt=0,
        description="Generous by default: a passing scenario never waits on it, and a loaded machine "
        "(several catalogues at once on 2 cores) can pause a stream for seconds; scenarios about "
        "stalls set a short one.",
    )
    connect_timeout_s: float = Field(default=10.0, gt=0)
    budget_s: float = Field(
        default=15.0, gt=0,
        description="Exceeding it is `fail: timeout`. Passing scenarios take well under a second "
        "alone, but several catalogues at once on 2 cores (`pytest -n 4`) stretch that tenfold.",
    )
    request: RequestSpec = Field(default_factory=RequestSpec)
    steps: list[Step] = Field(min_length=1)
    source: str = Field(default="", exclude=True, description="The file it came from.")

    @model_validator(mode="before")
    @classmethod
    def _single_step(cls, data: Any) -> Any:
        # A one-step scenario may write `wire`/`expect` (and friends) at the top level.
        if isinstance(data, Mapping) and "steps" not in data and ("wire" in data or "expect" in data):
            data = dict(data)
            step = {k: data.pop(k) for k in ("wire", "expect", "abort", "cancel", "tool_results", "then_user", "anthropic") if k in data}
            data["steps"] = [step]
        return data

    @field_validator("tags")
    @classmethod
    def _check_tags(cls, tags: list[str]) -> list[str]:
        bad = [t for t in tags if not _TAG_RE.match(t)]
        if bad:
            raise ValueError(
                f"unknown tag(s) {bad}: use checklist ids (A1-A24, S1-S41, S21b, AN1-AN78), `dsh-exact`, "
                "`by-design`, `area:<name>`, `dsh:4.1`-`dsh:4.4` or `quirk:<name>`"
            )
        if len(set(tags)) != len(tags):
            raise ValueError("a tag is listed twice")
        return tags

    @model_validator(mode="after")
    def _semantics(self) -> Scenario:
        if not any(_CHECKLIST_RE.match(t) for t in self.tags):
            raise ValueError("tag the scenario with at least one checklist id (A1…A24, S… or AN…)")
        if sum(t.startswith("area:") for t in self.tags) != 1:
            raise ValueError("a scenario has exactly one `area:` tag (give the file an `area`)")
        exact = "dsh-exact" in self.tags
        for i, step in enumerate(self.steps):
            if step.expect.chunks is not None and not exact:
                raise ValueError(f"steps[{i}].expect.chunks needs the `dsh-exact` tag")
        if exact and all(s.expect.chunks is None for s in self.steps):
            raise ValueError("a `dsh-exact` scenario gives `expect.chunks` for some step")
        if ("by-design" in self.tags) != (self.by_design is not None):
            raise ValueError("the `by-design` tag and the `by_design` note go together")
        return self

    @property
    def area(self) -> str:
        return area_of(self.tags)


class ScenarioFile(_Model):
    """A catalogue file: a default `area`, default `protocols` and a list of scenarios. `anchors`
    holds YAML anchors (shared usage objects and the like) and is otherwise ignored."""

    area: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9-]*$")
    protocols: list[Protocol] | None = None
    anchors: Any = None
    scenarios: list[Scenario] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _default_protocols(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and isinstance(data.get("protocols"), list):
            items = data.get("scenarios")
            if isinstance(items, list):
                data = dict(data)
                data["scenarios"] = [
                    {**s, "protocols": data["protocols"]} if isinstance(s, Mapping) and "protocols" not in s else s
                    for s in items
                ]
        return data

    @model_validator(mode="before")
    @classmethod
    def _area_tags(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and isinstance(data.get("area"), str):
            area = f"area:{data['area']}"
            items = data.get("scenarios")
            if isinstance(items, list):
                data = dict(data)
                data["scenarios"] = [
                    {**s, "tags": [*s["tags"], area]}
                    if isinstance(s, Mapping)
                    and isinstance(s.get("tags"), list)
                    and not any(isinstance(t, str) and t.startswith("area:") for t in s["tags"])
                    else s
                    for s in items
                ]
        return data


def area_of(tags: Iterable[str]) -> str:
    """The checklist area named by a scenario's `area:` tag."""
    return next((t.removeprefix("area:") for t in tags if t.startswith("area:")), "other")


def checklist_ids(tags: Iterable[str]) -> list[str]:
    return [t for t in tags if _CHECKLIST_RE.match(t)]


class ScenarioError(InputError):
    """An invalid scenario file: what was wrong, where (file, line, field) and what to do."""

    default_source = "<scenario>"


def _hint(err: Mapping[str, Any]) -> str | None:
    if err.get("type") == "extra_forbidden":
        return "remove the key or check its spelling; see docs/adapters.md for the scenario format"
    if err.get("type") == "literal_error":
        return "use one of the listed values"
    return None


def _load_yaml(text: str) -> Any:
    """A scenario file's data: the scripts' YAML reader (libyaml when built, with the
    pure-Python loader's located errors; alias bombs refused)."""
    return load_yaml(text)[0]


_PARSED: dict[tuple[str, str], tuple[Scenario, ...]] = {}
"""The scenarios of the files read so far, by path as given and the whole text read: the same
text at the same path is parsed and validated once per process (a process that runs the
catalogue many times, as a test suite or the pytest plugin's sessions do, read it each time;
the parse was most of a run's start). A changed file is a new key, whatever its timestamps.
The scenarios are frozen models, shared by every caller. Bounded: the oldest file is dropped
past :data:`_PARSED_FILES`."""
_PARSED_FILES = 64


def load_scenario_file(path: str | Path) -> list[Scenario]:
    """Load and validate one YAML or JSON scenario file; raises `ScenarioError`."""
    p = Path(path)
    source = str(p)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ScenarioError(f"cannot read the file: {e.strerror}", source=source) from None
    except UnicodeDecodeError as e:
        raise ScenarioError(f"not UTF-8 text (byte {e.start}: {e.reason}); save the file as UTF-8",
                            source=source) from None
    key = (source, text)
    scenarios = _PARSED.get(key)
    if scenarios is None:
        scenarios = _parse_scenarios(p, text)
        if len(_PARSED) >= _PARSED_FILES:
            del _PARSED[next(iter(_PARSED))]
        _PARSED[key] = scenarios
    for i, sc in enumerate(scenarios):  # the file system may have changed since the parse
        for j, step in enumerate(sc.steps):
            rec = step.wire.recording
            if rec is not None and not (p.parent / rec.file).is_file():
                raise ScenarioError(
                    f"recording {rec.file!r} does not exist", source=source,
                    field=f"scenarios[{i}].steps[{j}].wire.recording.file (scenario {sc.id})",
                    hint="paths are relative to the scenario file",
                )
    return list(scenarios)


def _parse_scenarios(p: Path, text: str) -> tuple[Scenario, ...]:
    source = str(p)
    try:
        data = parse_document(text, is_json=p.suffix == ".json", load_yaml=_load_yaml)
    except JsonTooDeep as e:
        raise ScenarioError(e.problem, source=source, line=e.line) from None
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else getattr(e, "lineno", None)
        raise ScenarioError(f"not valid {'JSON' if p.suffix == '.json' else 'YAML'}: {e}",
                            source=source, line=line) from None
    if not isinstance(data, Mapping):
        raise ScenarioError("a scenario file is a mapping with `scenarios: [...]`", source=source, line=1)
    try:
        parsed = ScenarioFile.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = tuple(err["loc"])
        node = None
        if p.suffix != ".json":
            try:
                node = yaml.compose(text, Loader=yaml.SafeLoader)
            except yaml.YAMLError:
                node = None
        field = field_path(loc)
        items = data.get("scenarios")
        if len(loc) >= 2 and loc[0] == "scenarios" and isinstance(loc[1], int) and isinstance(items, list):
            sid = items[loc[1]].get("id") if loc[1] < len(items) and isinstance(items[loc[1]], Mapping) else None
            if sid:
                field = f"{field} (scenario {sid})"
        more = len(e.errors()) - 1
        msg = err["msg"] + (f" (and {more} more problem{'s' * (more > 1)})" if more else "")
        raise ScenarioError(msg, source=source, line=yaml_line_of(node, loc, implicit_list="steps"), field=field or None,
                            hint=_hint(err)) from None
    return tuple(sc.model_copy(update={"source": source}) for sc in parsed.scenarios)


def load_catalogue(paths: Iterable[str | Path] | None = None) -> list[Scenario]:
    """Every scenario of the given files or folders (default: the bundled catalogue), in file
    order; ids must be unique across files."""
    files: list[Path] = []
    for entry in [SCENARIO_DIR] if paths is None else [Path(p) for p in paths]:
        if entry.is_dir():
            files += sorted(f for f in entry.iterdir() if f.suffix in (".yaml", ".yml", ".json"))
        else:
            files.append(entry)
    seen: dict[str, str] = {}
    out: list[Scenario] = []
    for f in files:
        for sc in load_scenario_file(f):
            if sc.id in seen:
                raise ScenarioError(f"scenario id {sc.id!r} is already used in {seen[sc.id]}",
                                    source=str(f), field="id")
            seen[sc.id] = str(f)
            out.append(sc)
    return out
