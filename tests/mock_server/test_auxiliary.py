"""Auxiliary requests (DSH's session title, compaction) answered beside a script's steps, and
`match.prompt`, over real HTTP with the official openai SDK and httpx.

The request bodies have the shapes DSH 0.1.0-rc.8 sends: its title request carries the title
instruction as system text, thinking off, `max_tokens` 64 and no tools, with the same headers as
the main call; each step of a turn ends its messages with the runtime-context snapshot.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from dshkit.mock_server import MockServer, Script, load_script
from dshkit.mock_server.routing import RequestView, prompt_of, purpose_of
from dshkit.mock_server.scripts import DEFAULT_TITLE, ScriptError

SESSION = {"x-deepseek-harness-session-id": "session-1"}
TITLE_SYSTEM = (
    "Create a concise title for an AI coding-assistant session from the supplied human messages.\n"
    "Return only the title on one line."
)
CONTEXT = "Current runtime context. This snapshot supersedes earlier runtime-context snapshots."
TOOLS = [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}]


def title_body(task: str = "Say hello") -> dict[str, Any]:
    return {
        "model": "deepseek-v4-flash", "stream": True, "stream_options": {"include_usage": True},
        "thinking": {"type": "disabled"}, "max_tokens": 64,
        "messages": [
            {"role": "system", "content": TITLE_SYSTEM},
            {"role": "user", "content": f'Generate the session title from this JSON array of human messages:\n[{{"seq":7,"text":"{task}"}}]'},
        ],
    }


def main_body(*turns: str, tool_step: bool = False) -> dict[str, Any]:
    """A DSH main request: each earlier turn answered, the last one open (after one tool step)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are an AI agent."}]
    for i, task in enumerate(turns):
        messages += [{"role": "user", "content": task}, {"role": "user", "content": CONTEXT}]
        if i < len(turns) - 1:
            messages.append({"role": "assistant", "content": f"answer {i}"})
    if tool_step:
        messages += [
            {"role": "assistant", "content": "", "reasoning_content": "Read it.", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "file text"},
        ]
    return {"model": "deepseek-v4-flash", "stream": True, "messages": messages, "tools": TOOLS}


async def text_of(client: openai.AsyncOpenAI, body: dict[str, Any], headers: dict[str, str] = SESSION) -> str:
    extra = {k: v for k, v in body.items() if k not in ("model", "messages", "stream")}
    stream = await client.chat.completions.create(
        model=body["model"], messages=body["messages"], stream=True, extra_headers=headers, extra_body=extra,
    )
    return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])


def sdk(server: MockServer) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)


async def test_a_plain_script_keeps_its_steps_when_dsh_asks_for_a_title() -> None:
    """The title request, before or after the main call, gets the default title; the main calls
    get the script's steps in order and nothing is left unused."""
    async with MockServer(Script.replies("first answer", "second answer")) as server, sdk(server) as client:
        assert await text_of(client, title_body()) == DEFAULT_TITLE
        assert await text_of(client, main_body("Say hello")) == "first answer"
        assert await text_of(client, title_body()) == DEFAULT_TITLE
        assert await text_of(client, main_body("Say hello", "Again")) == "second answer"
        server.assert_consumed()
        purposes = [e.step for e in server.journal]
        assert purposes == [None, 0, None, 1]


async def test_auxiliary_steps_answer_by_purpose_and_the_last_repeats() -> None:
    script = Script.model_validate({
        "steps": [{"reply": {"content": "main"}}],
        "auxiliary": [
            {"purpose": "session-title", "fault": "server_error"},
            {"purpose": "session-title", "reply": {"content": "Greeting the user"}},
            {"purpose": "compaction", "reply": {"content": "summary"}},
        ],
    })
    async with MockServer(script) as server, httpx.AsyncClient() as http, sdk(server) as client:
        first = await http.post(server.url, json=title_body(), headers=SESSION)
        assert first.status_code == 500
        assert await text_of(client, title_body()) == "Greeting the user"
        assert await text_of(client, title_body()) == "Greeting the user"  # the last one repeats
        compact = {**SESSION, "x-deepseek-harness-compact": "1"}
        assert await text_of(client, main_body("Say hello"), compact) == "summary"
        assert await text_of(client, main_body("Say hello")) == "main"
        server.assert_consumed()


