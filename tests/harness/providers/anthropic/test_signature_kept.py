"""A thinking block's signature survives a stream that does not end in success: `pause_turn`
(the turn must be resent with its blocks), an in-band `error` event, and a body cut before
`message_stop`. Both the Anthropic adapter (over loopback against the real mock server) and
`dshkit decode` (on the bytes that mock sent) keep it on the finish's replay envelope."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from dshkit.cli import main
from dshkit.harness.llm import BlockAssembler, Finish, GenerateOptions, UserMessage
from dshkit.harness.llm.messages import ReasoningBlock
from dshkit.harness.providers.anthropic import AnthropicAdapter
from dshkit.mock_server import MockServer, Script

SIG = "sig-kept-7f3a"


def _event(obj: dict[str, Any]) -> str:
    return f"event: {obj['type']}\ndata: {json.dumps(obj)}\n\n"


HEAD = [
    {"type": "message_start", "message": {"id": "msg-p1", "type": "message", "role": "assistant",
                                          "model": "deepseek-v4-flash", "content": [], "stop_reason": None,
                                          "stop_sequence": None, "usage": {"input_tokens": 9, "output_tokens": 1}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Searching."}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": SIG}},
    {"type": "content_block_stop", "index": 0},
    {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Still looking"}},
]
ENDINGS: dict[str, list[dict[str, Any]]] = {
    "pause_turn": [
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "pause_turn", "stop_sequence": None},
         "usage": {"output_tokens": 12}},
        {"type": "message_stop"},
    ],
    "error_event": [{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}],
    "cut": [],  # EOF before any stop reason
}
CODES = {"pause_turn": "PAUSE_TURN", "error_event": "SERVER", "cut": "STREAM_CLOSED"}


def _script(ending: str) -> Script:
    text = "".join(_event(e) for e in [*HEAD, *ENDINGS[ending]])
    return Script.of({"raw": {"writes": [{"text": text}]}})


@pytest.mark.parametrize("ending", list(ENDINGS))
async def test_adapter_keeps_the_signature(ending: str) -> None:
    async with MockServer(_script(ending)) as server:
        async with AnthropicAdapter(server.base_url + "/anthropic", "k") as adapter:
            options = GenerateOptions(provider="deepseek", model="deepseek-v4-flash",
                                      messages=(UserMessage.text("find it"),))
            chunks = [c async for c in adapter.stream(options)]
        server.assert_consumed()
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason.kind == "error"
    assert finish.reason.failure is not None and finish.reason.failure.code == CODES[ending]
    assembler = BlockAssembler().feed_all(chunks)
    state = assembler.replay_state
    assert state is not None, "the signature was dropped"
    assert state["blocks"][0] == {"signature": SIG}
    assert state["response"]["id"] == "msg-p1"


@pytest.mark.parametrize("ending", list(ENDINGS))
async def test_decode_shows_the_signature(ending: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async with MockServer(_script(ending)) as server, httpx.AsyncClient(timeout=5) as http:
        resp = await http.post(server.make_url("/anthropic/v1/messages"), json={
            "model": "deepseek-v4-flash", "max_tokens": 64, "stream": True,
            "messages": [{"role": "user", "content": "find it"}]})
    capture = tmp_path / "capture.sse"
    capture.write_bytes(resp.content)
    assert main(["decode", str(capture)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["finish"]["kind"] == "error"
    message = doc["message"]
    assert message["content"][0]["text"] == "Searching."
    assert message["source"]["replayState"]["blocks"][0] == {"signature": SIG}


async def test_decode_of_a_paused_message_body_shows_the_signature(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    message = {"id": "msg-p2", "type": "message", "role": "assistant", "model": "deepseek-v4-flash",
               "content": [{"type": "thinking", "thinking": "Searching.", "signature": SIG},
                           {"type": "text", "text": "Still looking"}],
               "stop_reason": "pause_turn", "stop_sequence": None, "usage": {"input_tokens": 9, "output_tokens": 12}}
    script = Script.of({"raw": {"headers": {"Content-Type": "application/json"},
                                "writes": [{"text": json.dumps(message)}]}})
    async with MockServer(script) as server, httpx.AsyncClient(timeout=5) as http:
        resp = await http.post(server.make_url("/anthropic/v1/messages"), json={
            "model": "deepseek-v4-flash", "max_tokens": 64, "messages": [{"role": "user", "content": "find it"}]})
    capture = tmp_path / "message.json"
    capture.write_bytes(resp.content)
    assert main(["decode", str(capture)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["finish"]["kind"] == "error" and doc["finish"]["failure"]["code"] == "PAUSE_TURN"
    assert doc["message"]["source"]["replayState"]["blocks"] == [{"signature": SIG}, None]


async def test_sdk_adapter_keeps_the_signature_of_a_paused_turn() -> None:
    """The SDK adapter feeds the SDK's events to the same translator: pause_turn keeps it too."""
    from dshkit.harness.providers.anthropic_sdk import AnthropicSDKAdapter

    async with MockServer(_script("pause_turn")) as server:
        adapter = AnthropicSDKAdapter(server.base_url + "/anthropic", "k")
        try:
            options = GenerateOptions(provider="deepseek", model="deepseek-v4-flash",
                                      messages=(UserMessage.text("find it"),))
            chunks = [c async for c in adapter.stream(options)]
        finally:
            await adapter.aclose()
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason.failure is not None
    assert finish.reason.failure.code == "PAUSE_TURN"
    state = BlockAssembler().feed_all(chunks).replay_state
    assert state is not None and state["blocks"][0] == {"signature": SIG}


# The stream ends in a failure the SDK raises, not an event the translator reads: an in-band `error`
# event (the SDK raises APIStatusError with the 200 response) and a TCP reset after the thinking
# block (its HTTP client's ReadError). Both adapters must keep the signature on that error finish.
RAISED = {
    "error_event": (Script.of({"raw": {"writes": [{"text": "".join(_event(e) for e in [*HEAD, *ENDINGS["error_event"]])}]}}),
                    "SERVER"),
    "reset": (Script.of({"raw": {"writes": [{"text": "".join(_event(e) for e in HEAD)}], "end": "reset"}}),
              "TRANSPORT"),
}


def _sdk_adapter(url: str) -> Any:
    from dshkit.harness.providers.anthropic_sdk import AnthropicSDKAdapter

    return AnthropicSDKAdapter(url, "k")


@pytest.mark.parametrize("make", [lambda url: AnthropicAdapter(url, "k"), _sdk_adapter],
                         ids=["httpx", "sdk"])
@pytest.mark.parametrize("ending", list(RAISED))
async def test_a_raised_failure_keeps_the_signature(ending: str, make: Any) -> None:
    script, code = RAISED[ending]
    async with MockServer(script) as server:
        adapter = make(server.base_url + "/anthropic")
        try:
            options = GenerateOptions(provider="deepseek", model="deepseek-v4-flash",
                                      messages=(UserMessage.text("find it"),))
            chunks = [c async for c in adapter.stream(options)]
        finally:
            await adapter.aclose()
        server.assert_consumed()
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason.failure is not None
    assert finish.reason.failure.code == code
    assembler = BlockAssembler().feed_all(chunks)
    assert [b.text for b in assembler.blocks() if isinstance(b, ReasoningBlock)] == ["Searching."]
    state = assembler.replay_state
    assert state is not None, "the signature was dropped"
    assert state["blocks"][0] == {"signature": SIG}
    assert state["response"]["id"] == "msg-p1"
