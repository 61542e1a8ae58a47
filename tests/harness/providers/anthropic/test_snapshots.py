"""syrupy snapshots of the Anthropic wire on a stream written for this project (`wire.TOOL_TURN`):
translate (events → chunks), assemble (chunks → message with its replay envelope) and serialize
(message → the next request body, with the thinking block and its signature passed back).

Regenerate after an intended change: `pytest tests/harness/providers/anthropic/test_snapshots.py
--snapshot-update`, then review the diff."""

from __future__ import annotations

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from dshkit.harness.llm import BlockAssembler, GenerateOptions, ToolSchema, UserMessage
from dshkit.harness.llm.codec import chunk_to_json, message_to_json
from dshkit.harness.llm.messages import ModelSource, ToolResultMessage
from dshkit.harness.providers.anthropic.decoder import StreamDecoder
from dshkit.harness.providers.anthropic.serialize import serialize

from .wire import TOOL_TURN


@pytest.fixture
def snapshot_json(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(JSONSnapshotExtension)


def test_tool_turn_translate_assemble_serialize(snapshot_json: SnapshotAssertion) -> None:
    decoder = StreamDecoder()
    chunks = decoder.feed(TOOL_TURN) + decoder.close()
    assembler = BlockAssembler().feed_all(chunks)
    source = ModelSource(provider="deepseek", model="deepseek-v4-flash", replay_state=assembler.replay_state)
    message = assembler.message(source, id="msg-1")
    call = message.tool_calls[0]
    options = GenerateOptions(
        provider="deepseek",
        model="deepseek-v4-flash",
        system="Be brief.",
        messages=[UserMessage.text("What is in README.md?", id="u-1"), message,
                  ToolResultMessage.create(call.id, "# Widget Forge", id="r-1")],
        tools=[ToolSchema(name="read", description="Read a file.", parameters={"type": "object"})],
    )
    assert {
        "chunks": [chunk_to_json(c) for c in chunks],
        "message": message_to_json(message),
        "next_request": serialize(options),
    } == snapshot_json
