"""Failures as data for the Anthropic surface: HTTP error bodies, in-band `error` events and
transport exceptions → `LlmFailure` (anthropic.md §14–§15).

Two envelopes reach us: Anthropic's `{"type":"error","error":{type,message},"request_id"}` and
the OpenAI-style `{"error":{message,type,param,code}}` that DeepSeek's `/anthropic` route
actually sends (AN65). Both keep their fields under a top-level `error` object, which is all we
require (AN66). Statuses are classified exactly as on the Chat Completions surface (529
overloaded is a SERVER failure, like any 5xx). An in-band `error` event arrives after a 200: its
`error.type` picks our code through the status Anthropic pairs with that type, but the failure
carries no HTTP status, since none was sent.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

import httpx

from dshkit.harness.llm import LlmFailure
from dshkit.harness.providers.failures import (
    classify_status,
    failure_from_error_object,
    failure_from_exception,
    failure_from_http,
    request_id_of,
)

__all__ = [
    "ERROR_TYPE_STATUS",
    "failure_from_error_event",
    "failure_from_exception",
    "failure_from_response",
    "response_request_id",
]

ERROR_TYPE_STATUS: dict[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
"""Anthropic's error types and the HTTP status each goes with (anthropic.md §14)."""


def response_request_id(headers: Mapping[str, str] | httpx.Headers) -> str | None:
    """The request id from the headers: DeepSeek's, or Anthropic's `request-id`."""
    return request_id_of(headers) or headers.get("request-id") or None


def failure_from_response(status: int, body: bytes, headers: Mapping[str, str] | httpx.Headers) -> LlmFailure:
    """A non-2xx response, in either envelope."""
    failure = failure_from_http(status, body, headers, api="Anthropic-format API")
    # Anthropic's envelope names the request itself; that id wins over a gateway's header.
    request_id = response_request_id(headers)
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's reach
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("request_id"), str) and parsed["request_id"]:
        request_id = parsed["request_id"]
    return dataclasses.replace(failure, request_id=request_id) if request_id else failure


def failure_from_error_event(error: Any) -> LlmFailure:
    """The `error` object of an in-band `event: error` (AN69/AN70): terminal, coded by its type."""
    failure = failure_from_error_object(error)
    kind = error.get("type") if isinstance(error, dict) else None
    status = ERROR_TYPE_STATUS.get(kind) if isinstance(kind, str) else None
    if status is not None and failure.code == "PROVIDER_ERROR":
        failure = dataclasses.replace(failure, code=classify_status(status, failure.message))
    return failure
