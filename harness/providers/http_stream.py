"""The HTTP half of a streaming adapter on httpx, shared by `DeepSeekAdapter` and `AnthropicAdapter`.

Both adapters send one POST and read its body as it arrives; they differ only in the request they
build, the decoder that turns body bytes into `StreamChunk`s, and how their API words an HTTP
error. What they share lives here, once: the API-key check, the harness headers, and
`stream_response`, which owns the call's life cycle and its contract:

- every provider or transport failure becomes one terminal `Finish` of kind `error`, stamped
  with the response's request id when the server sent one;
- the caller's `signal` ends the stream with an `aborted` finish, at any await;
- a body that ends without a byte is `EMPTY_RESPONSE`;
- an `asyncio.CancelledError` closes the response and propagates;
- the response is always closed, and nothing is retried here (retrying is the loop's call).
"""

from __future__ import annotations

import abc
import asyncio
import dataclasses
import functools
import re
import ssl
from collections.abc import AsyncIterator, Callable
from typing import ClassVar, Protocol, Self

import httpx

from dshkit.harness.llm import (
    AdapterCapabilities,
    ErrorCode,
    Finish,
    GenerateOptions,
    LlmFailure,
    SignalAborted,
    StreamChunk,
    UsageError,
    race_signal,
)

__all__ = [
    "BodyDecoder",
    "HttpAdapter",
    "HttpWire",
    "checked_api_key",
    "default_ssl_context",
    "harness_headers",
    "stream_response",
]

_KEY_RE = re.compile(r"[\x21-\x7e]+")


class BodyDecoder(Protocol):
    """Bytes of one response body in, `StreamChunk`s out (each provider's `StreamDecoder`)."""

    @property
    def finished(self) -> bool:
        """True once the stream's terminal `Finish` was returned (the rest of the body is moot)."""
        ...

    def feed(self, data: bytes) -> list[StreamChunk]: ...

    def close(self) -> list[StreamChunk]:
        """The chunks owed when the body ends: open blocks closed and exactly one `Finish`."""
        ...


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


async def stream_response(
    client: httpx.AsyncClient,
    build_request: Callable[[], httpx.Request],
    signal: asyncio.Event | None,
    decoder: Callable[[], BodyDecoder],
    wire: HttpWire,
    base_url: str,
) -> AsyncIterator[StreamChunk]:
    """Send the request `build_request()` makes and yield its chunks, ending with exactly one
    `Finish` (see the module docstring for the contract)."""
    try:
        request = build_request()
    except UsageError as exc:
        yield Finish.error(exc.message, exc.code)
        return
    if signal is not None and signal.is_set():
        yield Finish.aborted(wire.aborted_message)
        return
    waiter = asyncio.ensure_future(signal.wait()) if signal is not None else None
    response: httpx.Response | None = None
    request_id: str | None = None
    streaming = False
    try:
        response = await race_signal(client.send(request, stream=True), waiter)
        if not 200 <= response.status_code < 300:
            body = await race_signal(response.aread(), waiter)
            yield Finish.failed(wire.failure_from_response(response.status_code, body, response.headers))
            return
        request_id = wire.request_id_of(response.headers)
        streaming = True
        body_decoder = decoder()
        received = False
        reads = (response.aiter_bytes() if wire.decode_content else response.aiter_raw()).__aiter__()
        while True:
            try:
                data = await race_signal(reads.__anext__(), waiter)
            except StopAsyncIteration:
                break
            received = received or bool(data)
            for chunk in body_decoder.feed(data):
                yield _with_request_id(chunk, request_id)
            if body_decoder.finished:
                return
        if not received:
            empty = Finish.error(f"{wire.name} API returned no response body", ErrorCode.EMPTY_RESPONSE)
            yield _with_request_id(empty, request_id)
            return
        for chunk in body_decoder.close():
            yield _with_request_id(chunk, request_id)
    except SignalAborted:
        yield Finish.aborted(wire.aborted_message)
    except (httpx.HTTPError, OSError) as exc:
        if signal is not None and signal.is_set():
            yield Finish.aborted(wire.aborted_message)
        else:
            failure = wire.failure_from_exception(exc, base_url, streaming=streaming)
            yield _with_request_id(Finish.failed(failure), request_id)
    finally:
        if waiter is not None:
            waiter.cancel()
        if response is not None:
            await response.aclose()


@functools.cache
def default_ssl_context() -> ssl.SSLContext:
    """httpx's default verifying TLS context (its CA bundle, or `$SSL_CERT_FILE`/`$SSL_CERT_DIR`),
    built once per process and shared by every adapter's client. Loading the CA bundle costs
    60-130 ms of CPU, which each new client would otherwise pay on the event loop; a harness or a
    conformance run that creates an adapter per call would spend most of its time there."""
    return httpx.create_ssl_context()


class HttpAdapter(abc.ABC):
    """Base of the adapters on httpx: it owns (or borrows) the client, streams each call through
    `stream_response` with the class's `wire`, and closes what it owns. A subclass adds only its
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
        decoder: Callable[[], BodyDecoder],
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

        The iterator is `stream_response`'s own generator (not a wrapper around it), so closing
        it closes the response at once."""
        return stream_response(
            self._client, lambda: self.build_request(options), options.signal, self._decoder, self.wire, self.base_url
        )

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


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
