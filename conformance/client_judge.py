"""Judging a client: its observations and the mock's journal, with the catalogue's own checks.

An observation (what the library surfaced for one model call) is turned into the stream chunks an
adapter would have produced for it: reasoning, text and tool calls as one block each, the usage,
and a finish. Those go through the same `check_assemble`, `check_finish` and `check_usage` as an
adapter's, and the request bodies the mock journaled go through `check_request`. What differs is
read the way a client can be held to it (docs/client_protocol.md, "How the catalogue reads for a
client"): a finish is the library's own finish reason, dshkit's failure classes (`code`,
`retryable`) are not asked for, an expected message needs only to appear in the error's text,
and a library may retry where an adapter must not, as long as it waits what `Retry-After` said.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

from dshkit.harness.llm import (
    BlockAssembler,
    Finish,
    FinishReason,
    LlmFailure,
    StreamChunk,
    TextBlock,
    TokenUsage,
    ToolCallBlock,
)
from dshkit.harness.llm.chunks import (
    BlockEnd,
    BlockStart,
    ProviderError,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from dshkit.harness.llm.messages import ReasoningBlock

from .checks import CheckResult, check_assemble, check_finish, check_request, check_usage, unified
from .scenario import BlockExpect, FinishExpect, Step

__all__ = [
    "RETRY_AFTER_SLACK_MS",
    "finish_kind",
    "judge_step",
    "observation_chunks",
    "observation_summary",
]

_STOP = frozenset({"stop", "end_turn", "stop_sequence"})
_TOOLS = frozenset({"tool_calls", "tool_use", "tool-calls", "tool_call", "function_call"})
_LENGTH = frozenset({"length", "max_tokens"})
NO_FINISH = "none (no finish reason and no error)"
"""The kind shown for an observation whose library reported neither a finish nor an error."""
RETRY_AFTER_SLACK_MS = 50.0
"""A retry may come this much before `Retry-After` elapsed (clock and rounding slack)."""
_OPTIONAL_USAGE = ("cacheReadTokens", "cacheWriteTokens", "reasoningTokens")


def finish_kind(obs: Mapping[str, Any]) -> str:
    """The catalogue's finish kind for an observation: `error` for a raised error or any finish
    reason that is not a normal end (content filter, refusal, a value never seen before)."""
    if obs.get("error") is not None:
        return "error"
    finish = obs.get("finish")
    if finish is None:
        return NO_FINISH
    if finish in _STOP:
        return "stop"
    if finish in _TOOLS:
        return "tool-calls"
    if finish in _LENGTH:
        return "max-tokens"
    return "error"


def _usage(raw: Mapping[str, Any] | None) -> TokenUsage | None:
    if raw is None:
        return None
    cached = raw.get("cache_read_tokens")
    if "prompt_tokens" in raw:
        inputs = int(raw["prompt_tokens"]) - int(cached or 0)
    else:
        inputs = int(raw["input_tokens"])
    reasoning = raw.get("reasoning_tokens")
    # A zero the wire may not have said and a field it left out mean the same to a user:
    # the catalogue's usage expectations are compared with zeros dropped on both sides.
    return TokenUsage(input_tokens=inputs, output_tokens=int(raw["output_tokens"]),
                      cache_read_tokens=cached or None, reasoning_tokens=reasoning or None)


def _failure(obs: Mapping[str, Any], kind: str) -> LlmFailure | None:
    err = obs.get("error")
    if err is None:
        if kind != "error":
            return None
        return LlmFailure(message=f"finish reason {obs.get('finish')!r}", code="FINISH_REASON")
    provider = err.get("provider") or None
    pe = None
    if provider is not None:
        code = provider.get("code")
        pe = ProviderError(type=provider.get("type"), code=None if code is None else str(code), param=provider.get("param"))
    return LlmFailure(message=str(err.get("message", "")), code=str(err.get("class", "")), status=err.get("status"),
                      provider_error=pe)


def observation_chunks(obs: Mapping[str, Any]) -> list[StreamChunk]:
    """The chunks an adapter would have streamed for what the observation says: reasoning, text,
    then each tool call as one block, the usage, and the finish."""
    out: list[StreamChunk] = []
    index = 0
    reasoning = obs.get("reasoning") or ""
    if reasoning:
        out += [BlockStart(index=index, block_type="reasoning"), ReasoningDelta(index=index, text=reasoning),
                BlockEnd(index=index, block=ReasoningBlock(text=reasoning))]
        index += 1
    content = obs.get("content") or ""
    if content:
        out += [BlockStart(index=index, block_type="text"), TextDelta(index=index, text=content),
                BlockEnd(index=index, block=TextBlock(text=content))]
        index += 1
    for call in obs.get("tool_calls") or ():
        cid, name, args = call.get("id") or "", call.get("name"), call.get("arguments", "")
        out += [BlockStart(index=index, block_type="tool-call"),
                ToolCallDelta(index=index, id=cid, name=name, arguments_delta=args),
                BlockEnd(index=index, block=ToolCallBlock(id=cid, name=name or "", arguments=args))]
        index += 1
    usage = _usage(obs.get("usage"))
    if usage is not None:
        out.append(Usage(usage=usage))
    kind = finish_kind(obs)
    out.append(Finish(reason=FinishReason(kind=kind, failure=_failure(obs, kind))))
    return out


def observation_summary(obs: Mapping[str, Any] | None) -> str:
    """How the call ended, in one line, shown under every failure diff."""
    if obs is None:
        return "no observation"
    err = obs.get("error")
    if err is not None:
        status = f" status={err.get('status')}" if err.get("status") is not None else ""
        return f"error {err.get('class')}{status} message={json.dumps(str(err.get('message', ''))[:160], ensure_ascii=False)}"
    if obs.get("finish") is None:
        return "no finish reason and no error"
    return f"finish {obs.get('finish')!r}"


# --- the checks, read for a client ---------------------------------------------------------------


def _named(res: CheckResult, i: int) -> CheckResult:
    name = f"step{i}.{res.name}"
    diff = res.diff.replace(f"expected/{res.name}", f"expected/{name}").replace(f"actual/{res.name}", f"actual/{name}")
    return CheckResult(name, res.ok, diff, res.info, res.summary)


def _client_finish(want: FinishExpect, obs: Mapping[str, Any], chunks: list[StreamChunk]) -> tuple[FinishExpect, list[StreamChunk], list[str]]:
    """The expectation and the chunks as `check_finish` compares them for a client."""
    notes: list[str] = []
    ignored = [k for k in ("code", "retryable", "request_id", "retry_after_ms", "no_retry_after")
               if getattr(want, k) not in (None, False)]
    if ignored:
        notes.append("not asked of a client: " + ", ".join(ignored) + " (dshkit's own classification)")
    want = want.model_copy(update={"code": None, "retryable": None, "request_id": None,
                                   "retry_after_ms": None, "no_retry_after": False})
    finish = chunks[-1]
    assert isinstance(finish, Finish)
    kind = finish.reason.kind
    streamed = bool(obs.get("content") or obs.get("reasoning") or obs.get("tool_calls"))
    if want.kind == "error" and kind == "stop" and not streamed and obs.get("finish") is not None:
        # dshkit calls an explicit `stop` with nothing streamed EMPTY_RESPONSE; a library that
        # reports the `stop` the wire sent is faithful to it.
        notes.append("an empty `stop` is what the wire said; dshkit's adapters call it EMPTY_RESPONSE")
        want = want.model_copy(update={"kind": "stop", "status": None, "message": None, "provider_error": None})
    failure = finish.reason.failure
    if failure is not None and want.message is not None:
        provider = (obs.get("error") or {}).get("provider") or {}
        texts = [failure.message, str(provider.get("message") or "")]
        if any(want.message in t for t in texts):
            failure = LlmFailure(message=want.message, code=failure.code, status=failure.status,
                                 provider_error=failure.provider_error)
            chunks = [*chunks[:-1], Finish(reason=FinishReason(kind=kind, failure=failure))]
    return want, chunks, notes


def _gist(diff: str, limit: int = 3) -> str:
    """A diff in one line: its first removed and added lines (expected, then actual)."""
    minus = [line[1:].strip() for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    plus = [line[1:].strip() for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]

    def shown(lines: list[str]) -> str:
        return " ".join(lines[:limit]).rstrip(",") + (" …" if len(lines) > limit else "") or "nothing"

    return f"expected {shown(minus)}, got {shown(plus)}"


def _own_error(i: int, obs: Mapping[str, Any]) -> CheckResult:
    err = obs.get("error")
    if err is None or err.get("own"):
        return CheckResult(f"step{i}.translate", True)
    why = f"the library let {err.get('class')} escape instead of one of its own error types"
    return CheckResult(f"step{i}.translate", False, unified(
        {"error": "one of the library's own error types"}, {"error": err.get("class"), "message": err.get("message")},
        f"step{i}.translate"), summary=why)


def _retries(i: int, want: FinishExpect | None, entries: Sequence[Any]) -> CheckResult:
    """Retries are the library's to make; one that comes before `Retry-After` elapsed fails."""
    name = f"step{i}.requests"
    if len(entries) <= 1:
        return CheckResult(name, True)
    gaps: list[float] = []
    for prev, nxt in pairwise(entries):
        ended = prev.last_write_t if prev.trimmed else (prev.writes[-1].t if prev.writes else prev.t)
        gaps.append(max(0.0, (nxt.t - (ended or prev.t)) * 1000.0))
    shown = ", ".join(f"{g:.0f} ms" for g in gaps)
    info = [f"the client sent {len(entries)} requests ({len(entries) - 1} retries, {shown} after the previous answer)"]
    wait = want.retry_after_ms if want is not None else None
    if wait is not None and min(gaps) + RETRY_AFTER_SLACK_MS < wait:
        why = f"retried {min(gaps):.0f} ms after the answer although Retry-After asked for {wait:.0f} ms"
        return CheckResult(name, False, unified({"retry delay": f">= {wait:.0f} ms (Retry-After)"},
                                                {"retry delays": shown}, name), info, summary=why)
    return CheckResult(name, True, info=info)


