"""What `dshkit decode` does: run a wire capture through the real decoder, translator and assembler.

A capture is a raw SSE body, JSONL with one chunk object per line, a JSON array of chunk
objects, or an HTTP error body. JSONL and JSON are framed as SSE and closed with `[DONE]` so
they take exactly the path live bytes take. Both of DeepSeek's wires are read: Chat Completions
chunks and Anthropic Messages events (`message_start` … `message_stop`; a non-streaming Message
body too), told apart by the payloads' shape unless `--protocol` says. The output is
deterministic: the message id is derived from a hash of the input, so two runs print the same
bytes.

Two other JSONL files a user is likely to hand it are recognised by their first line rather
than misread as chunk lines: a cassette (`{"type": "cassette"}`) decodes exchange by
exchange (each recorded body through the same path, an error status as the adapter maps it),
and a session log (`{"type": "session"}`) decodes model call by model call (its logged chunks
folded by the assembler, each checked against the step's logged `assistant/message`). Reading a
cassette needs the mock server's cassette format, so that part and the command itself live in the
application layer (`dshkit.decode`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Literal

from dshkit.harness.llm import BlockAssembler, Finish, StreamChunk, TextBlock, ToolCallBlock, jsonio
from dshkit.harness.llm.chunks import FinishMeta
from dshkit.harness.llm.codec import (
    chunk_to_json,
    finish_reason_to_json,
    message_to_json,
    meta_to_json,
    usage_to_json,
)
from dshkit.harness.llm.errors import CaptureError
from dshkit.harness.llm.messages import ModelSource, ReasoningBlock
from dshkit.harness.providers.anthropic import decoder as anthropic_decoder
from dshkit.harness.providers.anthropic.failures import (
    failure_from_response as anthropic_failure_from_response,
)
from dshkit.harness.providers.anthropic.translate import events_from_message
from dshkit.harness.providers.failures import failure_from_http
from dshkit.harness.providers.openai_chat.fast_decoder import FastStreamDecoder

__all__ = [
    "CaptureError",
    "DOCUMENT_FORMATS",
    "DecodeResult",
    "decode_capture",
    "decode_session_log",
    "detect_format",
    "detect_protocol",
    "document_format",
    "render_document",
    "render_pretty",
]

Format = Literal["sse", "jsonl", "json", "error", "cassette", "session"]
DOCUMENT_FORMATS: tuple[Format, ...] = ("cassette", "session")
"""Formats that are whole recorded documents, not one response."""
Protocol = Literal["chat", "anthropic"]
_ANTHROPIC_EVENTS = (b'"message_start"', b'"content_block_start"', b'"content_block_delta"', b'"message_delta"')


@dataclass(frozen=True, slots=True)
class DecodeResult:
    chunks: list[StreamChunk]
    assembler: BlockAssembler
    message_id: str
    format: Format
    protocol: Protocol = "chat"

    def to_json(self) -> dict[str, Any]:
        a = self.assembler
        meta = a.meta  # the last finish's
        model = (meta.model if meta else None) or "unknown"
        # Anthropic thinking signatures ride in the replay state; show them with the message.
        source = ModelSource(provider="deepseek", model=model, replay_state=a.replay_state)
        return {
            "chunks": [chunk_to_json(c) for c in self.chunks],
            "message": message_to_json(a.message(source, id=self.message_id)),
            "usage": usage_to_json(a.usage) if a.usage is not None else None,
            "finish": finish_reason_to_json(a.finish_reason),
            "meta": meta_to_json(meta or FinishMeta()),
        }


def _is_error_body(value: Any) -> bool:
    return isinstance(value, dict) and "error" in value and "choices" not in value


def document_format(data: bytes) -> Format | None:
    """`cassette` or `session` when the data's first line says it is that whole recorded
    document (read document by document, not as one response); None otherwise."""
    kind = _first_line_type(data)
    return kind if kind in DOCUMENT_FORMATS else None


def _first_line_type(data: bytes) -> Any:
    """The `type` of the first non-blank line when it is a JSON object, else None."""
    for number, line in enumerate(data.splitlines(), 1):
        if line.strip():
            try:
                value = jsonio.loads(line)
            except jsonio.JsonTooDeep as exc:
                raise CaptureError(f"line {number}: {exc.problem}") from None
            except ValueError as exc:
                header = _DOCUMENT_HEADER.search(line)
                if header is not None:  # a cassette or session header that is damaged: say so
                    raise CaptureError(f"line {number} starts like a {header.group(1).decode()} header but is "
                                       f"not JSON ({exc}); restore the file or fix that line") from None
                return None
            kind = value.get("type") if isinstance(value, dict) else None
            return kind if isinstance(kind, str) else None
    return None


_DOCUMENT_HEADER = re.compile(rb'^\s*\{\s*"type"\s*:\s*"(cassette|session)"')


def detect_format(data: bytes) -> Format:
    """Guess the capture's format (see `dshkit decode --help`); raises `CaptureError`."""
    kind = _first_line_type(data)
    if kind == "cassette":
        return "cassette"
    if kind == "session":
        return "session"
    text = data.lstrip()
    if text[:1] == b"[":
        return "json"
    if text[:1] == b"{":
        try:
            whole = jsonio.loads(data)
        except ValueError:
            whole = None
        if _is_error_body(whole):
            return "error"
        if isinstance(whole, dict) and whole.get("type") == "message":
            return "json"  # an Anthropic non-streaming Message body
        lines = [line for line in data.splitlines() if line.strip()]
        try:
            if all(isinstance(jsonio.loads(line), dict) for line in lines):
                return "jsonl"
        except ValueError:
            pass
    if b"data:" in data or text[:1] == b":":
        return "sse"
    raise CaptureError(
        "no SSE `data:` lines, JSON array, JSONL chunks or error body found; pass --format"
    )


