"""The non-streaming completion: the one `chat.completion` body a `stream: false` request gets.

It is built from the same fragments as the stream (:func:`~dshkit.mock_server.generate.split.cut_reply`),
joined back together, so the text, tool calls, finish reason and token counts of a step are the
same whether the client streams or not (S14–S16).
"""

from __future__ import annotations

import random
from typing import Any

from dshkit.mock_server.generate.chunks import logprob_entry
from dshkit.mock_server.generate.reply import Era, Reply, StreamMeta, make_meta
from dshkit.mock_server.generate.split import FragmentPlan, SplitPlan, cut_reply, reply_usage

__all__ = ["build_completion"]


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

    Token counts match what :func:`~dshkit.mock_server.generate.chunks.generate_chunks` would report
    for the same arguments.
    """
    pieces = cut_reply(reply, thinking=thinking, split=split, seed=seed, max_tokens=max_tokens)
    meta = meta or make_meta(model, seed=seed, era=era)
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
        lp = {"content": [logprob_entry(t, rng, logprobs) for t in pieces.content]}
    usage = reply_usage(reply, pieces, prompt_tokens)
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
