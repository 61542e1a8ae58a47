"""syrupy snapshots of translate (wire → chunks), assemble (chunks → message) and serialize
(message → next request body) on captures written for this project (`captures/*.sse`). Ids and
times are replaced by numbered tokens so snapshots hold only behaviour. Corpus streams are
compared with their expected files elsewhere, never snapshotted.

Regenerate after an intended change: `pytest tests/harness/providers/openai_chat/test_snapshots.py
--snapshot-update`, then review the diff."""

from __future__ import annotations

from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from dshkit.harness.llm import BlockAssembler, GenerateOptions, ToolSchema, UserMessage
from dshkit.harness.llm.codec import chunk_to_json, message_to_json
from dshkit.harness.llm.messages import ModelSource, ToolResultMessage
from dshkit.harness.providers.deepseek import DeepSeekConfig
from dshkit.harness.providers.openai_chat.serialize import serialize
from tests.normalize import Normalizer

from .wire import decode

CAPTURES = Path(__file__).parent / "captures"
NAMES = sorted(p.stem for p in CAPTURES.glob("*.sse"))


@pytest.fixture
def snapshot_json(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(JSONSnapshotExtension)


SOURCE = ModelSource(provider="deepseek", model="deepseek-v4-flash")
TOOLS = [
    ToolSchema(
        name="read",
        description="Read a file from the workspace.",
        parameters={"type": "object", "properties": {"file_path": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["file_path"]},
    )
]


def test_captures_exist() -> None:
    assert len(NAMES) >= 5


@pytest.mark.parametrize("name", NAMES)
def test_translate_and_assemble(name: str, snapshot_json: SnapshotAssertion) -> None:
    chunks = decode((CAPTURES / f"{name}.sse").read_bytes())
    normalize = Normalizer.by_key()
    a = BlockAssembler().feed_all(chunks)
    document = {
        "chunks": [chunk_to_json(c) for c in chunks],
        "message": message_to_json(a.message(SOURCE, id="assistant-message")),
        "interrupted": message_to_json(a.message(SOURCE, id="assistant-message", interrupted=True)),
    }
    assert normalize(document) == snapshot_json


@pytest.mark.parametrize("name", ["tool-call-split-args", "parallel-calls"])
@pytest.mark.parametrize("config", [DeepSeekConfig(), DeepSeekConfig(thinking="disabled"), DeepSeekConfig(era="r1")], ids=["v4", "thinking-off", "r1"])
def test_round_trip_next_request(name: str, config: DeepSeekConfig, snapshot_json: SnapshotAssertion) -> None:
    """Decode a tool-call stream, add a result per call, serialize the next request."""
    chunks = decode((CAPTURES / f"{name}.sse").read_bytes())
    assistant = BlockAssembler().feed_all(chunks).message(SOURCE, id="assistant-message")
    results = [
        ToolResultMessage.create(c.id, f"contents of call {i}" if i == 0 else "", id=f"result-{i}")
        for i, c in enumerate(assistant.tool_calls)
    ]
    options = GenerateOptions(
        provider="deepseek",
        model="deepseek-v4-flash",
        system="You are a coding agent. Read before you answer.",
        messages=[UserMessage.text("What does this project do?", id="user-message"), assistant, *results],
        tools=TOOLS,
        session_id="session-1",
    )
    body = serialize(options, config)
    # the arguments go back byte for byte
    sent = [c["function"]["arguments"] for c in body["messages"][2]["tool_calls"]]
    assert sent == [c.arguments for c in assistant.tool_calls]
    assert Normalizer.by_key()(body) == snapshot_json