def _clip(text: str, n: int = 48) -> str:
    return json.dumps(text if len(text) <= n else text[: n - 1] + "…", ensure_ascii=False)


def _describe_expected(blocks: Sequence[BlockExpect]) -> str:
    parts = [f"{b.type} {_clip(b.text or '')}" if b.type != "tool-call"
             else f"call {b.name or '?'}({_clip(b.arguments or '')})" + (f" id {b.id}" if b.id else "") for b in blocks]
    return "; ".join(parts) or "no blocks"


def _describe(obs: Mapping[str, Any]) -> str:
    parts = [f"reasoning {_clip(obs['reasoning'])}"] if obs.get("reasoning") else []
    parts += [f"text {_clip(obs['content'])}"] if obs.get("content") else []
    parts += [f"call {c.get('name') or '?'}({_clip(str(c.get('arguments', '')))})" + (f" id {_clip(str(c['id']))}" if c.get("id") else "")
              for c in obs.get("tool_calls") or ()]
    return "; ".join(parts) or "no blocks"


def _as_value(arguments: str) -> str:
    """Tool arguments as canonical JSON ("" is `{}`); text that is not JSON stays as it is."""
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return arguments
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _by_value(obs: Mapping[str, Any], expected: list[BlockExpect]) -> tuple[dict[str, Any], list[BlockExpect]]:
    """The Anthropic wire sends a call's `input` back as an object, so its arguments are
    compared as JSON values there: a library that keeps only the parsed input loses nothing."""
    calls = [{**c, "arguments": _as_value(str(c.get("arguments", "")))} for c in obs.get("tool_calls") or ()]
    blocks = [b.model_copy(update={"arguments": _as_value(b.arguments)}) if b.arguments is not None else b
              for b in expected]
    return {**obs, "tool_calls": calls}, blocks