def detect_protocol(data: bytes) -> Protocol:
    """`anthropic` when the capture holds Anthropic Messages events or a Message body (a
    `"type"` of `message_start`, `content_block_*`, `message_delta`, or a top-level
    `"type": "message"`), else `chat`."""
    if any(name in data for name in _ANTHROPIC_EVENTS):
        return "anthropic"
    text = data.lstrip()
    if text[:1] == b"{":
        try:
            whole = jsonio.loads(data)
        except ValueError:
            return "chat"
        if isinstance(whole, dict) and whole.get("type") == "message" and isinstance(whole.get("content"), list):
            return "anthropic"
    return "chat"


def _anthropic_objects(objects: list[Any]) -> list[Any]:
    """A Message body among the objects stands for the events of its stream."""
    out: list[Any] = []
    for o in objects:
        if isinstance(o, dict) and o.get("type") == "message":
            out += events_from_message(o)
        else:
            out.append(o)
    return out


def _decode_anthropic(data: bytes, objects: list[Any] | None) -> list[StreamChunk]:
    decoder = anthropic_decoder.FastStreamDecoder()  # the adapter's own decoder
    if objects is None:
        return decoder.feed(data) + decoder.close()
    chunks: list[StreamChunk] = []
    for o in _anthropic_objects(objects):
        chunks += decoder.translator.feed(o)
        if decoder.finished:
            break
    return chunks + decoder.close()


def _frame(objects: list[Any]) -> bytes:
    parts = [b"data: " + jsonio.dumps(o, compact=False).encode() + b"\n\n" for o in objects]
    parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


