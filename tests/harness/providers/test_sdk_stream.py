"""`sdk_stream`, the half the two SDK adapters share: the SDK's keyword arguments from a serialized
body (`sdk_kwargs`), SDK events back through a wire's translator as the JSON they were read from
(`SdkDecoder`), and the SDK's exceptions as failures (`sdk_failure`). `SdkSource` runs in the one
stream life cycle under both SDK adapters in `test_stream.py`; their shared TLS context is
`test_http_stream.py`'s."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from anthropic._models import construct_type as anthropic_construct
from anthropic.types import RawMessageStreamEvent
from openai._models import construct_type as openai_construct
from openai.types.chat import ChatCompletionChunk

from dshkit.harness.llm import (
    ErrorCode,
    Finish,
    GenerateOptions,
    LlmFailure,
    StreamChunk,
    UserMessage,
)
from dshkit.harness.providers.anthropic.translate import Translator as AnthropicTranslator
from dshkit.harness.providers.openai_chat.translate import Translator as ChatTranslator
from dshkit.harness.providers.sdk_stream import SdkDecoder, sdk_errors, sdk_failure, sdk_kwargs

from .anthropic import wire as an
from .openai_chat import wire as chat

BASE = "http://127.0.0.1:9"


def options(**kw: Any) -> GenerateOptions:
    return GenerateOptions(provider="deepseek", model="deepseek-v4-flash", messages=(UserMessage.text("hi"),), **kw)


def test_sdk_kwargs_stream_and_carry_untyped_fields_and_the_session_header_aside() -> None:
    body = {"model": "m", "messages": [], "stream": False, "temperature": 0, "thinking": {"type": "enabled"}, "reasoning_effort": "high"}
    sent = json.dumps(body)
    kwargs = sdk_kwargs(body, ("thinking", "reasoning_effort", "never-present"), options(session_id="sess-1"))
    assert kwargs == {
        "model": "m", "messages": [], "temperature": 0, "stream": True,
        "extra_body": {"thinking": {"type": "enabled"}, "reasoning_effort": "high"},
        "extra_headers": {"x-deepseek-harness-session-id": "sess-1"},
    }
    assert json.dumps(body) == sent  # the serialized body is left as it was
    assert sdk_kwargs({"model": "m"}, ("thinking",), options()) == {"model": "m", "stream": True}


CHAT_PAYLOADS: list[dict[str, Any]] = [
    chat.chunk({"role": "assistant", "content": None, "reasoning_content": "think"}),
    chat.chunk({"content": "hi"}, extra_field=1),
    chat.chunk({"tool_calls": [chat.call(0, "call_0", "read", '{"a"')]}),
    chat.chunk({"tool_calls": [{"function": {"arguments": ":1}"}}]}),  # no index: the last call
    chat.chunk({}, "tool_calls", chat.USAGE),
]
AN_EVENTS: list[dict[str, Any]] = [
    an.start(),
    an.block_start(0, {"type": "thinking", "thinking": ""}),
    an.delta(0, "thinking_delta", thinking="hm"),
    an.delta(0, "signature_delta", signature="sig-1"),
    an.stop(0),
    an.block_start(1, {"type": "text", "text": ""}),
    an.delta(1, "text_delta", text="hi"),
    an.stop(1),
    an.message_delta("end_turn"),
    an.MESSAGE_STOP,
]


def _through_the_sdk(translator: Any, events: list[Any]) -> list[StreamChunk]:
    decoder = SdkDecoder(translator, translator.close if hasattr(translator, "close") else lambda: translator.end(done=True))
    out: list[StreamChunk] = []
    for event in events:
        out += decoder.feed(event)
    assert decoder.finished is translator.finished
    return out + decoder.close()


def _directly(translator: Any, payloads: list[dict[str, Any]]) -> list[StreamChunk]:
    out: list[StreamChunk] = []
    for payload in payloads:
        translator.feed_into(payload, out)
    return out + (translator.close() if hasattr(translator, "close") else translator.end(done=True))


@pytest.mark.parametrize(
    ("payloads", "translator", "model"),
    [
        (CHAT_PAYLOADS, ChatTranslator, lambda p: openai_construct(type_=ChatCompletionChunk, value=p)),
        # a shape the SDK's models do not expect is handed over as it came, and judged as such
        ([{"id": "x", "choices": "nope"}], ChatTranslator, lambda p: openai_construct(type_=ChatCompletionChunk, value=p)),
        (AN_EVENTS, AnthropicTranslator, lambda p: anthropic_construct(type_=RawMessageStreamEvent, value=p)),
    ],
    ids=["chat", "chat-malformed", "anthropic"],
)
def test_sdk_events_translate_as_the_json_they_were_read_from(payloads: list[dict[str, Any]], translator: Any, model: Any) -> None:
    """The SDKs build their models without validation, as `model` does here; each event goes
    through the translator as the very object the wire sent."""
    via_sdk = _through_the_sdk(translator(), [model(p) for p in payloads])
    assert via_sdk == _directly(translator(), payloads)
    assert isinstance(via_sdk[-1], Finish)


def test_a_raised_failure_ends_the_stream_as_the_decoder_was_told() -> None:
    failure = LlmFailure(message="reset", code=ErrorCode.TRANSPORT)
    translator = ChatTranslator()
    assert SdkDecoder(translator, lambda: []).fail(failure) == [Finish.failed(failure)]
    kept = [Finish.failed(LlmFailure(message="kept", code=ErrorCode.TRANSPORT))]
    assert SdkDecoder(translator, lambda: [], lambda f: kept if f is failure else []).fail(failure) is kept


_REQUEST = httpx2.Request("POST", f"{BASE}/chat/completions")


@pytest.mark.parametrize("sdk", [openai, anthropic], ids=["openai", "anthropic"])
def test_sdk_failures_name_the_server_and_their_kind(sdk: Any) -> None:
    cases: list[tuple[BaseException, str, str]] = [
        (sdk.APITimeoutError(request=_REQUEST), ErrorCode.TIMEOUT, f"timeout talking to {BASE}"),
        (httpx2.ReadTimeout("slow", request=_REQUEST), ErrorCode.TIMEOUT, f"timeout talking to {BASE}"),
        (sdk.APIConnectionError(request=_REQUEST), ErrorCode.TRANSPORT, f"request to {BASE} failed: Connection error."),
        (ValueError("Expecting value"), ErrorCode.MALFORMED_RESPONSE, "malformed SSE payload: Expecting value"),
        (httpx2.RemoteProtocolError("peer closed", request=_REQUEST), ErrorCode.TRANSPORT, f"stream from {BASE} failed: peer closed"),
        (ConnectionResetError("reset"), ErrorCode.TRANSPORT, f"stream from {BASE} failed: reset"),
    ]
    errors = sdk_errors(sdk.APIError)
    for exc, code, message in cases:
        assert isinstance(exc, errors), exc  # what the life cycle catches, so turns into a failure
        failure = sdk_failure(sdk, exc, BASE)
        assert (failure.code, failure.message) == (code, message), exc
