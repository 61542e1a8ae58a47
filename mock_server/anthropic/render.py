"""Rendering: a reply as the Messages stream events, or as one non-streaming Messages body.

Both are built from the same fragments as the chat route
(:func:`~dshkit.mock_server.generate.split.cut_reply`), so a script step means the same reply on
either surface. Stop sequences cut the text first; usage is converted from Chat Completions
shape; :data:`ANTHROPIC_QUIRKS` switch on the shapes other servers send.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import operator
import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

from dshkit.mock_server.defaults import apply_stop
from dshkit.mock_server.generate.encode import Framing, _escape
from dshkit.mock_server.generate.encode import _encode as _compact
from dshkit.mock_server.generate.events import BodyWriter, JoinedEvents, json_string
from dshkit.mock_server.generate.reply import Reply, seeded_uuid
from dshkit.mock_server.generate.split import (
    SEP,
    FragmentPlan,
    JoinedPieces,
    ReplyPieces,
    Run,
    cut_joined,
    cut_reply,
    reply_usage,
)

__all__ = [
    "ANTHROPIC_QUIRKS",
    "anthropic_usage",
    "build_message",
    "encode_events",
    "encode_events_fast",
    "error_event",
    "message_id",
    "signature",
    "stop_reason",
]

#: Shapes other servers (or other DeepSeek days) send on this surface, by name; off by default.
ANTHROPIC_QUIRKS: Mapping[str, str] = {
    "thinking_start_signature": "the thinking `content_block_start` carries `\"signature\": \"\"` "
    "(Anthropic's shape; DeepSeek was seen leaving the key out)",
    "no_pings": "no `ping` event (the default sends one after the first content_block_start)",
    "many_pings": "a `ping` before every content_block_start and before message_delta",
    "padded_data": "data lines padded with spaces after the JSON, and the ping written "
    "`{\"type\": \"ping\"}`, as Anthropic does to hide token lengths",
    "delta_output_only": "message_delta's usage carries only `output_tokens` (older streams)",
    "delta_input_differs": "message_delta reports a larger `input_tokens` than message_start "
    "(a third-party server, corpus cp01); the later value wins",
    "open_block_after_max_tokens": "after a max_tokens stop the last block gets no "
    "content_block_stop (corpus an14)",
    "data_only": "no `event:` lines (data-only records; the anthropic SDK drops such events)",
    "anthropic_ids": "`msg_01…` message ids and base64 signatures instead of DeepSeek's UUID "
    "used as both",
    "anthropic_envelope": "HTTP errors in Anthropic's envelope `{\"type\": \"error\", \"error\": "
    "{…}, \"request_id\"}`, whatever the status",
    "deepseek_envelope": "HTTP errors in DeepSeek's OpenAI-style envelope `{\"error\": {\"message\", "
    "\"type\", \"param\", \"code\"}}`, whatever the status",
}

_STOP_REASONS: Mapping[str, str] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
}
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def error_event(type: str, message: str, framing: Framing = "lf", *, data_only: bool = False) -> bytes:
    """An in-band `error` event: what a failure after the first byte looks like (AN69)."""
    data = {"type": "error", "error": {"type": type, "message": message}}
    return _frame("error", _dumps(data), framing, data_only=data_only)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _frame(name: str, data: str, framing: Framing, *, data_only: bool = False, pad: str = "") -> bytes:
    eol = "\r\n" if framing == "crlf" else "\n"
    head = "" if data_only else f"event: {name}{eol}"
    return f"{head}data: {data}{pad}{eol}{eol}".encode()


def message_id(seed: int, *, anthropic: bool = False, repeat: int = 0) -> str:
    """The message id for a step: a UUID as DeepSeek sends, or Anthropic's `msg_01…` shape.

    `repeat` > 0 (the step already answered that many requests) draws a fresh id, as every
    real response has its own."""
    text = f"meta:{seed}:repeat:{repeat}" if repeat else f"meta:{seed}"
    if not anthropic:
        return seeded_uuid(text)
    rng = random.Random(text)
    return "msg_01" + "".join(rng.choice(_ALNUM) for _ in range(22))


def signature(msg_id: str, seed: int, anthropic: bool, repeat: int = 0) -> str:
    """The thinking block's signature for a step's response (see :func:`message_id`)."""
    if not anthropic:
        return msg_id  # DeepSeek's signature is the message id (AN41)
    rng = random.Random(f"signature:{seed}:repeat:{repeat}" if repeat else f"signature:{seed}")
    return "Eq" + "".join(rng.choice(_ALNUM) for _ in range(86)) + "=="


def anthropic_usage(usage: Mapping[str, Any]) -> dict[str, Any]:
    """Anthropic usage from a Chat Completions usage object (AN64 backwards); an object that
    already has `input_tokens` is returned as is."""
    if "input_tokens" in usage:
        return dict(usage)
    prompt = int(usage.get("prompt_tokens") or 0)
    hit = usage.get("prompt_cache_hit_tokens")
    if hit is None:
        hit = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    return {
        "input_tokens": prompt - int(hit),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": int(hit),
        "output_tokens": int(usage.get("completion_tokens") or 0),
    }


def stop_reason(finish: str, stop_sequence: str | None) -> str | None:
    """The `stop_reason` for a Chat Completions finish reason; None when it has none
    (`insufficient_system_resource` becomes an in-band error instead)."""
    if finish == "stop" and stop_sequence is not None:
        return "stop_sequence"
    return _STOP_REASONS.get(finish)


def _input_object(arguments: str) -> Any:
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}  # truncated by max_tokens: the non-streaming body cannot carry half an object
    return value if isinstance(value, dict) else {}


def _pieces_usage(reply: Reply, pieces: ReplyPieces | JoinedPieces, prompt_tokens: int) -> dict[str, Any]:
    if reply.usage is not None:
        return anthropic_usage(reply.usage)
    completion = pieces.completion_tokens
    if type(prompt_tokens) is int and type(completion) is int:
        # `anthropic_usage(reply_usage(...))` of integers, spelled at once (a new reply's stream
        # computes it on every request): compute_usage's cache hit, the rest of the prompt.
        hit = min(prompt_tokens, prompt_tokens // 128 * 64) // 64 * 64
        return {"input_tokens": prompt_tokens - hit, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": hit, "output_tokens": completion}
    return anthropic_usage(reply_usage(reply, pieces, prompt_tokens))


def _cut_stop(reply: Reply, stops: Sequence[str]) -> tuple[Reply, str | None]:
    """Cut the text at the first stop sequence; return the reply and the sequence that matched."""
    if not stops or not reply.content:
        return reply, None
    content, cut = apply_stop(reply.content, tuple(stops))
    if not cut:
        return reply, None
    matched = min(
        (s for s in stops if s and s in reply.content), key=lambda s: reply.content.find(s)
    )
    return dataclasses.replace(reply, content=content, finish_reason="stop"), matched


def encode_events(
    reply: Reply,
    *,
    model: str = "deepseek-flash",
    thinking: bool = True,
    split: FragmentPlan | None = None,
    seed: int = 0,
    prompt_tokens: int = 16,
    max_tokens: int | None = None,
    stop: Sequence[str] = (),
    quirks: Sequence[str] = (),
    framing: Framing = "lf",
    done: bool = True,
    repeat: int = 0,
    ids: tuple[str, str] | None = None,
) -> list[bytes]:
    """The Messages SSE events of a reply, one bytes object per event.

    `done=False` leaves out `message_stop` (the counterpart of the chat route's `[DONE]`);
    `repeat` > 0 mints a fresh message id and signature (see :func:`message_id`); `ids` gives
    them instead, as `(message id, signature)` (the stream cache renders with placeholders).
    Pure: the same arguments give the same bytes.
    """
    q = frozenset(quirks)
    reply, matched = _cut_stop(reply, stop)
    pieces = cut_reply(reply, thinking=thinking, split=split, seed=seed, max_tokens=max_tokens)
    anthropic = "anthropic_ids" in q
    msg_id = ids[0] if ids else message_id(seed, anthropic=anthropic, repeat=repeat)
    sig = ids[1] if ids else signature(msg_id, seed, anthropic, repeat)
    usage = _pieces_usage(reply, pieces, prompt_tokens)
    data_only = "data_only" in q
    pad = " " * 7 if "padded_data" in q else ""
    out: list[bytes] = []

    def emit(obj: Mapping[str, Any]) -> None:
        out.append(_frame(str(obj["type"]), _dumps(obj), framing, data_only=data_only, pad=pad))

    def ping() -> None:
        data = '{"type": "ping"}' if pad else '{"type":"ping"}'
        out.append(_frame("ping", data, framing, data_only=data_only))

    start_usage = {k: usage[k] for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens") if k in usage}
    emit({
        "type": "message_start",
        "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {**start_usage, "output_tokens": 1},
        },
    })
    blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    if pieces.reasoning:
        start: dict[str, Any] = {"type": "thinking", "thinking": ""}
        if "thinking_start_signature" in q:
            start["signature"] = ""
        deltas = [{"type": "thinking_delta", "thinking": f} for f in pieces.reasoning]
        if pieces.finish_reason != "length" or pieces.content or pieces.calls:
            deltas.append({"type": "signature_delta", "signature": sig})
        blocks.append((start, deltas))
    if pieces.content:
        blocks.append(({"type": "text", "text": ""}, [{"type": "text_delta", "text": f} for f in pieces.content]))
    for call_id, name, frags in pieces.calls:
        # AN56: a call without arguments still gets one empty fragment.
        blocks.append((
            {"type": "tool_use", "id": call_id, "name": name, "input": {}},
            [{"type": "input_json_delta", "partial_json": f} for f in (frags or [""])],
        ))
    for index, (block, deltas) in enumerate(blocks):
        if "many_pings" in q:
            ping()
        emit({"type": "content_block_start", "index": index, "content_block": block})
        if index == 0 and not q & {"no_pings", "many_pings"}:
            ping()
        for d in deltas:
            emit({"type": "content_block_delta", "index": index, "delta": d})
        last = index == len(blocks) - 1
        if not (last and pieces.finish_reason == "length" and "open_block_after_max_tokens" in q):
            emit({"type": "content_block_stop", "index": index})
    reason = stop_reason(pieces.finish_reason, matched)
    if reason is None:
        out.append(error_event("overloaded_error", "Overloaded", framing, data_only=data_only))
        return out
    if "many_pings" in q:
        ping()
    delta_usage = _delta_usage(usage, q)
    emit({
        "type": "message_delta",
        "delta": {"stop_reason": reason, "stop_sequence": matched},
        "usage": delta_usage,
    })
    if done:
        emit({"type": "message_stop"})
    return out


def build_message(
    reply: Reply,
    *,
    model: str = "deepseek-flash",
    thinking: bool = True,
    split: FragmentPlan | None = None,
    seed: int = 0,
    prompt_tokens: int = 16,
    max_tokens: int | None = None,
    stop: Sequence[str] = (),
    quirks: Sequence[str] = (),
    repeat: int = 0,
) -> dict[str, Any]:
    """The non-streaming Messages body for a reply (AN40); counts match :func:`encode_events`."""
    reply, matched = _cut_stop(reply, stop)
    pieces = cut_reply(reply, thinking=thinking, split=split, seed=seed, max_tokens=max_tokens)
    anthropic = "anthropic_ids" in quirks
    msg_id = message_id(seed, anthropic=anthropic, repeat=repeat)
    content: list[dict[str, Any]] = []
    if pieces.reasoning:
        content.append({
            "type": "thinking", "thinking": "".join(pieces.reasoning),
            "signature": signature(msg_id, seed, anthropic, repeat),
        })
    if pieces.content:
        content.append({"type": "text", "text": "".join(pieces.content)})
    for call_id, name, frags in pieces.calls:
        content.append({"type": "tool_use", "id": call_id, "name": name, "input": _input_object("".join(frags))})
    return {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        # A resource failure has no stop reason; a whole body can only say it ended early.
        "stop_reason": stop_reason(pieces.finish_reason, matched) or "max_tokens",
        "stop_sequence": matched,
        "usage": _pieces_usage(reply, pieces, prompt_tokens),
    }




@functools.lru_cache(maxsize=1024)
def _cached_message_id(seed: int, anthropic: bool, repeat: int = 0) -> str:
    """:func:`message_id`, once per seed and repeat: seeding its generator costs a tenth of a
    rendering, and a server renders the same step's seed again and again."""
    return message_id(seed, anthropic=anthropic, repeat=repeat)
_DELTA_KEYS = {"thinking": b'"thinking_delta","thinking":', "text": b'"text_delta","text":',
               "tool_use": b'"input_json_delta","partial_json":'}


def encode_events_fast(
    reply: Reply,
    *,
    model: str = "deepseek-flash",
    thinking: bool = True,
    split: FragmentPlan | None = None,
    seed: int = 0,
    prompt_tokens: int = 16,
    max_tokens: int | None = None,
    stop: Sequence[str] = (),
    quirks: Sequence[str] = (),
    framing: Framing = "lf",
    done: bool = True,
    repeat: int = 0,
    ids: tuple[str, str] | None = None,
) -> Sequence[bytes]:
    """:func:`encode_events`, byte for byte, for less CPU: the server's fast path renders with it.

    The stream is written into one bytes object (:class:`JoinedEvents`): the events that repeat
    (every delta, every block's stop, the pings) are filled into byte templates built once per
    stream, each block's fragments escaped and framed at once (:class:`BodyWriter`); the few
    others (message_start, each block's start, message_delta) are encoded as
    :func:`encode_events` encodes them. A reply whose text holds the fragments' joiner or a
    lone surrogate is left to :func:`encode_events`. `tests/mock_server/test_output.py` checks
    the two agree on every quirk.
    """
    q = frozenset(quirks)
    cut, matched = _cut_stop(reply, stop)
    pieces = cut_joined(cut, thinking=thinking, split=split, seed=seed, max_tokens=max_tokens)
    if pieces is None:
        return encode_events(reply, model=model, thinking=thinking, split=split, seed=seed,
                             prompt_tokens=prompt_tokens, max_tokens=max_tokens, stop=stop, quirks=quirks,
                             framing=framing, done=done, repeat=repeat, ids=ids)
    try:
        events = _fast_events(cut, matched, pieces, q, model=model, seed=seed, prompt_tokens=prompt_tokens,
                              framing=framing, done=done, repeat=repeat, ids=ids)
    except UnicodeEncodeError:  # a lone surrogate: whatever the plain renderer does with it
        events = None
    if events is None:  # or the joiner in the envelope (a model name, an id)
        return encode_events(reply, model=model, thinking=thinking, split=split, seed=seed,
                             prompt_tokens=prompt_tokens, max_tokens=max_tokens, stop=stop, quirks=quirks,
                             framing=framing, done=done, repeat=repeat, ids=ids)
    return events


def _fast_events(
    reply: Reply,
    matched: str | None,
    pieces: JoinedPieces,
    q: frozenset[str],
    *,
    model: str,
    seed: int,
    prompt_tokens: int,
    framing: Framing,
    done: bool,
    repeat: int,
    ids: tuple[str, str] | None,
) -> JoinedEvents | None:
    anthropic = "anthropic_ids" in q
    msg_id = ids[0] if ids else _cached_message_id(seed, anthropic, repeat)
    usage = _pieces_usage(reply, pieces, prompt_tokens)
    reasoning, content = pieces.reasoning, pieces.content
    signed = bool(reasoning[1]) and (pieces.finish_reason != "length" or bool(content[1]) or bool(pieces.calls))
    sig = (ids[1] if ids else signature(msg_id, seed, anthropic, repeat)) if signed else None
    eol = b"\r\n" if framing == "crlf" else b"\n"
    if reply.usage is None and not pieces.calls:
        # A reply's own usage may hold anything; a computed one is four integers, and a stream
        # without tool calls has no per-reply string outside its fragments, so its frame is
        # made once per shape and filled in.
        frame = _frame_for(model, q, framing, done, bool(reasoning[1]), signed, bool(content[1]),
                           pieces.finish_reason, matched)
        if frame is not None:
            joined = frame.fill(msg_id, sig, usage, reasoning, content)
            if joined is not None:
                return JoinedEvents(joined, terminator=eol + eol)
    joined = _write_events(pieces, q, model=model, framing=framing, done=done, matched=matched,
                           msg_id=msg_id, sig=sig, usage=usage)
    return None if joined is None else JoinedEvents(joined, terminator=eol + eol)


def _delta_frame(q: frozenset[str], framing: Framing, index: int, kind: str) -> tuple[bytes, bytes]:
    """The bytes before and after each fragment of block `index`'s deltas."""
    eol = b"\r\n" if framing == "crlf" else b"\n"
    head = b"" if "data_only" in q else b"event: content_block_delta" + eol
    tail = (b" " * 7 if "padded_data" in q else b"") + eol + eol
    pre = head + b'data: {"type":"content_block_delta","index":%d,"delta":{"type":' % index + _DELTA_KEYS[kind]
    return pre, b"}}" + tail


def _write_events(
    pieces: JoinedPieces,
    q: frozenset[str],
    *,
    model: str,
    framing: Framing,
    done: bool,
    matched: str | None,
    msg_id: str,
    sig: str | None,
    usage: dict[str, Any],
) -> bytes | None:
    """The stream's bytes, every piece written in turn; None when a piece written as it is
    holds the fragments' joiner."""
    data_only = "data_only" in q
    pad = " " * 7 if "padded_data" in q else ""
    eol = b"\r\n" if framing == "crlf" else b"\n"
    tail = pad.encode() + eol + eol

    def head(name: bytes) -> bytes:
        return (b"" if data_only else b"event: " + name + eol) + b"data: "

    def emit(obj: Mapping[str, Any]) -> bytes:
        # `_dumps` builds a JSON encoder per call; this one is built once, with its options.
        return _frame(str(obj["type"]), _compact(obj), framing, data_only=data_only, pad=pad)

    ping = _frame("ping", '{"type": "ping"}' if pad else '{"type":"ping"}', framing, data_only=data_only)
    stop_head = head(b"content_block_stop")
    start_usage = {k: usage[k] for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens") if k in usage}
    out = BodyWriter()
    out.add(emit({
        "type": "message_start",
        "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {**start_usage, "output_tokens": 1},
        },
    }))
    # (block start, its delta kind, its fragments, the signature delta that closes a thinking block)
    blocks: list[tuple[dict[str, Any], str, Run, str | None]] = []
    if pieces.reasoning[1]:
        start: dict[str, Any] = {"type": "thinking", "thinking": ""}
        if "thinking_start_signature" in q:
            start["signature"] = ""
        blocks.append((start, "thinking", pieces.reasoning, sig))
    if pieces.content[1]:
        blocks.append(({"type": "text", "text": ""}, "text", pieces.content, None))
    for call_id, name, frags in pieces.calls:
        # AN56: a call without arguments still gets one empty fragment.
        blocks.append(({"type": "tool_use", "id": call_id, "name": name, "input": {}}, "tool_use", frags if frags[1] else ("", 1), None))
    many = "many_pings" in q
    for index, (block, kind, frags, block_sig) in enumerate(blocks):
        if many:
            out.add(ping)
        out.add(emit({"type": "content_block_start", "index": index, "content_block": block}))
        if index == 0 and not q & {"no_pings", "many_pings"}:
            out.add(ping)
        pre, post = _delta_frame(q, framing, index, kind)
        out.run(pre, frags, post)
        if block_sig is not None:
            out.add(emit({"type": "content_block_delta", "index": index,
                             "delta": {"type": "signature_delta", "signature": block_sig}}))
        last = index == len(blocks) - 1
        if not (last and pieces.finish_reason == "length" and "open_block_after_max_tokens" in q):
            out.add(stop_head + b'{"type":"content_block_stop","index":%d}' % index + tail)
    reason = stop_reason(pieces.finish_reason, matched)
    if reason is not None:
        if many:
            out.add(ping)
        delta_usage = _delta_usage(usage, q)
        out.add(emit({
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": matched},
            "usage": delta_usage,
        }))
        if done:
            out.add(head(b"message_stop") + b'{"type":"message_stop"}' + tail)
    else:
        out.add(error_event("overloaded_error", "Overloaded", framing, data_only=data_only))
    return out.joined()


_SEP_UTF8 = SEP.encode()
#: What the frame of a stream is written with where this response's own values go: strings no
#: other value of the frame can spell (JSON escapes control characters), and integers far past
#: any usage, `_USAGE_SLOT + 1_000_000 * k + offset` for the k-th usage value plus an offset
#: (a quirk's `+ 18`).
_ID_SLOT, _SIG_SLOT, _RUN_SLOTS = "\x01id\x01", "\x01signature\x01", ("\x01reasoning\x01", "\x01content\x01")
_USAGE_SLOT = 9_000_000_000_000
_USAGE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
_SLOT_RE = re.compile(
    b"|".join(re.escape(_escape(s).encode()) for s in (_ID_SLOT, _SIG_SLOT, *_RUN_SLOTS)) + rb"|(?<!\d)9000\d{9}(?!\d)"
)


class _Frame:
    """Every byte of a stream but this response's own values (its id, signature, usage and
    fragments), as the literal pieces between a slot for each: the stream of a new reply is then
    one escape per string, one join and one replace. Made once per shape of stream
    (:func:`_frame_for`)."""

    __slots__ = ("between", "parts", "pick", "usage")

    def __init__(self, parts: list[bytes], slots: list[str | tuple[str, int]], between: tuple[bytes, bytes]) -> None:
        self.parts: list[bytes | None] = [None] * (2 * len(parts) - 1)
        """The literal pieces, with a None between each two where a value goes."""
        self.parts[::2] = parts
        self.usage = tuple(dict.fromkeys(s for s in slots if isinstance(s, tuple)))
        """The usage values the slots hold, each as (key, offset)."""
        # A slot is an index into the values `fill` lists: id, signature, the two runs, then `usage`.
        order: dict[str | tuple[str, int], int] = {"id": 0, "sig": 1, "reasoning": 2, "content": 3}
        order.update((u, 4 + i) for i, u in enumerate(self.usage))
        self.pick = operator.itemgetter(*(order[s] for s in slots))
        self.between = between
        """What separates two fragments of the reasoning and of the text."""

    def fill(self, msg_id: str, sig: str | None, usage: Mapping[str, Any], reasoning: Run, content: Run) -> bytes | None:
        """The stream for these values; None when the id or signature holds the joiner."""
        if SEP in msg_id or (sig is not None and SEP in sig):
            return None
        # The longer string's joiners are replaced in the whole stream, the other's in its own bytes.
        runs = [json_string(reasoning[0]) if reasoning[1] else b"", json_string(content[0]) if content[1] else b""]
        longest = 0 if reasoning[1] > content[1] else 1
        other = 1 - longest
        if (reasoning, content)[other][1] > 1:
            runs[other] = runs[other].replace(_SEP_UTF8, self.between[other])
        values = [json_string(msg_id), json_string(sig) if sig is not None else b"", *runs,
                  *[b"%d" % (int(usage[k]) + offset) for k, offset in self.usage]]
        pieces = self.parts.copy()
        pieces[1::2] = self.pick(values)
        body = b"".join(pieces)  # type: ignore[arg-type]  # every None slot was just filled
        return body.replace(_SEP_UTF8, self.between[longest]) if (reasoning, content)[longest][1] > 1 else body


@functools.lru_cache(maxsize=256)
def _frame_for(
    model: str, q: frozenset[str], framing: Framing, done: bool, reasoning: bool, signed: bool, content: bool,
    finish_reason: str, matched: str | None,
) -> _Frame | None:
    """The frame of every stream of this shape without tool calls and with a computed usage,
    written by :func:`_write_events` itself with the slots as values; None where it cannot be
    (a piece holds the joiner) or does not give :func:`_write_events`'s bytes for other values."""
    pieces = JoinedPieces((_RUN_SLOTS[0], 1) if reasoning else ("", 0), (_RUN_SLOTS[1], 1) if content else ("", 0),
                          [], finish_reason, 0)
    usage = {k: _USAGE_SLOT + 1_000_000 * i for i, k in enumerate(_USAGE_KEYS)}
    written = _write_events(pieces, q, model=model, framing=framing, done=done, matched=matched,
                            msg_id=_ID_SLOT, sig=_SIG_SLOT if signed else None, usage=usage)
    if written is None or _SEP_UTF8 in written:
        return None
    slots: list[str | tuple[str, int]] = []
    names = {_escape(s).encode(): name for s, name in zip((_ID_SLOT, _SIG_SLOT, *_RUN_SLOTS),
                                                           ("id", "sig", "reasoning", "content"), strict=True)}

    for m in _SLOT_RE.finditer(written):
        spelled = m.group()
        if spelled in names:
            slots.append(names[spelled])
        else:
            n = int(spelled) - _USAGE_SLOT
            slots.append((_USAGE_KEYS[n // 1_000_000], n % 1_000_000))
    parts = _SLOT_RE.split(written)  # the bytes around the slots, in their order
    if len(slots) < 2:  # an itemgetter of one index gives no tuple (never here: message_start holds four)
        return None
    (pre0, post0), (pre1, post1) = _delta_frame(q, framing, 0, "thinking"), _delta_frame(q, framing, int(reasoning), "text")
    frame = _Frame(parts, slots, (b'"' + post0 + pre0 + b'"', b'"' + post1 + pre1 + b'"'))
    # The proof, as the stream cache proves a template: other values, with fragments joined (the
    # text's the longer, then the reasoning's), filled in and written in full give the same bytes.
    sig = "sig-proof" if signed else None
    for n, (think, text) in enumerate([("th" + SEP + "ink", "a" + SEP + "b" + SEP + "c"), ("a" + SEP + "b" + SEP + "c", "t" + SEP + "x")]):
        proof = JoinedPieces((think, think.count(SEP) + 1) if reasoning else ("", 0),
                             (text, text.count(SEP) + 1) if content else ("", 0), [], finish_reason, 0)
        proof_usage = {k: 100 + 7 * i + n for i, k in enumerate(_USAGE_KEYS)}
        expected = _write_events(proof, q, model=model, framing=framing, done=done, matched=matched,
                                 msg_id=f"msg-proof-{n}", sig=sig, usage=proof_usage)
        if expected is None or frame.fill(f"msg-proof-{n}", sig, proof_usage, proof.reasoning, proof.content) != expected:
            return None
    return frame


def _delta_usage(usage: dict[str, Any], q: Any) -> dict[str, Any]:
    """The usage `message_delta` carries: the whole usage, or what the quirks in `q` make of it
    (`delta_output_only`: output tokens alone; `delta_input_differs`: input tokens off by 18)."""
    if "delta_output_only" in q:
        return {"output_tokens": usage["output_tokens"]}
    delta_usage = dict(usage)
    if "delta_input_differs" in q and "input_tokens" in delta_usage:
        delta_usage["input_tokens"] = int(delta_usage["input_tokens"]) + 18
    return delta_usage