def decode_capture(
    data: bytes, *, format: Format | None = None, status: int | None = None, protocol: Protocol | None = None
) -> DecodeResult:
    """Decode a capture. A bad payload is a `MALFORMED_RESPONSE` finish, not an exception;
    `CaptureError` only when the bytes are no capture at all."""
    if not data.strip():
        raise CaptureError("the capture is empty")
    if status is not None and format is None:
        format = "error"
    proto = protocol or detect_protocol(data)
    fmt = format or detect_format(data)
    if fmt in DOCUMENT_FORMATS:
        raise CaptureError(f"a {fmt} holds many responses; decode it with decode_{fmt}")
    chunks: list[StreamChunk]
    if fmt == "error":
        if proto == "anthropic":
            failure = anthropic_failure_from_response(status or 400, data, {})
        else:
            failure = failure_from_http(status or 400, data, {})
        chunks = [Finish.failed(failure)]
    elif proto == "anthropic":
        objects: list[Any] | None = None
        if fmt == "json":
            try:
                parsed = jsonio.loads(data)
            except ValueError as exc:
                raise CaptureError(f"not a JSON array of events or a Message body: {exc}") from None
            objects = parsed if isinstance(parsed, list) else [parsed]
        elif fmt == "jsonl":
            try:
                objects = [jsonio.loads(line) for line in data.splitlines() if line.strip()]
            except ValueError as exc:
                raise CaptureError(f"a line is not a JSON event: {exc}") from None
        chunks = _decode_anthropic(data, objects)
    else:
        if fmt == "json":
            try:
                objects = jsonio.loads(data)
            except ValueError as exc:
                raise CaptureError(f"not a JSON array of chunks: {exc}") from None
            if not isinstance(objects, list):
                raise CaptureError("--format json expects a JSON array of chunk objects")
            body = _frame(objects)
        elif fmt == "jsonl":
            lines = [line for line in data.splitlines() if line.strip()]
            parts = [b"data: " + line.strip() + b"\n\n" for line in lines]
            body = b"".join(parts) + b"data: [DONE]\n\n"
        else:
            body = data
        decoder = FastStreamDecoder()  # the adapter's own decoder
        chunks = decoder.feed(body) + decoder.close()
    assembler = BlockAssembler().feed_all(chunks)
    digest = hashlib.sha256(data).hexdigest()[:24]
    return DecodeResult(chunks=chunks, assembler=assembler, message_id=f"msg-{digest}", format=fmt, protocol=proto)


def decode_session_log(data: bytes, *, source: str = "<session log>") -> dict[str, Any]:
    """Each model call of a session log: its logged chunks folded by the assembler, and whether
    the result equals the step's logged `assistant/message` (None when the call has none)."""
    from dshkit.harness.llm import HarnessError
    from dshkit.harness.session import parse_session_log
    from dshkit.harness.session.calls import assemble_chunk_events, split_model_calls
    from dshkit.harness.session.shapes import logged_message

    try:
        loaded = parse_session_log(data, source=source, repair=False, lenient=True)
    except HarnessError as exc:
        raise CaptureError(f"not a readable session log: {exc}") from None
    session = loaded.session
    steps: list[tuple[int, int]] = []
    messages: dict[tuple[int, int], Any] = {}
    for event in session.events:
        if event.defect is not None:
            continue
        if event.type == "assistant/chunk" and (key := (event.data["turn"], event.data["step"])) not in steps:
            steps.append(key)
        elif event.type == "assistant/message":
            messages[(event.data["turn"], event.data["step"])] = logged_message(event.type, event.data, seq=event.seq)
    calls: list[dict[str, Any]] = []
    for turn, step in steps:
        attempts = split_model_calls(session.chunk_events(turn, step))
        for attempt, call in enumerate(attempts, 1):
            assembler = assemble_chunk_events(call)
            logged = messages.get((turn, step)) if attempt == len(attempts) else None
            source_ = ModelSource(provider="logged", model="logged")
            if logged is not None and isinstance(logged.source, ModelSource):
                source_ = ModelSource(provider=logged.source.provider, model=logged.source.model)
            message = message_to_json(assembler.message(source_, id=logged.id if logged else f"{turn}.{step}.{attempt}"))
            calls.append({
                "turn": turn,
                "step": step,
                "attempt": attempt,
                "message": message,
                "usage": usage_to_json(assembler.usage) if assembler.usage is not None else None,
                "finish": finish_reason_to_json(assembler.finish_reason),
                "matchesLogged": None if logged is None else message["content"] == message_to_json(logged)["content"],
            })
    return {
        "format": "session",
        "header": session.header.to_json(),
        "events": len(session.events),
        "defects": list(loaded.defects),
        "tornLines": loaded.dropped_lines,
        "calls": calls,
    }


