"""The pre-step waterfall: hooks run outermost first around the default decision; a hook may
rewrite what the hooks inside it decided, or decide alone without calling them."""

from __future__ import annotations

from dshkit.harness.llm import UserMessage
from dshkit.harness.loop.prestep import (
    Enter,
    Next,
    PreStep,
    PreStepDecision,
    PreStepHook,
    Reject,
    run_waterfall,
)

PROPOSED = PreStep(turn=1, step=2, messages=(UserMessage.text("proposed"),))


def recorder(name: str, order: list[str]) -> PreStepHook:
    """A hook that logs its name and adds a message of that name to an inner `Enter`."""

    async def hook(payload: PreStep, nxt: Next) -> PreStepDecision:
        order.append(name)
        inner = await nxt()
        if not isinstance(inner, Enter):
            return inner
        return Enter((*inner.messages, UserMessage.text(name)))

    return hook


async def test_hooks_wrap_the_default_outermost_first() -> None:
    order: list[str] = []

    async def default() -> PreStepDecision:
        order.append("default")
        return Enter(PROPOSED.messages)

    decision = await run_waterfall([recorder("outer", order), recorder("inner", order)], PROPOSED, default)
    assert order == ["outer", "inner", "default"]
    assert isinstance(decision, Enter)
    assert [m.content[0].text for m in decision.messages] == ["proposed", "inner", "outer"]  # type: ignore[union-attr]
    assert await run_waterfall([], PROPOSED, default) == Enter(PROPOSED.messages)


async def test_a_hook_that_decides_alone_runs_nothing_inside_it() -> None:
    order: list[str] = []
    seen: list[PreStep] = []

    async def gate(payload: PreStep, nxt: Next) -> PreStepDecision:
        seen.append(payload)
        return Reject("not now")

    async def default() -> PreStepDecision:
        order.append("default")
        return Enter(())

    decision = await run_waterfall([recorder("outer", order), gate, recorder("inner", order)], PROPOSED, default)
    assert decision == Reject("not now")
    assert order == ["outer"] and seen == [PROPOSED]
