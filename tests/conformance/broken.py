"""Deliberately broken adapters: each one a small, realistic bug on top of DeepSeekAdapter.

The serializer bugs rewrite the request body; the translator bugs swap in a broken `Translator`
for streams of their own instances only (a context variable picks the decoder, so a correct
DeepSeekAdapter running in the same process is unaffected). Each class lists the scenarios that
must catch it in `MUST_FAIL`; the test runs the whole catalogue and expects exactly that set.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import httpx

import harness.providers.deepseek.adapter as deepseek_adapter
from harness.llm import GenerateOptions, StreamChunk
from harness.providers.deepseek import DeepSeekAdapter, StreamDecoder, Translator

_BUG: contextvars.ContextVar[str | None] = contextvars.ContextVar("dshkit_broken_translator", default=None)


class _ConcatIdsTranslator(Translator):
    """Appends a repeated id to the one it already has instead of keeping the first."""

    __slots__ = ()

    def _tool_delta(self, entry: dict[str, Any], out: list[StreamChunk]) -> Any:
        index = entry.get("index")
        before = self._tools.get(index) if isinstance(index, int) else None
        old = before.id if before is not None else ""
        result = super()._tool_delta(entry, out)
        new = entry.get("id")
        if before is not None and old and isinstance(new, str) and new:
            before.id = old + new
        return result


class _EofSuccessTranslator(Translator):
    """Treats EOF before any finish_reason as a normal `stop`."""

    __slots__ = ()

    def end(self, *, done: bool) -> list[StreamChunk]:
        if not done and self.finish_reason is None:
            self.finish_reason = "stop"
        return super().end(done=done)


class _LosesUsageTranslator(Translator):
    """Lets a later `usage: null` erase the usage already received."""

    __slots__ = ()

    def feed_into(self, chunk: Any, out: list[StreamChunk]) -> None:
        super().feed_into(chunk, out)
        if isinstance(chunk, dict) and "usage" in chunk and chunk["usage"] is None:
            self._usage = None


_TRANSLATORS: dict[str, type[Translator]] = {
    "concat_ids": _ConcatIdsTranslator,
    "eof_success": _EofSuccessTranslator,
    "loses_usage": _LosesUsageTranslator,
}


def _decoder() -> StreamDecoder:
    bug = _BUG.get()
    return StreamDecoder(_TRANSLATORS[bug]() if bug is not None else None)


deepseek_adapter.StreamDecoder = _decoder  # type: ignore[assignment,misc]


class _BrokenTranslate(DeepSeekAdapter):
    BUG: ClassVar[str]
    MUST_FAIL: ClassVar[frozenset[str]]

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        token = _BUG.set(self.BUG)
        try:
            async for chunk in super().stream(options):
                yield chunk
        finally:
            _BUG.reset(token)


class ConcatIdsAdapter(_BrokenTranslate):
    BUG = "concat_ids"
    MUST_FAIL = frozenset({
        "tool-repeat-identity", "tool-repeat-identity-parallel", "tool-second-opener-same-index",
        "rt-repeated-identity-not-doubled",
    })


class EofSuccessAdapter(_BrokenTranslate):
    BUG = "eof_success"
    MUST_FAIL = frozenset({
        "end-eof-before-finish", "end-eof-after-role-only", "end-eof-mid-event",
        "end-partial-tool-call-eof", "err-garbage-line-then-close",
    })


class LosesUsageAdapter(_BrokenTranslate):
    BUG = "loses_usage"
    MUST_FAIL = frozenset({"finish-repeated", "usage-trailing-then-null"})


class _BrokenBody(DeepSeekAdapter):
    MUST_FAIL: ClassVar[frozenset[str]]

    def rewrite(self, body: dict[str, Any]) -> None:
        raise NotImplementedError

    def build_request(self, options: GenerateOptions) -> httpx.Request:
        request = super().build_request(options)
        body = json.loads(request.content)
        self.rewrite(body)
        headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
        content = json.dumps(body, ensure_ascii=False).encode()
        return self._client.build_request("POST", request.url, content=content, headers=headers)


class ReencodingArgsAdapter(_BrokenBody):
    """Parses tool arguments and dumps them again (json.dumps defaults) before sending."""

    MUST_FAIL = frozenset({
        "ser-arguments-byte-identical", "ser-parallel-results-in-order", "ser-reasoning-every-tool-turn",
        "rt-text-then-tool-thinking-off", "rt-parallel-calls-chinese", "rt-client-ids-empty-reasoning",
        "rt-arguments-not-reencoded", "rt-tool-then-user-followup",
    })

    def rewrite(self, body: dict[str, Any]) -> None:
        for message in body["messages"]:
            for call in message.get("tool_calls") or ():
                with contextlib.suppress(ValueError):
                    call["function"]["arguments"] = json.dumps(json.loads(call["function"]["arguments"]))


class DropsPassbackAdapter(_BrokenBody):
    """Never sends `reasoning_content` back."""

    MUST_FAIL = frozenset({
        "ser-tool-call-history", "ser-arguments-byte-identical", "ser-parallel-results-in-order",
        "ser-empty-tool-result", "ser-user-text-with-tool-results", "ser-reasoning-on-tool-turn",
        "ser-reasoning-empty-when-none", "ser-reasoning-every-tool-turn", "rt-thinking-tool-call",
        "rt-parallel-calls-chinese", "rt-client-ids-empty-reasoning", "rt-three-steps-passback-kept",
        "rt-arguments-not-reencoded", "rt-invalid-arguments-sent-back", "rt-empty-arguments",
        "rt-repeated-identity-not-doubled", "rt-jsonl-recording-round-trip", "rt-tool-then-user-followup",
        "an-neutral-tool-round-trip",
    })

    def rewrite(self, body: dict[str, Any]) -> None:
        for message in body["messages"]:
            message.pop("reasoning_content", None)


class EmptiesToolResultsAdapter(_BrokenBody):
    """Sends every tool message with empty content (the result text is lost)."""

    MUST_FAIL = frozenset({
        "ser-tool-call-history", "ser-parallel-results-in-order", "ser-empty-tool-result",
        "ser-user-text-with-tool-results", "rt-thinking-tool-call", "rt-text-then-tool-thinking-off",
        "rt-parallel-calls-chinese", "rt-client-ids-empty-reasoning", "rt-three-steps-passback-kept",
        "rt-invalid-arguments-sent-back", "rt-empty-arguments", "rt-jsonl-recording-round-trip",
        "rt-tool-then-user-followup", "an-neutral-tool-round-trip",
    })

    def rewrite(self, body: dict[str, Any]) -> None:
        for message in body["messages"]:
            if message["role"] == "tool":
                message["content"] = ""


BROKEN = (
    ReencodingArgsAdapter, DropsPassbackAdapter, EmptiesToolResultsAdapter, ConcatIdsAdapter,
    EofSuccessAdapter, LosesUsageAdapter,
)


# --- adapters that would keep a run alive (not in BROKEN: they are judged by the runner's budget)

HOLDS: list[asyncio.Event] = []
"""One event per test loop; `release_holds()` frees whatever the adapters below hold, so a test
can end its loop cleanly after checking that the run did not wait for them."""


def release_holds() -> None:
    for event in HOLDS:
        event.set()
    HOLDS.clear()


async def _hold_ignoring_cancellation() -> None:
    """The bug: wait, and treat every CancelledError as something to wait through."""
    event = asyncio.Event()
    HOLDS.append(event)
    while not event.is_set():
        try:
            await event.wait()
        except asyncio.CancelledError:
            continue


class SwallowsCancelAdapter(DeepSeekAdapter):
    """Catches the consumer's CancelledError mid-stream and keeps "draining" instead of ending."""

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        try:
            async for chunk in super().stream(options):
                yield chunk
        except asyncio.CancelledError:
            await _hold_ignoring_cancellation()


class HangingCloseAdapter(DeepSeekAdapter):
    """`aclose()` waits for a pool that never drains, deaf to cancellation."""

    async def aclose(self) -> None:
        await _hold_ignoring_cancellation()
        await super().aclose()
