"""The pre-step waterfall: hooks that may rewrite, add to or reject a step's input.

Before each step the loop proposes the claimed inbox messages (plus the runtime-context snapshot
when it changed). Hooks run outermost first; each one either calls `next()` for the decision of
the hooks inside it (and finally the default, which enters the step as proposed) or returns its
own `Enter`/`Reject`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from dshkit.harness.llm import UserMessage

__all__ = ["Enter", "PreStep", "PreStepDecision", "PreStepHook", "Reject", "run_waterfall"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PreStep:
    """What a pre-step hook sees: the claimed input of the proposed step (without the
    runtime-context snapshot, which the default decision appends after it)."""

    turn: int
    step: int
    messages: tuple[UserMessage, ...]


@dataclass(frozen=True, slots=True)
class Enter:
    """Run the step with these messages (rewrite, add or remove input)."""

    messages: tuple[UserMessage, ...]


@dataclass(frozen=True, slots=True)
class Reject:
    """Do not run the step; the turn ends `blocked`."""

    reason: str = ""


PreStepDecision = Enter | Reject
Next = Callable[[], Awaitable[PreStepDecision]]
PreStepHook = Callable[[PreStep, Next], Awaitable[PreStepDecision]]
"""`hook(payload, next)`: call `await next()` for the default decision, or return your own."""


async def run_waterfall(hooks: Sequence[PreStepHook], payload: PreStep, default: Next) -> PreStepDecision:
    """Run `hooks` (outermost first) around `default` and return the decision."""
    chain = default
    for hook in reversed(hooks):
        chain = _bind(hook, payload, chain)
    return await chain()


def _bind(hook: PreStepHook, payload: PreStep, nxt: Next) -> Next:
    async def call() -> PreStepDecision:
        return await hook(payload, nxt)

    return call
