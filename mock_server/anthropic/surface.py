"""The Anthropic surface's paths, auth, model names and error bodies.

What a request meets before its body is read: which paths serve the surface, which headers
carry the key, which DeepSeek model a (possibly `claude…`) name maps to, and how an error is
shaped, in DeepSeek's envelope as recorded on this route or in Anthropic's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from dshkit.mock_server.generate.reply import Era
from dshkit.mock_server.validation import MODELS, Rejection, error_body, resolve_model

__all__ = [
    "ANTHROPIC_PATHS",
    "Envelope",
    "check_anthropic_auth",
    "error_body_for",
    "error_type",
    "map_model",
]

ANTHROPIC_PATHS = ("/anthropic/v1/messages", "/anthropic/messages")
Envelope = Literal["deepseek", "anthropic"]

_STATUS_TYPES: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    422: "invalid_request_error",
    429: "rate_limit_error",
    500: "api_error",
    503: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_ONE_M = "[1m]"


def check_anthropic_auth(headers: Mapping[str, str], api_key: str | None) -> None:
    """`Authorization: Bearer <key>` or `x-api-key: <key>`; `Authorization` wins when both come."""
    if api_key is None:
        return
    auth = headers.get("Authorization")
    if auth is not None:
        if auth == f"Bearer {api_key}":
            return
        reason = "the api key in `Authorization` is invalid"
    else:
        key = headers.get("x-api-key")
        if key == api_key:
            return
        reason = "the api key in `x-api-key` is invalid" if key else "no api key was sent"
    # As on the chat route, no part of any key is echoed back.
    raise Rejection(
        401,
        f"Authentication Fails, {reason} (send `x-api-key: <key>` or `Authorization: Bearer "
        "<key>` with the key the mock server was started with)",
        type="authentication_error",
    )


def map_model(name: str, era: Era = "v4", *, unknown: Literal["reject", "flash"] = "reject") -> str:
    """The DeepSeek model that serves a requested name; :class:`Rejection` (400) for others,
    or the flash model when `unknown="flash"` (what DeepSeek's older pages said)."""
    base = name.removesuffix(_ONE_M)
    if base in MODELS:
        return resolve_model(base, era)
    if base.startswith("claude-opus"):
        return "deepseek-v4-pro"
    if base.startswith("claude") or unknown == "flash":
        return "deepseek-flash"
    raise Rejection(
        400,
        f"Model Not Exist: {name!r} is neither a DeepSeek model ({', '.join(MODELS)}) nor a "
        "`claude…` name (claude-opus* is served by deepseek-v4-pro, other claude* by "
        "deepseek-flash)",
    )


def error_type(status: int) -> str:
    """Anthropic's `error.type` for an HTTP status (`api_error` for statuses it does not name)."""
    return _STATUS_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")


def error_body_for(
    status: int,
    message: str,
    type: str | None = None,
    code: str | None = None,
    *,
    envelope: Envelope = "deepseek",
    request_id: str | None = None,
) -> dict[str, Any]:
    """The error body this surface sends: DeepSeek's envelope, or Anthropic's."""
    kind = type or error_type(status)
    if envelope == "anthropic":
        body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
        body["request_id"] = request_id or "req_mock"
        return body
    return error_body(message, kind, code if code is not None else kind)
