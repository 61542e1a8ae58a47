"""`dshkit decode` on Anthropic Messages captures: every file of the real-anthropic corpus
(streams as recorded, vercel/ai's data-only JSONL, a non-streaming Message body, error bodies in
both envelopes) decodes through the CLI to the message its sidecar expects; protocol detection;
`--protocol` forcing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dshkit.cli import main
from dshkit.harness.decode import decode_capture, detect_protocol
from tests.conftest import corpus_missing
from tests.harness.providers.anthropic.conftest import REAL_ANTHROPIC, corpus_sidecars

SIDECARS = corpus_sidecars()
_PARAMS = [pytest.param(p, id=p.name.split(".")[0]) for p in SIDECARS] or [
    pytest.param(None, marks=pytest.mark.skip(reason=corpus_missing(REAL_ANTHROPIC)))
]
_TYPES = {"text": "text", "thinking": "reasoning", "tool_use": "tool-call"}


def cli_json(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["decode", *args]) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


@pytest.mark.parametrize("sidecar", _PARAMS)
def test_corpus_file_decodes_to_expected_message(sidecar: Path, capsys: pytest.CaptureFixture[str]) -> None:
    meta = json.loads(sidecar.read_text())
    path = str(sidecar.parent / meta["file"])
    expected = meta["expected"]
    if meta["kind"] == "error":
        doc = cli_json([path, "--status", str(meta["http_status"])], capsys)
        failure = doc["finish"]["failure"]
        assert (failure["message"], failure["status"]) == (expected["message"], meta["http_status"])
        assert failure["providerError"]["type"] == expected["error_type"]
        return
    doc = cli_json([path], capsys)
    message = doc["message"]
    wanted = expected["content"]
    if expected["stop_reason"] == "max_tokens":  # the cut tool call is dropped (an14)
        wanted = [b for b in wanted if b["type"] != "tool_use"]
    assert [b["type"] for b in message["content"]] == [_TYPES.get(b["type"], b["type"]) for b in wanted]
    state = message["source"].get("replayState") or {}
    for index, (block, want) in enumerate(zip(message["content"], wanted, strict=True)):
        if want["type"] == "text":
            assert block["text"] == want["text"]
        elif want["type"] == "thinking":
            assert block["text"] == want["thinking"]
            assert state["blocks"][index] == {"signature": want["signature"]}
        elif want["type"] == "tool_use":
            assert (block["id"], block["name"]) == (want["id"], want["name"])
            raw = want.get("input_json")
            if raw is not None:
                assert block["arguments"] == raw
            else:  # a non-streaming body has an input object, not fragments
                assert json.loads(block["arguments"]) == want["input"]
    kinds = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool-calls", "max_tokens": "max-tokens"}
    assert doc["finish"]["kind"] == kinds[expected["stop_reason"]]
    assert doc["meta"]["id"] == expected["message"]["id"]
    assert doc["usage"]["inputTokens"] == expected["usage"]["input_tokens"]
    assert doc["usage"]["outputTokens"] == expected["usage"]["output_tokens"]


ANTHROPIC_SSE = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"deepseek-v4-flash","usage":{"input_tokens":3,"output_tokens":1}}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}\n\n'
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}\n\n'
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)


def test_detect_protocol() -> None:
    assert detect_protocol(ANTHROPIC_SSE) == "anthropic"
    assert detect_protocol(b'{"type":"message","content":[],"id":"m"}') == "anthropic"
    assert detect_protocol(b'data: {"choices":[{"delta":{"content":"hi"}}]}\n\n') == "chat"
    assert detect_protocol(b'{"error":{"message":"x"}}') == "chat"


def test_same_result_from_sse_jsonl_and_json_array() -> None:
    events = [json.loads(line[6:]) for line in ANTHROPIC_SSE.split(b"\n") if line.startswith(b"data: ")]
    sse = decode_capture(ANTHROPIC_SSE).to_json()
    jsonl = decode_capture(b"\n".join(json.dumps(e).encode() for e in events)).to_json()
    array = decode_capture(json.dumps(events).encode()).to_json()
    assert sse["message"]["content"] == [{"type": "text", "text": "hi"}]
    assert {k: v for k, v in sse.items() if k != "message"} == {k: v for k, v in jsonl.items() if k != "message"}
    assert {k: v for k, v in jsonl.items() if k != "message"} == {k: v for k, v in array.items() if k != "message"}


def test_forcing_chat_on_anthropic_bytes_reads_no_content() -> None:
    """`--protocol chat` really takes the Chat Completions path (no choices: an empty stream)."""
    result = decode_capture(ANTHROPIC_SSE, protocol="chat")
    assert result.protocol == "chat" and result.to_json()["finish"]["kind"] == "error"
    assert decode_capture(ANTHROPIC_SSE, protocol="anthropic").to_json()["finish"] == {"kind": "stop"}
