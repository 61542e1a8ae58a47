"""The logged request header: `RequestHeader`'s round trip through its logged form, and
`rebuild_requests` over a DSH log that holds the session-title request beside step 1.

That log is upstream DSH's `session-title-after-turn` fixture (the shared corpus), with the
`{{system}}` and `{{tools}}` placeholders the fixture scrubbed put back as DSH writes them
unscrubbed: the system text, and the tool list as `{name, description, parameters}` objects.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dshkit.harness.llm import HarnessError, ToolSchema, UserMessage
from dshkit.harness.loop import rebuild_requests
from dshkit.harness.loop.header import RequestHeader, title_request
from dshkit.harness.providers.openai_chat.serialize import serialize
from dshkit.harness.session import parse_session_log
from dshkit.harness.session.jsonl import LoadedLog

from ...conftest import DSH_UPSTREAM, corpus_missing

MODEL = "deepseek-v4-flash"
TITLE_LOG = DSH_UPSTREAM / "examples/acp-agent/tests/snapshots/session-title-after-turn/session.jsonl"
SYSTEM = "You are DSH, a coding agent."
TOOLS = [{"name": "read", "description": "Read a file.",
          "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}]


def unscrubbed(path: Path) -> str:
    """A corpus log as DSH writes it unscrubbed; skips when the corpus is absent."""
    if not path.is_file():
        pytest.skip(corpus_missing(path))
    text = path.read_text(encoding="utf-8")
    return text.replace('"{{system}}"', json.dumps(SYSTEM)).replace('"{{tools}}"', json.dumps(TOOLS))


def title_log_text() -> str:
    return unscrubbed(TITLE_LOG)


def title_log() -> LoadedLog:
    return parse_session_log(title_log_text(), source=TITLE_LOG.name, lenient=True)


def test_the_title_request_is_rebuilt_at_its_place_with_thinking_off_and_no_tools() -> None:
    loaded = title_log()
    title, main = rebuild_requests(list(loaded.session.events), session_id=loaded.session.id)
    assert (title.purpose, main.purpose) == ("session-title", None)
    body = serialize(title)
    assert body["model"] == "title-model" and body["max_tokens"] == 32
    assert body["thinking"] == {"type": "disabled"} and "reasoning_effort" not in body and "tools" not in body
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][0]["content"].startswith("Create a concise title for an AI coding-assistant session")
    assert body["messages"][1]["content"].startswith("Generate the session title from this JSON array of human messages")
    assert body["stream"] is True
    main_body = serialize(main)
    assert main_body["model"] == "deepseek-v4-flash" and main_body["messages"][0] == {"role": "system", "content": SYSTEM}
    assert [t["function"]["name"] for t in main_body["tools"]] == ["read"]


def test_the_projected_dsh_path_rebuilds_it_too() -> None:
    """`rebuild_requests` also takes the log's lines as JSON mappings (DSH's projected form)."""
    rows = [json.loads(line) for line in title_log_text().splitlines()[1:]]
    loaded = title_log()
    from_events = rebuild_requests(list(loaded.session.events), session_id="s")
    from_rows = rebuild_requests(rows, session_id="s")
    assert [serialize(o) for o in from_rows] == [serialize(o) for o in from_events]


@pytest.mark.parametrize(("data", "problem"), [
    ({"messages": []}, "KeyError: 'route'"),
    ({"route": {"provider": "p", "model": "m"}, "messages": "text"}, "messages must be a list"),
    ({"route": {"provider": "p", "model": "m"}, "messages": [], "maxTokens": 0}, "maxTokens must be a positive integer"),
    ({"route": {"provider": "p", "model": 5}, "messages": []}, "route.provider and route.model must be strings"),
])
def test_a_malformed_title_request_is_a_located_rebuild_error(data: dict[str, object], problem: str) -> None:
    with pytest.raises(HarnessError, match=rf"session/title-llm-request seq 9: cannot rebuild the title request .*{problem}"):
        title_request(data, session_id="s", where="session/title-llm-request seq 9")


def test_a_title_request_keeps_its_logged_messages() -> None:
    message = UserMessage.text("Generate the session title from this JSON array of human messages:\n[]")
    from dshkit.harness.llm.codec import message_to_json

    options = title_request({"route": {"provider": "p", "model": "m"}, "messages": [message_to_json(message)]}, session_id="s")
    assert options.messages == (message,) and options.system is None and options.max_tokens is None


def test_no_title_request_for_a_log_without_one(dsh_sessions: Path) -> None:
    loaded = parse_session_log(unscrubbed(dsh_sessions / "tool-call-turn--session.jsonl"), lenient=True)
    assert [o.purpose for o in rebuild_requests(list(loaded.session.events), session_id="s")] == [None, None]


@pytest.mark.parametrize(
    "header",
    [
        RequestHeader(provider="deepseek", model=MODEL),
        RequestHeader(
            provider="deepseek", model=MODEL, reasoning_effort="max", temperature=0.0, max_tokens=1,
            stop=("a", "b"), system="S", tools=(ToolSchema(name="t", description="d", parameters={"type": "object"}),),
        ),
    ],
)
def test_request_header_round_trips_through_its_logged_form(header: RequestHeader) -> None:
    logged = header.to_json()
    assert RequestHeader.from_json(logged) == header
    config_keys = set(logged["config"])
    assert config_keys <= {"provider", "model", "reasoningEffort", "temperature", "maxTokens", "stop"}
