"""`AnthropicSDKAdapter`: a second adapter for DeepSeek's Anthropic Messages surface, built on the
official `anthropic` SDK (`AsyncAnthropic.messages.create(stream=True)`), with the same `Adapter`
contract as `AnthropicAdapter`.

It exists so the conformance suite's Anthropic scenarios are shown to judge behaviour, not one
implementation: the SDK does its own HTTP, SSE parsing and event models, and this module only
maps the SDK's typed events to `StreamChunk`s (the blocks and end rules are the shared
`dshkit.harness.llm.StreamState`) and the SDK's exceptions to `LlmFailure`s. The request body comes
from the Anthropic serializer (the message format is the same); fields the SDK does not type
travel in `extra_body`. Known differences, visible in a conformance run: the SDK drops events
that have no `event:` line (AN43) and raises on an `error` event, so the partial blocks before
it are not closed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx

from dshkit.harness.llm import (
    AdapterCapabilities,
    BlockState,
    ContentBlock,
    ErrorCode,
    Finish,
    GenerateOptions,
    LlmFailure,
    OpaqueBlock,
    SignalAborted,
    StreamChunk,
    StreamState,
    UsageError,
    race_signal,
)
from dshkit.harness.providers.anthropic import (
    REPLAY_PROTOCOL,
    AnthropicConfig,
    failure_from_error_event,
    failure_from_response,
    map_stop_reason,
    map_usage,
    serialize,
)

__all__ = ["AnthropicSDKAdapter"]

_KINDS = {"text": "text", "thinking": "reasoning", "tool_use": "tool-call"}


_STREAM_CLOSED = LlmFailure(message="stream ended before a stop_reason", code=ErrorCode.STREAM_CLOSED)


class _Block(BlockState):
    """A content block: the shared bookkeeping plus its signature and the SDK's start object."""

    __slots__ = ("signature", "raw")

    def __init__(self, kind: str, raw: Any) -> None:
        super().__init__(kind)
        self.signature = ""
        self.raw = raw

    def block(self) -> ContentBlock:
        if self.kind in ("text", "reasoning", "tool-call"):
            return super().block()
        data = self.raw.model_dump() if hasattr(self.raw, "model_dump") else {"type": self.kind}
        return OpaqueBlock(type=self.kind, data=data)


class _Response(StreamState):
    """One response's state: SDK events into the shared `StreamState`, blocks keyed by the
    wire's content block index."""

    __slots__ = ("wire_usage", "stop_reason", "stopped")

    def __init__(self) -> None:
        super().__init__()
        self.wire_usage: dict[str, Any] = {}
        self.stop_reason: str | None = None
        self.stopped = False

    def _merge(self, usage: Any) -> None:
        if usage is None:
            return
        for name, value in usage.model_dump().items():
            if value is not None:
                self.wire_usage[name] = value

    def event(self, event: Any, out: list[StreamChunk]) -> str | None:
        """Apply one SDK event; returns a problem description for a broken stream."""
        kind = event.type
        if kind == "message_start":
            self.id, self.model = event.message.id, event.message.model
            self._merge(event.message.usage)
        elif kind == "content_block_start":
            if event.index in self.keyed:
                return f"content block {event.index} started twice"
            raw = event.content_block
            state = _Block(_KINDS.get(raw.type, raw.type), raw)
            self.open_block(state, out, event.index)
            if state.kind == "tool-call":
                state.id, state.name = raw.id, raw.name
                self.append_arguments(state, "", out)
            elif state.kind == "reasoning":
                state.signature = getattr(raw, "signature", None) or ""
        elif kind == "content_block_delta":
            open_ = self.keyed.get(event.index)
            if open_ is None:
                return f"delta for content block {event.index}, which never started"
            if not open_.closed:
                self._delta(open_, event.delta, out)
        elif kind == "content_block_stop":
            done = self.keyed.get(event.index)
            if done is None:
                return f"stop for content block {event.index}, which never started"
            self.close_block(done, out)
        elif kind == "message_delta":
            if event.delta.stop_reason:
                self.stop_reason = event.delta.stop_reason
            self._merge(event.usage)
        elif kind == "message_stop":
            self.stopped = True
        return None

    def _delta(self, state: BlockState, delta: Any, out: list[StreamChunk]) -> None:
        dtype = delta.type
        if dtype == "text_delta" and delta.text:
            self.append_text(state, delta.text, out)
        elif dtype == "thinking_delta" and delta.thinking:
            self.append_reasoning(state, delta.thinking, out)
        elif dtype == "signature_delta":
            if isinstance(state, _Block):
                state.signature = delta.signature
        elif dtype == "input_json_delta" and delta.partial_json:
            if state.kind == "tool-call":
                self.append_arguments(state, delta.partial_json, out)
            else:
                state.parts.append(delta.partial_json)

    def _replay_state(self) -> dict[str, Any]:
        blocks = [
            {"signature": b.signature} if isinstance(b, _Block) and b.kind == "reasoning" else None
            for b in self.blocks
        ]
        return {"response": {"protocol": REPLAY_PROTOCOL, "id": self.id}, "blocks": blocks}

    def end(self) -> list[StreamChunk]:
        """The end of the body (after `message_stop` or not)."""
        reason = map_stop_reason(self.stop_reason) if self.stop_reason is not None else None
        if self.wire_usage:
            self.token_usage = map_usage(self.wire_usage)
        return self.finish(
            reason,
            unfinished=_STREAM_CLOSED,
            done_missing=not self.stopped,
            empty_message="completed response with no content",
            replay_state=self._replay_state,
        )


