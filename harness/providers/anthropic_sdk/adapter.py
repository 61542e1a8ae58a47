"""`AnthropicSDKAdapter`: a second adapter for DeepSeek's Anthropic Messages surface, built on the
official `anthropic` SDK (`AsyncAnthropic.messages.create(stream=True)`), with the same `Adapter`
contract as `AnthropicAdapter`.

It exists so the conformance suite's Anthropic scenarios are shown to judge behaviour, not one
implementation: the SDK does its own HTTP, SSE parsing and event models, and this module only
maps the SDK's typed events to `StreamChunk`s (with its own block bookkeeping) and the SDK's
exceptions to `LlmFailure`s. The request body comes from the Anthropic serializer (the message
format is the same); fields the SDK does not type travel in `extra_body`. Known differences,
visible in a conformance run: the SDK drops events that have no `event:` line (AN43) and raises on
an `error` event, so the partial blocks before it are not closed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx

from harness.llm import (
    AdapterCapabilities,
    BlockEnd,
    BlockStart,
    ContentBlock,
    ErrorCode,
    Finish,
    FinishMeta,
    FinishReason,
    GenerateOptions,
    LlmFailure,
    OpaqueBlock,
    ReasoningBlock,
    ReasoningDelta,
    SignalAborted,
    StreamChunk,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
    Usage,
    UsageError,
    race_signal,
)
from harness.providers.anthropic import (
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


def _fail(message: str, code: str) -> Finish:
    return Finish(reason=FinishReason(kind="error", failure=LlmFailure(message=message, code=code)))


class _Block:
    __slots__ = ("index", "kind", "parts", "id", "name", "signature", "raw", "closed")

    def __init__(self, index: int, kind: str, raw: Any) -> None:
        self.index = index
        self.kind = kind
        self.parts: list[str] = []
        self.id = ""
        self.name = ""
        self.signature = ""
        self.raw = raw
        self.closed = False

    def block(self) -> ContentBlock:
        text = "".join(self.parts)
        if self.kind == "text":
            return TextBlock(text=text)
        if self.kind == "reasoning":
            return ReasoningBlock(text=text)
        if self.kind == "tool-call":
            return ToolCallBlock(id=self.id, name=self.name, arguments=text)
        data = self.raw.model_dump() if hasattr(self.raw, "model_dump") else {"type": self.kind}
        return OpaqueBlock(type=self.kind, data=data)


class _Response:
    """One response's state: SDK events → chunks."""

    def __init__(self) -> None:
        self.blocks: dict[int, _Block] = {}
        self.order: list[_Block] = []
        self.usage: dict[str, Any] = {}
        self.id: str | None = None
        self.model: str | None = None
        self.stop_reason: str | None = None
        self.stopped = False

    def _merge(self, usage: Any) -> None:
        if usage is None:
            return
        for name, value in usage.model_dump().items():
            if value is not None:
                self.usage[name] = value

    def event(self, event: Any, out: list[StreamChunk]) -> str | None:
        """Apply one SDK event; returns a problem description for a broken stream."""
        kind = event.type
        if kind == "message_start":
            self.id, self.model = event.message.id, event.message.model
            self._merge(event.message.usage)
        elif kind == "content_block_start":
            if event.index in self.blocks:
                return f"content block {event.index} started twice"
            raw = event.content_block
            state = _Block(len(self.order), _KINDS.get(raw.type, raw.type), raw)
            self.blocks[event.index] = state
            self.order.append(state)
            out.append(BlockStart(index=state.index, block_type=state.kind))
            if state.kind == "tool-call":
                state.id, state.name = raw.id, raw.name
                out.append(ToolCallDelta(index=state.index, id=state.id, name=state.name, arguments_delta=""))
            elif state.kind == "reasoning":
                state.signature = getattr(raw, "signature", None) or ""
        elif kind == "content_block_delta":
            open_ = self.blocks.get(event.index)
            if open_ is None:
                return f"delta for content block {event.index}, which never started"
            if not open_.closed:
                self._delta(open_, event.delta, out)
        elif kind == "content_block_stop":
            done = self.blocks.get(event.index)
            if done is None:
                return f"stop for content block {event.index}, which never started"
            if not done.closed:
                done.closed = True
                out.append(BlockEnd(index=done.index, block=done.block()))
        elif kind == "message_delta":
            if event.delta.stop_reason:
                self.stop_reason = event.delta.stop_reason
            self._merge(event.usage)
        elif kind == "message_stop":
            self.stopped = True
        return None

    @staticmethod
    def _delta(state: _Block, delta: Any, out: list[StreamChunk]) -> None:
        dtype = delta.type
        if dtype == "text_delta" and delta.text:
            state.parts.append(delta.text)
            out.append(TextDelta(index=state.index, text=delta.text))
        elif dtype == "thinking_delta" and delta.thinking:
            state.parts.append(delta.thinking)
            out.append(ReasoningDelta(index=state.index, text=delta.thinking))
        elif dtype == "signature_delta":
            state.signature = delta.signature
        elif dtype == "input_json_delta" and delta.partial_json:
            state.parts.append(delta.partial_json)
            if state.kind == "tool-call":
                out.append(
                    ToolCallDelta(index=state.index, id=state.id, name=state.name, arguments_delta=delta.partial_json)
                )

    def finish(self) -> list[StreamChunk]:
        meta = FinishMeta(id=self.id, model=self.model, done_missing=not self.stopped)
        if self.stop_reason is None:
            failure = LlmFailure(message="stream ended before a stop_reason", code=ErrorCode.STREAM_CLOSED)
            return [Finish(reason=FinishReason(kind="error", failure=failure), meta=meta)]
        out: list[StreamChunk] = []
        for state in self.order:
            if not state.closed:
                state.closed = True
                out.append(BlockEnd(index=state.index, block=state.block()))
        if self.usage:
            out.append(Usage(usage=map_usage(self.usage)))
        reason = map_stop_reason(self.stop_reason)
        if reason.kind == "stop" and not self.order:
            reason = FinishReason(
                kind="error",
                failure=LlmFailure(message="completed response with no content", code=ErrorCode.EMPTY_RESPONSE),
            )
        state_: Any = None
        if reason.ok:
            blocks = [{"signature": b.signature} if b.kind == "reasoning" else None for b in self.order]
            state_ = {"response": {"protocol": REPLAY_PROTOCOL, "id": self.id}, "blocks": blocks}
        out.append(Finish(reason=reason, meta=meta, replay_state=state_))
        return out


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
            yield _fail(exc.message, exc.code)
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
                    yield _fail(problem, ErrorCode.MALFORMED_RESPONSE)
                    return
                if response.stopped:
                    break
        except SignalAborted:
            failure = LlmFailure(message="request aborted by caller", code=ErrorCode.ABORTED)
            yield Finish(reason=FinishReason(kind="aborted", failure=failure))
            return
        except (self._sdk.AnthropicError, ValueError, httpx.HTTPError) as exc:
            yield Finish(reason=FinishReason(kind="error", failure=self._failure(exc)))
            return
        finally:
            if waiter is not None:
                waiter.cancel()
            if stream is not None:
                await stream.close()
        if not received:
            yield _fail("the server returned no event at all", ErrorCode.EMPTY_RESPONSE)
            return
        for item in response.finish():
            yield item
