"""Failures on the Anthropic surface (anthropic.md §14–§15): error responses in Anthropic's
envelope and in DeepSeek's OpenAI-style one, the request id the envelope names winning over the
headers', and in-band `error` events coded by their `error.type` but carrying no HTTP status."""

from __future__ import annotations

from typing import Any

import pytest

from dshkit.harness.llm import ErrorCode
from dshkit.harness.llm.chunks import ProviderError
from dshkit.harness.providers.anthropic.failures import (
    ERROR_TYPE_STATUS,
    failure_from_error_event,
    failure_from_response,
)
from dshkit.harness.providers.failures import classify_status

ANTHROPIC_ENVELOPE = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_body"}'
DEEPSEEK_ENVELOPE = b'{"error":{"message":"Authentication Fails","type":"authentication_error","param":null,"code":"invalid_request_error"}}'


def test_anthropic_envelope_its_request_id_winning_over_the_headers() -> None:
    headers = {"request-id": "req_header", "x-request-id": "req_gateway", "retry-after": "3"}
    failure = failure_from_response(529, ANTHROPIC_ENVELOPE, headers)
    assert (failure.code, failure.status, failure.message) == (ErrorCode.SERVER, 529, "Overloaded")
    assert failure.request_id == "req_body" and failure.provider_retry_after_ms == 3000
    assert failure.provider_error == ProviderError(type="overloaded_error")


def test_deepseek_envelope_and_request_ids_from_either_header() -> None:
    failure = failure_from_response(401, DEEPSEEK_ENVELOPE, {"request-id": "req_anthropic"})
    assert (failure.code, failure.status, failure.message) == (ErrorCode.AUTH, 401, "Authentication Fails")
    assert failure.request_id == "req_anthropic"
    assert failure.provider_error == ProviderError(type="authentication_error", code="invalid_request_error")
    # DeepSeek's own header is read first, and Anthropic's only when it is absent.
    assert failure_from_response(401, DEEPSEEK_ENVELOPE, {"x-ds-trace-id": "t", "request-id": "r"}).request_id == "t"
    assert failure_from_response(401, DEEPSEEK_ENVELOPE, {}).request_id is None


@pytest.mark.parametrize("body", [b"<html>bad gateway</html>", b"", b"[" * 100_000, b'{"request_id": 7}'])
def test_a_body_without_an_envelope_is_named_by_status_and_never_raises(body: bytes) -> None:
    failure = failure_from_response(502, body, {"request-id": "req_h"})
    assert (failure.code, failure.status, failure.request_id) == (ErrorCode.SERVER, 502, "req_h")
    assert failure.message.startswith("Anthropic-format API error (HTTP 502)")


ANTHROPIC_ERROR_TYPES = {
    "invalid_request_error": 400, "authentication_error": 401, "billing_error": 402, "permission_error": 403,
    "not_found_error": 404, "request_too_large": 413, "rate_limit_error": 429, "api_error": 500,
    "timeout_error": 504, "overloaded_error": 529,
}
"""Anthropic's documented error types and their HTTP statuses, written out here rather than read
from the table under test, so that a type mapped to the wrong status is caught."""


@pytest.mark.parametrize(("kind", "status"), sorted(ANTHROPIC_ERROR_TYPES.items()))
def test_an_error_event_is_coded_by_the_status_its_type_goes_with(kind: str, status: int) -> None:
    assert ERROR_TYPE_STATUS.keys() == ANTHROPIC_ERROR_TYPES.keys()
    failure = failure_from_error_event({"type": kind, "message": "went wrong"})
    assert failure.code == classify_status(status, "went wrong") and failure.code != ErrorCode.PROVIDER_ERROR
    assert failure.status is None and failure.message == "went wrong"
    assert failure.provider_error == ProviderError(type=kind)


@pytest.mark.parametrize(
    ("error", "code", "message"),
    [
        ({"type": "overloaded_error", "message": "Overloaded"}, ErrorCode.SERVER, "Overloaded"),
        ({"type": "rate_limit_error", "message": "slow down"}, ErrorCode.RATE_LIMIT, "slow down"),
        # a code the wording already gives is kept, whatever status the type goes with
        ({"type": "api_error", "message": "maximum context length is 65536 tokens"}, ErrorCode.CONTEXT_WINDOW_EXCEEDED,
         "maximum context length is 65536 tokens"),
        ({"type": "api_error", "message": "You exceeded your current quota"}, ErrorCode.QUOTA, "You exceeded your current quota"),
        ({"type": "something_new", "message": "m"}, ErrorCode.PROVIDER_ERROR, "m"),
        ("plain text", ErrorCode.PROVIDER_ERROR, "plain text"),
        (None, ErrorCode.PROVIDER_ERROR, "provider reported an error inside the stream"),
        ({"type": 5, "message": "odd"}, ErrorCode.PROVIDER_ERROR, "odd"),
    ],
)
def test_error_events_of_every_shape(error: Any, code: str, message: str) -> None:
    failure = failure_from_error_event(error)
    assert (failure.code, failure.status, failure.message) == (code, None, message)
