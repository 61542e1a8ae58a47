"""The checks: what an adapter produced, compared with a scenario's hand-written facts.

Each check is independent and named after the stage it judges: `translate` (the chunk stream
obeys the contract; the exact sequence for `dsh-exact` scenarios), `assemble` (blocks by type,
order, text and raw arguments), `finish` (kind and failure mapping), `usage`, `meta`, `serialize`
(the request body on the listed JSON paths) and `cancel`. A failed check carries a unified diff
of canonical JSON (sorted keys, two-space indent); differences outside the compared paths are
kept as information.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dshkit.harness.llm import BlockAssembler, Finish, StreamChunk
from dshkit.harness.llm.chunks import BlockEnd, ReasoningDelta, TextDelta, ToolCallDelta
from dshkit.harness.llm.codec import block_to_json, chunk_to_json, meta_to_json, usage_to_json
from dshkit.harness.llm.retry import is_retryable

from .scenario import BlockExpect, FieldCheck, FinishExpect, MetaExpect, RequestExpect

__all__ = [
    "ABSENT",
    "CheckResult",
    "canonical",
    "check_assemble",
    "check_finish",
    "check_meta",
    "check_request",
    "check_requests",
    "check_translate",
    "check_usage",
    "finish_summary",
    "get_path",
    "normalize_chunks",
    "unified",
]

ABSENT = "<absent>"


@dataclass(slots=True)
class CheckResult:
    """The verdict of one check on one step."""

    name: str
    ok: bool
    diff: str = ""
    info: list[str] = field(default_factory=list)
    summary: str = ""
    """One line naming the fault when the diff alone would mislead (e.g. a self-retry)."""


def canonical(value: Any) -> str:
    """Canonical JSON text: sorted keys, two-space indent, raw Unicode."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def unified(expected: Any, actual: Any, label: str) -> str:
    """A unified diff between the canonical JSON of `expected` and `actual`."""
    a = canonical(expected).splitlines(keepends=True)
    b = canonical(actual).splitlines(keepends=True)
    lines = list(difflib.unified_diff(a, b, f"expected/{label}", f"actual/{label}", n=3))
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _result(name: str, expected: Any, actual: Any, info: list[str] | None = None) -> CheckResult:
    if expected == actual:
        return CheckResult(name, True, info=info or [])
    return CheckResult(name, False, unified(expected, actual, name), info or [])


# --- translate ---------------------------------------------------------------------------------


def normalize_chunks(chunks: Sequence[StreamChunk]) -> list[dict[str, Any]]:
    """Chunks as DSH JSON, without what is free text or telemetry: the finish keeps its kind and
    its failure's code (and status); `meta` and `replayState` go."""
    out: list[dict[str, Any]] = []
    for c in chunks:
        j = chunk_to_json(c)
        if j["type"] == "finish":
            reason = dict(j["reason"])
            failure = reason.pop("failure", None)
            if isinstance(failure, dict):
                reason["failure"] = {k: failure[k] for k in ("code", "status") if k in failure}
            j = {"type": "finish", "reason": reason}
        out.append(j)
    return out


def check_translate(
    chunks: Sequence[StreamChunk], expected: list[dict[str, Any]] | None, *, cancelled: bool
) -> CheckResult:
    """The stream contract (one finish, last; no empty text or reasoning deltas; an index keeps
    its block type), then the exact sequence when the scenario pins it."""
    problems: list[str] = []
    finishes = [i for i, c in enumerate(chunks) if isinstance(c, Finish)]
    if not cancelled:
        if len(finishes) != 1:
            problems.append(f"the stream has {len(finishes)} finish chunks; it must end with exactly one")
        elif finishes[0] != len(chunks) - 1:
            problems.append(f"{len(chunks) - 1 - finishes[0]} chunk(s) came after the finish")
    elif finishes:
        problems.append("a cancelled stream yielded a finish instead of raising CancelledError")
    kinds: dict[int, str] = {}
    for i, c in enumerate(chunks):
        if isinstance(c, (TextDelta, ReasoningDelta)) and c.text == "":
            problems.append(f"chunk {i}: an empty {c.type} (empty strings must not become events)")
        if isinstance(c, (TextDelta, ReasoningDelta, ToolCallDelta)):
            kind = c.type
            if kinds.setdefault(c.index, kind) != kind:
                problems.append(f"chunk {i}: block index {c.index} carries {kind} after {kinds[c.index]}")
    problems += _sums(chunks)
    actual = normalize_chunks(chunks)
    if problems:
        return CheckResult("translate", False, "".join(f"! {p}\n" for p in problems)
                           + (unified(expected, actual, "chunks") if expected is not None else ""))
    if expected is None:
        return CheckResult("translate", True)
    return _result("translate", expected, actual)


