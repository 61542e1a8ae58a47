"""`serialize`: GenerateOptions → a Chat Completions request body with DeepSeek's profile
(dsh-core.md §3.2–3.4, wire.md A16–A23). How the profile resolves the thinking fields is
`test_profile.py`'s; the headers the adapter adds are `deepseek/test_adapter.py`'s."""

from __future__ import annotations

import json

import pytest

from dshkit.harness.llm import (
    AssistantMessage,
    GenerateOptions,
    TextBlock,
    ToolCallBlock,
    ToolSchema,
    UserMessage,
)
from dshkit.harness.llm.errors import UsageError
from dshkit.harness.llm.messages import (
    ImageAttachment,
    ImageBlock,
    ModelSource,
    OpaqueBlock,
    ReasoningBlock,
    SystemMessage,
    ToolResultBlock,
    ToolResultMessage,
)
from dshkit.harness.providers.openai_chat.profile import DeepSeekConfig
from dshkit.harness.providers.openai_chat.serialize import encode_body, serialize

SRC = ModelSource(provider="deepseek", model="deepseek-v4-flash")
ODD_ARGS = [
    '{"file_path":"README.md"}',
    '{ "a" :  1 ,\n\t"b":[ ] }',
    '{"text":"中文 🙂 \\u00e9 é"}',
    '{"unterminated": "yes',
    "",
    "not json at all",
    '{"a":1}{"b":2}',
]


def opts(*messages: object, **kw: object) -> GenerateOptions:
    return GenerateOptions(provider="deepseek", model="deepseek-v4-flash", messages=list(messages), **kw)  # type: ignore[arg-type]


def assistant(*blocks: object) -> AssistantMessage:
    return AssistantMessage(content=tuple(blocks), source=SRC)  # type: ignore[arg-type]


def test_system_first_then_history_in_order() -> None:
    body = serialize(
        opts(
            UserMessage.text("hi"),
            assistant(TextBlock(text="hello")),
            SystemMessage(content=(TextBlock(text="a"), TextBlock(text="b"))),
            UserMessage.text("bye"),
            system="You are helpful.",
        )
    )
    assert body["messages"] == [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "system", "content": "ab"},
        {"role": "user", "content": "bye"},
    ]


def test_no_system_when_absent_and_empty_system_kept() -> None:
    assert serialize(opts(UserMessage.text("x")))["messages"][0]["role"] == "user"
    assert serialize(opts(UserMessage.text("x"), system=""))["messages"][0] == {"role": "system", "content": ""}


def test_tool_only_turn_sends_null_content_unless_configured_empty() -> None:
    only_calls = opts(assistant(ToolCallBlock(id="c", name="n", arguments="{}")), reasoning_effort="off")
    assert serialize(only_calls)["messages"][0]["content"] is None
    message = serialize(only_calls, DeepSeekConfig(tool_only_content="empty"))["messages"][0]
    assert message["content"] == "" and isinstance(message["content"], str)
    with_text = opts(assistant(TextBlock(text="t"), ToolCallBlock(id="c", name="n", arguments="{}")))
    assert serialize(with_text)["messages"][0]["content"] == "t"


def test_assistant_content_without_tool_calls_always_a_string() -> None:
    assert serialize(opts(assistant(), reasoning_effort="off"))["messages"] == [{"role": "assistant", "content": ""}]
    joined = serialize(opts(assistant(TextBlock(text="a"), ReasoningBlock(text="r"), TextBlock(text="b")), reasoning_effort="off"))
    assert joined["messages"][0]["content"] == "ab"  # text blocks joined with no separator


@pytest.mark.parametrize("arguments", ODD_ARGS)
def test_tool_call_arguments_byte_identical(arguments: str) -> None:
    message = assistant(ToolCallBlock(id="call_00_x", name="read", arguments=arguments))
    body = serialize(opts(message))
    call = body["messages"][0]["tool_calls"][0]
    assert call == {"id": "call_00_x", "type": "function", "function": {"name": "read", "arguments": arguments}}
    # and in the bytes sent: the decoded JSON gives back the identical string
    sent = json.loads(encode_body(body))
    assert sent["messages"][0]["tool_calls"][0]["function"]["arguments"] == arguments


def test_tool_calls_in_block_order() -> None:
    message = assistant(
        ToolCallBlock(id="b", name="two", arguments="{}"),
        TextBlock(text="t"),
        ToolCallBlock(id="a", name="one", arguments="{}"),
    )
    calls = serialize(opts(message))["messages"][0]["tool_calls"]
    assert [c["id"] for c in calls] == ["b", "a"]


