"""Deliberately broken Anthropic-protocol adapters: each one a small, realistic bug on top of
AnthropicAdapter, proving the `anthropic` scenarios can fail.

The body bugs rewrite the request; the failure bugs rewrite the error finish on its way out; the
translator bugs hand the adapter a decoder factory (its
`decoder=` argument) that builds a broken `Translator`, so only their own instances decode wrongly. Each class lists the scenarios that must catch it in
`MUST_FAIL`; the test runs the catalogue on the `anthropic` protocol and expects exactly that set.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import httpx

from dshkit.harness.llm import AssistantMessage, Finish, GenerateOptions, LlmFailure, StreamChunk
from dshkit.harness.llm.messages import OpaqueBlock
from dshkit.harness.providers.anthropic import AnthropicAdapter
from dshkit.harness.providers.anthropic.decoder import StreamDecoder
from dshkit.harness.providers.anthropic.translate import Translator

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


class _RoutesStrayDeltas(Translator):
    """Files a delta for an index that never started under the block still open (keyed by
    "the current block" instead of by index; AN48 says such a delta is a broken stream)."""

    __slots__ = ()

    def _delta(self, event: dict[str, Any], out: list[StreamChunk]) -> None:
        if event.get("index") not in self.keyed:
            open_now = [wire for wire, block in self.keyed.items() if not block.closed]
            if open_now:
                event = {**event, "index": open_now[-1]}
        super()._delta(event, out)


class _PauseTurnIsEndTurn(Translator):
    """Reads `pause_turn` as `end_turn`: a paused turn looks finished (AN60: never a silent stop)."""

    __slots__ = ()

    def _message_delta(self, event: dict[str, Any], out: list[StreamChunk]) -> None:
        super()._message_delta(event, out)
        if self.stop_reason == "pause_turn":
            self.stop_reason = "end_turn"


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


class RoutesStrayDeltasAdapter(_BrokenTranslate):
    TRANSLATOR = _RoutesStrayDeltas
    MUST_FAIL = frozenset({"an-delta-unstarted-while-open"})


class PauseTurnIsStopAdapter(_BrokenTranslate):
    TRANSLATOR = _PauseTurnIsEndTurn
    MUST_FAIL = frozenset({"an-pause-turn"})


class _BrokenBody(RewritesBody, AnthropicAdapter):
    pass


class SendsRedactedThinkingAdapter(AnthropicAdapter):
    """Passes `redacted_thinking` blocks back as Anthropic asks (its own API wants them), which
    DeepSeek does not take (AN24: a 400 for the unknown block type)."""

    MUST_FAIL = frozenset({"an-redacted-thinking-turn-passed-back"})

    def build_request(self, options: GenerateOptions) -> httpx.Request:
        request = super().build_request(options)
        body = json.loads(request.content)
        turns = [m for m in body["messages"] if m["role"] == "assistant"]
        assistants = [m for m in options.messages if isinstance(m, AssistantMessage)]
        for message, turn in zip(assistants, turns, strict=True):
            redacted = [dict(b.data) for b in message.content
                        if isinstance(b, OpaqueBlock) and b.type == "redacted_thinking"]
            turn["content"][1:1] = redacted  # after the thinking block, where it came
        headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
        content = json.dumps(body, ensure_ascii=False).encode()
        return self._client.build_request("POST", request.url, content=content, headers=headers)


class SystemAsMessageAdapter(_BrokenBody):
    """Sends the system prompt as a first `system` message, the Chat Completions way (the
    Messages API takes it only at top level; DeepSeek rejects the role)."""

    MUST_FAIL = frozenset({"an-system-prompt-top-level"})

    def rewrite(self, body: dict[str, Any]) -> None:
        if "system" in body:
            body["messages"].insert(0, {"role": "system", "content": body.pop("system")})


class TextBeforeToolResultsAdapter(_BrokenBody):
    """Puts the user's text before the `tool_result` blocks of the same turn (Anthropic wants
    the results first: they answer the turn just before)."""

    MUST_FAIL = frozenset({"an-tool-results-before-text"})

    def rewrite(self, body: dict[str, Any]) -> None:
        for message in body["messages"]:
            content = message["content"]
            if message["role"] == "user" and isinstance(content, list):
                message["content"] = sorted(content, key=lambda b: b.get("type") == "tool_result")


class EffortAsChatFieldAdapter(_BrokenBody):
    """Sends the effort as the chat route's top-level `reasoning_effort` instead of
    `output_config.effort` (DeepSeek ignores unknown fields here: the effort is lost)."""

    MUST_FAIL = frozenset({"an-effort-output-config"})

    def rewrite(self, body: dict[str, Any]) -> None:
        config = body.pop("output_config", None)
        if isinstance(config, dict) and "effort" in config:
            body["reasoning_effort"] = config["effort"]


class KeyInWrongHeaderAdapter(AnthropicAdapter):
    """Sends the key as `api-key` (another gateway's habit): neither header DeepSeek reads
    (AN9/AN10), so a server that requires the key answers 401."""

    MUST_FAIL = frozenset({"an-api-key-header"})

    def _headers(self, options: GenerateOptions, key: str) -> dict[str, str]:
        headers = super()._headers(options, key)
        headers["api-key"] = headers.pop("x-api-key")
        return headers


class DropsThinkingAdapter(_BrokenBody):
    """Never sends thinking blocks back (DeepSeek answers 400 on tool-use turns, AN27)."""

    MUST_FAIL = frozenset({"an-neutral-tool-round-trip", "an-signature-passback", "an-history-tool-turn-without-thinking",
                           "an-redacted-thinking-turn-passed-back", "an-tool-results-before-text"})

    def rewrite(self, body: dict[str, Any]) -> None:
        for message in body["messages"]:
            if isinstance(message["content"], list):
                message["content"] = [b for b in message["content"] if b.get("type") != "thinking"]


class BlanksSignaturesAdapter(_BrokenBody):
    """Sends thinking back with an empty signature instead of the one received (AN28)."""

    MUST_FAIL = frozenset({"an-signature-passback", "an-redacted-thinking-turn-passed-back"})

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

    MUST_FAIL = frozenset({"an-reset-before-headers", "an-reset-mid-stream"})

    def failure(self, failure: LlmFailure) -> LlmFailure:
        if failure.code == "TRANSPORT":
            raise ConnectionResetError(failure.message)
        return failure


BROKEN_ANTHROPIC = (
    AppendsSignaturesAdapter, IgnoresErrorEventsAdapter, KeepsStartUsageAdapter, EofIsEndTurnAdapter,
    DropsThinkingAdapter, BlanksSignaturesAdapter, SplitsToolResultsAdapter, DropsHttpStatusAdapter,
    RaisesTransportErrorsAdapter, RoutesStrayDeltasAdapter, PauseTurnIsStopAdapter,
    SendsRedactedThinkingAdapter, SystemAsMessageAdapter, TextBeforeToolResultsAdapter,
    EffortAsChatFieldAdapter, KeyInWrongHeaderAdapter,
)
