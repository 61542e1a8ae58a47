"""Failures as data, for every wire: HTTP error responses, in-band error objects and transport
exceptions → `LlmFailure` (dsh-core.md §3.8, wire.md §11, A12–A13).

An adapter's stream life cycle catches at one boundary and ends the stream with a `finish` error
chunk built here; nothing in this module raises. The OpenAI-style error object
(`{"error": {message, type, code, param}}`) is what both of DeepSeek's surfaces send, so the
Chat Completions and Anthropic adapters, on httpx or an SDK, all map it here. HTTP statuses are
classified in DSH's order: AUTH, INVALID_REQUEST (413), QUOTA (by wording, any status),
RATE_LIMIT, CONTEXT_WINDOW_EXCEEDED, INVALID_REQUEST, SERVER, then `HTTP_<status>`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from dshkit.harness.llm import ErrorCode, LlmFailure
from dshkit.harness.llm.chunks import ProviderError
from dshkit.harness.llm.errors import is_context_window_exceeded, is_quota_exceeded

__all__ = [
    "REQUEST_ID_HEADERS",
    "classify_status",
    "failure_from_error_object",
    "failure_from_exception",
    "failure_from_http",
    "parse_retry_after_ms",
    "request_id_of",
]


REQUEST_ID_HEADERS = ("x-request-id", "x-deepseek-request-id", "x-ds-trace-id")
"""Where a response names its request, most specific first (DeepSeek sends `x-ds-trace-id`)."""


def request_id_of(headers: Mapping[str, str] | httpx.Headers) -> str | None:
    """The response's request id from the first of `REQUEST_ID_HEADERS` present, or None."""
    for name in REQUEST_ID_HEADERS:
        value = headers.get(name)
        if value:
            return value
    return None


def classify_status(status: int, detail: str) -> str:
    """Our failure code for an HTTP status and the provider's error wording."""
    if status in (401, 403):
        return ErrorCode.AUTH
    if status == 413:
        return ErrorCode.INVALID_REQUEST
    if is_quota_exceeded(detail):
        return ErrorCode.QUOTA
    if status == 429:
        return ErrorCode.RATE_LIMIT
    if status == 400 and is_context_window_exceeded(detail):
        return ErrorCode.CONTEXT_WINDOW_EXCEEDED
    if status in (400, 422):
        return ErrorCode.INVALID_REQUEST
    if status >= 500:
        return ErrorCode.SERVER
    return f"HTTP_{status}"


def parse_retry_after_ms(value: str | None, *, now: float | None = None) -> int | None:
    """`Retry-After` as whole milliseconds (logged as an integer, as DSH logs it): delta-seconds
    or an HTTP date; None when absent, past or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        ms = int(value) * 1000
        return ms if ms > 0 else None
    try:
        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    ms = round((when - (time.time() if now is None else now)) * 1000.0)
    return ms if ms > 0 else None


def _str_or_none(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def _provider_error(error: Mapping[str, Any]) -> ProviderError:
    return ProviderError(
        type=_str_or_none(error.get("type")),
        code=_str_or_none(error.get("code")),
        param=_str_or_none(error.get("param")),
    )


def _detail(error: Mapping[str, Any]) -> str:
    parts = (error.get("code"), error.get("type"), error.get("message"))
    return " ".join(str(p) for p in parts if isinstance(p, (str, int)) and str(p))


def failure_from_http(
    status: int, body: bytes, headers: Mapping[str, str] | httpx.Headers, *, api: str = "DeepSeek API"
) -> LlmFailure:
    """A non-2xx response: message and provider fields from the error envelope when present;
    `api` names the API in the message made when the body has none."""
    error: Mapping[str, Any] | None = None
    try:
        parsed = json.loads(body) if body.strip() else None
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's reach
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
        error = parsed["error"]
    elif isinstance(parsed, dict) and isinstance(parsed.get("message"), str):
        error = parsed
    message = error.get("message") if error else None
    if not isinstance(message, str) or not message:
        text = body.decode("utf-8", "replace").strip()
        message = f"{api} error (HTTP {status})" + (f": {text[:200]}" if text else "")
    detail = _detail(error) if error else message
    return LlmFailure(
        message=message,
        code=classify_status(status, detail),
        status=status,
        provider_retry_after_ms=parse_retry_after_ms(headers.get("retry-after")),
        request_id=request_id_of(headers),
        provider_error=_provider_error(error) if error else None,
    )


def failure_from_error_object(error: Any, *, status: int | None = None) -> LlmFailure:
    """An error object met inside a 200 stream (`data: {"error": …}` or `event: error`)."""
    if not isinstance(error, dict):
        # `event: error` with `data: null` carries no text: fall back to the generic message.
        error = {"message": error if isinstance(error, str) or error is None else json.dumps(error)}
    message = error.get("message")
    if not isinstance(message, str) or not message:
        message = "provider reported an error inside the stream"
    detail = _detail(error)
    code = error.get("code")
    if status is None and isinstance(code, int) and 400 <= code <= 599:
        status = code  # OpenRouter puts the HTTP status in `code`
    if status is not None:
        ours = classify_status(status, detail)
    elif is_quota_exceeded(detail):
        ours = ErrorCode.QUOTA
    elif is_context_window_exceeded(detail):
        ours = ErrorCode.CONTEXT_WINDOW_EXCEEDED
    else:
        ours = ErrorCode.PROVIDER_ERROR
    return LlmFailure(
        message=message, code=ours, status=status, provider_error=_provider_error(error)
    )


def failure_from_exception(exc: BaseException, base_url: str, *, streaming: bool) -> LlmFailure:
    """A transport exception from httpx, most specific class first, in DSH's words for the same
    failure (`DeepSeek stream idle timeout after 1500ms`, `DeepSeek API stream from URL failed`,
    which dshkit follows with `: <cause>`)."""
    if isinstance(exc, (httpx.ConnectTimeout, httpx.PoolTimeout)):
        return LlmFailure(message=f"DeepSeek connect timeout talking to {base_url}", code=ErrorCode.TIMEOUT)
    if isinstance(exc, httpx.TimeoutException):
        return LlmFailure(message=f"DeepSeek stream idle timeout after {_read_timeout_ms(exc)}ms", code=ErrorCode.TIMEOUT)
    where = "stream from" if streaming else "request to"
    # DSH's words, then the cause, which DSH leaves out (a TLS failure names itself here).
    reason = str(exc) or type(exc).__name__
    return LlmFailure(message=f"DeepSeek API {where} {base_url} failed: {reason}", code=ErrorCode.TRANSPORT)


def _read_timeout_ms(exc: httpx.TimeoutException) -> str:
    """The read timeout the request ran with (httpx keeps it on the request), in whole ms."""
    try:
        seconds = exc.request.extensions.get("timeout", {}).get("read")
    except RuntimeError:  # an exception raised without a request
        seconds = None
    return str(round(seconds * 1000)) if isinstance(seconds, (int, float)) else "?"
