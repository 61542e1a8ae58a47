"""The SDK half of an adapter built on an official client library (`openai_compat` on the `openai`
SDK, `anthropic_sdk` on the `anthropic` SDK), the twin of `http_stream` for httpx.

Both SDKs have the same shape: a call made with `stream=True` returns a stream object that is
async-iterable over typed events, keeps its `httpx.Response` as `.response` and closes with
`close()`; they raise `APIStatusError` (the error body already read), `APITimeoutError` and
`APIConnectionError`, but let the errors of their HTTP client (httpx2) through once a stream is
being read. `SdkSource` is such a call as a `WireSource`, driven by the one stream life cycle
(`stream.run_stream`); `sdk_kwargs` and `sdk_failure` are what the two adapters would otherwise
each write: the SDK's keyword arguments from our serialized body, and its transport exceptions as
failures; `sdk_http_client` is the SDK's own default HTTP client on one TLS context per process.
Both SDKs are optional, so this module imports neither, nor httpx2, until it is used.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from types import ModuleType
from typing import Any, Protocol

from dshkit.harness.llm import ErrorCode, Finish, GenerateOptions, LlmFailure, StreamChunk

from .failures import request_id_of

__all__ = [
    "SdkDecoder", "SdkSource", "sdk_errors", "sdk_failure", "sdk_http_client", "sdk_kwargs", "sdk_ssl_context",
]


class SdkSource:
    """One call through an SDK: `create()` opens the stream, whose events are the items."""

    def __init__(
        self,
        create: Callable[[], Awaitable[Any]],
        *,
        errors: tuple[type[BaseException], ...],
        failure: Callable[[BaseException], LlmFailure],
        empty_message: str,
        request_id_of: Callable[[Mapping[str, str]], str | None] = request_id_of,
    ) -> None:
        self._create = create
        self._failure = failure
        self._request_id_of = request_id_of
        self._stream: Any = None
        self.errors = errors
        self.aborted_message = "request aborted by caller"
        self.empty_message = empty_message
        self.request_id: str | None = None

    async def open(self) -> Finish | None:
        # The SDK raises for an error status (APIStatusError), so a refused call is an exception.
        self._stream = await self._create()
        response = getattr(self._stream, "response", None)
        self.request_id = self._request_id_of(response.headers) if response is not None else None
        return None

    def items(self) -> AsyncIterator[Any]:
        assert self._stream is not None, "items() before open()"
        return aiter(self._stream)

    def failure(self, exc: BaseException, *, streaming: bool) -> LlmFailure:
        return self._failure(exc)

    async def aclose(self) -> None:
        if self._stream is not None:
            await self._stream.close()


class _Translating(Protocol):
    @property
    def finished(self) -> bool: ...

    def feed_into(self, item: Any, out: list[StreamChunk]) -> None: ...


class SdkDecoder:
    """An SDK's typed events in, `StreamChunk`s out, through a wire's `Translator`; `end` makes
    the chunks owed when the stream ends, `fail` (default: the plain error finish) those owed
    when a failure the SDK raised ends it: the SDKs raise on an in-band `error` event instead of
    yielding it, so what the translator keeps on an error finish (Anthropic's thinking
    signatures) comes through `fail`."""

    __slots__ = ("_translator", "_end", "_fail")

    def __init__(
        self,
        translator: _Translating,
        end: Callable[[], list[StreamChunk]],
        fail: Callable[[LlmFailure], list[StreamChunk]] | None = None,
    ) -> None:
        self._translator = translator
        self._end = end
        self._fail = fail

    @property
    def finished(self) -> bool:
        return self._translator.finished

    def feed(self, event: Any) -> list[StreamChunk]:
        # The SDKs build their models without validation; dumping only the fields that were set
        # gives back the JSON object as it was sent (malformed shapes, unknown types and blocks
        # included), so the translator judges it as it judges the httpx adapter's payloads.
        out: list[StreamChunk] = []
        self._translator.feed_into(event.model_dump(exclude_unset=True, warnings=False), out)
        return out

    def close(self) -> list[StreamChunk]:
        return self._end()

    def fail(self, failure: LlmFailure) -> list[StreamChunk]:
        return self._fail(failure) if self._fail is not None else [Finish.failed(failure)]


def sdk_kwargs(body: dict[str, Any], untyped: tuple[str, ...], options: GenerateOptions) -> dict[str, Any]:
    """The SDK's keyword arguments for a serialized request `body`: `stream=True`, the fields the
    SDK does not type (`untyped`) in `extra_body`, the session header in `extra_headers`."""
    body = dict(body)
    body.pop("stream", None)
    extra = {k: body.pop(k) for k in untyped if k in body}
    kwargs: dict[str, Any] = {**body, "stream": True}
    if extra:
        kwargs["extra_body"] = extra
    if options.session_id:
        kwargs["extra_headers"] = {"x-deepseek-harness-session-id": options.session_id}
    return kwargs


@functools.cache
def sdk_ssl_context() -> ssl.SSLContext:
    """httpx2's default verifying TLS context (the system's CA store, or `$SSL_CERT_FILE`/
    `$SSL_CERT_DIR`), the one each SDK client would build for itself, built once per process
    and shared by every SDK adapter's client. Loading the CA store costs about 45 ms of CPU per
    client: a conformance run makes an adapter per scenario, and spent three quarters of its CPU
    there (the twin of `http_stream.default_ssl_context`)."""
    import httpx2

    return httpx2.create_ssl_context()


def sdk_http_client(sdk: ModuleType, *, base_url: str, timeout: Any) -> Any:
    """The HTTP client `sdk` would make for itself (its `DefaultAsyncHttpxClient`: the SDK's
    connection limits, redirects and socket options, with `timeout`), on `sdk_ssl_context()`.
    The SDK closes it in its own `close()`."""
    return sdk.DefaultAsyncHttpxClient(base_url=base_url, timeout=timeout, verify=sdk_ssl_context())


def sdk_errors(base: type[BaseException]) -> tuple[type[BaseException], ...]:
    """What a call through an SDK whose exceptions derive from `base` may raise: those, a payload
    it could not parse (`ValueError`) and its HTTP client's errors while a stream is read."""
    import httpx2

    return (base, ValueError, httpx2.HTTPError, OSError)


def sdk_failure(sdk: ModuleType, exc: BaseException, base_url: str) -> LlmFailure:
    """A timeout, a connection failure, a payload the SDK could not parse, or anything else the
    SDK raised, as a failure (error statuses are each adapter's own mapping)."""
    import httpx2

    if isinstance(exc, (sdk.APITimeoutError, httpx2.TimeoutException)):
        return LlmFailure(message=f"timeout talking to {base_url}", code=ErrorCode.TIMEOUT)
    if isinstance(exc, sdk.APIConnectionError):
        return LlmFailure(message=f"request to {base_url} failed: {exc}", code=ErrorCode.TRANSPORT)
    if isinstance(exc, ValueError):
        return LlmFailure(message=f"malformed SSE payload: {exc}", code=ErrorCode.MALFORMED_RESPONSE)
    return LlmFailure(message=f"stream from {base_url} failed: {exc}", code=ErrorCode.TRANSPORT)
