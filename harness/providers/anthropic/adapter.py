"""`AnthropicAdapter`: the only module of the Anthropic-format provider that does I/O.

One call is one streaming POST to `{base_url}/v1/messages` (httpx; `base_url` is DeepSeek's
`https://api.deepseek.com/anthropic` by default, AN1), its body read as it arrives and run
through `StreamDecoder`. The contract is `DeepSeekAdapter`'s: every provider or transport failure
becomes a terminal `finish` of kind `error`; setting `options.signal` ends the stream with
`aborted`; an `asyncio.CancelledError` closes the response and propagates; no retries of its own.
The idle timeout defaults to 600 s because DeepSeek may stay silent while it thinks (AN8).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
from collections.abc import AsyncIterator, Callable
from typing import Literal

import httpx

from harness.llm import (
    AdapterCapabilities,
    ErrorCode,
    Finish,
    GenerateOptions,
    SignalAborted,
    StreamChunk,
    UsageError,
    race_signal,
)

from .failures import failure_from_exception, failure_from_response, response_request_id
from .serialize import AnthropicConfig, encode_body, serialize
from .translate import StreamDecoder

__all__ = ["ANTHROPIC_VERSION", "DEFAULT_BASE_URL", "AnthropicAdapter"]

DEFAULT_BASE_URL = "https://api.deepseek.com/anthropic"
ANTHROPIC_VERSION = "2023-06-01"
"""Sent for servers that want it; DeepSeek ignores the header (AN12)."""
USER_AGENT = "dshkit/0.1 (deepseek-harness compatible; anthropic-messages)"
_KEY_RE = re.compile(r"[\x21-\x7e]+")


_ABORTED = "Anthropic-format request aborted by caller"


class AnthropicAdapter:
    """Adapter for DeepSeek's Anthropic Messages surface (and servers that speak it)."""

    capabilities = AdapterCapabilities()

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
        decoder: Callable[[], StreamDecoder] = StreamDecoder,
    ) -> None:
        """`base_url` (the part before `/v1/messages`) defaults to `$DEEPSEEK_ANTHROPIC_BASE_URL`,
        then DeepSeek's `/anthropic` route; `api_key` to `$DEEPSEEK_API_KEY`. `auth` picks the
        key header (DeepSeek takes both, AN9/AN10). `idle_timeout_s` bounds every wait for the
        next bytes (pings and comments count as progress). `decoder` makes the `StreamDecoder` of
        each response: pass `lambda: StreamDecoder(MyTranslator())` to translate with another
        `Translator` (the conformance suite's deliberately broken adapters do)."""
        self.base_url = (
            base_url or os.environ.get("DEEPSEEK_ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL
        ).rstrip("/")
        self._api_key = api_key if api_key is not None else os.environ.get("DEEPSEEK_API_KEY")
        self.config = config or AnthropicConfig()
        self.auth = auth
        self.provider = provider
        self.user_id = user_id
        self._decoder = decoder
        self._owns_client = client is None
        self._client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(
                connect=connect_timeout_s,
                read=idle_timeout_s,
                write=idle_timeout_s,
                pool=connect_timeout_s,
            ),
            transport=transport,
        )

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> AnthropicAdapter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

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
        if self.user_id:
            headers["x-deepseek-harness-user-id"] = self.user_id
        if options.session_id:
            headers["x-deepseek-harness-session-id"] = options.session_id
        if options.purpose == "compaction":
            headers["x-deepseek-harness-compact"] = "1"
        return headers

    def build_request(self, options: GenerateOptions) -> httpx.Request:
        """The HTTP request this adapter would send (raises `UsageError` on bad options)."""
        key = (self._api_key or "").strip()
        if not key:
            raise UsageError(
                "no DeepSeek API key: pass api_key= or set DEEPSEEK_API_KEY",
                ErrorCode.MISSING_CREDENTIAL,
            )
        if not _KEY_RE.fullmatch(key):
            raise UsageError(
                "the DeepSeek API key must be printable ASCII without spaces",
                ErrorCode.INVALID_CREDENTIAL,
            )
        body = encode_body(serialize(options, self.config))
        return self._client.build_request(
            "POST", f"{self.base_url}/v1/messages", content=body, headers=self._headers(options, key)
        )

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """Send one request and yield its chunks, ending with exactly one `Finish`."""
        try:
            request = self.build_request(options)
        except UsageError as exc:
            yield Finish.error(exc.message, exc.code)
            return
        signal = options.signal
        if signal is not None and signal.is_set():
            yield Finish.aborted(_ABORTED)
            return
        waiter = asyncio.ensure_future(signal.wait()) if signal is not None else None
        response: httpx.Response | None = None
        request_id: str | None = None
        streaming = False
        try:
            response = await race_signal(self._client.send(request, stream=True), waiter)
            if not 200 <= response.status_code < 300:
                body = await race_signal(response.aread(), waiter)
                yield Finish.failed(failure_from_response(response.status_code, body, response.headers))
                return
            request_id = response_request_id(response.headers)
            streaming = True
            decoder = self._decoder()
            received = False
            reads = response.aiter_bytes().__aiter__()  # decodes gzip bodies (AN46)
            while True:
                try:
                    data = await race_signal(reads.__anext__(), waiter)
                except StopAsyncIteration:
                    break
                received = received or bool(data)
                for chunk in decoder.feed(data):
                    yield _with_request_id(chunk, request_id)
                if decoder.finished:
                    return
            if not received:
                yield _with_request_id(
                    Finish.error("Anthropic-format API returned no response body", ErrorCode.EMPTY_RESPONSE),
                    request_id,
                )
                return
            for chunk in decoder.close():
                yield _with_request_id(chunk, request_id)
        except SignalAborted:
            yield Finish.aborted(_ABORTED)
        except (httpx.HTTPError, OSError) as exc:
            if signal is not None and signal.is_set():
                yield Finish.aborted(_ABORTED)
            else:
                failure = failure_from_exception(exc, self.base_url, streaming=streaming)
                yield _with_request_id(Finish.failed(failure), request_id)
        finally:
            if waiter is not None:
                waiter.cancel()
            if response is not None:
                await response.aclose()


def _with_request_id(chunk: StreamChunk, request_id: str | None) -> StreamChunk:
    """Stamp the response's request id on a finish: on its meta and on its failure, if any."""
    if not request_id or not isinstance(chunk, Finish):
        return chunk
    if chunk.meta is not None:
        chunk = dataclasses.replace(chunk, meta=dataclasses.replace(chunk.meta, request_id=request_id))
    failure = chunk.reason.failure
    if failure is not None and failure.request_id is None:
        failure = dataclasses.replace(failure, request_id=request_id)
        chunk = dataclasses.replace(chunk, reason=dataclasses.replace(chunk.reason, failure=failure))
    return chunk
