"""`DeepSeekConfig`, DeepSeek's request profile on the Chat Completions wire: the thinking and
effort fields a call gets (dsh-core.md §3.3), thinking turned off or refused for a forced tool
choice (wire.md A21, S9), and which assistant turns carry their reasoning back (S7, A20)."""

from __future__ import annotations

import pytest

from dshkit.harness.llm import GenerateOptions, UserMessage
from dshkit.harness.llm.errors import UsageError
from dshkit.harness.providers.openai_chat.profile import DeepSeekConfig, resolve_thinking
from dshkit.harness.providers.openai_chat.serialize import serialize


def opts(**kw: object) -> GenerateOptions:
    return GenerateOptions(provider="deepseek", model="deepseek-v4-flash", messages=[UserMessage.text("x")], **kw)  # type: ignore[arg-type]


E, D = {"type": "enabled"}, {"type": "disabled"}


@pytest.mark.parametrize(
    ("request_effort", "purpose", "config", "expected"),
    [
        (None, "session-title", DeepSeekConfig(reasoning_effort="max", thinking="enabled"), {"thinking": D}),
        ("high", "session-title", DeepSeekConfig(), {"thinking": D}),
        ("low", None, DeepSeekConfig(), {"thinking": E, "reasoning_effort": "low"}),
        ("high", None, DeepSeekConfig(), {"thinking": E, "reasoning_effort": "high"}),
        ("max", None, DeepSeekConfig(reasoning_effort="low"), {"thinking": E, "reasoning_effort": "max"}),
        (None, None, DeepSeekConfig(reasoning_effort="low"), {"thinking": E, "reasoning_effort": "low"}),
        ("off", None, DeepSeekConfig(), {"thinking": D}),
        (None, None, DeepSeekConfig(reasoning_effort="off"), {"thinking": D}),
        ("off", None, DeepSeekConfig(thinking="disabled"), {"thinking": D}),
        (None, None, DeepSeekConfig(thinking="disabled"), {"thinking": D}),
        (None, None, DeepSeekConfig(thinking="enabled"), {"thinking": E}),
        (None, None, DeepSeekConfig(), {}),
        (None, "compaction", DeepSeekConfig(), {}),
    ],
)
def test_thinking_resolution(request_effort: str | None, purpose: str | None, config: DeepSeekConfig, expected: dict) -> None:
    options = opts(reasoning_effort=request_effort, purpose=purpose)
    assert resolve_thinking(options, config) == expected
    body = serialize(options, config)
    for key in ("thinking", "reasoning_effort"):
        assert body.get(key) == expected.get(key)
    assert body.get("reasoning_effort") != "off"


@pytest.mark.parametrize(
    ("request_effort", "config"),
    [
        ("medium", DeepSeekConfig()),
        (None, DeepSeekConfig(reasoning_effort="extreme")),
        ("high", DeepSeekConfig(thinking="disabled")),
        (None, DeepSeekConfig(thinking="disabled", reasoning_effort="low")),
    ],
)
def test_thinking_resolution_errors(request_effort: str | None, config: DeepSeekConfig) -> None:
    with pytest.raises(UsageError) as info:
        serialize(opts(reasoning_effort=request_effort), config)
    assert info.value.code == "UNSUPPORTED_REASONING_EFFORT"


def test_reasoning_effort_none_sent_with_thinking_disabled() -> None:
    body = serialize(opts(reasoning_effort="none"))
    assert body["thinking"] == {"type": "disabled"} and body["reasoning_effort"] == "none"


FORCED = ["required", {"type": "function", "function": {"name": "read"}}]


@pytest.mark.parametrize("choice", FORCED, ids=["required", "named"])
def test_a_forced_choice_turns_default_thinking_off_and_refuses_asked_for_thinking(choice: object) -> None:
    assert DeepSeekConfig().request_fields(opts(), choice) == {"thinking": D}  # type: ignore[arg-type]
    assert DeepSeekConfig(reasoning_effort="off").request_fields(opts(), choice) == {"thinking": D}  # type: ignore[arg-type]
    assert DeepSeekConfig(era="r1").request_fields(opts(reasoning_effort="high"), choice) == {}  # type: ignore[arg-type]
    for config, options in ((DeepSeekConfig(thinking="enabled"), opts()), (DeepSeekConfig(), opts(reasoning_effort="high"))):
        with pytest.raises(UsageError) as info:
            config.request_fields(options, choice)  # type: ignore[arg-type]
        assert info.value.code == "UNSUPPORTED_TOOL_CHOICE"


@pytest.mark.parametrize("choice", ["auto", "none", None])
def test_an_unforced_choice_keeps_the_thinking_asked_for(choice: str | None) -> None:
    assert DeepSeekConfig(thinking="enabled").request_fields(opts(), choice) == {"thinking": E}
    assert DeepSeekConfig().request_fields(opts(reasoning_effort="max"), choice) == {"thinking": E, "reasoning_effort": "max"}


def test_passback_follows_the_era_and_the_thinking_sent() -> None:
    v4, r1 = DeepSeekConfig(), DeepSeekConfig(era="r1")
    assert v4.passback({}) == "tool-turns"
    assert v4.passback({"thinking": E, "reasoning_effort": "high"}) == "tool-turns"
    assert v4.passback({"thinking": D}) == "when-present"
    assert r1.passback({}) == r1.passback({"thinking": E}) == "never"
