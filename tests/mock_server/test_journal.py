"""The journal: redaction, lookups, JSONL output, consumption checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from dshkit.mock_server import MockServer
from dshkit.mock_server.journal import (
    Journal,
    JournalEntry,
    UnconsumedStepsError,
    Write,
    json_line,
    redact_body,
    redact_headers,
)


def test_redaction() -> None:
    h = redact_headers({"Authorization": "Bearer sk-1", "X-Api-Key": "k", "X-Session-Token": "t", "Accept": "*/*"})
    assert h == {"authorization": "{{scrubbed:authorization}}", "x-api-key": "{{scrubbed:x-api-key}}",
                 "x-session-token": "{{scrubbed:x-session-token}}", "accept": "*/*"}
    assert redact_body({"api_key": "k", "max_tokens": 5, "nested": [{"password": "p"}]}) == {
        "api_key": "{{scrubbed:api_key}}", "max_tokens": 5, "nested": [{"password": "{{scrubbed:password}}"}]}


def test_the_journal_scrubs_by_the_one_secrets_policy() -> None:
    """Names the journal's own short list missed (issue 18): the recorder's and the journal's
    lists were two; now one policy decides for both."""
    h = redact_headers({"Ocp-Apim-Subscription-Key": "ocp-1", "Authentication": "a", "X-Signature": "s",
                        "Cookie": "c=1", "X-Mock-Session": "s1", "Content-Type": "application/json"})
    assert h == {"ocp-apim-subscription-key": "{{scrubbed:ocp-apim-subscription-key}}",
                 "authentication": "{{scrubbed:authentication}}", "x-signature": "{{scrubbed:x-signature}}",
                 "cookie": "{{scrubbed:cookie}}", "x-mock-session": "s1", "content-type": "application/json"}
    body = {
        "model": "m", "max_tokens": 5, "token": "t-1", "x_access_token": "xat-1",
        "metadata": {"auth": {"client_secret": "cs-1"}, "tokens": ["a-1", "b-1"], "secret": {"value": "v-1"}},
        "bearer": "b-1", "passphrase": "pp-1", "cookie": "c-1",
        "tools": [{"type": "function", "function": {"name": "login", "parameters": {
            "type": "object", "properties": {"password": {"type": "string"}, "token": {"type": "string"}},
            "required": ["password"]}}}],
        "messages": [{"role": "assistant", "content": [
            {"type": "thinking", "thinking": "t", "signature": "sig-kept"},
            {"type": "tool_use", "id": "tu", "name": "run", "input": {"code": "print(1)"}}]}],
    }
    got = redact_body(body)
    assert got["token"] == "{{scrubbed:token}}" and got["x_access_token"] == "{{scrubbed:x_access_token}}"
    # Under a credential name (`auth`) everything is scrubbed, labelled by the nearest name.
    assert got["metadata"] == {"auth": {"client_secret": "{{scrubbed:client_secret}}"},
                               "tokens": ["{{scrubbed:tokens}}"] * 2, "secret": {"value": "{{scrubbed:secret}}"}}
    assert [got[k] for k in ("bearer", "passphrase", "cookie")] == [
        "{{scrubbed:bearer}}", "{{scrubbed:passphrase}}", "{{scrubbed:cookie}}"]
    # What is not a credential stays as sent: schemas of parameters named like one, counts of
    # tokens, Anthropic's thinking signature (sent back as is), a tool's `code` argument.
    assert got["tools"] == body["tools"] and got["messages"] == body["messages"] and got["max_tokens"] == 5


def test_entries_lookups_and_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "journal.jsonl"
    j = Journal(path)
    with pytest.raises(LookupError, match="no request"):
        j.last  # noqa: B018
    e = j.open_entry(t=1.0, method="POST", path="/chat/completions", headers={"Authorization": "Bearer sk-x"})
    e.session, e.body = "s1", {"model": "m"}
    e.writes += [Write(1.5, b"data: \xc3"), Write(1.6, b"\xa9\n\n")]
    j.close_entry(e)
    e2 = j.open_entry(t=2.0, method="GET", path="/models", headers={})
    e2.session = "s2"
    j.close_entry(e2)
    j.close()
    assert j.last is e2 and j.for_session("s1") == [e] and j.chat() == [e] and len(j) == 2
    assert e.data == "data: é\n\n".encode() and e.bytes_sent == 10
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["writes"][0]["b64"] and lines[0]["writes"][1]["size"] == 3
    assert "sk-x" not in path.read_text()


def test_assert_consumed_lists_unused_steps() -> None:
    Journal(pending=list).assert_consumed()
    with pytest.raises(UnconsumedStepsError, match=r"2 scripted step\(s\).*\n  a\n  b"):
        Journal(pending=lambda: ["a", "b"]).assert_consumed()


def _finished(j: Journal, n: int) -> list[JournalEntry]:
    out = []
    for i in range(n):
        e = j.open_entry(t=float(i), method="POST", path="/chat/completions", headers={"Accept": "*/*"})
        e.body = {"n": i}
        e.writes += [Write(i + 0.1, b"ab"), Write(i + 0.2, b"cde")]
        j.close_entry(e)
        out.append(e)
    return out


def test_keep_bounds_the_bytes_held() -> None:
    """Only the last `keep` finished exchanges hold bytes, headers and body; counts stay."""
    j = Journal(keep=2)
    old, *_, last = entries = _finished(j, 5)
    assert [e.trimmed for e in entries] == [True, True, True, False, False]
    assert (old.writes, old.body, old.headers) == ([], None, {})
    assert (old.write_count, old.bytes_sent, old.first_write_t, old.last_write_t) == (2, 5, 0.1, 0.2)
    with pytest.raises(LookupError, match=r"trimmed.*journal_keep=None"):
        old.data  # noqa: B018
    assert last.data == b"abcde" and last.body == {"n": 4} and last.write_count == 2
    assert len(j) == 5 and [e.seq for e in j] == [1, 2, 3, 4, 5]


def test_keep_none_keeps_everything_and_the_file_gets_all(tmp_path: Path) -> None:
    assert not any(e.trimmed for e in _finished(Journal(keep=None), 300))
    j = Journal(tmp_path / "j.jsonl", keep=0)
    entries = _finished(j, 3)
    j.close()
    assert all(e.trimmed for e in entries)
    lines = [json.loads(line) for line in (tmp_path / "j.jsonl").read_text().splitlines()]
    assert [line["body"] for line in lines] == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert all(len(line["writes"]) == 2 for line in lines)
    with pytest.raises(ValueError, match="keep must be >= 0"):
        Journal(keep=-1)


async def test_server_journal_keep_over_http() -> None:
    """`MockServer(journal_keep=1)`: older streams keep their counts, the last its bytes."""
    events: list[dict[str, Any]] = []
    async with MockServer(journal_keep=1, on_event=events.append) as server, httpx.AsyncClient(timeout=5) as c:
        for i in range(3):
            r = await c.post(server.url, json={"model": "deepseek-chat", "stream": True,
                                               "messages": [{"role": "user", "content": f"m{i}"}]})
            assert r.status_code == 200
    entries = server.journal.entries
    results = [e for e in events if e["type"] == "result"]
    assert [e.trimmed for e in entries] == [True, True, False]
    assert [e.write_count for e in entries] == [r["writes"] for r in results]
    assert [e.bytes_sent for e in entries] == [r["bytes"] for r in results]
    assert b"data: [DONE]" in entries[-1].data and entries[-1].body["messages"][0]["content"] == "m2"


JOURNAL_SECRETS = {
    "ocp": "ocp-subscription-0001", "token": "tok-field-0002", "nested": "client-secret-0003",
    "xat": "x-access-token-0004", "top_cs": "client-secret-0005", "x_api_key": "anthropic-key-0006",
}


async def test_the_journal_file_holds_no_secret_on_either_surface(tmp_path: Path) -> None:
    """Over HTTP, through both wires: the names the journal's old list missed never reach its
    file or its entries (a rejected request is journaled too, and scrubbed the same way)."""
    path = tmp_path / "journal.jsonl"
    s = JOURNAL_SECRETS
    extra = {"token": s["token"], "x_access_token": s["xat"], "client_secret": s["top_cs"],
             "metadata": {"user_id": "u", "auth": {"client_secret": s["nested"]}}}
    async with MockServer(journal=path) as server, httpx.AsyncClient(timeout=5) as c:
        chat = await c.post(server.url, headers={"Ocp-Apim-Subscription-Key": s["ocp"]}, json={
            "model": "deepseek-chat", "messages": [{"role": "user", "content": "hi"}], **extra})
        messages = await c.post(server.base_url + "/anthropic/v1/messages",
                                headers={"x-api-key": s["x_api_key"], "Ocp-Apim-Subscription-Key": s["ocp"]},
                                json={"model": "deepseek-chat", "max_tokens": 16,
                                      "messages": [{"role": "user", "content": "hi"}], **extra})
        assert {chat.status_code, messages.status_code} <= {200, 400}
    text = path.read_text(encoding="utf-8")
    assert [name for name, value in s.items() if value in text] == []
    lines = [json.loads(line) for line in text.splitlines()]
    assert len(lines) == 2
    for line, entry in zip(lines, server.journal.entries, strict=True):
        assert line["headers"]["ocp-apim-subscription-key"] == "{{scrubbed:ocp-apim-subscription-key}}"
        assert line["body"]["token"] == "{{scrubbed:token}}" and line["body"]["x_access_token"] == "{{scrubbed:x_access_token}}"
        assert line["body"]["client_secret"] == "{{scrubbed:client_secret}}"
        assert line["body"]["metadata"]["auth"] == {"client_secret": "{{scrubbed:client_secret}}"}
        assert entry.body == line["body"] and entry.headers == line["headers"]


def test_json_line_is_always_valid_json() -> None:
    line = json_line({"a": float("nan"), "b": [float("inf"), -float("inf")], "s": "x\ud800", "é": "é"})
    assert json.loads(line, parse_constant=lambda c: pytest.fail(f"bare {c}")) == {
        "a": "NaN", "b": ["Infinity", "-Infinity"], "s": "x\ud800", "é": "é"}
    line.encode("utf-8")  # no lone surrogate left in the text
    assert json_line({"é": 1}) == '{"é": 1}'  # plain text stays readable
