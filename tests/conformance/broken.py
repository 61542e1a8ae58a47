"""Deliberately broken adapters: each one a small, realistic bug on top of DeepSeekAdapter.

The serializer bugs rewrite the request body; the translator bugs hand the adapter a decoder
factory (its `decoder=` argument) that builds a broken `Translator` or `SSEDecoder`, so only
their own instances decode wrongly. Each class lists the scenarios that
must catch it in `MUST_FAIL`; the test runs the whole catalogue and expects exactly that set.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import dataclasses
import json
from collections import deque
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import httpx

from dshkit.harness.llm import ErrorCode, Finish, GenerateOptions, LlmFailure, StreamChunk
from dshkit.harness.llm.retry import is_retryable
from dshkit.harness.providers.deepseek import DeepSeekAdapter
from dshkit.harness.providers.openai_chat.decoder import StreamDecoder
from dshkit.harness.providers.openai_chat.translate import Translator
from dshkit.harness.providers.sse import SSEDecoder


class _ConcatIdsTranslator(Translator):
    """Appends a repeated id to the one it already has instead of keeping the first."""

    __slots__ = ()

    def _tool_delta(self, entry: dict[str, Any], out: list[StreamChunk]) -> Any:
        index = entry.get("index")
        before = self.keyed.get(index) if isinstance(index, int) else None
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
            self.token_usage = None


class _DropsErrorUsageTranslator(Translator):
    """Ends on an in-band error without the usage that came with it."""

    __slots__ = ()

    def _terminate(self, failure: LlmFailure, *, keep_usage: bool = False) -> list[StreamChunk]:
        return super()._terminate(failure)


class _RingBufferTranslator(Translator):
    """Emits every delta, but builds block-end text from a bounded buffer of the last 128
    fragments (meant to cap memory), so long streams close with a truncated block."""

    __slots__ = ()

    def end(self, *, done: bool) -> list[StreamChunk]:
        for block in self.blocks:
            if block.kind in ("text", "reasoning"):
                block.parts = list(deque(block.parts, maxlen=128))
        return super().end(done=done)


class _ForgetsCrSSE(SSEDecoder):
    """Ends a line at a CR that closes a read, then takes the LF opening the next read as a
    blank line: single-line events survive, a multi-line event is dispatched half-way."""

    def feed_raw(self, chunk: bytes) -> list[tuple[str | None, str, str | None]]:
        out = super().feed_raw(chunk)
        self._skip_lf = False
        return out


class _BrokenTranslate(DeepSeekAdapter):
    """A DeepSeekAdapter decoding with `TRANSLATOR`, injected through `decoder=`."""

    TRANSLATOR: ClassVar[type[Translator]] = Translator
    MUST_FAIL: ClassVar[frozenset[str]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, decoder=self.decoder, **kwargs)

    def decoder(self) -> StreamDecoder:
        return StreamDecoder(self.TRANSLATOR())


class ConcatIdsAdapter(_BrokenTranslate):
    TRANSLATOR = _ConcatIdsTranslator
    MUST_FAIL = frozenset({
        "tool-repeat-identity", "tool-repeat-identity-parallel", "tool-second-opener-same-index",
        "rt-repeated-identity-not-doubled",
    })


class EofSuccessAdapter(_BrokenTranslate):
    TRANSLATOR = _EofSuccessTranslator
    MUST_FAIL = frozenset({
        "end-eof-before-finish", "end-eof-after-role-only", "end-eof-mid-event",
        "end-partial-tool-call-eof", "err-garbage-line-then-close",
    })


class LosesUsageAdapter(_BrokenTranslate):
    TRANSLATOR = _LosesUsageTranslator
    MUST_FAIL = frozenset({"finish-repeated", "usage-trailing-then-null"})


class DropsErrorUsageAdapter(_BrokenTranslate):
    TRANSLATOR = _DropsErrorUsageTranslator
    MUST_FAIL = frozenset({"err-inband-error-keeps-usage"})


class RingBufferAdapter(_BrokenTranslate):
    TRANSLATOR = _RingBufferTranslator
    MUST_FAIL = frozenset({"text-many-fragments-add-up"})


class ForgetsCrAdapter(_BrokenTranslate):
    MUST_FAIL = frozenset({"sse-multiline-crlf-one-byte-reads"})

    def decoder(self) -> StreamDecoder:
        return StreamDecoder(sse=_ForgetsCrSSE())


class RateLimitAsQuotaAdapter(DeepSeekAdapter):
    """Takes a 429 without Retry-After for an exhausted quota (terminal), wording or not."""

    MUST_FAIL = frozenset({"http-429-plain-no-retry-after", "http-retry-after-invalid", "http-retry-after-zero"})

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        async for chunk in super().stream(options):
            failure = chunk.reason.failure if isinstance(chunk, Finish) else None
            if failure is not None and failure.status == 429 and failure.provider_retry_after_ms is None:
                failure = dataclasses.replace(failure, code=ErrorCode.QUOTA)
                chunk = dataclasses.replace(chunk, reason=dataclasses.replace(chunk.reason, failure=failure))  # type: ignore[arg-type]
            yield chunk


class SelfRetryingAdapter(DeepSeekAdapter):
    """Sends the request once more when it fails retryably before any output (what an SDK's
    default `max_retries` does behind the loop's back)."""

    MUST_FAIL = frozenset({
        "err-no-self-retry-503", "http-429-plain-no-retry-after", "http-429-rate-limit", "http-500-empty-body",
        "http-500-server", "http-502-html-body", "http-503-server", "http-request-id",
        "http-request-id-deepseek-header", "http-retry-after-invalid", "http-retry-after-past-date",
        "http-retry-after-zero", "http-529-overloaded",
    })

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        for attempt in range(2):
            retry = False
            output = False
            async for chunk in super().stream(options):
                failure = chunk.reason.failure if isinstance(chunk, Finish) else None
                if attempt == 0 and not output and failure is not None and failure.status is not None \
                        and is_retryable(failure):
                    retry = True
                    continue
                output = True
                yield chunk
            if not retry:
                return


class KeepsStreamOpenAdapter(DeepSeekAdapter):
    """Closes its inner stream (and so the HTTP response) only when CancelledError reaches it
    or in `aclose()`: a consumer that stops between two chunks leaves the response open."""

    MUST_FAIL = frozenset({"net-cancel-between-chunks"})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._held: list[Any] = []

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        inner = super().stream(options)
        self._held.append(inner)
        try:
            async for chunk in inner:
                yield chunk
        except asyncio.CancelledError:
            await inner.aclose()
            raise

    async def aclose(self) -> None:
        for inner in self._held:
            await inner.aclose()
        await super().aclose()


class RewritesBody(abc.ABC):
    """Mixed in before an httpx adapter (`class X(RewritesBody, DeepSeekAdapter)`): the request
    the adapter built, with its JSON body passed through `rewrite` first."""

    MUST_FAIL: ClassVar[frozenset[str]]
    _client: httpx.AsyncClient

    @abc.abstractmethod
    def rewrite(self, body: dict[str, Any]) -> None:
        """Change `body` in place: the deliberate mistake."""

    def build_request(self, options: GenerateOptions) -> httpx.Request:
        request: httpx.Request = super().build_request(options)  # type: ignore[misc]
        body = json.loads(request.content)
        self.rewrite(body)
        headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
        content = json.dumps(body, ensure_ascii=False).encode()
        return self._client.build_request("POST", request.url, content=content, headers=headers)


class _BrokenBody(RewritesBody, DeepSeekAdapter):
    pass


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


class DropsFalsyAdapter(_BrokenBody):
    """Sends an optional field only when it is truthy (`if options.temperature:`)."""

    MUST_FAIL = frozenset({"ser-falsy-values-sent"})

    def rewrite(self, body: dict[str, Any]) -> None:
        for key in ("temperature", "stop"):
            if key in body and not body[key]:
                del body[key]
        for tool in body.get("tools") or ():
            if not tool["function"].get("strict", True):
                del tool["function"]["strict"]


class OldVocabularyAdapter(_BrokenBody):
    """Knows nothing of `tool_choice`, `strict` or effort `none`: drops them from the body."""

    MUST_FAIL = frozenset({
        "ser-falsy-values-sent", "ser-tool-choice-auto", "ser-tool-choice-none",
        "ser-tool-choice-required-thinking-off", "ser-tool-choice-named",
        "ser-tool-choice-forced-turns-default-thinking-off", "ser-tool-strict", "ser-effort-none",
    })

    def rewrite(self, body: dict[str, Any]) -> None:
        body.pop("tool_choice", None)
        if body.get("reasoning_effort") == "none":
            del body["reasoning_effort"]
        for tool in body.get("tools") or ():
            tool["function"].pop("strict", None)


BROKEN = (
    ReencodingArgsAdapter, DropsPassbackAdapter, EmptiesToolResultsAdapter, ConcatIdsAdapter,
    EofSuccessAdapter, LosesUsageAdapter, DropsErrorUsageAdapter, RingBufferAdapter, ForgetsCrAdapter,
    RateLimitAsQuotaAdapter, SelfRetryingAdapter, KeepsStreamOpenAdapter, DropsFalsyAdapter,
    OldVocabularyAdapter,
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
