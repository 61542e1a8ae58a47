"""Deliberately broken Anthropic-protocol adapters: each one a small, realistic bug on top of
AnthropicAdapter, proving the `anthropic` scenarios can fail.

The body bugs rewrite the request; the failure bugs rewrite the error finish on its way out; the
translator bugs hand the adapter a decoder factory (its
`decoder=` argument) that builds a broken `Translator`, so only their own instances decode wrongly. Each class lists the scenarios that must catch it in
`MUST_FAIL`; the test runs the catalogue on the `anthropic` protocol and expects exactly that set.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Any, ClassVar

from dshkit.harness.llm import Finish, GenerateOptions, LlmFailure, StreamChunk
from dshkit.harness.providers.anthropic import AnthropicAdapter, StreamDecoder, Translator

from .broken import RewritesBody


class _AppendsSignatures(Translator):
    """Appends each `signature_delta` to the signature so far (the SDK assigns; AN58)."""

    __slots__ = ()

    def _delta(self, event: dict[str, Any], out: list[StreamChunk]) -> None:
        state = self.keyed.get(event.get("index"))
        delta = event.get("delta")
        before = getattr(state, "signature", None)
        super()._delta(event, out)
        if state is not None and isinstance(delta, dict) and delta.get("type") == "signature_delta" and before:
            state.signature = before + str(delta.get("signature"))  # type: ignore[attr-defined]


class _IgnoresErrorEvents(Translator):
    """Treats an `error` event as an unknown event type (AN69 says it ends the stream)."""

    __slots__ = ()

    def feed_into(self, event: Any, out: list[StreamChunk]) -> None:
        if isinstance(event, dict) and event.get("type") == "error":
            return
        super().feed_into(event, out)


class _KeepsStartUsage(Translator):
    """Takes only `output_tokens` from message_delta, keeping message_start's input counts."""

    __slots__ = ()

    def _merge_usage(self, usage: dict[str, Any]) -> None:
        if self._usage:
            usage = {"output_tokens": usage.get("output_tokens")}
        super()._merge_usage(usage)


class _EofIsEndTurn(Translator):
    """Treats a body that ends before any stop_reason as a normal `end_turn`."""

    __slots__ = ()

    def close(self) -> list[StreamChunk]:
        if self.stop_reason is None:
            self.stop_reason = "end_turn"
        return super().close()


class _BrokenTranslate(AnthropicAdapter):
    """An AnthropicAdapter decoding with `TRANSLATOR`, injected through `decoder=`."""

    TRANSLATOR: ClassVar[type[Translator]] = Translator
    MUST_FAIL: ClassVar[frozenset[str]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, decoder=self.decoder, **kwargs)

    def decoder(self) -> StreamDecoder:
        return StreamDecoder(self.TRANSLATOR())


class AppendsSignaturesAdapter(_BrokenTranslate):
    TRANSLATOR = _AppendsSignatures
    MUST_FAIL = frozenset({"an-signature-passback"})


class IgnoresErrorEventsAdapter(_BrokenTranslate):
    TRANSLATOR = _IgnoresErrorEvents
    MUST_FAIL = frozenset({"an-error-event-mid-stream"})


class KeepsStartUsageAdapter(_BrokenTranslate):
    TRANSLATOR = _KeepsStartUsage
    MUST_FAIL = frozenset({"an-usage-merge"})


class EofIsEndTurnAdapter(_BrokenTranslate):
    TRANSLATOR = _EofIsEndTurn
    MUST_FAIL = frozenset({"an-eof-before-stop-reason"})


class _BrokenBody(RewritesBody, AnthropicAdapter):
    pass


class DropsThinkingAdapter(_BrokenBody):
    """Never sends thinking blocks back (DeepSeek answers 400 on tool-use turns, AN27)."""

    MUST_FAIL = frozenset({"an-neutral-tool-round-trip", "an-signature-passback", "an-history-tool-turn-without-thinking"})

    def rewrite(self, body: dict[str, Any]) -> None:
        for message in body["messages"]:
            if isinstance(message["content"], list):
                message["content"] = [b for b in message["content"] if b.get("type") != "thinking"]


class BlanksSignaturesAdapter(_BrokenBody):
    """Sends thinking back with an empty signature instead of the one received (AN28)."""

    MUST_FAIL = frozenset({"an-signature-passback"})

    def rewrite(self, body: dict[str, Any]) -> None:
        for message in body["messages"]:
            for block in message["content"] if isinstance(message["content"], list) else ():
                if block.get("type") == "thinking":
                    block["signature"] = ""


class SplitsToolResultsAdapter(_BrokenBody):
    """Sends each tool result in a user turn of its own (turns must alternate, AN26)."""

    MUST_FAIL = frozenset({"an-history-tool-turn-without-thinking"})

    def rewrite(self, body: dict[str, Any]) -> None:
        out: list[dict[str, Any]] = []
        for message in body["messages"]:
            content = message["content"]
            if message["role"] == "user" and isinstance(content, list) and len(content) > 1 and all(
                b.get("type") == "tool_result" for b in content
            ):
                out += [{"role": "user", "content": [b]} for b in content]
            else:
                out.append(message)
        body["messages"] = out


class _RewritesFailure(AnthropicAdapter):
    """An AnthropicAdapter whose error finishes pass through `failure()` on the way out."""

    MUST_FAIL: ClassVar[frozenset[str]]

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        inner = super().stream(options)
        try:
            async for chunk in inner:
                failure = chunk.reason.failure if isinstance(chunk, Finish) else None
                if isinstance(chunk, Finish) and failure is not None:
                    chunk = dataclasses.replace(chunk, reason=dataclasses.replace(chunk.reason, failure=self.failure(failure)))
                yield chunk
        finally:
            await inner.aclose()

    def failure(self, failure: LlmFailure) -> LlmFailure:
        return failure


class DropsHttpStatusAdapter(_RewritesFailure):
    """Reads an HTTP error from its body alone: the status and `Retry-After` are lost."""

    MUST_FAIL = frozenset({"an-400-deepseek-envelope", "an-404-anthropic-envelope", "an-overloaded-529",
                           "an-429-retry-after", "an-500-server"})

    def failure(self, failure: LlmFailure) -> LlmFailure:
        return dataclasses.replace(failure, status=None, provider_retry_after_ms=None)


class RaisesTransportErrorsAdapter(_RewritesFailure):
    """Lets a transport failure escape as an exception instead of ending the stream with it."""

    MUST_FAIL = frozenset({"an-reset-before-headers"})

    def failure(self, failure: LlmFailure) -> LlmFailure:
        if failure.code == "TRANSPORT":
            raise ConnectionResetError(failure.message)
        return failure


BROKEN_ANTHROPIC = (
    AppendsSignaturesAdapter, IgnoresErrorEventsAdapter, KeepsStartUsageAdapter, EofIsEndTurnAdapter,
    DropsThinkingAdapter, BlanksSignaturesAdapter, SplitsToolResultsAdapter, DropsHttpStatusAdapter,
    RaisesTransportErrorsAdapter,
)
