"""The stream generator: a logical reply becomes DeepSeek wire chunks, SSE bytes and network writes.

This is the server side of the seed's walk run backwards: where the adapter turns SSE bytes into
chunks and chunks into blocks, this module turns a reply (reasoning, text, tool calls) into the
chunk dicts DeepSeek V4 sends (`wire.md` §4, §5, §8, §10), frames them as SSE, and cuts the bytes
into network writes. Every function here is pure: the same arguments and seed give the same
output, so the conformance suite and the recorder can reuse it without a server. Named quirks
produce the shapes other OpenAI-compatible servers send, for hardening adapters.
"""

from __future__ import annotations

import json
import random
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Literal

__all__ = [
    "ENCODE_QUIRKS",
    "QUIRKS",
    "Era",
    "FragmentPlan",
    "Framing",
    "Reply",
    "ReplyPieces",
    "SplitPlan",
    "StreamMeta",
    "ToolCall",
    "WritePlan",
    "build_completion",
    "compute_usage",
    "cut_reply",
    "encode_events",
    "encode_sse",
    "encode_stream",
    "frame_jsonl",
    "generate_chunks",
    "make_meta",
    "plan_writes",
    "split_text",
    "tool_call_id",
]

Era = Literal["v4", "v3.2"]
Framing = Literal["lf", "crlf"]
Chunk = dict[str, Any]

#: Dialect quirks of other OpenAI-compatible servers (and a few broken ones), by name.
#: Each one is off by default; DeepSeek itself shows none of them.
QUIRKS: Mapping[str, str] = {
    "usage_chunk": "usage moves to a separate `choices: []` chunk after the finish chunk "
    "(OpenAI, Azure-hosted DeepSeek); the finish chunk carries `usage: null`",
    "usage_key_absent": "chunks before the finish chunk leave the `usage` key out "
    "(older DeepSeek recordings)",
    "reasoning_field": "reasoning deltas use `delta.reasoning` instead of `reasoning_content` "
    "(OpenRouter, vLLM)",
    "mixed_reasoning": "the last reasoning fragment and the first answer fragment share one "
    "delta (vllm#43933)",
    "repeat_tool_identity": "every argument fragment repeats id, type and function.name "
    "(llama.cpp#13774)",
    "whole_tool_call": "each tool call arrives complete in one delta (Groq, oc08)",
    "empty_id_continuation": 'argument fragments carry `"id": ""` and `"type": "function"` '
    "(oc07)",
    "explicit_nulls": "deltas spell absent fields out as null: role, content, tool_calls (oc10)",
    "empty_tool_calls": '`"tool_calls": []` on every text delta',
    "same_index": "every parallel call uses index 0 (litellm#21331)",
    "missing_index": "tool-call deltas carry no `index` key",
    "missing_id": "the tool-call opener carries no `id` (vllm#18412)",
    "index_offset": "tool-call indexes start at 1 instead of 0 (pipecat#4987)",
    "interleave_tool_calls": "argument fragments of parallel calls alternate between calls",
    "no_role_opener": "no role chunk opens the stream",
    "finish_repeated": "an extra chunk after the finish chunk repeats finish_reason "
    "(OpenRouter, oc01)",
    "comments": "`: OPENROUTER PROCESSING` comment lines between events (oc01)",
    "data_no_space": "`data:` without the space after the colon",
}

#: The quirks that act on framing, applied by :func:`encode_sse`, not by :func:`generate_chunks`.
ENCODE_QUIRKS = frozenset({"comments", "data_no_space"})