def test_reasoning_passback() -> None:
    with_reasoning = assistant(ReasoningBlock(text="th"), ReasoningBlock(text="ink"), TextBlock(text="answer"))
    tool_turn = assistant(ToolCallBlock(id="c", name="n", arguments="{}"))
    tool_turn_with_reasoning = assistant(ReasoningBlock(text="why"), ToolCallBlock(id="d", name="n", arguments="{}"))
    plain = assistant(TextBlock(text="plain"))
    history = [with_reasoning, tool_turn, tool_turn_with_reasoning, plain]

    # thinking on (default): every turn with reasoning carries it; tool turns carry "" without it
    on = serialize(opts(*history))["messages"]
    assert on[0]["reasoning_content"] == "think"
    assert on[1]["reasoning_content"] == ""
    assert on[2]["reasoning_content"] == "why"
    assert "reasoning_content" not in on[3]

    # thinking disabled: reasoning is still passed back where captured, none where not
    off = serialize(opts(*history, reasoning_effort="off"))["messages"]
    assert off[0]["reasoning_content"] == "think"
    assert "reasoning_content" not in off[1]
    assert off[2]["reasoning_content"] == "why"
    assert "reasoning_content" not in off[3]

    # config-level thinking disabled too
    cfg = serialize(opts(*history), DeepSeekConfig(thinking="disabled"))["messages"]
    assert "reasoning_content" not in cfg[1]


def test_era_r1_strips_all_reasoning() -> None:
    history = [assistant(ReasoningBlock(text="r"), TextBlock(text="t")), assistant(ToolCallBlock(id="c", name="n", arguments="{}"))]
    body = serialize(opts(*history, reasoning_effort="high"), DeepSeekConfig(era="r1"))
    assert all("reasoning_content" not in m for m in body["messages"])
    assert "thinking" not in body and "reasoning_effort" not in body


def test_tool_results_one_message_each_in_call_order_right_after() -> None:
    call_a = ToolCallBlock(id="call_a", name="read", arguments='{"p":"a"}')
    call_b = ToolCallBlock(id="call_b", name="read", arguments='{"p":"b"}')
    body = serialize(
        opts(
            UserMessage.text("go"),
            assistant(call_a, call_b),
            ToolResultMessage.create("call_a", "A body"),
            ToolResultMessage.create("call_b", [TextBlock(text="B"), TextBlock(text=" body")]),
            UserMessage.text("next"),
            reasoning_effort="off",
        )
    )
    assert body["messages"][1:] == [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "read", "arguments": '{"p":"a"}'}},
            {"id": "call_b", "type": "function", "function": {"name": "read", "arguments": '{"p":"b"}'}},
        ]},
        {"role": "tool", "tool_call_id": "call_a", "content": "A body"},
        {"role": "tool", "tool_call_id": "call_b", "content": "B body"},
        {"role": "user", "content": "next"},
    ]


def test_user_message_with_several_tool_results_and_text() -> None:
    message = UserMessage(
        content=(
            TextBlock(text="note"),
            ToolResultBlock(tool_call_id="x", content=(TextBlock(text="1"),)),
            ToolResultBlock(tool_call_id="y", content=()),
            ReasoningBlock(text="skipped"),
            OpaqueBlock(type="future", data={"type": "future"}),
        )
    )
    # Tool messages come first: they must directly follow the assistant turn (wire.md A18).
    assert serialize(opts(message))["messages"] == [
        {"role": "tool", "tool_call_id": "x", "content": "1"},
        {"role": "tool", "tool_call_id": "y", "content": "(no output)"},
        {"role": "user", "content": "note"},
    ]


@pytest.mark.parametrize("content", ["", [], [TextBlock(text="")]])
def test_empty_tool_output(content: object) -> None:
    body = serialize(opts(ToolResultMessage.create("c", content)))  # type: ignore[arg-type]
    assert body["messages"] == [{"role": "tool", "tool_call_id": "c", "content": "(no output)"}]


def test_empty_user_message() -> None:
    assert serialize(opts(UserMessage(content=())))["messages"] == [{"role": "user", "content": ""}]


def test_opaque_blocks_skipped_everywhere() -> None:
    opaque = OpaqueBlock(type="citation", data={"type": "citation", "url": "u"})
    body = serialize(opts(UserMessage(content=(opaque, TextBlock(text="q"))), assistant(opaque, TextBlock(text="a")), reasoning_effort="off"))
    assert body["messages"] == [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]


