"""Scenario wire inputs and histories (`dshkit.conformance.wire`): hand-written SSE encoded for
either protocol, each `wire` kind played by the real mock server as the scenario wrote it, and the
request spec turned into harness messages and `GenerateOptions`."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from dshkit.conformance.scenario import MessageSpec, RequestSpec, SseSpec, Wire
from dshkit.conformance.wire import build_messages, build_options, encode_sse_spec, to_mock_step
from dshkit.harness.llm import AssistantMessage, TextBlock, ToolCallBlock, UserMessage
from dshkit.harness.llm.messages import (
    ImageBlock,
    OpaqueBlock,
    ReasoningBlock,
    SystemMessage,
    ToolResultBlock,
    ToolResultMessage,
)
from dshkit.mock_server import MockServer, Script
from dshkit.mock_server.routing import session_of
from dshkit.mock_server.scripts import FaultStep, ReplyStep


def test_a_short_chat_event_becomes_a_full_chunk_and_the_stream_ends_with_done() -> None:
    spec = SseSpec.model_validate({"events": [{"delta": {"content": "Hi"}, "x_extra": 1}, ": a comment\n\n",
                                              {"choices": [], "usage": {"total_tokens": 3}}],
                                   "framing": "crlf", "id": "id-7", "model": "m-1", "created": 5})
    events = encode_sse_spec(spec).split(b"\r\n\r\n")
    assert events[0].startswith(b"data: ") and events[1:] == [
        b': a comment\n\ndata: {"choices":[],"usage":{"total_tokens":3}}', b"data: [DONE]", b""]
    assert json.loads(events[0][6:]) == {
        "id": "id-7", "object": "chat.completion.chunk", "created": 5, "model": "m-1",
        "system_fingerprint": "fp_conformance", "usage": None, "x_extra": 1,
        "choices": [{"index": 0, "delta": {"content": "Hi"}, "logprobs": None, "finish_reason": None}]}


def test_anthropic_events_are_named_after_their_type_without_done() -> None:
    spec = SseSpec.model_validate({"events": [{"type": "message_stop"}, {"delta": {"text": "é"}}]})
    assert encode_sse_spec(spec, "anthropic") == (
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
        b'event: message\ndata: {"delta":{"text":"\xc3\xa9"}}\n\n')
    with_done = spec.model_copy(update={"done": True, "framing": "cr"})
    assert encode_sse_spec(with_done, "anthropic").endswith(b"\r\rdata: [DONE]\r\r")
    assert not encode_sse_spec(spec.model_copy(update={"done": False})).endswith(b"[DONE]\n\n")


async def test_each_wire_kind_is_played_by_the_mock_as_written(tmp_path: Path) -> None:
    (tmp_path / "r.sse").write_bytes(b'data: {"choices": []}\n\ndata: [DONE]\n\n')
    sse = Wire.model_validate({"sse": {"events": [{"delta": {"content": "Hi"}}, {"finish_reason": "stop"}],
                                       "writes": {"size": 7}}})
    http = Wire.model_validate({"http": {"status": 429, "headers": {"retry-after": "2"},
                                         "body": {"error": {"message": "slow down"}}}})
    recording = Wire.model_validate({"recording": {"file": "r.sse"}})
    steps = [to_mock_step(w, base=tmp_path, seed=i) for i, w in enumerate([sse, http, recording])]
    key = "sk-wire-test"
    async with MockServer() as server, httpx.AsyncClient() as client:
        server.add_script(Script(name="wire", steps=steps), session=session_of({"Authorization": f"Bearer {key}"}))
        answers = [await client.post(server.base_url + "/chat/completions", headers={"Authorization": f"Bearer {key}"},
                                     json={"model": "deepseek-v4-flash", "stream": True,
                                           "messages": [{"role": "user", "content": "hi"}]})
                   for _ in steps]
    assert answers[0].status_code == 200 and answers[0].headers["content-type"].startswith("text/event-stream")
    assert answers[0].content == encode_sse_spec(sse.sse)  # type: ignore[arg-type]
    assert (answers[1].status_code, answers[1].headers["retry-after"]) == (429, "2")
    assert answers[1].headers["content-type"] == "application/json"
    assert answers[1].json() == {"error": {"message": "slow down"}}
    assert answers[2].content == (tmp_path / "r.sse").read_bytes()


def test_replies_and_faults_keep_their_own_fields() -> None:
    reply = to_mock_step(Wire.model_validate({"reply": {"content": "Hello"}, "stream": {"thinking": False},
                                              "timing": {"headers_delay_ms": 30}}), base=Path("."))
    assert isinstance(reply, ReplyStep)
    assert (reply.reply.content, reply.stream.thinking, reply.timing.headers_delay_ms) == ("Hello", False, 30)
    fault = to_mock_step(Wire.model_validate({"fault": "rate_limit", "fault_options": {"retry_after": 2.5}}),
                         base=Path("."))
    assert isinstance(fault, FaultStep) and (fault.fault, fault.retry_after) == ("rate_limit", 2.5)


def test_history_specs_become_harness_messages_in_order() -> None:
    specs = [MessageSpec.model_validate(m) for m in [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"text": "Look:"}, {"image": {"media_type": "image/jpeg", "bytes": 9}},
                                     {"opaque": {"type": "x-audio", "secs": 2}},
                                     {"tool_result": {"tool_call_id": "c0", "content": "done", "is_error": True}}]},
        {"role": "assistant", "reasoning": "Plan.", "content": "On it.",
         "tool_calls": [{"id": "c1", "name": "get_weather", "arguments": '{"city":"Paris"}'}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny", "is_error": False},
        {"role": "user", "content": ""},
    ]]
    system, user, assistant, tool, empty = build_messages(specs, model="deepseek-v4-pro")
    assert isinstance(system, SystemMessage) and system.content == (TextBlock(text="Be brief."),)
    assert isinstance(user, UserMessage) and user.id == "conf-msg-1"
    text, image, opaque, result = user.content
    assert text == TextBlock(text="Look:")
    assert isinstance(image, ImageBlock) and (image.attachment.media_type, image.attachment.bytes) == ("image/jpeg", 9)
    assert isinstance(opaque, OpaqueBlock) and opaque.type == "x-audio" and opaque.data["secs"] == 2
    assert result == ToolResultBlock(tool_call_id="c0", content=(TextBlock(text="done"),), is_error=True)
    assert isinstance(assistant, AssistantMessage) and assistant.source.model == "deepseek-v4-pro"
    assert assistant.content == (ReasoningBlock(text="Plan."), TextBlock(text="On it."),
                                 ToolCallBlock(id="c1", name="get_weather", arguments='{"city":"Paris"}'))
    assert isinstance(tool, ToolResultMessage) and tool.content == (
        ToolResultBlock(tool_call_id="c1", content=(TextBlock(text="sunny"),), is_error=False),)
    assert empty.content == ()  # an empty string is no block


def test_the_request_spec_becomes_generate_options() -> None:
    spec = RequestSpec.model_validate({
        "model": "deepseek-v4-pro", "system": "sys", "reasoning_effort": "off", "tool_choice": "get_weather",
        "temperature": 0.5, "max_tokens": 64, "stop": ["END"], "purpose": "compaction",
        "tools": [{"name": "get_weather", "parameters": {"type": "object"}, "strict": False}]})
    messages = build_messages(spec.messages, model=spec.model)
    options = build_options(spec, messages, provider="p", session_id="s-1")
    assert (options.provider, options.model, options.session_id, options.system) == ("p", "deepseek-v4-pro", "s-1", "sys")
    assert (options.reasoning_effort, options.tool_choice, options.temperature, options.max_tokens,
            options.stop, options.purpose) == ("off", "get_weather", 0.5, 64, ("END",), "compaction")
    (tool,) = options.tools
    assert (tool.name, tool.parameters, tool.strict) == ("get_weather", {"type": "object"}, False)
    assert list(options.messages) == messages
    assert build_options(RequestSpec(), [], provider="p").stop is None
