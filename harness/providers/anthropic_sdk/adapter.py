"""`AnthropicSDKAdapter`: a second adapter for DeepSeek's Anthropic Messages surface, built on the
official `anthropic` SDK (`AsyncAnthropic.messages.create(stream=True)`), with the same `Adapter`
contract as `AnthropicAdapter`.

It exists so the conformance suite's Anthropic scenarios are shown to judge behaviour, not one
implementation: the SDK does its own HTTP, SSE parsing and event models. Everything else is
`AnthropicAdapter`'s: the request body comes from the Anthropic serializer (fields the SDK does
not type travel in `extra_body`), each SDK event goes back to the JSON object it was read from and
through the same `Translator` (`SdkDecoder`), and the call runs on the one stream life cycle. Known differences,
visible in a conformance run: the SDK drops events that have no `event:` line (AN43) and raises on
an `error` event, so the partial blocks before it are not closed (the error finish still carries
the thinking signatures received, as the httpx adapter's does).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from dshkit.harness.llm import AdapterCapabilities, GenerateOptions, LlmFailure, StreamChunk
from dshkit.harness.llm.errors import UsageError
from dshkit.harness.providers.anthropic import AnthropicConfig
from dshkit.harness.providers.anthropic.failures import (
    failure_from_error_event,
    failure_from_response,
    response_request_id,
)
from dshkit.harness.providers.anthropic.serialize import serialize
from dshkit.harness.providers.anthropic.translate import Translator
from dshkit.harness.providers.sdk_stream import (
    SdkDecoder,
    SdkSource,
    sdk_errors,
    sdk_failure,
    sdk_http_client,
    sdk_kwargs,
)
from dshkit.harness.providers.stream import run_stream

__all__ = ["AnthropicSDKAdapter"]

_UNTYPED = ("thinking", "output_config")
"""Request fields the SDK has no parameter for."""


def _decoder() -> SdkDecoder:
    """SDK events through the Anthropic `Translator`, ended as the httpx adapter ends a body;
    a failure the SDK raises (an `error` event, a reset) ends it keeping the signatures."""
    translator = Translator()
    return SdkDecoder(translator, translator.close, translator.interrupted)


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
        timeout = anthropic.Timeout(idle_timeout_s, connect=connect_timeout_s)
        self._client = anthropic.AsyncAnthropic(
            base_url=self.base_url,
            api_key=api_key,
            max_retries=0,  # retrying is the loop's decision, never the adapter's
            timeout=timeout,
            http_client=sdk_http_client(anthropic, base_url=self.base_url, timeout=timeout),
        )

    async def aclose(self) -> None:
        await self._client.close()

    def _failure(self, exc: BaseException) -> LlmFailure:
        if isinstance(exc, self._sdk.APIStatusError):
            if exc.status_code == 200:
                # An `error` event inside the stream: the SDK raises with the 200 response.
                body = exc.body if isinstance(exc.body, dict) else {"message": str(exc)}
                return failure_from_error_event(body.get("error", body))
            return failure_from_response(exc.status_code, exc.response.content, exc.response.headers)
        return sdk_failure(self._sdk, exc, self.base_url)

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """Send one request and yield its chunks, ending with exactly one `Finish`."""

        def source() -> SdkSource:
            kwargs = sdk_kwargs(serialize(options, self.config), _UNTYPED, options)
            return SdkSource(
                lambda: self._client.messages.create(**kwargs),
                errors=sdk_errors(self._sdk.AnthropicError),
                failure=self._failure,
                empty_message="the server returned no event at all",
                request_id_of=response_request_id,  # Anthropic's own `request-id` too
            )

        return run_stream(source, _decoder, options.signal)