def test_images_rejected_with_a_clear_error() -> None:
    image = ImageBlock(attachment=ImageAttachment(attachment_id="sha256:00", media_type="image/png", bytes=1))
    with pytest.raises(UsageError) as info:
        serialize(opts(UserMessage(content=(image,))))
    assert info.value.code == "UNSUPPORTED_CONTENT"


def test_tools_shape_and_fixed_fields() -> None:
    tools = [
        ToolSchema(name="read", description="Read a file", parameters={"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}),
        ToolSchema(name="ls", description="", parameters={"type": "object", "properties": {}}),
    ]
    body = serialize(opts(UserMessage.text("x"), tools=tools))
    assert body["tools"] == [
        {"type": "function", "function": {"name": "read", "description": "Read a file", "parameters": tools[0].parameters}},
        {"type": "function", "function": {"name": "ls", "description": "", "parameters": {"type": "object", "properties": {}}}},
    ]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["model"] == "deepseek-v4-flash"
    for absent in ("tool_choice", "top_p", "parallel_tool_calls", "user", "temperature", "max_tokens", "stop"):
        assert absent not in body
    assert "tools" not in serialize(opts(UserMessage.text("x")))


def test_optional_fields_and_config_max_tokens() -> None:
    body = serialize(opts(UserMessage.text("x"), temperature=0.0, max_tokens=100, stop=["END"]))
    assert (body["temperature"], body["max_tokens"], body["stop"]) == (0.0, 100, ["END"])
    assert serialize(opts(UserMessage.text("x")), DeepSeekConfig(max_tokens=256000))["max_tokens"] == 256000
    assert serialize(opts(UserMessage.text("x"), max_tokens=5), DeepSeekConfig(max_tokens=256000))["max_tokens"] == 5
    assert serialize(opts(UserMessage.text("x"), stop=[]))["stop"] == []
    assert None not in serialize(opts(UserMessage.text("x"))).values()


def test_encode_body_is_compact_utf8_and_deterministic() -> None:
    options = opts(UserMessage.text("中文 🙂"), assistant(ToolCallBlock(id="c", name="n", arguments='{ "k" : "é" }')))
    raw = encode_body(serialize(options))
    assert raw == encode_body(serialize(options))
    assert "中文 🙂".encode() in raw
    assert b'"arguments":"{ \\"k\\" : \\"\xc3\xa9\\" }"' in raw
    assert b", " not in raw.replace(b'{ \\"k\\" : ', b"")


READ = ToolSchema(name="read", description="Read", parameters={"type": "object", "properties": {}})


@pytest.mark.parametrize(("choice", "wire"), [
    ("auto", "auto"), ("none", "none"), ("required", "required"),
    ("read", {"type": "function", "function": {"name": "read"}}),
])
def test_tool_choice_serialized_as_deepseek_takes_it(choice: str, wire: object) -> None:
    body = serialize(opts(UserMessage.text("x"), tools=[READ], tool_choice=choice, reasoning_effort="off"))
    assert body["tool_choice"] == wire
    assert "tool_choice" not in serialize(opts(UserMessage.text("x"), tools=[READ]))


def test_forced_tool_choice_turns_unspecified_thinking_off_and_refuses_explicit_thinking() -> None:
    body = serialize(opts(UserMessage.text("x"), tools=[READ], tool_choice="required"))
    assert body["thinking"] == {"type": "disabled"} and "reasoning_effort" not in body
    assert "thinking" not in serialize(opts(UserMessage.text("x"), tools=[READ], tool_choice="auto"))
    for bad in (dict(reasoning_effort="high"), dict(tool_choice="write"), dict(tools=[])):
        kw: dict[str, object] = {"tools": [READ], "tool_choice": "required", **bad}
        with pytest.raises(UsageError) as info:
            serialize(opts(UserMessage.text("x"), **kw))
        assert info.value.code == "UNSUPPORTED_TOOL_CHOICE"


def test_falsy_values_are_still_sent() -> None:
    strict_off = ToolSchema(name="read", description="", parameters={"type": "object"}, strict=False)
    body = serialize(opts(UserMessage.text("x"), tools=[strict_off], temperature=0, stop=[], tool_choice="none"))
    assert body["temperature"] == 0 and body["stop"] == [] and body["tool_choice"] == "none"
    assert body["tools"][0]["function"]["strict"] is False
    assert "strict" not in serialize(opts(UserMessage.text("x"), tools=[READ]))["tools"][0]["function"]
