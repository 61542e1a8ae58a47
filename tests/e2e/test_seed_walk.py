"""The seed's README walk, end to end, with snapshots of the log and of every request body.

The model (the mock server, over loopback) reasons, calls `read` on README.md with its arguments
split over several fragments, receives the line-numbered file as a tool result, and answers.
The snapshots hold the whole session event log and every body the server received, so the
tool-result round trip is visible exactly as it is on the wire: `role: tool`, the same
`tool_call_id`, right after the assistant message that made the call.
"""

from __future__ import annotations

from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from dshkit.harness.session.events import event_to_json
from tests.normalize import Normalizer

from .conftest import README_TEXT, RigFactory, call, reply

PROMPT = "Read README.md and tell me what the project does."
CALL_ID = "call_00_r3ad0README0md0e2eWalk001"

WALK = [
    {
        "label": "read-readme",
        **reply(
            reasoning="The user wants to know what the project does. I will read README.md.",
            calls=[call("read", '{"file_path":"README.md"}', CALL_ID)],
            stream={"arguments": {"mode": "points", "points": [2, 6, 11, 15, 22]}, "split": {"mode": "fixed", "size": 12}},
        ),
    },
    {
        "label": "answer",
        **reply(
            "Widget Forge turns YAML recipes into tested widgets; run `forge build recipe.yaml`.",
            reasoning="The README says it all.",
            match={"tool_result": CALL_ID},
            stream={"split": {"mode": "fixed", "size": 16}},
        ),
    },
]


@pytest.fixture
def snapshot_json(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(JSONSnapshotExtension)


async def test_seed_walk_log_and_wire(loop_rig: RigFactory, snapshot_json: SnapshotAssertion) -> None:
    rig = await loop_rig(*WALK, builtin=("read",))
    outcome = await rig.run(PROMPT)
    assert outcome.kind == "completed"

    # The walk, as the seed tells it (chunks left out): one turn, two steps.
    assert rig.types() == [
        "agent/inbox/spliced", "turn/start", "agent/inbox/spliced",
        "step/start", "user/message", "request/header", "assistant/message",
        "tool/call", "tool/result", "step/end",
        "step/start", "assistant/message", "step/end",
        "turn/end",
    ]
    # The raw arguments arrived in several fragments and stay the model's string, byte for byte.
    deltas = [e.data["chunk"] for e in rig.events("assistant/chunk") if e.data["chunk"]["type"] == "tool-call-delta"]
    assert len(deltas) > 1
    assert "".join(d["argumentsDelta"] for d in deltas) == '{"file_path":"README.md"}'
    (tool_call,) = rig.data("tool/call")
    assert tool_call["arguments"] == '{"file_path":"README.md"}'
    (result,) = rig.data("tool/result")
    assert result["message"]["content"][0]["content"][0]["text"].startswith("<path>") and "\n1: # Widget Forge\n" in result["message"]["content"][0]["content"][0]["text"]

    # The tool result is the next request's input, on the wire as role "tool".
    first, second = rig.bodies
    wire = second["messages"]
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "tool"]
    assert wire[2]["tool_calls"][0]["function"]["arguments"] == '{"file_path":"README.md"}'
    assert wire[3]["tool_call_id"] == wire[2]["tool_calls"][0]["id"] == CALL_ID
    assert README_TEXT.splitlines()[2] in wire[3]["content"]
    assert second["messages"][: len(first["messages"])] == first["messages"]  # append-extends

    norm = Normalizer.in_text(rig.workspace)
    log: list[Any] = [norm(event_to_json(e)) for e in rig.session.events]
    assert log == snapshot_json(name="session-log")
    assert norm(rig.bodies) == snapshot_json(name="request-bodies")