def judge_step(
    i: int, step: Step, obs: Mapping[str, Any], entries: Sequence[Any], *, thinking_off: bool,
    protocol: str = "chat",
) -> list[CheckResult]:
    """Every check of one step: the observation against the step's expectations, and the
    journal entries of its requests (the first, plus retries) against its request facts."""
    exp = step.expect
    if protocol == "anthropic" and exp.message is not None:
        obs, by_value = _by_value(obs, exp.message)
        exp = exp.model_copy(update={"message": by_value})
    chunks = observation_chunks(obs)
    out = [_own_error(i, obs), _retries(i, exp.finish, entries)]
    if exp.chunks is not None:
        out[0].info.append("the exact chunk sequence (dsh-exact) is an adapter's; a client is judged on the rest")
    assembler = BlockAssembler()
    for chunk in chunks:
        assembler.feed(chunk)
    if exp.message is not None:
        # On a `length` finish dshkit's adapters drop a tool call the limit may have cut; a
        # library shows what was sent, and its user must check the finish reason.
        expected = exp.message
        if exp.finish is not None and exp.finish.kind == "max-tokens" and obs.get("tool_calls"):
            trimmed = BlockAssembler()
            for chunk in observation_chunks({**obs, "tool_calls": []}):
                trimmed.feed(chunk)
            res = _named(check_assemble(trimmed, expected), i)
            res.info.append("the tool call before the `length` finish is not compared: a library shows what was sent")
        else:
            res = _named(check_assemble(assembler, expected), i)
        if not res.ok:
            res.summary = f"{res.name}: expected {_describe_expected(expected)}, got {_describe(obs)}"
        out.append(res)
    if exp.finish is not None:
        want, judged, notes = _client_finish(exp.finish, obs, chunks)
        res = _named(check_finish(judged, want), i)
        res.info += notes
        if not res.ok:
            gave = observation_summary(obs)
            res.summary = (f"{res.name}: expected finish {want.kind}, the library gave {gave}" if finish_kind(obs) != want.kind
                           else f"{res.name}: {_gist(res.diff)} (the library gave {gave})")
        out.append(res)
    if exp.usage is not None or exp.no_usage:
        usage = None if exp.usage is None else {k: v for k, v in exp.usage.items() if not (k in _OPTIONAL_USAGE and v == 0)}
        out.append(_named(check_usage(assembler, usage, exp.no_usage), i))
    if exp.meta is not None:
        out[0].info.append("the finish meta (ids, fingerprint, [DONE]) is not part of a client observation")
    if exp.request is not None:
        if not entries:
            out.append(CheckResult(f"step{i}.serialize", False, unified(
                {"requests sent": 1}, {"requests sent": 0}, f"step{i}.serialize")))
        else:
            e = entries[0]
            out.append(_named(check_request(e.body, e.headers, exp.request, thinking_off=thinking_off), i))
    for c in out:
        if not c.ok and not c.summary:
            c.summary = f"{c.name}: {_gist(c.diff)}"
    return out