def _render_blocks(blocks: list[Any]) -> list[str]:
    lines: list[str] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "reasoning":
            lines += ["── reasoning ──", block["text"], ""]
        elif kind == "text":
            lines += ["── text ──", block["text"], ""]
        elif kind == "tool-call":
            lines += [f"── tool call {block.get('name') or '?'} ({block['id']}) ──", block["arguments"], ""]
    return lines


def render_document(doc: dict[str, Any]) -> str:
    """The readable view of a decoded cassette or session log."""
    lines: list[str] = []
    if doc["format"] == "cassette":
        lines.append(f"cassette of {doc['upstream'] or 'an unknown upstream'}: {len(doc['exchanges'])} exchange(s)")
        for i, x in enumerate(doc["exchanges"], 1):
            lines += ["", f"━━ exchange {i}: {x['request']['method']} {x['request']['path']} → {x['status']} ━━"]
            decoded = x["decoded"]
            if decoded is None:
                lines.append("(no body)")
                continue
            lines += _render_blocks(decoded["message"]["content"])
            lines.append(_finish_line(decoded["finish"]))
        return "\n".join(lines)
    header = doc["header"]
    lines.append(f"session log {header['id']}: {doc['events']} event(s), {len(doc['calls'])} model call(s)")
    lines += [f"defect: {d}" for d in doc["defects"]]
    for call in doc["calls"]:
        check = {True: "equals the logged message", False: "DIFFERS from the logged message", None: "no logged message"}
        lines += ["", f"━━ turn {call['turn']} step {call['step']} call {call['attempt']}: {check[call['matchesLogged']]} ━━"]
        lines += _render_blocks(call["message"]["content"])
        lines.append(_finish_line(call["finish"]))
    return "\n".join(lines)


def _finish_line(finish: dict[str, Any]) -> str:
    line = f"finish: {finish['kind']}"
    if "failure" in finish:
        failure = finish["failure"]
        line += f" — {failure['code']}: {failure['message']}"
        if "status" in failure:
            line += f" (HTTP {failure['status']})"
    return line


def render_pretty(result: DecodeResult) -> str:
    """A readable view: reasoning, text, tool calls with raw arguments, finish, usage."""
    doc = result.to_json()
    lines: list[str] = []
    for block in result.assembler.blocks():
        if isinstance(block, ReasoningBlock):
            lines += ["── reasoning ──", block.text, ""]
        elif isinstance(block, TextBlock):
            lines += ["── text ──", block.text, ""]
        elif isinstance(block, ToolCallBlock):
            lines += [f"── tool call {block.name or '?'} ({block.id}) ──", block.arguments, ""]
    lines.append(_finish_line(doc["finish"]))
    usage = doc["usage"]
    if usage:
        parts = [f"input {usage['inputTokens']}"]
        if "cacheReadTokens" in usage:
            parts.append(f"cached {usage['cacheReadTokens']}")
        parts.append(f"output {usage['outputTokens']}")
        if "reasoningTokens" in usage:
            parts.append(f"reasoning {usage['reasoningTokens']}")
        lines.append("usage: " + " · ".join(parts))
    meta = doc["meta"]
    facts = [f"{k} {meta[k]}" for k in ("model", "id", "systemFingerprint") if meta[k]]
    if meta["doneMissing"]:
        facts.append("[DONE] missing")
    if facts:
        lines.append(" · ".join(facts))
    return "\n".join(lines)
