"""The reply model: what a scripted step says the model answers, and the envelope of its stream.

A :class:`Reply` is the logical answer (reasoning, text, tool calls, finish reason, usage) before
it is cut into fragments; :class:`StreamMeta` holds the fields every chunk of one response repeats
(`wire.md` S22). Ids and fingerprints are drawn from the seed, so the same seed gives the same
stream, and usage obeys DeepSeek's arithmetic (`wire.md` §8).
"""

from __future__ import annotations

import functools
import hashlib
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "Era",
    "Reply",
    "StreamMeta",
    "ToolCall",
    "compute_usage",
    "make_meta",
    "seeded_uuid",
    "tool_call_id",
]

Era = Literal["v4", "v3.2"]

_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_HEX = "0123456789abcdef"


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


def make_meta(
    model: str, *, seed: int = 0, era: Era = "v4", created: int | None = None, repeat: int = 0
) -> StreamMeta:
    """Envelope fields for one stream, derived from the seed (a uuid id, an era-shaped fingerprint).

    `created` defaults to a fixed time derived from the seed so the function stays pure; the
    server passes the wall clock. `repeat` > 0 (the seed already served that many responses)
    draws a fresh id, as every real response has its own; the fingerprint stays the seed's.
    """
    stream_id, fingerprint = _seeded_meta(seed, era)
    if repeat:
        stream_id = seeded_uuid(f"meta:{seed}:repeat:{repeat}")
    return StreamMeta(
        id=stream_id,
        created=created if created is not None else 1_786_000_000 + seed % 1_000_000,
        model=model,
        system_fingerprint=fingerprint,
    )


@functools.lru_cache(maxsize=1024)
def _seeded_meta(seed: int, era: Era) -> tuple[str, str]:
    """The seed's first completion id and its fingerprint. A server answers the same step (same
    seed) again and again, so this is computed once per seed rather than per response."""
    rng = random.Random(f"meta:{seed}")
    stream_id = _uuid4(rng.getrandbits(128))
    if era == "v4":
        fingerprint = "".join(rng.choice(_HEX) for _ in range(32))
    else:
        fingerprint = "fp_" + "".join(rng.choice(_HEX) for _ in range(10)) + "_prod0820_fp8_kvcache"
    return stream_id, fingerprint


_V4_CLEAR = ~((0xC000 << 48) | (0xF000 << 64))
_V4_SET = (0x8000 << 48) | (4 << 76)


def seeded_uuid(text: str) -> str:
    """A version 4 UUID drawn from `text`: the same text, the same id; other texts, other ids.

    A response id is drawn per response (every repeat of a step has its own), so this runs on
    every request: 128 bits of BLAKE2b of the text (about 1 µs) rather than the first 128 bits a
    Mersenne Twister seeded with it draws (seeding it took 5 to 7 µs, the largest piece of a
    cached reply's own work). The ids a seed gives changed with that, not how they behave.
    """
    bits = bytearray(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest())
    bits[6] = bits[6] & 0x0F | 0x40  # version 4
    bits[8] = bits[8] & 0x3F | 0x80  # the RFC 4122 variant
    h = bits.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _uuid4(bits: int) -> str:
    """`str(uuid.UUID(int=bits, version=4))`: the version and variant bits set, dashed hex."""
    h = "%032x" % (bits & _V4_CLEAR | _V4_SET)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def tool_call_id(index: int, rng: random.Random) -> str:
    """A DeepSeek-shaped call id: `call_00_` + 24 letters and digits (S26)."""
    return f"call_{index:02d}_" + "".join(rng.choice(_ALNUM) for _ in range(24))


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