class AnthropicSDKAdapter:
    """Adapter for an Anthropic Messages server, through the official `anthropic` SDK."""

    capabilities = AdapterCapabilities()

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        config: AnthropicConfig | None = None,
        connect_timeout_s: float = 10.0,
        idle_timeout_s: float = 600.0,
        provider: str = "deepseek",
    ) -> None:
        """`base_url` is the part before `/v1/messages` (e.g. `https://api.deepseek.com/anthropic`)."""
        try:
            import anthropic
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise UsageError("AnthropicSDKAdapter needs the anthropic SDK: pip install 'dshkit[anthropic]'") from exc
        self._sdk = anthropic
        self.base_url = base_url.rstrip("/")
        self.provider = provider
        self.config = config or AnthropicConfig()
        self._client = anthropic.AsyncAnthropic(
            base_url=self.base_url,
            api_key=api_key,
            max_retries=0,  # retrying is the loop's decision, never the adapter's
            timeout=anthropic.Timeout(idle_timeout_s, connect=connect_timeout_s),
        )

    async def aclose(self) -> None:
        await self._client.close()

    def _kwargs(self, options: GenerateOptions) -> dict[str, Any]:
        body = serialize(options, self.config)
        body.pop("stream", None)
        extra = {k: body.pop(k) for k in ("thinking", "output_config") if k in body}
        kwargs: dict[str, Any] = {**body, "stream": True}
        if extra:
            kwargs["extra_body"] = extra
        if options.session_id:
            kwargs["extra_headers"] = {"x-deepseek-harness-session-id": options.session_id}
        return kwargs

    def _failure(self, exc: Exception) -> LlmFailure:
        sdk = self._sdk
        if isinstance(exc, sdk.APIStatusError):
            if exc.status_code == 200:
                # An `error` event inside the stream: the SDK raises with the 200 response.
                body = exc.body if isinstance(exc.body, dict) else {"message": str(exc)}
                return failure_from_error_event(body.get("error", body))
            return failure_from_response(exc.status_code, exc.response.content, exc.response.headers)
        if isinstance(exc, sdk.APITimeoutError):
            return LlmFailure(message=f"timeout talking to {self.base_url}", code=ErrorCode.TIMEOUT)
        if isinstance(exc, sdk.APIConnectionError):
            return LlmFailure(message=f"request to {self.base_url} failed: {exc}", code=ErrorCode.TRANSPORT)
        if isinstance(exc, ValueError):  # a payload the SDK could not parse
            return LlmFailure(message=f"malformed SSE payload: {exc}", code=ErrorCode.MALFORMED_RESPONSE)
        return LlmFailure(message=f"stream from {self.base_url} failed: {exc}", code=ErrorCode.TRANSPORT)

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """Send one request and yield its chunks, ending with exactly one `Finish`."""
        try:
            kwargs = self._kwargs(options)
        except UsageError as exc:
            yield Finish.error(exc.message, exc.code)
            return
        signal = options.signal
        waiter = asyncio.ensure_future(signal.wait()) if signal is not None else None
        response = _Response()
        stream: Any = None
        received = False
        try:
            stream = await race_signal(self._client.messages.create(**kwargs), waiter)
            events = stream.__aiter__()
            while True:
                try:
                    event = await race_signal(events.__anext__(), waiter)
                except StopAsyncIteration:
                    break
                received = True
                out: list[StreamChunk] = []
                try:
                    problem = response.event(event, out)
                except (AttributeError, TypeError) as exc:
                    problem = f"malformed event: {exc}"
                for item in out:
                    yield item
                if problem is not None:
                    yield Finish.error(problem, ErrorCode.MALFORMED_RESPONSE)
                    return
                if response.stopped:
                    break
        except SignalAborted:
            yield Finish.aborted("request aborted by caller")
            return
        except (self._sdk.AnthropicError, ValueError, httpx.HTTPError) as exc:
            yield Finish.failed(self._failure(exc))
            return
        finally:
            if waiter is not None:
                waiter.cancel()
            if stream is not None:
                await stream.close()
        if not received:
            yield Finish.error("the server returned no event at all", ErrorCode.EMPTY_RESPONSE)
            return
        for item in response.end():
            yield item