def _sums(chunks: Sequence[StreamChunk]) -> list[str]:
    """Each block-end must carry exactly what its deltas added up to: a consumer that renders
    the deltas live and one that keeps the closed block must see the same text."""
    streamed: dict[int, list[str]] = {}
    for c in chunks:
        if isinstance(c, (TextDelta, ReasoningDelta)):
            streamed.setdefault(c.index, []).append(c.text)
        elif isinstance(c, ToolCallDelta):
            streamed.setdefault(c.index, []).append(c.arguments_delta)
    problems: list[str] = []
    for c in chunks:
        if not isinstance(c, BlockEnd) or c.index not in streamed:
            continue
        block = block_to_json(c.block)
        key = "arguments" if block.get("type") == "tool-call" else "text"
        joined = "".join(streamed[c.index])
        closed = block.get(key)
        if closed != joined:
            problems.append(
                f"block {c.index}: block-end {key} ({len(str(closed))} chars) is not the "
                f"{len(streamed[c.index])} deltas joined ({len(joined)} chars); "
                f"first difference at char {_first_difference(joined, str(closed))}"
            )
    return problems


def _first_difference(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


# --- assemble ----------------------------------------------------------------------------------


def _block_view(block: Any, want: BlockExpect | None) -> dict[str, Any]:
    j = block_to_json(block)
    if j.get("type") != "tool-call":
        return {"type": j.get("type"), "text": j.get("text")}
    view = {"type": "tool-call", "arguments": j.get("arguments")}
    for key in ("id", "name"):
        if want is None or getattr(want, key) is not None:
            view[key] = j.get(key)
    return view


def _expect_view(b: BlockExpect) -> dict[str, Any]:
    if b.type != "tool-call":
        return {"type": b.type, "text": b.text}
    view: dict[str, Any] = {"type": "tool-call", "arguments": b.arguments}
    if b.id is not None:
        view["id"] = b.id
    if b.name is not None:
        view["name"] = b.name
    return view


def check_assemble(assembler: BlockAssembler, expected: list[BlockExpect]) -> CheckResult:
    """Blocks by type and order, text and raw arguments byte for byte."""
    try:
        blocks = assembler.blocks()
    except Exception as exc:  # noqa: BLE001 - an unassemblable stream is a verdict, not a crash
        return CheckResult("assemble", False, f"! BlockAssembler failed: {exc}\n")
    actual = [_block_view(b, expected[i] if i < len(expected) else None) for i, b in enumerate(blocks)]
    return _result("assemble", [_expect_view(b) for b in expected], actual)


# --- finish ------------------------------------------------------------------------------------


def check_finish(chunks: Sequence[StreamChunk], want: FinishExpect) -> CheckResult:
    finish = next((c for c in reversed(chunks) if isinstance(c, Finish)), None)
    if finish is None:
        return CheckResult("finish", False, "! the stream ended without a finish chunk\n")
    reason = finish.reason
    failure = reason.failure
    expected: dict[str, Any] = {"kind": want.kind}
    actual: dict[str, Any] = {"kind": reason.kind}

    def pair(key: str, exp: Any, act: Any) -> None:
        expected[key] = exp
        actual[key] = act

    if want.code is not None:
        pair("code", want.code, failure.code if failure else None)
    if want.status is not None:
        pair("status", want.status, failure.status if failure else None)
    if want.message is not None:
        pair("message", want.message, failure.message if failure else None)
    if want.provider_error is not None:
        pe = failure.provider_error if failure else None
        got = {"type": pe.type, "code": pe.code, "param": pe.param} if pe else None
        pair("providerError", want.provider_error,
             {k: got.get(k) for k in want.provider_error} if got else None)
    if want.retry_after_ms is not None:
        pair("providerRetryAfterMs", want.retry_after_ms, failure.provider_retry_after_ms if failure else None)
    if want.no_retry_after:
        pair("providerRetryAfterMs", None, failure.provider_retry_after_ms if failure else None)
    if want.request_id is not None:
        pair("requestId", want.request_id, failure.request_id if failure else None)
    if want.retryable is not None:
        pair("retryable", want.retryable, is_retryable(failure) if failure else False)
    return _result("finish", expected, actual)


def finish_summary(chunks: Sequence[StreamChunk]) -> str:
    """The actual finish in one line (kind, code, status, message), shown under every failure
    so a diff on another check still says how the stream really ended."""
    finish = next((c for c in reversed(chunks) if isinstance(c, Finish)), None)
    if finish is None:
        return "no finish chunk"
    failure = finish.reason.failure
    if failure is None:
        return f"kind={finish.reason.kind}"
    status = f" status={failure.status}" if failure.status is not None else ""
    return f"kind={finish.reason.kind} code={failure.code}{status} message={json.dumps(failure.message, ensure_ascii=False)}"


def check_requests(count: int) -> CheckResult:
    """At most one request per step: an adapter that retries by itself is named as such,
    rather than surfacing as whatever the server answers the unexpected second request."""
    if count <= 1:
        return CheckResult("requests", True)
    why = (f"the adapter sent {count} requests for one step: it retries on its own "
           "(adapters must not retry; retrying is the loop's decision)")
    diff = unified({"requests for this step": "at most 1"},
                   {"requests for this step": count, "why": why}, "requests")
    return CheckResult("requests", False, diff, summary=why)


def check_usage(assembler: BlockAssembler, usage: dict[str, int] | None, none: bool) -> CheckResult:
    actual = usage_to_json(assembler.usage) if assembler.usage is not None else None
    return _result("usage", None if none else usage, actual)


def check_meta(chunks: Sequence[StreamChunk], want: MetaExpect) -> CheckResult:
    finish = next((c for c in reversed(chunks) if isinstance(c, Finish)), None)
    meta = meta_to_json(finish.meta) if finish is not None and finish.meta is not None else {}
    expected: dict[str, Any] = {}
    actual: dict[str, Any] = {}
    for attr, key in (("id", "id"), ("model", "model"), ("system_fingerprint", "systemFingerprint"),
                      ("done_missing", "doneMissing")):
        value = getattr(want, attr)
        if value is not None:
            expected[key] = value
            actual[key] = meta.get(key, False if key == "doneMissing" else None)
    return _result("meta", expected, actual)


# --- serialize ---------------------------------------------------------------------------------

_PATH_RE = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def get_path(body: Any, path: str) -> Any:
    """The value at a dotted path like `messages[1].tool_calls[0].id`, or `ABSENT`."""
    node = body
    for name, index in _PATH_RE.findall(path):
        if name:
            if not isinstance(node, Mapping) or name not in node:
                return ABSENT
            node = node[name]
        else:
            i = int(index)
            if not isinstance(node, list) or i >= len(node):
                return ABSENT
            node = node[i]
    return node


def _joined(content: Any) -> Any:
    """Message content as one string when it is a list of text parts (both forms are legal)."""
    if isinstance(content, list) and all(isinstance(p, Mapping) and p.get("type") == "text" for p in content):
        return "".join(str(p.get("text", "")) for p in content)
    return content


def _project(messages: Any, thinking_off: bool, content_at: Collection[int]) -> list[dict[str, Any]]:
    """The compared view of wire messages: roles and order, assistant content (null == ""),
    tool_calls id/name/arguments, reasoning_content of tool-call turns, tool_call_id, and the
    content of other messages at `content_at` (the ones whose expectation writes it)."""
    if not isinstance(messages, list):
        return [{"!": f"messages is {type(messages).__name__}, not a list"}]
    out: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            out.append({"!": repr(m)})
            continue
        view: dict[str, Any] = {"role": m.get("role", ABSENT)}
        if m.get("role") == "assistant":
            view["content"] = m.get("content") or ""
            calls = m.get("tool_calls")
            if calls:
                view["tool_calls"] = [
                    {
                        "id": c.get("id", ABSENT) if isinstance(c, Mapping) else repr(c),
                        "name": get_path(c, "function.name"),
                        "arguments": get_path(c, "function.arguments"),
                    }
                    for c in calls
                ]
                reasoning = m.get("reasoning_content", ABSENT)
                if thinking_off and reasoning in ("", None):
                    reasoning = ABSENT
                view["reasoning_content"] = reasoning
        elif i in content_at:
            view["content"] = _joined(m.get("content", ABSENT))
        if m.get("role") == "tool":
            view["tool_call_id"] = m.get("tool_call_id", ABSENT)
        out.append(view)
    return out


def _info(expected: list[dict[str, Any]], actual: Any) -> list[str]:
    """Differences on keys the expectation wrote but the projection does not compare."""
    notes: list[str] = []
    if not isinstance(actual, list):
        return notes
    for i, (want, got) in enumerate(zip(expected, actual, strict=False)):
        if not isinstance(got, Mapping):
            continue
        for key, value in want.items():
            if key in ("role", "content", "tool_calls", "tool_call_id"):
                continue
            if key == "reasoning_content" and want.get("tool_calls"):
                continue
            have = got.get(key, ABSENT)
            if have != value:
                notes.append(f"messages[{i}].{key}: expected {json.dumps(value, ensure_ascii=False)}, "
                             f"got {json.dumps(have, ensure_ascii=False)}")
        for key in got:
            if key not in want and key not in ("content", "type", "tool_calls"):
                notes.append(f"messages[{i}].{key}: sent {json.dumps(got[key], ensure_ascii=False)[:80]} "
                             "(not in the expectation)")
    return notes


def _field(body: Any, check: FieldCheck) -> tuple[Any, Any]:
    value = get_path(body, check.path)
    if check.absent:
        return ABSENT, value
    if check.one_of is not None:
        return ({"one of": check.one_of}, {"one of": check.one_of} if value in check.one_of else value)
    return check.equals, value


def check_request(
    body: Any, headers: Mapping[str, str] | None, want: RequestExpect, *, thinking_off: bool
) -> CheckResult:
    """A request body on the listed JSON paths; other differences are information."""
    expected: dict[str, Any] = {}
    actual: dict[str, Any] = {}
    info: list[str] = []
    if want.messages is not None:
        msgs = body.get("messages") if isinstance(body, Mapping) else None
        content_at = {i for i, m in enumerate(want.messages) if "content" in m}
        expected["messages"] = _project(want.messages, thinking_off, content_at)
        actual["messages"] = _project(msgs, thinking_off, content_at)
        info = _info(want.messages, msgs)
    for check in want.fields:
        exp, act = _field(body, check)
        expected[check.path] = exp
        actual[check.path] = act
    for name in want.headers_absent:
        expected[f"header {name.lower()}"] = ABSENT
        actual[f"header {name.lower()}"] = (headers or {}).get(name.lower(), ABSENT)
    for names in want.headers_present:
        choices = [n.strip().lower() for n in names.split("|") if n.strip()]
        expected[f"header {names.lower()}"] = "present"
        found = any(c in (headers or {}) for c in choices)
        actual[f"header {names.lower()}"] = "present" if found else ABSENT
    return _result("serialize", expected, actual, info)
