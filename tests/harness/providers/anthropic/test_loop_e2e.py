"""The agent loop on the Anthropic adapter against the real mock server's Anthropic surface,
over loopback: a tool round trip whose second request passes the thinking block back with the
signature the first stream gave (DeepSeek answers 400 otherwise, AN27), every request rebuilt
from the session log alone, a fault mapped to its failure code, and `dshkit run --protocol
anthropic` on the embedded mock."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dshkit.cli import main
from dshkit.harness.llm import ErrorCode, GenerateOptions, UserMessage
from dshkit.harness.loop import Agent, AgentOptions, rebuild_requests
from dshkit.harness.providers.anthropic import AnthropicAdapter
from dshkit.harness.providers.anthropic.serialize import encode_body, serialize
from dshkit.harness.session import Session, SessionHeader
from dshkit.harness.session.jsonl import load_session
from dshkit.harness.tools import ToolRuntime, builtin_tools
from dshkit.mock_server import MockServer, Script

KEY = "sk-anthropic-e2e"
TOOL_THEN_ANSWER = (
    {"reply": {"reasoning": "Read the README first.", "tool_calls": [{"name": "read", "arguments": {"file_path": "README.md"}}]}},
    {"reply": {"reasoning": "Now I can answer.", "content": "It forges widgets."}},
)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# Widget Forge\n\nForges widgets.\n", encoding="utf-8")
    return ws


def assistant_turns(body: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [m["content"] for m in body["messages"] if m["role"] == "assistant"]


async def test_tool_round_trip_with_thinking_passback(workspace: Path) -> None:
    async with MockServer(Script.of(*TOOL_THEN_ANSWER), api_key=KEY) as server:
        session = Session(SessionHeader.new(cwd=str(workspace)))
        async with AnthropicAdapter(server.base_url + "/anthropic", KEY) as adapter:
            agent = Agent(session, adapter, AgentOptions(model="deepseek-v4-flash"), tools=ToolRuntime(builtin_tools(workspace)))
            outcome = await agent.run("What does this project do?")
        assert outcome.kind == "completed"
        server.assert_consumed()
        first, second = server.journal.messages()
        assert first.path == "/anthropic/v1/messages" and first.status == 200 and second.status == 200
        # The signature sent back is the one the first stream carried (DeepSeek: the message id).
        finishes = [e.data["chunk"] for e in session.events if e.type == "assistant/chunk" and e.data["chunk"]["type"] == "finish"]
        message_id = finishes[0]["meta"]["id"]
        assert message_id
        (turn,) = assistant_turns(second.body)
        assert turn == [
            {"type": "thinking", "thinking": "Read the README first.", "signature": message_id},
            {"type": "tool_use", "id": turn[1]["id"], "name": "read", "input": {"file_path": "README.md"}},
        ]
        result = second.body["messages"][-1]
        assert result["role"] == "user" and result["content"][0]["type"] == "tool_result"
        assert result["content"][0]["tool_use_id"] == turn[1]["id"]
        assert "Widget Forge" in result["content"][0]["content"]
        answer = [e for e in session.events if e.type == "assistant/message"][-1]
        assert answer.data["message"]["content"][-1] == {"type": "text", "text": "It forges widgets."}
        # The one rule: every request is rebuilt, byte for byte, from the log alone.
        rebuilt = rebuild_requests(session.events, session_id=session.id)
        assert [encode_body(serialize(r, adapter.config)) for r in rebuilt] == [
            encode_body(e.body) for e in (first, second)
        ]


async def test_fault_maps_to_failure_code() -> None:
    """A scripted 529 on this surface is a retryable SERVER failure with Anthropic's type."""
    options = GenerateOptions(provider="deepseek", model="deepseek-v4-flash", messages=[UserMessage.text("hi")])
    async with MockServer(Script.of({"fault": "overloaded"}), api_key=KEY) as server, AnthropicAdapter(
        server.base_url + "/anthropic", KEY
    ) as adapter:
        chunks = [c async for c in adapter.stream(options)]
    finish = chunks[-1]
    assert finish.type == "finish" and finish.reason.failure is not None  # type: ignore[union-attr]
    failure = finish.reason.failure  # type: ignore[union-attr]
    assert (failure.code, failure.status) == (ErrorCode.SERVER, 529)
    assert failure.provider_error is not None and failure.provider_error.type == "overloaded_error"


async def test_wrong_key_is_auth_error_in_the_loop(workspace: Path) -> None:
    async with MockServer(Script.of(*TOOL_THEN_ANSWER), api_key=KEY) as server:
        session = Session(SessionHeader.new(cwd=str(workspace)))
        async with AnthropicAdapter(server.base_url + "/anthropic", "sk-wrong") as adapter:
            agent = Agent(session, adapter, AgentOptions(model="deepseek-v4-flash"), tools=ToolRuntime(builtin_tools(workspace)))
            outcome = await agent.run("hi")
    assert outcome.kind == "error"
    assert session.events[-1].data["reason"]["error"]["code"] == ErrorCode.AUTH


def test_dshkit_run_protocol_anthropic_on_embedded_mock(workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    session_path = tmp_path / "s.jsonl"
    code = main(["run", "Read README.md and tell me what the project does.", "--protocol", "anthropic",
                 "--workspace", str(workspace), "--session", str(session_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "thinking: " in out and '⚙ read {"file_path":"README.md"}' in out and "1: # Widget Forge" in out
    assert "■ turn 1 completed" in out
    session = load_session(session_path)
    calls = [e for e in session.events if e.type == "assistant/message"]
    # The tool-call turn keeps its Anthropic replay state (the signature) in the log.
    state = calls[0].data["message"]["source"]["replayState"]
    assert state["response"]["protocol"] == "anthropic-messages"
    assert state["blocks"][0]["signature"] == state["response"]["id"]
    assert json.loads(json.dumps(state))  # plain JSON, round-trips through the JSONL file
