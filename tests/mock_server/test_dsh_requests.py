"""The mock accepts every request DSH 0.1.0-rc.8 sends in a tool-using turn, field for field.

`make e2e-dsh` runs the real DSH against `dshkit serve`; this test keeps what it proved inside
`make test`: the bodies below have the fields, values and message shapes DSH's journaled requests
carry (thinking on with `reasoning_effort: high` and `max_tokens` 256000, `stream_options`, its
non-strict tool schemas with nested `additionalProperties: false` and enums, the runtime-context
snapshot after the task, an assistant tool-call turn with `content: ""` and its
`reasoning_content`, the session-title side request), with DSH's headers and a bearer key. A
stricter validation rule that rejected any of them would reject the real DSH (real DeepSeek
accepts these requests), so each must be answered 200 with a complete stream.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from dshkit.mock_server import MockServer, Script

KEY = "sk-dshkit-dsh-shapes"
HEADERS = {
    "Authorization": f"Bearer {KEY}",
    "Accept": "text/event-stream",
    "User-Agent": "deepseek-harness/0.1.0-rc.8",
    "x-deepseek-harness-user-id": "9038010e-cd5a-4bcb-8389-b69f5739f7ac",
    "x-deepseek-harness-session-id": "session-0db8062f",
    "Accept-Language": "*",
    "Accept-Encoding": "gzip, deflate",
}
TASK = "Read notes.txt and summarise it"
CONTEXT = ("Current runtime context. This snapshot supersedes earlier runtime-context snapshots.\n\n"
           'Current DSH file policy: workspace-write. Session workspace: "/ws".')
TOOLS = [
    {"type": "function", "function": {"name": "read", "description": "Read a file.", "parameters": {
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "Path to read."},
            "offset": {"type": "number", "description": "1-based first line."},
            "limit": {"type": "number", "description": "Maximum number of lines."},
        },
        "required": ["file_path"],
    }}},
    {"type": "function", "function": {"name": "todo_write", "description": "Replace the task list.", "parameters": {
        "type": "object",
        "properties": {"todos": {"type": "array", "description": "The complete list.", "items": {
            "type": "object", "additionalProperties": False,
            "properties": {
                "content": {"type": "string", "description": "What the task is."},
                "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
            },
            "required": ["content", "status"],
        }}},
        "required": ["todos"],
    }}},
]
CALL = {"id": "call_00_read", "type": "function", "function": {"name": "read", "arguments": '{"file_path": "notes.txt"}'}}


def main_body(*after: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": "deepseek-v4-flash",
        "messages": [
            {"role": "system", "content": "You are an AI agent powered by DeepSeek Harness."},
            {"role": "user", "content": TASK},
            {"role": "user", "content": CONTEXT},
            *after,
        ],
        "stream": True, "stream_options": {"include_usage": True},
        "thinking": {"type": "enabled"}, "reasoning_effort": "high",
        "tools": TOOLS, "max_tokens": 256000,
    }


TITLE = {
    "model": "deepseek-v4-flash",
    "messages": [
        {"role": "system", "content": "Create a concise title for an AI coding-assistant session from the supplied "
         "human messages.\nReturn only the title on one line."},
        {"role": "user", "content": f'Generate the session title from this JSON array of human messages:\n[{{"seq":1,"text":"{TASK}"}}]'},
    ],
    "stream": True, "stream_options": {"include_usage": True},
    "thinking": {"type": "disabled"}, "max_tokens": 64,
}


def deltas(stream: str, field: str) -> list[Any]:
    """The `field` of every delta of an SSE chat stream, in order."""
    events = [json.loads(line[6:]) for line in stream.splitlines() if line.startswith("data: {")]
    return [c["delta"][field] for e in events for c in e["choices"] if c["delta"].get(field)]


async def test_every_request_of_a_dsh_tool_turn_is_answered() -> None:
    script = Script.of(
        {"match": {"prompt": "^Read notes.txt"}, "reply": {
            "reasoning": "I will read the file first.",
            "tool_calls": [{"id": "call_00_read", "name": "read", "arguments": {"file_path": "notes.txt"}}]}},
        {"match": {"tool_result": "call_00_read"}, "reply": {"content": "The notes list alpha and beta."}},
    )
    second = main_body(
        {"role": "assistant", "content": "", "reasoning_content": "I will read the file first.", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_00_read", "content": "<path>/ws/notes.txt</path>\n<type>file</type>"},
    )
    async with MockServer(script, api_key=KEY) as server, httpx.AsyncClient(timeout=10) as client:
        streams = []
        for body in (main_body(), TITLE, second):
            response = await client.post(server.url, json=body, headers=HEADERS)
            assert response.status_code == 200, response.text
            streams.append(response.text)
        assert all(s.rstrip().endswith("data: [DONE]") for s in streams)
        calls = [call for piece in deltas(streams[0], "tool_calls") for call in piece]
        assert [c["id"] for c in calls if c.get("id")] == ["call_00_read"]
        assert "".join(deltas(streams[2], "content")) == "The notes list alpha and beta."
        assert [e.step for e in server.journal] == [0, None, 1]
        server.assert_consumed()
