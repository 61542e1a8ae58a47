"""Error codes and the exception tree of the harness.

```
HarnessError(message, code)
├── LlmError            carries a frozen LlmFailure (adapter-side failures before they become data)
├── ToolError
│   ├── ToolArgsError       INVALID_ARGS
│   └── ToolNotFoundError   UNKNOWN_TOOL
├── SessionError        invalid events, corrupt or unsupported logs
├── JsonShapeError      a JSON value without the shape asked for: `path: problem` (the codec's
│                       and the session's lossless-JSON checks, the mock server's nesting limit)
├── CaptureError        bytes that `dshkit decode` cannot read as any wire format
├── InputError          a file a person wrote is invalid: where (source, line, field) and a hint
│                       (the mock server's ScriptError, the conformance suite's ScenarioError)
└── UsageError          misuse of the API by the caller (the conformance suite's FactoryError,
                        the mock server's CassetteMissing)
```
Errors that callers used to catch as `ValueError` (`JsonShapeError`, `CaptureError`,
`FactoryError`) or `LookupError` (`CassetteMissing`) still are one, so older `except` clauses work.
Inside a stream, provider and transport failures are data: an adapter ends with a `finish` chunk
of kind `error` carrying an `LlmFailure`. These exceptions are for everything else.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .chunks import LlmFailure

__all__ = [
    "CaptureError",
    "ErrorCode",
    "HarnessError",
    "InputError",
    "JsonShapeError",
    "LlmError",
    "SessionError",
    "ToolArgsError",
    "ToolError",
    "ToolNotFoundError",
    "UsageError",
    "is_context_window_exceeded",
    "is_quota_exceeded",
]


class ErrorCode(StrEnum):
    """Failure classes. Values are the strings logged in `LlmFailure.code`."""

    AUTH = "AUTH"
    QUOTA = "QUOTA"
    RATE_LIMIT = "RATE_LIMIT"
    CONTEXT_WINDOW_EXCEEDED = "CONTEXT_WINDOW_EXCEEDED"
    INVALID_REQUEST = "INVALID_REQUEST"
    SERVER = "SERVER"
    TRANSPORT = "TRANSPORT"
    TIMEOUT = "TIMEOUT"
    ABORTED = "ABORTED"
    STREAM_CLOSED = "STREAM_CLOSED"
    MALFORMED_RESPONSE = "MALFORMED_RESPONSE"
    EMPTY_RESPONSE = "EMPTY_RESPONSE"
    PROVIDER_ERROR = "PROVIDER_ERROR"
    """An in-band error object or `event: error` inside a 200 stream (dshkit decision)."""
    CONTENT_FILTER = "CONTENT_FILTER"
    INSUFFICIENT_SYSTEM_RESOURCE = "INSUFFICIENT_SYSTEM_RESOURCE"
    INVALID_CREDENTIAL = "INVALID_CREDENTIAL"
    MISSING_CREDENTIAL = "MISSING_CREDENTIAL"
    UNSUPPORTED_REASONING_EFFORT = "UNSUPPORTED_REASONING_EFFORT"
    UNSUPPORTED_CONTENT = "UNSUPPORTED_CONTENT"
    UNSUPPORTED_TOOL_CHOICE = "UNSUPPORTED_TOOL_CHOICE"
    """A forced `tool_choice` the request cannot carry (thinking mode rejects it)."""
    UNKNOWN = "UNKNOWN"
    INVALID_ARGS = "INVALID_ARGS"
    UNKNOWN_TOOL = "UNKNOWN_TOOL"


class HarnessError(Exception):
    """Base of every error the harness raises on purpose."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = code

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message, self.code))

    def __str__(self) -> str:
        return self.message


class LlmError(HarnessError):
    """A failure of one model call, as facts (`failure`) that can be logged and retried."""

    def __init__(self, failure: LlmFailure) -> None:
        super().__init__(failure.message, failure.code)
        self.failure = failure

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.failure,))


class ToolError(HarnessError):
    """A tool call that cannot produce a normal result."""


class ToolArgsError(ToolError):
    def __init__(self, message: str, code: str = ErrorCode.INVALID_ARGS) -> None:
        super().__init__(message, code)


class ToolNotFoundError(ToolError):
    def __init__(self, message: str, code: str = ErrorCode.UNKNOWN_TOOL) -> None:
        super().__init__(message, code)


class SessionError(HarnessError):
    """An event or log that breaks the session rules."""


