"""`OpenAICompatAdapter`: a second adapter, built on the official `openai` SDK (AsyncOpenAI
streaming), with the same `Adapter` contract as `DeepSeekAdapter`.

It exists to prove the conformance suite judges behaviour, not design: the SDK does its own HTTP,
SSE parsing and chunk models. Everything else is the OpenAI-style chat base the DeepSeek adapter
extends too: the request body is `openai_chat.serialize` with a `ChatProfile` (DeepSeek's by
default; fields the SDK does not type travel in `extra_body`), each SDK chunk goes back to the
JSON object it was read from and through the same `Translator` (`SdkDecoder`), and the call runs
on the one stream life cycle. Known differences from `DeepSeekAdapter`, visible in a conformance run: the
SDK cannot tell EOF from `[DONE]` (so `doneMissing` is never set) and it raises on any chunk with
an `error` key.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from dshkit.harness.llm import (
    AdapterCapabilities,
    ErrorCode,
    GenerateOptions,
    LlmFailure,
    StreamChunk,
)
from dshkit.harness.llm.errors import UsageError
from dshkit.harness.providers.failures import failure_from_error_object, failure_from_http
from dshkit.harness.providers.openai_chat.profile import ChatProfile, DeepSeekConfig
from dshkit.harness.providers.openai_chat.serialize import serialize
from dshkit.harness.providers.openai_chat.translate import Translator, map_finish_reason
from dshkit.harness.providers.sdk_stream import (
    SdkDecoder,
    SdkSource,
    sdk_errors,
    sdk_failure,
    sdk_http_client,
    sdk_kwargs,
)
from dshkit.harness.providers.stream import run_stream

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


_STREAM_CLOSED = LlmFailure(message="stream ended before a finish_reason", code=ErrorCode.STREAM_CLOSED)
_UNTYPED = ("thinking", "reasoning_effort")
"""DeepSeek's request fields the SDK has no parameter for."""


def _decoder() -> SdkDecoder:
    """SDK chunks through the chat base's `Translator`. The SDK cannot tell EOF from `[DONE]`,
    so at the end `done_missing` is never set, and no finish_reason is STREAM_CLOSED."""
    translator = Translator()

    def end() -> list[StreamChunk]:
        reason = translator.finish_reason
        return translator.finish(
            map_finish_reason(reason) if reason is not None else None,
            unfinished=_STREAM_CLOSED,
            empty_message="completed response with no content",
        )

    return SdkDecoder(translator, end)


class OpenAICompatAdapter:
    """Adapter for any OpenAI-compatible Chat Completions server, through the `openai` SDK."""

    capabilities = OpenAICompatCapabilities()

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        config: ChatProfile | None = None,
        connect_timeout_s: float = 10.0,
        idle_timeout_s: float = 300.0,
        provider: str = "openai-compat",
    ) -> None:
        """`config` is the server family's request profile, DeepSeek's (`DeepSeekConfig()`)
        when none is given."""
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise UsageError(
                "OpenAICompatAdapter needs the openai SDK: pip install 'dshkit[openai]'"
            ) from exc
        self._openai = openai
        self.base_url = base_url.rstrip("/")
        self.provider = provider
        self.config: ChatProfile = config if config is not None else DeepSeekConfig()
        timeout = openai.Timeout(idle_timeout_s, connect=connect_timeout_s)
        self._client = openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=api_key,
            max_retries=0,  # retrying is the loop's decision, never the adapter's
            timeout=timeout,
            http_client=sdk_http_client(openai, base_url=self.base_url, timeout=timeout),
        )

    async def aclose(self) -> None:
        await self._client.close()

    def _failure(self, exc: BaseException) -> LlmFailure:
        openai = self._openai
        if isinstance(exc, openai.APIStatusError):
            # The SDK has read the error body by now; map it exactly as DeepSeekAdapter does.
            return failure_from_http(exc.status_code, exc.response.content, exc.response.headers)
        if isinstance(exc, openai.APIError) and not isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError)):
            # The SDK raises APIError for a chunk carrying an `error` object; map that object
            # exactly as the DeepSeek adapter maps an in-band error.
            body = exc.body if isinstance(exc.body, (dict, str)) else None  # `{"error": "words"}` too
            return failure_from_error_object(
                body or {"message": exc.message, "type": exc.type, "code": exc.code, "param": exc.param}
            )
        return sdk_failure(openai, exc, self.base_url)

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """Send one request and yield its chunks, ending with exactly one `Finish`."""

        def source() -> SdkSource:
            kwargs = sdk_kwargs(serialize(options, self.config), _UNTYPED, options)
            return SdkSource(
                lambda: self._client.chat.completions.create(**kwargs),
                errors=sdk_errors(self._openai.OpenAIError),
                failure=self._failure,
                empty_message="the server returned no chunk at all",
            )

        return run_stream(source, _decoder, options.signal)
