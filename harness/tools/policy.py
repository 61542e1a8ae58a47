"""Policy decisions and approval channels for the pre- and post-execute stages.

Between the model's tool call and the handler in the seed's walk, `tools/pre-execute` decides:
allow, deny, or ask a person; guards then refuse what policy must never loosen; after the body,
`tools/post-execute` may accept, replace, add to or block the result (dsh-core.md §4.3). Approval
is a callback; `terminal_approver()` picks the right one for a CLI: `--yes` approves, a TTY asks,
and where no one can answer the ask becomes a denial that says how to allow it.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TextIO, TypeAlias

from dshkit.harness.llm import UserMessage
from dshkit.harness.llm.messages import ContentBlock

if TYPE_CHECKING:
    from .results import ToolResult
    from .runtime import ToolCall

__all__ = [
    "Accept",
    "Allow",
    "ApprovalOutcome",
    "ApprovalResult",
    "Approver",
    "Ask",
    "Block",
    "Deny",
    "ExecuteWrapper",
    "Guard",
    "PostDecision",
    "PostExecute",
    "PreDecision",
    "PreExecute",
    "ResultObserver",
    "auto_approver",
    "no_tty_approver",
    "terminal_approver",
]


@dataclass(frozen=True, slots=True)
class Allow:
    """Run the call."""


@dataclass(frozen=True, slots=True)
class Deny:
    """Refuse the call; the model reads `Error: <reason>`."""

    reason: str


@dataclass(frozen=True, slots=True)
class Ask:
    """Ask the approval callback; `reason` is shown to the person (and used if no one can answer)."""

    reason: str | None = None


PreDecision: TypeAlias = Allow | Deny | Ask


@dataclass(frozen=True, slots=True)
class Accept:
    """Keep the result; `content` replaces its content; `additional_contexts` are added."""

    content: Sequence[ContentBlock] | None = None
    additional_contexts: Sequence[UserMessage] = ()


@dataclass(frozen=True, slots=True)
class Block:
    """Turn the result into a failure whose content is `feedback` (tool-deferred contexts dropped)."""

    feedback: str | Sequence[ContentBlock]
    additional_contexts: Sequence[UserMessage] = ()


PostDecision: TypeAlias = Accept | Block

PreExecute = Callable[["ToolCall", Callable[[], Awaitable[PreDecision]]], "Awaitable[PreDecision] | PreDecision"]
"""A pre-execute listener: return a decision, or `await next()` to defer to the rest of the chain."""
Guard = Callable[["ToolCall"], "str | None"]
"""Runs after an allow; a returned reason denies the call and no policy can override it."""
ExecuteWrapper = Callable[["ToolCall", Callable[[], Awaitable["ToolResult"]]], Awaitable["ToolResult"]]
"""Wraps the body: call `next()` to run it (or return a result of its own)."""
PostExecute = Callable[
    ["ToolCall", "ToolResult", Callable[[], Awaitable[PostDecision]]], "Awaitable[PostDecision] | PostDecision"
]
ResultObserver = Callable[["ToolCall", "ToolResult"], None]

ApprovalOutcome: TypeAlias = Literal["allowed-once", "rejected", "cancelled", "unavailable"]


@dataclass(frozen=True, slots=True)
class ApprovalResult:
    """An approval answer with an optional message (used as the denial reason)."""

    outcome: ApprovalOutcome
    message: str | None = None


Approver = Callable[["ToolCall", "str | None"], "Awaitable[ApprovalResult | ApprovalOutcome | bool] | ApprovalResult | ApprovalOutcome | bool"]
"""`approver(call, reason)`: True/`allowed-once` runs the call; anything else denies it."""


def auto_approver(call: ToolCall, reason: str | None) -> ApprovalResult:
    """Approve everything (`--yes`)."""
    return ApprovalResult("allowed-once")


def no_tty_approver(call: ToolCall, reason: str | None) -> ApprovalResult:
    """No one can answer: deny, saying how to allow it."""
    return ApprovalResult(
        "unavailable",
        f'tool "{call.name}" requires approval, but no one can approve it here (no TTY); '
        "re-run with --yes to allow it",
    )


def terminal_approver(*, yes: bool = False, stdin: TextIO | None = None, stdout: TextIO | None = None) -> Approver:
    """The approver for a command line: `--yes` approves; a TTY asks `[y/N]`; otherwise deny."""
    if yes:
        return auto_approver
    stream_in = stdin or sys.stdin
    stream_out = stdout or sys.stderr
    if not (stream_in is not None and stream_in.isatty()):
        return no_tty_approver

    async def ask(call: ToolCall, reason: str | None) -> ApprovalResult:
        prompt = f"\nAllow {call.name} {call.raw_arguments}?{f' ({reason})' if reason else ''} [y/N] "

        def read() -> str:
            stream_out.write(prompt)
            stream_out.flush()
            return stream_in.readline()

        answer = (await asyncio.to_thread(read)).strip().lower()
        return ApprovalResult("allowed-once" if answer in ("y", "yes") else "rejected")

    return ask
