"""`OpenAICompatAdapter`: a second adapter, built on the official `openai` SDK (AsyncOpenAI
streaming), with the same `Adapter` contract as `DeepSeekAdapter`.

It exists to prove the conformance suite judges behaviour, not design: the SDK does its own SSE
parsing and chunk models, so this adapter only maps SDK chunk objects to `StreamChunk`s and SDK
exceptions to `LlmFailure`s. The request body comes from the DeepSeek serializer (the message
format is the same); DeepSeek-only fields travel in `extra_body`, as the SDK requires. Known
differences from `DeepSeekAdapter`, visible in a conformance run: the SDK cannot tell EOF from
`[DONE]` (so `doneMissing` is never set) and it raises on any chunk with an `error` key.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from harness.llm import (
    AdapterCapabilities,
    BlockEnd,
    BlockStart,
    ErrorCode,
    Finish,
    FinishMeta,
    FinishReason,
    GenerateOptions,
    LlmFailure,
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
from harness.providers.deepseek import (
    DeepSeekConfig,
    failure_from_error_object,
    failure_from_http,
    map_finish_reason,
    map_usage,
    serialize,
)

__all__ = ["OpenAICompatAdapter", "OpenAICompatCapabilities"]


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenAICompatCapabilities(AdapterCapabilities):
    """What the SDK hides from this adapter (the conformance suite marks those scenarios n/a)."""

    done_marker: bool = False
    """The SDK ends iteration on `[DONE]` and on EOF alike, so `doneMissing` cannot be set and a
    `[DONE]` without any finish_reason cannot be told from a truncated stream."""
    strict_sse: bool = False
    """The SDK's SSE decoder dispatches data-less blocks (`event:`/`id:` only) as empty JSON and
    keeps a leading byte order mark, so both end as malformed responses."""
    error_usage: bool = False
    """The SDK raises on a chunk with an `error` object before handing it over, so usage sent
    on that same chunk (OpenRouter's shape) never reaches the adapter."""


def _fail(message: str, code: str, **fields: Any) -> Finish:
    return Finish(reason=FinishReason(kind="error", failure=LlmFailure(message=message, code=code, **fields)))


class _Call:
    __slots__ = ("index", "id", "name", "args")

    def __init__(self, index: int) -> None:
        self.index = index
        self.id = ""
        self.name = ""
        self.args: list[str] = []


class _Blocks:
    """Block bookkeeping for one response: SDK deltas → chunks, closed at the end."""

    def __init__(self) -> None:
        self.next = 0
        self.reasoning: tuple[int, list[str]] | None = None
        self.text: tuple[int, list[str]] | None = None
        self.calls: dict[int, _Call] = {}
        self.order: list[tuple[str, Any]] = []

    def _open(self, kind: str, out: list[StreamChunk]) -> int:
        index = self.next
        self.next += 1
        out.append(BlockStart(index=index, block_type=kind))
        return index

    def delta(self, delta: Any, out: list[StreamChunk]) -> None:
        extra = getattr(delta, "model_extra", None) or {}
        reasoning = extra.get("reasoning_content") or extra.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            if self.reasoning is None:
                self.reasoning = (self._open("reasoning", out), [])
                self.order.append(("reasoning", self.reasoning))
            self.reasoning[1].append(reasoning)
            out.append(ReasoningDelta(index=self.reasoning[0], text=reasoning))
        if delta.content:
            if self.text is None:
                self.text = (self._open("text", out), [])
                self.order.append(("text", self.text))
            self.text[1].append(delta.content)
            out.append(TextDelta(index=self.text[0], text=delta.content))
        for entry in delta.tool_calls or ():
            call = self.calls.get(entry.index)
            if call is None:
                call = self.calls[entry.index] = _Call(self._open("tool-call", out))
                self.order.append(("tool-call", call))
            if entry.id and not call.id:
                call.id = entry.id
            fn = entry.function
            if fn is not None and fn.name and not call.name:
                call.name = fn.name
            fragment = (fn.arguments if fn is not None else None) or ""
            call.args.append(fragment)
            out.append(
                ToolCallDelta(index=call.index, id=call.id, name=call.name or None, arguments_delta=fragment)
            )

    def close(self) -> list[StreamChunk]:
        out: list[StreamChunk] = []
        for kind, state in self.order:
            if kind == "tool-call":
                block: Any = ToolCallBlock(id=state.id, name=state.name, arguments="".join(state.args))
                out.append(BlockEnd(index=state.index, block=block))
            else:
                index, parts = state
                cls = ReasoningBlock if kind == "reasoning" else TextBlock
                out.append(BlockEnd(index=index, block=cls(text="".join(parts))))
        return out


class OpenAICompatAdapter:
    """Adapter for any OpenAI-compatible Chat Completions server, through the `openai` SDK."""

    capabilities = OpenAICompatCapabilities()

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        config: DeepSeekConfig | None = None,
        connect_timeout_s: float = 10.0,
        idle_timeout_s: float = 300.0,
        provider: str = "openai-compat",
    ) -> None:
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise UsageError(
                "OpenAICompatAdapter needs the openai SDK: pip install 'dshkit[openai]'"
            ) from exc
        self._openai = openai
        self.base_url = base_url.rstrip("/")
        self.provider = provider
        self.config = config or DeepSeekConfig()
        self._client = openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=api_key,
            max_retries=0,  # retrying is the loop's decision, never the adapter's
            timeout=openai.Timeout(idle_timeout_s, connect=connect_timeout_s),
        )

    async def aclose(self) -> None:
        await self._client.close()

    def _kwargs(self, options: GenerateOptions) -> dict[str, Any]:
        body = serialize(options, self.config)
        extra = {k: body.pop(k) for k in ("thinking", "reasoning_effort") if k in body}
        body.pop("stream", None)
        kwargs: dict[str, Any] = {**body, "stream": True}
        if extra:
            kwargs["extra_body"] = extra
        if options.session_id:
            kwargs["extra_headers"] = {"x-deepseek-harness-session-id": options.session_id}
        return kwargs

    def _failure(self, exc: Exception) -> LlmFailure:
        openai = self._openai
        if isinstance(exc, openai.APIStatusError):
            # The SDK has read the error body by now; map it exactly as DeepSeekAdapter does.
            return failure_from_http(exc.status_code, exc.response.content, exc.response.headers)
        if isinstance(exc, openai.APITimeoutError):
            return LlmFailure(message=f"timeout talking to {self.base_url}", code=ErrorCode.TIMEOUT)
        if isinstance(exc, openai.APIConnectionError):
            return LlmFailure(message=f"request to {self.base_url} failed: {exc}", code=ErrorCode.TRANSPORT)
        if isinstance(exc, openai.APIError):
            # The SDK raises APIError for a chunk carrying an `error` object; map that object
            # exactly as the DeepSeek adapter maps an in-band error.
            body = exc.body if isinstance(exc.body, dict) else None
            return failure_from_error_object(
                body or {"message": exc.message, "type": exc.type, "code": exc.code, "param": exc.param}
            )
        if isinstance(exc, ValueError):  # a payload the SDK could not parse
            return LlmFailure(message=f"malformed SSE payload: {exc}", code=ErrorCode.MALFORMED_RESPONSE)
        return LlmFailure(message=f"stream from {self.base_url} failed: {exc}", code=ErrorCode.TRANSPORT)

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        try:
            kwargs = self._kwargs(options)
        except UsageError as exc:
            yield _fail(exc.message, exc.code)
            return
        signal = options.signal
        waiter = asyncio.ensure_future(signal.wait()) if signal is not None else None
        blocks = _Blocks()
        finish_reason: str | None = None
        usage = None
        ids: dict[str, str | None] = {}
        stream: Any = None
        received = False
        try:
            stream = await race_signal(self._client.chat.completions.create(**kwargs), waiter)
            chunks = stream.__aiter__()
            while True:
                try:
                    chunk = await race_signal(chunks.__anext__(), waiter)
                except StopAsyncIteration:
                    break
                received = True
                if not ids:
                    ids = {"id": chunk.id, "model": chunk.model, "fp": chunk.system_fingerprint}
                out: list[StreamChunk] = []
                try:
                    for choice in chunk.choices or ():
                        if choice.index != 0:
                            continue
                        if choice.delta is not None:
                            blocks.delta(choice.delta, out)
                        if choice.finish_reason:
                            finish_reason = choice.finish_reason
                    if chunk.usage is not None:
                        usage = map_usage(chunk.usage.model_dump())
                except (AttributeError, TypeError) as exc:
                    # The SDK builds chunk models without validation, so a payload of the wrong
                    # shape (`choices: [null]`) surfaces here; it must end the stream as data.
                    for item in out:
                        yield item
                    yield _fail(f"malformed chunk: {exc}", ErrorCode.MALFORMED_RESPONSE)
                    return
                for item in out:
                    yield item
        except SignalAborted:
            failure = LlmFailure(message="request aborted by caller", code=ErrorCode.ABORTED)
            yield Finish(reason=FinishReason(kind="aborted", failure=failure))
            return
        except (self._openai.OpenAIError, ValueError) as exc:
            yield Finish(reason=FinishReason(kind="error", failure=self._failure(exc)))
            return
        finally:
            if waiter is not None:
                waiter.cancel()
            if stream is not None:
                await stream.close()
        meta = FinishMeta(id=ids.get("id"), model=ids.get("model"), system_fingerprint=ids.get("fp"))
        if not received:
            yield _fail("the server returned no chunk at all", ErrorCode.EMPTY_RESPONSE)
            return
        if finish_reason is None:
            failure = LlmFailure(message="stream ended before a finish_reason", code=ErrorCode.STREAM_CLOSED)
            yield Finish(reason=FinishReason(kind="error", failure=failure), meta=meta)
            return
        for item in blocks.close():
            yield item
        if usage is not None:
            yield Usage(usage=usage)
        reason = map_finish_reason(finish_reason)
        if reason.kind == "stop" and not blocks.order:
            reason = FinishReason(
                kind="error",
                failure=LlmFailure(message="completed response with no content", code=ErrorCode.EMPTY_RESPONSE),
            )
        yield Finish(reason=reason, meta=meta)


def _s(value: Any) -> str | None:
    return None if value is None else str(value)
