"""The HTTP half of a streaming adapter on httpx, shared by `DeepSeekAdapter` and `AnthropicAdapter`.

Both adapters send one POST and read its body as it arrives; they differ only in the request they
build, the decoder that turns body bytes into `StreamChunk`s, and how their API words an HTTP
error (`HttpWire`). What they share lives here, once: the API-key check, the harness headers, the
shared TLS context, and `HttpSource`, the httpx side of a call that the one stream life cycle
(`stream.run_stream`, which holds the contract) drives.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import re
import ssl
from collections.abc import AsyncIterator, Callable
from typing import ClassVar, Self

import httpx

from dshkit.harness.llm import (
    AdapterCapabilities,
    ErrorCode,
    Finish,
    GenerateOptions,
    LlmFailure,
    StreamChunk,
)
from dshkit.harness.llm.errors import UsageError

from .stream import WireDecoder, run_stream

__all__ = [
    "HttpAdapter",
    "HttpSource",
    "HttpWire",
    "checked_api_key",
    "default_ssl_context",
    "harness_headers",
]

_KEY_RE = re.compile(r"[\x21-\x7e]+")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class HttpWire:
    """What one API does differently on the same HTTP life cycle."""

    name: str
    """How messages name the provider: `"DeepSeek"`, `"Anthropic-format"`."""
    failure_from_response: Callable[[int, bytes, httpx.Headers], LlmFailure]
    """A non-2xx response (status, whole body, headers) as a failure."""
    failure_from_exception: Callable[..., LlmFailure]
    """A transport exception as a failure: `(exc, base_url, *, streaming)`, where `streaming` says
    whether the body had started."""
    request_id_of: Callable[[httpx.Headers], str | None]
    """The response's request id, if its headers carry one."""
    decode_content: bool = False
    """Read the body through httpx's content decoding (gzip, …) instead of as raw bytes."""

    @property
    def aborted_message(self) -> str:
        return f"{self.name} request aborted by caller"

    @property
    def empty_message(self) -> str:
        return f"{self.name} API returned no response body"


def checked_api_key(key: str | None) -> str:
    """`key` stripped, or `UsageError` saying why it cannot go in a header."""
    key = (key or "").strip()
    if not key:
        raise UsageError(
            "no DeepSeek API key: pass api_key= or set DEEPSEEK_API_KEY", ErrorCode.MISSING_CREDENTIAL
        )
    if not _KEY_RE.fullmatch(key):
        raise UsageError(
            "the DeepSeek API key must be printable ASCII without spaces", ErrorCode.INVALID_CREDENTIAL
        )
    return key


def harness_headers(options: GenerateOptions, user_id: str | None) -> dict[str, str]:
    """The `x-deepseek-harness-*` headers DSH sends with every model call."""
    headers: dict[str, str] = {}
    if user_id:
        headers["x-deepseek-harness-user-id"] = user_id
    if options.session_id:
        headers["x-deepseek-harness-session-id"] = options.session_id
    if options.purpose == "compaction":
        headers["x-deepseek-harness-compact"] = "1"
    return headers


class HttpSource:
    """One call on httpx: the POST sent, its body read as it arrives (raw, or through httpx's
    content decoding when the wire asks), its response closed."""

    errors: tuple[type[BaseException], ...] = (httpx.HTTPError, OSError)

    def __init__(self, client: httpx.AsyncClient, request: httpx.Request, wire: HttpWire, base_url: str) -> None:
        self._client = client
        self._request = request
        self._wire = wire
        self._base_url = base_url
        self._response: httpx.Response | None = None
        self.request_id: str | None = None
        self.aborted_message = wire.aborted_message
        self.empty_message = wire.empty_message

    async def open(self) -> Finish | None:
        response = self._response = await self._client.send(self._request, stream=True)
        if not 200 <= response.status_code < 300:
            body = await response.aread()
            return Finish.failed(self._wire.failure_from_response(response.status_code, body, response.headers))
        self.request_id = self._wire.request_id_of(response.headers)
        return None

    def items(self) -> AsyncIterator[bytes]:
        assert self._response is not None, "items() before open()"
        return self._response.aiter_bytes() if self._wire.decode_content else self._response.aiter_raw()

    def failure(self, exc: BaseException, *, streaming: bool) -> LlmFailure:
        return self._wire.failure_from_exception(exc, self._base_url, streaming=streaming)

    async def aclose(self) -> None:
        if self._response is not None:
            await self._response.aclose()


@functools.cache
def default_ssl_context() -> ssl.SSLContext:
    """httpx's default verifying TLS context (its CA bundle, or `$SSL_CERT_FILE`/`$SSL_CERT_DIR`),
    built once per process and shared by every adapter's client. Loading the CA bundle costs
    60-130 ms of CPU, which each new client would otherwise pay on the event loop; a harness or a
    conformance run that creates an adapter per call would spend most of its time there."""
    return httpx.create_ssl_context()


class HttpAdapter(abc.ABC):
    """Base of the adapters on httpx: it owns (or borrows) the client, streams each call through
    the stream life cycle with the class's `wire`, and closes what it owns. A subclass adds only its
    `build_request` (and the headers and body that go in it)."""

    wire: ClassVar[HttpWire]
    capabilities = AdapterCapabilities()

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None,
        user_id: str | None,
        client: httpx.AsyncClient | None,
        transport: httpx.AsyncBaseTransport | None,
        connect_timeout_s: float,
        idle_timeout_s: float,
        decoder: Callable[[], WireDecoder[bytes]],
    ) -> None:
        """`idle_timeout_s` bounds every wait for the next bytes (keep-alive comments and pings
        count as progress); a `client` passed in is used as it is and never closed here."""
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.user_id = user_id
        self._decoder = decoder
        self._owns_client = client is None
        self._client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(
                connect=connect_timeout_s, read=idle_timeout_s, write=idle_timeout_s, pool=connect_timeout_s
            ),
            transport=transport,
            verify=default_ssl_context(),
        )

    @abc.abstractmethod
    def build_request(self, options: GenerateOptions) -> httpx.Request:
        """The HTTP request for `options` (raises `UsageError` on bad options)."""

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """Send one request and yield its chunks, ending with exactly one `Finish`.

        The iterator is `run_stream`'s own generator (not a wrapper around it), so closing it
        closes the response at once."""

        def source() -> HttpSource:
            return HttpSource(self._client, self.build_request(options), self.wire, self.base_url)

        return run_stream(source, self._decoder, options.signal)

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
