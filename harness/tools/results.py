"""`ToolResult`: what one tool call produced, before it becomes a `tool/result` event.

At the end of the tool pipeline in the seed's walk, every call — run, denied, failed or
cancelled — has a result with model-readable content; a failure is data (`is_error`), never an
exception into the loop (dsh-core.md §4.3, §4.6). `error.code` is set only for failures with a
coded identity (INVALID_ARGS, UNKNOWN_TOOL, ABORTED…); denials and blocks carry none.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from dshkit.harness.llm import HarnessError, TextBlock, UserMessage
from dshkit.harness.llm.messages import ContentBlock, ToolResultMessage
from dshkit.harness.secrets import KnownSecrets, placeholder, scrub_strings

__all__ = [
    "ABORTED",
    "ABORTED_BEFORE_DISPATCH",
    "INVALID_TOOL_OUTPUT",
    "ToolErrorInfo",
    "ToolResult",
    "aborted_before_dispatch_result",
    "aborted_result",
    "denied_result",
    "error_result",
    "scrub_result",
]

ABORTED: Final = "ABORTED"
ABORTED_BEFORE_DISPATCH: Final = "ABORTED_BEFORE_DISPATCH"
INVALID_TOOL_OUTPUT: Final = "INVALID_TOOL_OUTPUT"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolErrorInfo:
    """Why a call failed. `name`/`code` are present only for coded failures."""

    message: str
    name: str | None = None
    code: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """The outcome of one call."""

    is_error: bool
    content: tuple[ContentBlock, ...]
    """What the model reads."""
    error: ToolErrorInfo | None = None
    meta: Any = None
    """Presentation metadata for UIs (lossless JSON); never shown to the model."""
    additional_contexts: tuple[UserMessage, ...] = ()
    """Messages the loop parks for the next step, after all of this step's results."""
    concludes_turn: bool = False
    value: Any = None
    """The tool's canonical return value (execution-local; never logged)."""

    def to_message(self, call_id: str, *, id: str | None = None) -> ToolResultMessage:
        """The `ToolResultMessage` for this result (`is_error` always written)."""
        return ToolResultMessage.create(call_id, self.content, is_error=self.is_error, id=id)

    def error_event_data(self) -> dict[str, str] | None:
        """`tool/result.data.error` (`{name, code}`), or None for uncoded results."""
        if self.error is None or self.error.code is None:
            return None
        return {"name": self.error.name or "Error", "code": self.error.code}

    @property
    def text(self) -> str:
        """All text blocks joined by newlines (handy in tests and UIs)."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))


def _message_of(exc: BaseException) -> str:
    text = str(exc)
    return text or type(exc).__name__


def error_result(
    exc: BaseException | str, *, contexts: Sequence[UserMessage] = (), code: str | None = None, name: str | None = None
) -> ToolResult:
    """`Error: <message>`; coded when `exc` is a `HarnessError` (or `code` is given)."""
    if isinstance(exc, BaseException):
        message = _message_of(exc)
        if isinstance(exc, HarnessError):
            name, code = name or type(exc).__name__, code or exc.code
    else:
        message = exc
    if code is not None and name is None:
        name = "ToolError"
    return ToolResult(
        is_error=True,
        content=(TextBlock(text=f"Error: {message}"),),
        error=ToolErrorInfo(message=message, name=name, code=code),
        additional_contexts=tuple(contexts),
    )


def denied_result(reason: str) -> ToolResult:
    """A policy/guard denial: an error without a code (so `tool/result` has no `error`)."""
    return ToolResult(is_error=True, content=(TextBlock(text=f"Error: {reason}"),), error=ToolErrorInfo(message=reason))


def aborted_result(contexts: Sequence[UserMessage] = ()) -> ToolResult:
    return error_result("tool call aborted", code=ABORTED, name="AbortError", contexts=contexts)


def aborted_before_dispatch_result(contexts: Sequence[UserMessage] = ()) -> ToolResult:
    return error_result(
        "tool call aborted before dispatch", code=ABORTED_BEFORE_DISPATCH, name="AbortError", contexts=contexts
    )


SCRUBBED_SECRET: Final = placeholder("secret")
"""What a secret's value becomes in a tool result (the policy's `{{scrubbed:LABEL}}` form)."""


def _scrub_blocks(blocks: Sequence[ContentBlock], secrets: KnownSecrets) -> tuple[ContentBlock, ...]:
    return tuple(replace(b, text=secrets.scrub(b.text)) if isinstance(b, TextBlock) else b for b in blocks)


def scrub_result(result: ToolResult, secrets: KnownSecrets | Iterable[str]) -> ToolResult:
    """`result` with every secret value in its text (content, error message, deferred contexts,
    the strings of `meta`, which the session log keeps) replaced by `{{scrubbed:secret}}`: tool
    output is logged and sent to the model, and a command such as `env` or `cat .env` would
    otherwise put the API key in both.

    Values are matched whole and only from `MIN_SECRET_LENGTH` characters on (the secrets
    policy, `dshkit.harness.secrets`): a one-letter key must not rewrite every word holding it.
    """
    known = secrets if isinstance(secrets, KnownSecrets) else KnownSecrets(secrets)
    if not known:
        return result
    error = result.error
    if error is not None:
        error = replace(error, message=known.scrub(error.message))
    contexts = tuple(replace(m, content=_scrub_blocks(m.content, known)) for m in result.additional_contexts)
    meta = result.meta if result.meta is None else scrub_strings(result.meta, known.scrub)
    return replace(result, content=_scrub_blocks(result.content, known), error=error, additional_contexts=contexts,
                   meta=meta)
