"""failures.py: status classification order, Retry-After, envelopes, transport exceptions."""

from __future__ import annotations

import httpx
import pytest

from dshkit.harness.providers.failures import (
    classify_status,
    failure_from_error_object,
    failure_from_exception,
    failure_from_http,
    parse_retry_after_ms,
)


@pytest.mark.parametrize(
    ("status", "detail", "code"),
    [
        (401, "Insufficient Balance", "AUTH"),  # auth first, whatever the wording
        (403, "", "AUTH"),
        (413, "Insufficient quota", "INVALID_REQUEST"),  # 413 before quota wording
        (500, "insufficient_quota", "QUOTA"),  # quota wording at any status
        (429, "Rate limit", "RATE_LIMIT"),
        (400, "This model's maximum context length is 65536 tokens", "CONTEXT_WINDOW_EXCEEDED"),
        (422, "maximum context length", "INVALID_REQUEST"),  # context wording only on 400
        (400, "Model Not Exist", "INVALID_REQUEST"),
        (422, "Invalid Parameters", "INVALID_REQUEST"),
        (500, "", "SERVER"),
        (503, "", "SERVER"),
        (504, "", "SERVER"),
        (404, "", "HTTP_404"),
        (409, "", "HTTP_409"),
    ],
)
def test_classify_status_order(status: int, detail: str, code: str) -> None:
    assert classify_status(status, detail) == code


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, None), ("", None), ("3", 3000.0), (" 12 ", 12000.0), ("0", None), ("-1", None), ("1.5", None), ("soon", None)],
)
def test_parse_retry_after_seconds(value: str | None, expected: float | None) -> None:
    assert parse_retry_after_ms(value) == expected


def test_parse_retry_after_http_date_with_injected_now() -> None:
    now = 1_700_000_000.0
    assert parse_retry_after_ms("Tue, 14 Nov 2023 22:13:40 GMT", now=now) == pytest.approx(20_000)
    assert parse_retry_after_ms("Tue, 14 Nov 2023 22:13:00 GMT", now=now) is None


def test_failure_from_http_detail_uses_code_type_message() -> None:
    # quota wording only in `type` still classifies as QUOTA (detail = code type message)
    body = b'{"error":{"message":"Payment required","type":"insufficient_balance","code":null}}'
    failure = failure_from_http(402, body, {})
    assert failure.code == "QUOTA" and failure.message == "Payment required"
    # a bare {"message": ...} object is accepted as the error
    assert failure_from_http(400, b'{"message":"bad thing"}', {}).message == "bad thing"
    # an envelope without a message falls back to the status text
    failure = failure_from_http(502, b'{"error":{"type":"x"}}', httpx.Headers({"X-Request-Id": "r"}))
    assert failure.message.startswith("DeepSeek API error (HTTP 502)") and failure.request_id == "r"


def test_failure_from_error_object_shapes() -> None:
    assert failure_from_error_object({"message": "m", "code": 429}).code == "RATE_LIMIT"
    assert failure_from_error_object({"message": "m"}, status=503).status == 503
    assert failure_from_error_object({"message": "prompt is too long for the model's context window"}).code == "CONTEXT_WINDOW_EXCEEDED"
    assert failure_from_error_object(None).message == "provider reported an error inside the stream"
    assert failure_from_error_object([1]).message == "[1]"


@pytest.mark.parametrize(
    ("exc", "code", "start"),
    [
        (httpx.ConnectTimeout("t"), "TIMEOUT", "DeepSeek connect timeout talking to http://h"),
        (httpx.ReadTimeout("t"), "TIMEOUT", "DeepSeek stream idle timeout after ?ms"),
        (httpx.ReadTimeout("t", request=httpx.Request("POST", "http://h", extensions={"timeout": {"read": 1.5}})),
         "TIMEOUT", "DeepSeek stream idle timeout after 1500ms"),
        (httpx.ConnectError("refused"), "TRANSPORT", "DeepSeek API request to http://h failed: refused"),
        (OSError(), "TRANSPORT", "DeepSeek API request to http://h failed: OSError"),
    ],
)
def test_failure_from_exception(exc: BaseException, code: str, start: str) -> None:
    failure = failure_from_exception(exc, "http://h", streaming=False)
    assert failure.code == code and failure.message == start  # DSH's words for the same failure
    assert failure_from_exception(httpx.RemoteProtocolError("reset"), "http://h", streaming=True).message == "DeepSeek API stream from http://h failed: reset"


def test_request_id_comes_from_the_first_known_header() -> None:
    from dshkit.harness.providers.failures import request_id_of

    assert request_id_of({"x-ds-trace-id": "trace"}) == "trace"  # DeepSeek's own header
    assert request_id_of({"x-ds-trace-id": "trace", "x-deepseek-request-id": "ds"}) == "ds"
    assert request_id_of({"x-ds-trace-id": "t", "x-deepseek-request-id": "ds", "x-request-id": "r"}) == "r"
    assert request_id_of({"x-request-id": ""}) is None
    # an HTTP error finish reads the same headers as a successful stream
    failure = failure_from_http(503, b"", {"x-ds-trace-id": "trace"})
    assert failure.request_id == "trace"