class JsonShapeError(HarnessError, ValueError):
    """A JSON value that does not have the shape asked for; `path` names where (`data.content[0]`).

    The one class for JSON-shape problems: the codec (`CodecError`) and the session's lossless
    JSON check (`LosslessJsonError`) are names for it. `str()` reads `path: problem`.
    """

    def __init__(self, path: str, problem: str, code: str = "JSON_SHAPE") -> None:
        super().__init__(f"{path}: {problem}" if path else problem, code)
        self.path = path
        self.problem = problem

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.problem, self.code))


class CaptureError(HarnessError, ValueError):
    """Bytes that cannot be read as any wire format (`dshkit decode`); says what to pass instead."""

    def __init__(self, message: str, code: str = "INVALID_CAPTURE") -> None:
        super().__init__(message, code)


class InputError(HarnessError):
    """Invalid input a person wrote (a script, a scenario, a cassette): what was wrong, where
    (source, line, field path) and what to do. `str()` reads `file:line: field: message (hint)`."""

    default_source = "<input>"

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        field: str | None = None,
        hint: str | None = None,
        code: str = "INVALID_INPUT",
    ) -> None:
        super().__init__(message, code)
        self.source = source
        self.line = line
        self.field = field
        self.hint = hint

    def __str__(self) -> str:
        where = (self.source or self.default_source) + (f":{self.line}" if self.line is not None else "")
        text = f"{where}: " + (f"{self.field}: " if self.field else "") + self.message
        return text + (f" ({self.hint})" if self.hint else "")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_input_error, (type(self), self.message, self.source, self.line, self.field, self.hint, self.code))


def _rebuild_input_error(
    cls: type[InputError], message: str, source: str | None, line: int | None,
    field: str | None, hint: str | None, code: str,
) -> InputError:
    return cls(message, source=source, line=line, field=field, hint=hint, code=code)


class UsageError(HarnessError):
    """The caller used an API wrongly; the message says how to fix it."""

    def __init__(self, message: str, code: str = "USAGE") -> None:
        super().__init__(message, code)


# The wording providers use for two failures that share status codes with others
# (dsh-core.md §2.5). Matched case-insensitively against "code type message".
_CONTEXT_PATTERNS = [
    r"context[ _-](length|window)[ _-](exceed(ed|s)|overflow(ed)?|limit[ _-]exceeded)",
    r"(maximum|max)( allowed| supported)? context (length|window)",
    r"(request|prompt|input|messages?) (is |are )?too (large|long) for (the |this )?(model('s)? )?"
    r"context( window)?",
    r"(input|prompt|request) (is )?too (long|large) for (this|the) model",
    r"(input|prompt|request|messages?).{0,40}(exceed(s|ed)?|overflows?|is larger than).{0,40}"
    r"(the )?(model('s)? )?context( length| window)?",
]
_QUOTA_PATTERNS = [
    r"insufficient[ _-]+(quota|balance|credits?)",
    r"(quota|usage[ _-]+limit)[ _-]+(exceeded|exhausted|reached)",
    r"exceed(ed|s)?[ _-]+((your|the)[ _-]+)?(current[ _-]+)?quota",
    r"(balance|credits?)[ _-]+(exhausted|depleted)",
    r"out[ _-]+of[ _-]+(credits?|budget)",
]
_CONTEXT_RE = re.compile("|".join(f"(?:{p})" for p in _CONTEXT_PATTERNS), re.IGNORECASE)
_QUOTA_RE = re.compile("|".join(f"(?:{p})" for p in _QUOTA_PATTERNS), re.IGNORECASE)


_CONTEXT_WORDS = ("context", "too")
"""A word each of `_CONTEXT_PATTERNS` needs (a pattern without one must add its own here)."""
_QUOTA_WORDS = ("insufficient", "quota", "usage", "balance", "credit", "out")
"""A word each of `_QUOTA_PATTERNS` needs (likewise)."""


def _may_say(detail: str, words: tuple[str, ...]) -> bool:
    """False when `detail` cannot match patterns that each need one of `words`: it is ASCII
    (where matching case-insensitively is matching its lowercase) and holds none of them. The
    patterns are tried at every offset, which took a tenth of a second for each on an error
    event whose data is half a megabyte of brackets; this rules such a text out at C speed.
    Any other text goes to the patterns."""
    if not detail.isascii():
        return True
    low = detail.lower()
    return any(word in low for word in words)


def is_context_window_exceeded(detail: str) -> bool:
    """Whether an error text says the request did not fit the model's context window."""
    return _may_say(detail, _CONTEXT_WORDS) and _CONTEXT_RE.search(detail) is not None


def is_quota_exceeded(detail: str) -> bool:
    """Whether an error text says the account ran out of quota or balance."""
    return _may_say(detail, _QUOTA_WORDS) and _QUOTA_RE.search(detail) is not None
