"""`SessionHeader`: the session file's first line, read as leniently as DSH and written back unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dshkit.harness.llm.errors import SessionError
from dshkit.harness.session import Session, SessionHeader, parse_session_log
from dshkit.harness.session.jsonl import dump_session


def test_foreign_version_is_unsupported_not_corrupt() -> None:
    header = json.dumps({"type": "session", "version": 3, "id": "u", "createdAt": 0, "delegationDepth": 0})
    with pytest.raises(SessionError, match="upgrade") as info:
        parse_session_log(header + "\n")
    assert info.value.code == "SESSION_FORMAT_UNSUPPORTED"


@pytest.mark.parametrize(
    ("line", "depth", "cwd"),
    [
        ('{"type":"session","id":"x","createdAt":0,"cwd":"/rec/a","delegationDepth":0}', 0, "/rec/a"),
        ('{"type":"session","version":0,"id":"x","createdAt":0,"cwd":"{{cwd}}"}', 0, "{{cwd}}"),
        ('{"type":"session","version":0,"id":"c","createdAt":5,"cwd":"{{cwd}}/workspace","parentSession":"p"}', 1, "{{cwd}}/workspace"),
    ],
    ids=["no-version", "no-depth", "child-no-depth-templated-cwd"],
)
def test_header_shapes_upstream_writes_load_and_rewrite_unchanged(line: str, depth: int, cwd: str) -> None:
    """DSH's own fixtures omit `version` or `delegationDepth` and template the cwd; they load,
    and writing the header back gives the same line (no key is invented)."""
    loaded = parse_session_log(line + "\n")
    assert loaded.header.delegation_depth == depth and loaded.header.cwd == cwd
    assert dump_session(loaded.session) == line + "\n"
    assert json.loads(dump_session(Session(SessionHeader.new(id="n"))))["delegationDepth"] == 0  # ours always write it


def test_header_rejects_bad_depth_bad_cwd_and_retired_fields() -> None:
    with pytest.raises(SessionError, match="delegationDepth"):
        parse_session_log('{"type":"session","version":0,"id":"x","createdAt":0,"delegationDepth":-1}\n')
    with pytest.raises(SessionError, match="absolute path"):
        parse_session_log('{"type":"session","version":0,"id":"x","createdAt":0,"delegationDepth":0,"cwd":"rel/{{cwd}}"}\n')
    with pytest.raises(SessionError, match="version None"):
        parse_session_log('{"type":"session","version":null,"id":"x","createdAt":0,"delegationDepth":0}\n')
    with pytest.raises(SessionError, match="retired"):
        parse_session_log('{"type":"session","version":0,"id":"x","createdAt":0,"delegationDepth":0,"sandboxMode":"x"}\n')


def test_every_field_survives_a_round_trip_in_camel_case() -> None:
    header = SessionHeader.new(
        id="child", cwd=Path("/work/x"), created_at=1_700_000_000_000, parent_session="parent",
        seed_length=4, origin="subagent", delegation_depth=2, agent_preset="review",
    )
    data = header.to_json()
    assert data == {
        "type": "session", "version": 0, "id": "child", "createdAt": 1_700_000_000_000, "cwd": "/work/x",
        "parentSession": "parent", "seedLength": 4, "origin": "subagent", "delegationDepth": 2,
        "agentPreset": "review",
    }
    assert SessionHeader.from_json(json.loads(json.dumps(data))) == header


@pytest.mark.parametrize(
    ("data", "where"),
    [
        ({"type": "event", "id": "x", "createdAt": 0}, '"type": "session"'),
        ({"type": "session", "id": "x", "createdAt": 0, "color": "red"}, "unknown fields ['color']"),
        ({"type": "session", "id": "", "createdAt": 0}, ".id"),
        ({"type": "session", "id": "x", "createdAt": -1}, ".createdAt"),
        ({"type": "session", "id": "x", "createdAt": 1.5}, ".createdAt"),
        ({"type": "session", "id": "x", "createdAt": 2**53}, ".createdAt"),
        ({"type": "session", "id": "x", "createdAt": 0, "seedLength": -1}, ".seedLength"),
        ({"type": "session", "id": "x", "createdAt": 0, "origin": "parent"}, ".origin"),
        ({"type": "session", "id": "x", "createdAt": 0, "parentSession": 7}, ".parentSession"),
    ],
    ids=["not-a-session", "unknown-field", "empty-id", "negative-time", "float-time", "unsafe-time",
         "negative-seed-length", "other-origin", "parent-not-a-string"],
)
def test_a_malformed_header_is_corruption_naming_its_field(data: dict[str, object], where: str) -> None:
    with pytest.raises(SessionError) as info:
        SessionHeader.from_json(data, " (line 1)")
    assert info.value.code == "SESSION_CORRUPT"
    assert str(info.value).startswith("session header (line 1)") and where in str(info.value)