_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_HEX = "0123456789abcdef"
# Token-like pieces: a word with its leading space, a run of punctuation, one non-ASCII
# character, or whitespace. Real DeepSeek deltas look like this (`{"`, `location`, `": "`).
_TOKEN_RE = re.compile(
    r" ?[A-Za-z0-9_]+| ?[^\sA-Za-z0-9_\u0080-\U0010ffff]+|[\u0080-\U0010ffff]|\s+", re.DOTALL
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One tool call of a logical reply."""

    name: str
    """Function name, as the model would call it."""
    arguments: str = "{}"
    """Arguments as the raw JSON text the model streams; sent byte for byte."""
    id: str | None = None
    """Call id; None mints DeepSeek's `call_<2-digit index>_<24 alnum>` from the seed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """A logical assistant reply, before it is cut into wire chunks."""

    content: str = ""
    """Answer text."""
    reasoning: str = ""
    """Chain of thought; emitted only in thinking mode (`wire.md` S15, S23)."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Tool calls, streamed one after another after the text."""
    finish_reason: str | None = None
    """None means `tool_calls` when there are calls, else `stop`."""
    usage: Mapping[str, Any] | None = None
    """A usage object to send as is; None computes one obeying `wire.md` §8."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamMeta:
    """The envelope fields that stay the same on every chunk of one stream (S22)."""

    id: str
    created: int
    model: str
    system_fingerprint: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SplitPlan:
    """How one logical string is cut into delta fragments.

    `mode` is one of: `tokens` (word-like pieces, as DeepSeek sends), `fixed` (`size` code
    points each), `points` (cut at the code-point offsets in `points`), `random` (seeded sizes
    between `min_size` and `max_size`), `whole` (one fragment).
    """

    mode: Literal["tokens", "fixed", "points", "random", "whole"] = "tokens"
    size: int = 4
    points: tuple[int, ...] = ()
    min_size: int = 1
    max_size: int = 8

    def __post_init__(self) -> None:
        if self.size < 1 or self.min_size < 1 or self.max_size < self.min_size:
            raise ValueError(
                f"SplitPlan sizes must satisfy size >= 1 and 1 <= min_size <= max_size, "
                f"got size={self.size}, min_size={self.min_size}, max_size={self.max_size}"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class FragmentPlan:
    """Split plans for each kind of fragment in a stream."""

    text: SplitPlan = field(default_factory=SplitPlan)
    reasoning: SplitPlan = field(default_factory=SplitPlan)
    arguments: SplitPlan = field(default_factory=SplitPlan)

    @classmethod
    def all(cls, plan: SplitPlan) -> FragmentPlan:
        """The same plan for text, reasoning and arguments."""
        return cls(text=plan, reasoning=plan, arguments=plan)


@dataclass(frozen=True, slots=True, kw_only=True)
class WritePlan:
    """Where a byte stream is cut into network writes, independent of SSE event boundaries.

    The cuts are the union of every source that is switched on; no source at all means one
    write. `events_per_write` = 1 writes each SSE event on its own, 0 ignores event boundaries.
    """

    events_per_write: int = 1
    """Cut after every N-th event (after its blank line); 0 switches this off."""
    size: int | None = None
    """Also cut every `size` bytes."""
    points: tuple[int, ...] = ()
    """Also cut at these byte offsets."""
    random_max: int | None = None
    """Also cut at seeded random gaps of 1..random_max bytes."""
    seed: int = 0
    inside_utf8: bool = False
    """Also cut inside every multi-byte UTF-8 character (after its first byte)."""
    inside_escapes: bool = False
    """Also cut between every JSON backslash and the character it escapes."""


def make_meta(
    model: str, *, seed: int = 0, era: Era = "v4", created: int | None = None, repeat: int = 0
) -> StreamMeta:
    """Envelope fields for one stream, derived from the seed (a uuid id, an era-shaped fingerprint).

    `created` defaults to a fixed time derived from the seed so the function stays pure; the
    server passes the wall clock. `repeat` > 0 (the seed already served that many responses)
    draws a fresh id, as every real response has its own; the fingerprint stays the seed's.
    """
    rng = random.Random(f"meta:{seed}")
    stream_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    if repeat:
        again = random.Random(f"meta:{seed}:repeat:{repeat}")
        stream_id = str(uuid.UUID(int=again.getrandbits(128), version=4))
    if era == "v4":
        fingerprint = "".join(rng.choice(_HEX) for _ in range(32))
    else:
        fingerprint = "fp_" + "".join(rng.choice(_HEX) for _ in range(10)) + "_prod0820_fp8_kvcache"
    return StreamMeta(
        id=stream_id,
        created=created if created is not None else 1_786_000_000 + seed % 1_000_000,
        model=model,
        system_fingerprint=fingerprint,
    )


def tool_call_id(index: int, rng: random.Random) -> str:
    """A DeepSeek-shaped call id: `call_00_` + 24 letters and digits (S26)."""
    return f"call_{index:02d}_" + "".join(rng.choice(_ALNUM) for _ in range(24))


def split_text(text: str, plan: SplitPlan, rng: random.Random | None = None) -> list[str]:
    """Cut `text` into fragments whose concatenation is `text`; an empty text gives no fragment."""
    if not text:
        return []
    if plan.mode == "whole":
        return [text]
    if plan.mode == "tokens":
        pieces = _TOKEN_RE.findall(text)
        if "".join(pieces) != text:  # pragma: no cover - the pattern covers every character
            raise AssertionError("token split lost characters")
        return pieces
    if plan.mode == "fixed":
        return [text[i : i + plan.size] for i in range(0, len(text), plan.size)]
    if plan.mode == "points":
        cuts = sorted({p for p in plan.points if 0 < p < len(text)})
        bounds = [0, *cuts, len(text)]
        return [text[a:b] for a, b in pairwise(bounds)]
    rng = rng or random.Random(0)
    out: list[str] = []
    i = 0
    while i < len(text):
        n = rng.randint(plan.min_size, plan.max_size)
        out.append(text[i : i + n])
        i += n
    return out


def compute_usage(
    *,
    prompt_tokens: int,
    completion_tokens: int,
    reasoning_tokens: int | None,
    cache_hit_tokens: int | None = None,
) -> dict[str, Any]:
    """A usage object obeying `wire.md` §8.

    total = prompt + completion, hit + miss = prompt, cached_tokens = hit, hit a multiple of 64;
    `completion_tokens_details.reasoning_tokens` only when reasoning was produced (S31).
    """
    if cache_hit_tokens is None:
        cache_hit_tokens = (prompt_tokens // 128) * 64
    hit = min(prompt_tokens, cache_hit_tokens) // 64 * 64
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": hit},
    }
    if reasoning_tokens:
        usage["completion_tokens_details"] = {
            "reasoning_tokens": min(reasoning_tokens, completion_tokens)
        }
    usage["prompt_cache_hit_tokens"] = hit
    usage["prompt_cache_miss_tokens"] = prompt_tokens - hit
    return usage


@dataclass(slots=True)
class ReplyPieces:
    """The fragments of one reply after splitting and max_tokens truncation.

    Both surfaces render from these (the Chat Completions chunks here, the Anthropic events in
    :mod:`mock_server.anthropic`), so a script step means the same reply on either.
    """

    reasoning: list[str]
    content: list[str]
    calls: list[tuple[str, str, list[str]]]  # (id, name, argument fragments)
    finish_reason: str
    completion_tokens: int


def _cut(
    reply: Reply,
    *,
    thinking: bool,
    split: FragmentPlan,
    seed: int,
    max_tokens: int | None,
) -> ReplyPieces:
    rng = random.Random(f"split:{seed}")
    id_rng = random.Random(f"ids:{seed}")
    reasoning = split_text(reply.reasoning, split.reasoning, rng) if thinking else []
    content = split_text(reply.content, split.text, rng)
    calls: list[tuple[str, str, list[str]]] = []
    for i, call in enumerate(reply.tool_calls):
        call_id = call.id if call.id is not None else tool_call_id(i, id_rng)
        calls.append((call_id, call.name, split_text(call.arguments, split.arguments, rng)))
    finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
    # Each fragment stands for one token; a tool call's opener costs one more.
    used = len(reasoning) + len(content) + sum(len(a) + 1 for _, _, a in calls)
    if max_tokens is not None and used > max_tokens:
        # S32: the budget runs out where it runs out, even in the middle of reasoning.
        budget = max_tokens
        reasoning = reasoning[:budget]
        budget -= len(reasoning)
        content = content[:budget]
        budget -= len(content)
        kept: list[tuple[str, str, list[str]]] = []
        for call_id, name, args in calls:
            if budget <= 0:
                break
            budget -= 1
            kept.append((call_id, name, args[:budget]))
            budget -= len(kept[-1][2])
        calls = kept
        finish = "length"
        used = max_tokens
    return ReplyPieces(reasoning, content, calls, finish, used)


def cut_reply(
    reply: Reply,
    *,
    thinking: bool,
    split: FragmentPlan | SplitPlan | None = None,
    seed: int = 0,
    max_tokens: int | None = None,
) -> ReplyPieces:
    """The reply's fragments as :func:`generate_chunks` would stream them (same seed, same cuts)."""
    plan = split if isinstance(split, FragmentPlan) else FragmentPlan.all(split or SplitPlan())
    return _cut(reply, thinking=thinking, split=plan, seed=seed, max_tokens=max_tokens)


def _start(
    reply: Reply,
    *,
    model: str,
    thinking: bool,
    split: FragmentPlan | SplitPlan | None,
    seed: int,
    meta: StreamMeta | None,
    era: Era,
    max_tokens: int | None,
) -> tuple[StreamMeta, ReplyPieces]:
    """What every output form starts from: the envelope and the reply's fragments."""
    plan = split if isinstance(split, FragmentPlan) else FragmentPlan.all(split or SplitPlan())
    pieces = _cut(reply, thinking=thinking, split=plan, seed=seed, max_tokens=max_tokens)
    return meta or make_meta(model, seed=seed, era=era), pieces


def _usage(reply: Reply, pieces: ReplyPieces, prompt_tokens: int) -> dict[str, Any]:
    """The reply's own usage object, else one computed from the fragments."""
    if reply.usage is not None:
        return dict(reply.usage)
    return compute_usage(
        prompt_tokens=prompt_tokens,
        completion_tokens=pieces.completion_tokens,
        reasoning_tokens=len(pieces.reasoning),
    )


def _logprob_entry(token: str, rng: random.Random, top: int) -> dict[str, Any]:
    # ds08: {token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}; the chosen token
    # leads its own top list.
    lp = -round(rng.random() * 0.01, 8)
    alternatives = [{"token": token, "logprob": lp, "bytes": list(token.encode("utf-8"))}]
    alternatives += [
        {"token": f"{token}{k}", "logprob": lp - k, "bytes": list(f"{token}{k}".encode())}
        for k in range(1, top)
    ]
    return {
        "token": token,
        "logprob": lp,
        "bytes": list(token.encode("utf-8")),
        "top_logprobs": alternatives[:top],
    }


def generate_chunks(
    reply: Reply,
    *,
    model: str = "deepseek-v4-flash",
    thinking: bool = True,
    quirks: Iterable[str] = (),
    split: FragmentPlan | SplitPlan | None = None,
    seed: int = 0,
    meta: StreamMeta | None = None,
    era: Era = "v4",
    prompt_tokens: int = 16,
    max_tokens: int | None = None,
    logprobs: int | None = None,
) -> list[Chunk]:
    """Cut a logical reply into the chunk dicts DeepSeek streams, in order.

    Defaults follow `wire.md` S22–S31 exactly: a role opener, reasoning deltas before any
    answer, each tool call opened with id/type/name and empty arguments then argument fragments,
    one finish chunk with `finish_reason` and usage (earlier chunks `usage: null`), the same
    envelope on every chunk. `[DONE]` is added by :func:`encode_sse`.

    Args:
        thinking: thinking mode; it shapes the deltas (S23, S24) and enables reasoning.
        quirks: names from :data:`QUIRKS`; framing quirks are left to :func:`encode_sse`.
        split: how text, reasoning and arguments are fragmented (default: token-like pieces).
        max_tokens: cut the reply after this many fragments with `finish_reason: "length"`.
        logprobs: None for no logprobs, else the number of `top_logprobs` per content token.
    """
    q = frozenset(quirks)
    unknown = q - QUIRKS.keys()
    if unknown:
        raise ValueError(f"unknown quirk(s) {sorted(unknown)}; known quirks: {sorted(QUIRKS)}")
    meta, pieces = _start(
        reply, model=model, thinking=thinking, split=split, seed=seed, meta=meta, era=era,
        max_tokens=max_tokens,
    )
    lp_rng = random.Random(f"logprobs:{seed}")
    nulls = "explicit_nulls" in q
    reasoning_key = "reasoning" if "reasoning_field" in q else "reasoning_content"
    usage_absent = "usage_key_absent" in q

    chunks: list[Chunk] = []

    def emit(delta: dict[str, Any], *, finish: str | None = None, lp: Any = None) -> None:
        if nulls:
            base: dict[str, Any] = {"role": None, "content": None, "tool_calls": None}
            base.update(delta)
            delta = base
        chunk: Chunk = {
            "id": meta.id,
            "object": "chat.completion.chunk",
            "created": meta.created,
            "model": meta.model,
            "system_fingerprint": meta.system_fingerprint,
            "choices": [{"index": 0, "delta": delta, "logprobs": lp, "finish_reason": finish}],
        }
        if not usage_absent:
            chunk["usage"] = None
        chunks.append(chunk)

    def content_delta(text: str) -> dict[str, Any]:
        d: dict[str, Any] = {"content": text, reasoning_key: None} if thinking else {"content": text}
        if "empty_tool_calls" in q:
            d["tool_calls"] = []
        return d

    def content_lp(text: str) -> Any:
        if logprobs is None:
            return None
        return {"content": [_logprob_entry(text, lp_rng, logprobs)]}

    if "no_role_opener" not in q:
        if thinking:
            emit({"role": "assistant", "content": None, reasoning_key: ""})
        else:
            emit({"role": "assistant", "content": ""})

    reasoning = pieces.reasoning
    content = pieces.content
    if "mixed_reasoning" in q and reasoning and content:
        emit_reasoning, last = reasoning[:-1], reasoning[-1]
        for frag in emit_reasoning:
            emit({"content": None, reasoning_key: frag})
        emit({"content": content[0], reasoning_key: last}, lp=content_lp(content[0]))
        content = content[1:]
    else:
        for frag in reasoning:
            emit({"content": None, reasoning_key: frag})
    for frag in content:
        emit(content_delta(frag), lp=content_lp(frag))

    _emit_tool_calls(pieces.calls, q, emit)

    finish_delta: dict[str, Any] = {"content": "", reasoning_key: None} if thinking else {"content": ""}
    usage = _usage(reply, pieces, prompt_tokens)
    emit(finish_delta, finish=pieces.finish_reason)
    if "usage_chunk" in q:
        chunks.append(
            {
                "id": meta.id,
                "object": "chat.completion.chunk",
                "created": meta.created,
                "model": meta.model,
                "system_fingerprint": meta.system_fingerprint,
                "choices": [],
                "usage": usage,
            }
        )
    else:
        chunks[-1]["usage"] = usage
    if "finish_repeated" in q:
        emit({"content": ""}, finish=pieces.finish_reason)
    return chunks


def _emit_tool_calls(
    calls: Sequence[tuple[str, str, list[str]]],
    q: frozenset[str],
    emit: Callable[[dict[str, Any]], None],
) -> None:
    offset = 1 if "index_offset" in q else 0

    def entry(i: int, call_id: str, name: str, args: str, *, opener: bool) -> dict[str, Any]:
        e: dict[str, Any] = {}
        if "missing_index" not in q:
            e["index"] = 0 if "same_index" in q else i + offset
        if opener or "repeat_tool_identity" in q:
            if not (opener and "missing_id" in q):
                e["id"] = call_id
            e["type"] = "function"
            e["function"] = {"name": name, "arguments": args}
        elif "empty_id_continuation" in q:
            e["id"] = ""
            e["type"] = "function"
            e["function"] = {"arguments": args}
        else:
            e["function"] = {"arguments": args}
        return e

    if "whole_tool_call" in q:
        for i, (call_id, name, frags) in enumerate(calls):
            emit({"tool_calls": [entry(i, call_id, name, "".join(frags), opener=True)]})
        return
    # S26/S27: open call i, send all its fragments, then move to call i+1.
    streams = [
        [entry(i, cid, name, "", opener=True)]
        + [entry(i, cid, name, f, opener=False) for f in frags]
        for i, (cid, name, frags) in enumerate(calls)
    ]
    if "interleave_tool_calls" in q:
        longest = max((len(s) for s in streams), default=0)
        for k in range(longest):
            for s in streams:
                if k < len(s):
                    emit({"tool_calls": [s[k]]})
    else:
        for s in streams:
            for e in s:
                emit({"tool_calls": [e]})


def _make_encoder() -> Callable[[Any], str]:
    # DeepSeek sends compact JSON with raw (unescaped) non-ASCII text. One encoder is built
    # once: `json.dumps` with custom arguments builds a new one per call, which dominated
    # the server's per-chunk cost (bench/server.py).
    enc = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
    c_make = getattr(json.encoder, "c_make_encoder", None)
    if c_make is None:  # pragma: no cover - CPython always has the C accelerator
        return enc.encode
    c_enc = c_make(
        None, enc.default, json.encoder.encode_basestring, None, ":", ",", False, False, True
    )
    return lambda obj: "".join(c_enc(obj, 0))


_encode = _make_encoder()
_escape: Callable[[str], str] = json.encoder.encode_basestring
_CHUNK_KEYS = ["id", "object", "created", "model", "system_fingerprint", "choices", "usage"]
_CHOICE_KEYS = ["index", "delta", "logprobs", "finish_reason"]


def _dumps(obj: Any) -> bytes:
    return _encode(obj).encode("utf-8")


class _ChunkEncoder:
    """Encodes chunks byte-identically to `_dumps`, reusing the envelope bytes of a stream."""

    __slots__ = ("_key", "_prefix")

    def __init__(self) -> None:
        self._key: tuple[Any, ...] | None = None
        self._prefix = ""

    def __call__(self, chunk: Mapping[str, Any]) -> bytes:
        # Fast path only for the exact shape generate_chunks() makes (same keys, same order);
        # anything else goes through the full encoder.
        if list(chunk) != _CHUNK_KEYS:
            return _dumps(chunk)
        choices = chunk["choices"]
        if len(choices) != 1 or list(choices[0]) != _CHOICE_KEYS or choices[0]["index"] != 0:
            return _dumps(chunk)
        key = (chunk["id"], chunk["object"], chunk["created"], chunk["model"],
               chunk["system_fingerprint"])
        if key != self._key:
            head = {k: chunk[k] for k in _CHUNK_KEYS[:5]}
            self._prefix = _encode(head)[:-1] + ',"choices":[{"index":0,"delta":'
            self._key = key
        c = choices[0]
        lp, fin, usage = c["logprobs"], c["finish_reason"], chunk["usage"]
        return "".join((
            self._prefix,
            _encode(c["delta"]),
            ',"logprobs":',
            "null" if lp is None else _encode(lp),
            ',"finish_reason":',
            "null" if fin is None else _encode(fin),
            '}],"usage":',
            "null" if usage is None else _encode(usage),
            "}",
        )).encode("utf-8")


def encode_events(
    chunks: Iterable[Mapping[str, Any] | bytes],
    framing: Framing = "lf",
    *,
    done: bool = True,
    quirks: Iterable[str] = (),
) -> list[bytes]:
    """Frame each chunk as one SSE event (`data: <one-line JSON>` + blank line, S19).

    A `bytes` item is taken as already-encoded JSON. `done` appends `data: [DONE]` (S20).
    The framing quirks `comments` and `data_no_space` apply here.
    """
    q = frozenset(quirks)
    eol = b"\r\n" if framing == "crlf" else b"\n"
    prefix = b"data:" if "data_no_space" in q else b"data: "
    tail = eol + eol
    comment = b": OPENROUTER PROCESSING" + tail if "comments" in q else b""
    encode = _ChunkEncoder()
    out: list[bytes] = []
    for chunk in chunks:
        body = chunk if isinstance(chunk, bytes) else encode(chunk)
        if comment:
            out.append(comment)
        out.append(prefix + body + tail)
    if done:
        out.append(prefix + b"[DONE]" + tail)
    return out


def encode_stream(
    reply: Reply,
    *,
    model: str = "deepseek-v4-flash",
    thinking: bool = True,
    quirks: Iterable[str] = (),
    split: FragmentPlan | SplitPlan | None = None,
    seed: int = 0,
    meta: StreamMeta | None = None,
    era: Era = "v4",
    prompt_tokens: int = 16,
    max_tokens: int | None = None,
    logprobs: int | None = None,
    framing: Framing = "lf",
    done: bool = True,
) -> list[bytes]:
    """`encode_events(generate_chunks(...))` in one step: the SSE events of a reply.

    Byte-identical to the two-step form. Plain DeepSeek streams (no quirks, no logprobs) are
    encoded from templates, with no dict per chunk: this is the server's hot path.
    """
    q = frozenset(quirks)
    if q or logprobs is not None or reply.usage is not None:
        chunks = generate_chunks(
            reply, model=model, thinking=thinking, quirks=q, split=split, seed=seed, meta=meta,
            era=era, prompt_tokens=prompt_tokens, max_tokens=max_tokens, logprobs=logprobs,
        )
        return encode_events(chunks, framing, done=done, quirks=q)
    meta, pieces = _start(
        reply, model=model, thinking=thinking, split=split, seed=seed, meta=meta, era=era,
        max_tokens=max_tokens,
    )
    eol = b"\r\n" if framing == "crlf" else b"\n"
    head = _encode(
        {
            "id": meta.id,
            "object": "chat.completion.chunk",
            "created": meta.created,
            "model": meta.model,
            "system_fingerprint": meta.system_fingerprint,
        }
    )[:-1]
    pre = b"data: " + head.encode("utf-8") + b',"choices":[{"index":0,"delta":'
    post = b',"logprobs":null,"finish_reason":null}],"usage":null}' + eol + eol
    esc = _escape
    out: list[bytes] = []
    if thinking:
        out.append(pre + b'{"role":"assistant","content":null,"reasoning_content":""}' + post)
        out += [
            pre + b'{"content":null,"reasoning_content":' + esc(f).encode() + b"}" + post
            for f in pieces.reasoning
        ]
        out += [
            pre + b'{"content":' + esc(f).encode() + b',"reasoning_content":null}' + post
            for f in pieces.content
        ]
    else:
        out.append(pre + b'{"role":"assistant","content":""}' + post)
        out += [pre + b'{"content":' + esc(f).encode() + b"}" + post for f in pieces.content]
    for i, (call_id, name, frags) in enumerate(pieces.calls):
        out.append(
            pre + b'{"tool_calls":[{"index":%d,"id":%b,"type":"function","function":{"name":%b,'
            b'"arguments":""}}]}' % (i, esc(call_id).encode(), esc(name).encode()) + post
        )
        opener = b'{"tool_calls":[{"index":%d,"function":{"arguments":' % i
        out += [pre + opener + esc(f).encode() + b"}}]}" + post for f in frags]
    usage = _usage(reply, pieces, prompt_tokens)  # reply.usage is None on this path
    finish_delta = b'{"content":"","reasoning_content":null}' if thinking else b'{"content":""}'
    out.append(
        pre + finish_delta + b',"logprobs":null,"finish_reason":'
        + esc(pieces.finish_reason).encode() + b'}],"usage":' + _encode(usage).encode()
        + b"}" + eol + eol
    )
    if done:
        out.append(b"data: [DONE]" + eol + eol)
    return out


def encode_sse(
    chunks: Iterable[Mapping[str, Any] | bytes],
    framing: Framing = "lf",
    *,
    done: bool = True,
    quirks: Iterable[str] = (),
) -> bytes:
    """The SSE body for `chunks`: every event of :func:`encode_events`, joined."""
    return b"".join(encode_events(chunks, framing, done=done, quirks=quirks))


def frame_jsonl(data: bytes, framing: Framing = "lf", *, done: bool = True) -> bytes:
    """Frame a file of JSONL chunk lines as SSE: each non-blank line byte for byte, then `[DONE]` (S35)."""
    lines = [line.rstrip(b"\r") for line in data.split(b"\n")]
    return encode_sse([line for line in lines if line.strip()], framing, done=done)


def _event_ends(data: bytes) -> list[int]:
    ends: list[int] = []
    for sep in (b"\r\n\r\n", b"\n\n", b"\r\r"):
        start = 0
        while True:
            i = data.find(sep, start)
            if i < 0:
                break
            ends.append(i + len(sep))
            start = i + len(sep)
    # `\r\n\r\n` contains no `\n\n`, but `\n\n` inside `\r\n\r\n`-framed data cannot occur, so
    # the union is exactly the set of event ends for either framing.
    return sorted(set(ends))


def plan_writes(data: bytes, plan: WritePlan | None = None) -> list[bytes]:
    """Cut `data` into network writes as `plan` says; the writes concatenate to `data`.

    Cuts may land anywhere: inside an event, inside a multi-byte UTF-8 character, between a
    JSON backslash and the character it escapes (S36).
    """
    plan = plan or WritePlan()
    n = len(data)
    if n == 0:
        return []
    cuts: set[int] = set()
    if plan.events_per_write > 0:
        ends = _event_ends(data)
        cuts.update(ends[plan.events_per_write - 1 :: plan.events_per_write])
    if plan.size:
        cuts.update(range(plan.size, n, plan.size))
    cuts.update(plan.points)
    if plan.random_max:
        rng = random.Random(f"writes:{plan.seed}")
        i = rng.randint(1, plan.random_max)
        while i < n:
            cuts.add(i)
            i += rng.randint(1, plan.random_max)
    if plan.inside_utf8:
        cuts.update(i + 1 for i, b in enumerate(data) if b >= 0xC0 and i + 1 < n)
    if plan.inside_escapes:
        i = data.find(b"\\")
        while i >= 0:
            cuts.add(i + 1)
            i = data.find(b"\\", i + 2)
    bounds = [0, *sorted(c for c in cuts if 0 < c < n), n]
    return [data[a:b] for a, b in pairwise(bounds)]


def build_completion(
    reply: Reply,
    *,
    model: str = "deepseek-v4-flash",
    thinking: bool = True,
    seed: int = 0,
    meta: StreamMeta | None = None,
    era: Era = "v4",
    prompt_tokens: int = 16,
    max_tokens: int | None = None,
    logprobs: int | None = None,
    split: FragmentPlan | SplitPlan | None = None,
) -> dict[str, Any]:
    """The non-streaming `chat.completion` body for a reply (S14–S16).

    Token counts match what :func:`generate_chunks` would report for the same arguments.
    """
    meta, pieces = _start(
        reply, model=model, thinking=thinking, split=split, seed=seed, meta=meta, era=era,
        max_tokens=max_tokens,
    )
    message: dict[str, Any] = {"role": "assistant", "content": "".join(pieces.content)}
    if thinking:
        message["reasoning_content"] = "".join(pieces.reasoning)
    if pieces.calls:
        message["tool_calls"] = [
            {
                "index": i,
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": "".join(args)},
            }
            for i, (call_id, name, args) in enumerate(pieces.calls)
        ]
    lp: Any = None
    if logprobs is not None:
        rng = random.Random(f"logprobs:{seed}")
        lp = {"content": [_logprob_entry(t, rng, logprobs) for t in pieces.content]}
    usage = _usage(reply, pieces, prompt_tokens)
    return {
        "id": meta.id,
        "object": "chat.completion",
        "created": meta.created,
        "model": meta.model,
        "system_fingerprint": meta.system_fingerprint,
        "choices": [
            {"index": 0, "message": message, "logprobs": lp, "finish_reason": pieces.finish_reason}
        ],
        "usage": usage,
    }
