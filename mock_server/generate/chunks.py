"""Chunk generation: a reply's fragments become the chunk dicts DeepSeek V4 streams.

This is the server side of the seed's walk run backwards: where the adapter turns chunks into
blocks, :func:`generate_chunks` turns a :class:`~dshkit.mock_server.generate.reply.Reply` into the
`chat.completion.chunk` dicts of `wire.md` §4, §5, §8, §10: a role opener, reasoning deltas,
text deltas, each tool call opened then fed argument fragments, a finish chunk carrying usage,
and optional logprobs. Named quirks produce the shapes other OpenAI-compatible servers send,
for hardening adapters. Pure: the same arguments and seed give the same chunks.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from dshkit.mock_server.generate.reply import Era, Reply, StreamMeta, make_meta
from dshkit.mock_server.generate.split import FragmentPlan, SplitPlan, cut_reply, reply_usage

__all__ = ["QUIRKS", "generate_chunks", "logprob_entry"]

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


def logprob_entry(token: str, rng: random.Random, top: int) -> dict[str, Any]:
    """One `logprobs.content` entry for `token` with `top` alternatives, drawn from `rng`.

    DeepSeek's shape: `{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}`, the
    chosen token leading its own top list. The streamed and the non-streaming bodies share it.
    """
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
    include_usage: bool = True,
) -> list[Chunk]:
    """Cut a logical reply into the chunk dicts DeepSeek streams, in order.

    Defaults follow `wire.md` S22–S31 exactly: a role opener, reasoning deltas before any
    answer, each tool call opened with id/type/name and empty arguments then argument fragments,
    one finish chunk with `finish_reason` and usage (earlier chunks `usage: null`), the same
    envelope on every chunk. `[DONE]` is added by the encoder
    (:mod:`dshkit.mock_server.generate.encode`).

    Args:
        thinking: thinking mode; it shapes the deltas (S23, S24) and enables reasoning.
        quirks: names from :data:`QUIRKS`; framing quirks are left to the encoder.
        split: how text, reasoning and arguments are fragmented (default: token-like pieces).
        max_tokens: cut the reply after this many fragments with `finish_reason: "length"`.
        logprobs: None for no logprobs, else the number of `top_logprobs` per content token.
        include_usage: False when the request said `stream_options: {"include_usage": false}`:
            the finish chunk keeps `usage: null` and no usage chunk is sent.
    """
    q = frozenset(quirks)
    unknown = q - QUIRKS.keys()
    if unknown:
        raise ValueError(f"unknown quirk(s) {sorted(unknown)}; known quirks: {sorted(QUIRKS)}")
    pieces = cut_reply(reply, thinking=thinking, split=split, seed=seed, max_tokens=max_tokens)
    meta = meta or make_meta(model, seed=seed, era=era)
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
        return {"content": [logprob_entry(text, lp_rng, logprobs)]}

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
    usage = reply_usage(reply, pieces, prompt_tokens)
    emit(finish_delta, finish=pieces.finish_reason)
    if not include_usage:
        pass
    elif "usage_chunk" in q:
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