async def test_title_null_lets_the_title_request_consume_a_step() -> None:
    script = Script.model_validate({"title": None, "steps": [{"reply": {"content": "taken by the title"}}]})
    async with MockServer(script) as server, httpx.AsyncClient() as http, sdk(server) as client:
        assert await text_of(client, title_body()) == "taken by the title"
        late = await http.post(server.url, json=main_body("Say hello"), headers=SESSION)
        assert late.status_code == 418 and late.json()["error"]["code"] == "mock_script_exhausted"


async def test_match_prompt_sees_the_task_where_match_user_sees_the_snapshot() -> None:
    script = Script.model_validate({"steps": [
        {"match": {"prompt": "^Say hello$", "user": "^Current runtime context"}, "reply": {"content": "step 1"}},
        {"match": {"prompt": "^Say hello$", "tool_result": "call_1"}, "reply": {"content": "step 2"}},
        {"match": {"prompt": "^Now bye$"}, "reply": {"content": "turn 2"}},
    ]})
    async with MockServer(script) as server, httpx.AsyncClient() as http, sdk(server) as client:
        assert await text_of(client, main_body("Say hello")) == "step 1"
        assert await text_of(client, main_body("Say hello", tool_step=True)) == "step 2"
        miss = await http.post(server.url, json=main_body("Say hello", "Other"), headers=SESSION)
        assert miss.status_code == 418
        assert "match.prompt /^Now bye$/ not found in the turn's prompt 'Other'" in miss.json()["error"]["message"]
        assert await text_of(client, main_body("Say hello", "Now bye")) == "turn 2"
        server.assert_consumed()


def test_prompt_and_purpose_on_both_surfaces() -> None:
    assert prompt_of(main_body("a", "b", tool_step=True)) == "b"
    assert prompt_of({"messages": []}) == "" and prompt_of(None) == ""
    anthropic = {
        "system": [{"type": "text", "text": TITLE_SYSTEM}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "task"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "read", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]},
        ],
    }
    assert prompt_of(anthropic) == "task"
    assert purpose_of(RequestView(body=anthropic)) == "session-title"
    assert purpose_of(RequestView(body=title_body())) == "session-title"
    assert purpose_of(RequestView(body={**title_body(), "tools": TOOLS})) == "main"
    assert purpose_of(RequestView(body=main_body("x"))) == "main"
    # The system message is the first message that is an object; entries that are not are
    # passed over (validation rejects them later), as is a conversation of none.
    title = title_body()
    assert purpose_of(RequestView(body={**title, "messages": ["junk", 3, *title["messages"]]})) == "session-title"
    assert purpose_of(RequestView(body={**title, "messages": ["junk", *title["messages"][1:]]})) == "main"
    assert purpose_of(RequestView(body={**title, "messages": "not a list"})) == "main"
    assert purpose_of(RequestView(body=main_body("x"), headers={"x-deepseek-harness-compact": "1"})) == "compaction"


def test_purpose_belongs_to_auxiliary_steps_only(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text("steps:\n  - reply: {content: a}\n    purpose: session-title\n", encoding="utf-8")
    with pytest.raises(ScriptError) as e:
        load_script(f)
    assert e.value.field == "steps" and e.value.line == 2 and "move it to `auxiliary`" in e.value.message
    f.write_text("steps: [success]\nauxiliary:\n  - server_error\n", encoding="utf-8")
    with pytest.raises(ScriptError) as e:
        load_script(f)
    assert e.value.field == "auxiliary" and e.value.line == 3 and "needs a `purpose`" in e.value.message
    f.write_text("steps: [success]\nauxiliary:\n  - {fault: server_error, purpose: session-title, bogus: 1}\n",
                 encoding="utf-8")
    with pytest.raises(ScriptError) as e:
        load_script(f)
    assert e.value.field == "auxiliary[0].bogus" and e.value.line == 3
