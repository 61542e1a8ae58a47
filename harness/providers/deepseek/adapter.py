"""`DeepSeekAdapter`: the DeepSeek provider (address, key, headers) on the OpenAI-style chat base
and the shared HTTP life cycle.

One call is one streaming POST to `{base_url}/chat/completions` (httpx), its body serialized with
DeepSeek's profile (`DeepSeekConfig`), read as it arrives and decoded by the chat base's
`FastStreamDecoder` (or the decoder `decoder=` makes). Every provider or transport failure becomes
a terminal `finish` chunk of kind `error`; setting `options.signal` ends the stream with
`aborted`. An `asyncio.CancelledError` closes the response and propagates. The adapter never
retries on its own: retrying is the loop's decision (dsh-core.md §3.9).
"""

from __future__ import annotations

import os
from collections.abc import Callable

import httpx

from dshkit.harness.llm import GenerateOptions
from dshkit.harness.providers.failures import (
    failure_from_exception,
    failure_from_http,
    request_id_of,
)
from dshkit.harness.providers.http_stream import (
    HttpAdapter,
    HttpWire,
    checked_api_key,
    harness_headers,
)
from dshkit.harness.providers.openai_chat.fast_decoder import FastStreamDecoder
from dshkit.harness.providers.openai_chat.profile import DeepSeekConfig
from dshkit.harness.providers.openai_chat.serialize import encode_body, serialize
from dshkit.harness.providers.stream import WireDecoder

__all__ = ["DEFAULT_BASE_URL", "DeepSeekAdapter"]

DEFAULT_BASE_URL = "https://api.deepseek.com"
USER_AGENT = "dshkit/0.1 (deepseek-harness compatible)"


_WIRE = HttpWire(
    name="DeepSeek",
    failure_from_exception=failure_from_exception,
    failure_from_response=failure_from_http,
    request_id_of=request_id_of,
)


class DeepSeekAdapter(HttpAdapter):
    """Adapter for DeepSeek's Chat Completions API (and servers that speak it)."""

    wire = _WIRE

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        config: DeepSeekConfig | None = None,
        connect_timeout_s: float = 10.0,
        idle_timeout_s: float = 300.0,
        provider: str = "deepseek",
        user_id: str | None = None,
        client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        decoder: Callable[[], WireDecoder[bytes]] = FastStreamDecoder,
    ) -> None:
        """`base_url` defaults to `$DEEPSEEK_BASE_URL`, then the public API; `api_key` to
        `$DEEPSEEK_API_KEY`. `idle_timeout_s` bounds every wait for the next bytes (keep-alive
        comments count as progress). `decoder` makes the decoder of each response, by default
        `FastStreamDecoder` (the plain `StreamDecoder` with its fast paths): pass
        `lambda: StreamDecoder(MyTranslator())` to translate with another `Translator` (the
        conformance suite's deliberately broken adapters do), or give it another `SSEDecoder`;
        either runs on the plain path alone."""
        super().__init__(
            base_url=base_url or os.environ.get("DEEPSEEK_BASE_URL") or DEFAULT_BASE_URL,
            api_key=api_key if api_key is not None else os.environ.get("DEEPSEEK_API_KEY"),
            user_id=user_id,
            client=client,
            transport=transport,
            connect_timeout_s=connect_timeout_s,
            idle_timeout_s=idle_timeout_s,
            decoder=decoder,
        )
        self.config = config or DeepSeekConfig()
        self.provider = provider

    def _headers(self, options: GenerateOptions, key: str) -> dict[str, str]:
        headers = {
            "authorization": f"Bearer {key}",
            "content-type": "application/json",
            "accept": "text/event-stream",
            "user-agent": USER_AGENT,
        }
        headers.update(harness_headers(options, self.user_id))
        return headers

    def build_request(self, options: GenerateOptions) -> httpx.Request:
        """The HTTP request this adapter would send (raises `UsageError` on bad options)."""
        key = checked_api_key(self._api_key)
        body = encode_body(serialize(options, self.config))
        return self._client.build_request(
            "POST", f"{self.base_url}/chat/completions", content=body, headers=self._headers(options, key)
        )
