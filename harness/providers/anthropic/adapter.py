"""`AnthropicAdapter`: the Anthropic-format provider's request builder on the shared HTTP life cycle.

One call is one streaming POST to `{base_url}/v1/messages` (httpx; `base_url` is DeepSeek's
`https://api.deepseek.com/anthropic` by default, AN1), its body read as it arrives and decoded by
`FastStreamDecoder` (or the decoder `decoder=` makes). The contract is `DeepSeekAdapter`'s: every
provider or transport failure becomes a terminal `finish` of kind `error`; setting
`options.signal` ends the stream with `aborted`; an `asyncio.CancelledError` closes the response
and propagates; no retries of its own. The idle timeout defaults to 600 s because DeepSeek may
stay silent while it thinks (AN8).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Literal

import httpx

from dshkit.harness.llm import GenerateOptions
from dshkit.harness.providers.http_stream import (
    HttpAdapter,
    HttpWire,
    checked_api_key,
    harness_headers,
)
from dshkit.harness.providers.stream import WireDecoder

from .decoder import FastStreamDecoder
from .failures import failure_from_exception, failure_from_response, response_request_id
from .serialize import AnthropicConfig, encode_body, serialize

__all__ = ["ANTHROPIC_VERSION", "DEFAULT_BASE_URL", "AnthropicAdapter"]

DEFAULT_BASE_URL = "https://api.deepseek.com/anthropic"
ANTHROPIC_VERSION = "2023-06-01"
"""Sent for servers that want it; DeepSeek ignores the header (AN12)."""
USER_AGENT = "dshkit/0.1 (deepseek-harness compatible; anthropic-messages)"


_WIRE = HttpWire(
    name="Anthropic-format",
    failure_from_exception=failure_from_exception,
    failure_from_response=failure_from_response,
    request_id_of=response_request_id,
    decode_content=True,  # the Messages surface may gzip its bodies (AN46)
)


class AnthropicAdapter(HttpAdapter):
    """Adapter for DeepSeek's Anthropic Messages surface (and servers that speak it)."""

    wire = _WIRE

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        config: AnthropicConfig | None = None,
        connect_timeout_s: float = 10.0,
        idle_timeout_s: float = 600.0,
        provider: str = "deepseek",
        auth: Literal["x-api-key", "bearer"] = "x-api-key",
        user_id: str | None = None,
        client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        decoder: Callable[[], WireDecoder[bytes]] = FastStreamDecoder,
    ) -> None:
        """`base_url` (the part before `/v1/messages`) defaults to `$DEEPSEEK_ANTHROPIC_BASE_URL`,
        then DeepSeek's `/anthropic` route; `api_key` to `$DEEPSEEK_API_KEY`. `auth` picks the
        key header (DeepSeek takes both, AN9/AN10). `idle_timeout_s` bounds every wait for the
        next bytes (pings and comments count as progress). `decoder` makes the decoder of each
        response, by default `FastStreamDecoder`: pass `lambda: StreamDecoder(MyTranslator())`
        to translate with another `Translator` (the conformance suite's deliberately broken
        adapters do), on the plain path."""
        super().__init__(
            base_url=base_url or os.environ.get("DEEPSEEK_ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL,
            api_key=api_key if api_key is not None else os.environ.get("DEEPSEEK_API_KEY"),
            user_id=user_id,
            client=client,
            transport=transport,
            connect_timeout_s=connect_timeout_s,
            idle_timeout_s=idle_timeout_s,
            decoder=decoder,
        )
        self.config = config or AnthropicConfig()
        self.auth = auth
        self.provider = provider

    def _headers(self, options: GenerateOptions, key: str) -> dict[str, str]:
        headers = {
            "content-type": "application/json",
            "anthropic-version": ANTHROPIC_VERSION,
            "accept": "text/event-stream",
            "user-agent": USER_AGENT,
        }
        if self.auth == "bearer":
            headers["authorization"] = f"Bearer {key}"
        else:
            headers["x-api-key"] = key
        headers.update(harness_headers(options, self.user_id))
        return headers

    def build_request(self, options: GenerateOptions) -> httpx.Request:
        """The HTTP request this adapter would send (raises `UsageError` on bad options)."""
        key = checked_api_key(self._api_key)
        body = encode_body(serialize(options, self.config))
        return self._client.build_request(
            "POST", f"{self.base_url}/v1/messages", content=body, headers=self._headers(options, key)
        )
